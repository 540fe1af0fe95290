"""What the request handler tells the outside about each operation: a span, metrics, and the
operation's name and caller for the access log line of the HTTP request that carried it.

``RequestHandler`` calls an ``Observer`` only when it has one (``handler.observer``); with no
tracing, no metrics and no access log there is none, and the handler's paths are as before.
The HTTP request being served (``Exchange``) is found through a context variable that the
access layer (``access_log.ExchangeLayer``) sets: the handler never sees HTTP requests,
and calls carried by a WebSocket connection inherit its upgrade request's exchange.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ...errors import ProtocolError
from ...telemetry import Tracing
from ..operations.metrics import Metrics
from .events import LoggedEvent

__all__ = ["EXCHANGE", "Exchange", "Observer"]


@dataclass(slots=True)
class Exchange:
    """One HTTP request, as the access log and the metrics see it."""

    #: The binding its path belongs to (``JSONRPC``, ``HTTP+JSON``, ``WEBSOCKET``; ``-`` for
    #: the other paths).
    binding: str
    #: The A2A operation, once the binding decoded it.
    operation: str | None = None
    #: The authenticated caller (never a credential).
    principal: str | None = None


#: The HTTP request being served in this task (``None`` outside one, e.g. on stdio).
EXCHANGE: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar("a2a_exchange", default=None)


def _outcome(exc: BaseException) -> str:
    if isinstance(exc, ProtocolError):
        return exc.reason
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        return "CANCELLED"
    return "INTERNAL_ERROR"


class Observer:
    """Spans (``tracing``), metrics (``metrics``) and the access log's fields, at the handler's
    one exception boundary; any of the first two may be ``None``."""

    def __init__(
        self, tracing: Tracing | None, metrics: Metrics | None, *, agent: str = "", default_binding: str = "-"
    ) -> None:
        self.tracing = tracing
        self.metrics = metrics
        self.agent = agent
        self._default_binding = default_binding

    def _exchange(self, method: str, ctx: Any) -> str:
        """Note the operation and caller on the HTTP request carrying them; its binding."""
        exchange = EXCHANGE.get()
        if exchange is None:
            return self._default_binding
        if exchange.operation is None:
            exchange.operation = method
        if ctx.principal is not None:
            exchange.principal = ctx.principal
        return exchange.binding

    def _attributes(self, binding: str, ctx: Any) -> dict[str, str]:
        attributes = {"a2a.binding": binding, "a2a.agent": self.agent}
        if ctx.principal is not None:
            attributes["enduser.id"] = ctx.principal
        return attributes

    def call(self, method: str, ctx: Any, handler: Callable[[Any, Any], Awaitable[Any]], params: Any) -> Awaitable[Any]:
        """``handler(params, ctx)``, observed."""
        # When all there is to do is noting the operation for the access log (no metrics, and no
        # span to make nor caller's trace context to carry), the operation is not wrapped: a
        # frame that every resumption of the request would pass through. Tested inline: every
        # request asks.
        tracing = self.tracing
        if self.metrics is None and (tracing is None or (ctx.traceparent is None and not tracing.recording())):
            self._exchange(method, ctx)
            return handler(params, ctx)
        return self._observed_call(method, ctx, handler, params)

    async def _observed_call(
        self, method: str, ctx: Any, handler: Callable[[Any, Any], Awaitable[Any]], params: Any
    ) -> Any:
        binding = self._exchange(method, ctx)
        started = time.perf_counter()
        outcome = "ok"
        try:
            tracing = self.tracing
            if tracing is None or (ctx.traceparent is None and not tracing.recording()):
                return await handler(params, ctx)  # no span to make, no caller's context to carry
            with tracing.span(method, "server", self._attributes(binding, ctx), ctx.traceparent, ctx.tracestate):
                return await handler(params, ctx)
        except BaseException as exc:
            outcome = _outcome(exc)
            raise
        finally:
            if self.metrics is not None:
                labels = (method, binding)
                self.metrics.requests.inc((method, binding, outcome))
                self.metrics.duration.observe(labels, time.perf_counter() - started)

    def stream(self, method: str, ctx: Any, events: AsyncIterator[LoggedEvent]) -> AsyncIterator[LoggedEvent]:
        """``events``, observed: one span and one duration for the whole stream. Without metrics
        the events themselves (or the span's wrapper), not one more generator around them: an
        open stream holds each of its generators (a frame, and an entry in the loop's set)."""
        binding = self._exchange(method, ctx)
        if self.tracing is not None:
            attributes = self._attributes(binding, ctx)
            events = self.tracing.stream(method, "server", attributes, events, ctx.traceparent, ctx.tracestate)
        metrics = self.metrics
        if metrics is None:
            return events
        return self._measured_stream(method, binding, metrics, events)

    async def _measured_stream(
        self, method: str, binding: str, metrics: Metrics, events: AsyncIterator[LoggedEvent]
    ) -> AsyncIterator[LoggedEvent]:
        started = time.perf_counter()
        outcome = "ok"
        metrics.streams.add((binding,), 1)
        try:
            async for logged in events:
                yield logged
        except BaseException as exc:
            outcome = _outcome(exc)
            raise
        finally:
            metrics.streams.add((binding,), -1)
            metrics.requests.inc((method, binding, outcome))
            metrics.duration.observe((method, binding), time.perf_counter() - started)
            await events.aclose()  # type: ignore[attr-defined]

    def run_ended(self, state: str) -> None:
        """A run ended in this process in ``state``."""
        if self.metrics is not None:
            self.metrics.ended.inc((state,))
