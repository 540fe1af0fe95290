"""OpenTelemetry traces, when the ``otel`` extra is installed (``pip install 'a2a-net[otel]'``).

A span per A2A operation, on the server (kind SERVER, named ``a2a/<Operation>``) and on the
client (kind CLIENT), and the W3C trace context carried across every binding: over HTTP in the
``traceparent`` / ``tracestate`` headers, over WebSocket and stdio as members of the same names
in the JSON-RPC request envelope (``protocol.md``, "Trace context"). One trace then follows a
supervisor run through every delegation and hop.

Without ``opentelemetry-api`` nothing here costs anything: ``tracing()`` tries the import once
per process (at the first server or client made, not when ``a2a`` is imported, so commands
that need no traces start as fast as before) and answers ``None``; callers keep that answer and
test it, so the request paths do no tracing work at all. ``A2A_TRACING=off`` turns tracing off
even when the package is installed. Spans go wherever the application's ``TracerProvider``
sends them; without an SDK configured, the API's no-op tracer still passes a caller's trace
context on.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ProtocolError

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = ["TRACEPARENT", "TRACESTATE", "Tracing", "tracing"]

#: The W3C Trace Context names: HTTP headers, and the JSON-RPC envelope's members on WebSocket and stdio.
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_Item = TypeVar("_Item")


class Tracing:
    """The OpenTelemetry API, imported: starts spans and reads and writes W3C trace context."""

    def __init__(self) -> None:
        from opentelemetry import context, trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        import a2a

        self._context = context
        self._trace = trace
        self._kinds = {"server": trace.SpanKind.SERVER, "client": trace.SpanKind.CLIENT}
        # W3C trace context on every binding, whatever the application's global propagator is:
        # the envelope members are named after it, and peers in other languages read it.
        self._w3c = TraceContextTextMapPropagator()
        self.tracer = trace.get_tracer("a2a-net", a2a.__version__)
        self._silent_providers = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        self._recording = False
        self._asked_at = -1.0

    def recording(self) -> bool:
        """Whether spans are recorded: an SDK's ``TracerProvider`` is set (in code or by
        ``OTEL_PYTHON_TRACER_PROVIDER``). The global provider can be set once only, so a yes
        is kept; a no is asked again after a second (asking costs a lookup in the environment),
        so a provider set after the server started is used from then on."""
        if self._recording:
            return True
        now = time.monotonic()
        if now - self._asked_at >= 1.0:
            self._asked_at = now
            self._recording = not isinstance(self._trace.get_tracer_provider(), self._silent_providers)
        return self._recording

    # ---- carrying the context ----------------------------------------------------------

    def carrier(self) -> dict[str, str]:
        """The current trace context as ``{"traceparent": ..., "tracestate": ...}`` (empty outside a span)."""
        carrier: dict[str, str] = {}
        self._w3c.inject(carrier)
        return carrier

    def inject(self, headers: Any) -> None:
        """Write the current trace context into ``headers`` (any mutable mapping, e.g. httpx's)."""
        self._w3c.inject(headers)

    async def inject_httpx(self, request: Any) -> None:
        """An httpx request hook: each HTTP request carries the trace context of its caller."""
        self._w3c.inject(request.headers)

    def _parent(self, traceparent: str | None, tracestate: str | None) -> Any:
        """The context a caller's trace context names (``None``: none given, the current one)."""
        if traceparent is None:
            return None
        carrier = {TRACEPARENT: traceparent}
        if tracestate is not None:
            carrier[TRACESTATE] = tracestate
        return self._w3c.extract(carrier)

    # ---- spans -------------------------------------------------------------------------

    def start(
        self,
        operation: str,
        kind: str,
        attributes: Mapping[str, str],
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> tuple[Span, Any]:
        """A started span for ``operation`` (a child of the caller's trace context when one is
        given, else of the current span) and the context it is current in."""
        parent = self._parent(traceparent, tracestate)
        span = self.tracer.start_span(
            "a2a/" + operation,
            context=parent,
            kind=self._kinds[kind],
            attributes={"rpc.system": "a2a", "rpc.method": operation, **attributes},
        )
        return span, self._trace.set_span_in_context(span, parent)

    def failed(self, span: Span, exc: BaseException, kind: str) -> None:
        """Note on ``span`` the error that ended it. A client's span is failed by any error; a
        server's only by its own fault (as OpenTelemetry's RPC conventions have it): a caller's
        mistake (an unknown task, bad params: an A2A error below HTTP 500) is recorded, not an error."""
        if isinstance(exc, ProtocolError):
            span.set_attribute("a2a.error", exc.reason)
            if kind == "server" and exc.http_status < 500:
                return
        span.record_exception(exc)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))

    @contextlib.contextmanager
    def _carried(self, traceparent: str | None, tracestate: str | None) -> Iterator[None]:
        """The caller's trace context current for the block (nothing to do without one)."""
        if traceparent is None:
            yield
            return
        token = self._context.attach(self._parent(traceparent, tracestate))
        try:
            yield
        finally:
            self._context.detach(token)

    async def _carried_stream(self, ctx: Any, items: AsyncIterator[_Item]) -> AsyncGenerator[_Item, None]:
        """``items`` advanced with ``ctx`` current, never across a ``yield`` (see ``stream``)."""
        try:
            while True:
                token = self._context.attach(ctx)
                try:
                    item = await anext(items)
                except StopAsyncIteration:
                    return
                finally:
                    self._context.detach(token)
                yield item
        finally:
            await items.aclose()  # type: ignore[attr-defined]

    @contextlib.contextmanager
    def span(
        self,
        operation: str,
        kind: str,
        attributes: Mapping[str, str],
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> Iterator[Span]:
        """A span current for the block (in one task: a coroutine's ``with``); an exception marks it failed.

        With no SDK the span would be the API's non-recording one, whose only effect is to make
        the caller's trace context current (so that calls made inside pass it on): that alone
        is done, and nothing when there is no caller's context to carry. It cost a fifth of
        serving a ``SendMessage``.
        """
        if not self.recording():
            with self._carried(traceparent, tracestate):
                yield _NO_SPAN
            return
        span, ctx = self.start(operation, kind, attributes, traceparent, tracestate)
        token = self._context.attach(ctx)
        try:
            yield span
        except BaseException as exc:
            self.failed(span, exc, kind)
            raise
        finally:
            self._context.detach(token)
            span.end()

    def stream(
        self,
        operation: str,
        kind: str,
        attributes: Mapping[str, str],
        items: AsyncIterator[_Item],
        traceparent: str | None = None,
        tracestate: str | None = None,
    ) -> AsyncIterator[_Item]:
        """``items``, under a span that lasts as long as the stream. The span is current only
        while ``items`` is advanced (where its requests are made and its runs are started),
        never across a ``yield``: a context attached in a generator and detached after the
        consumer ran would leak into the consumer, or be detached in another context.

        With no SDK, as ``span`` does: the caller's context carried, no span made; ``items``
        itself when there is no caller's context."""
        if not self.recording():
            if traceparent is None:
                return items
            return self._carried_stream(self._parent(traceparent, tracestate), items)
        return self._spanned_stream(operation, kind, attributes, items, traceparent, tracestate)

    async def _spanned_stream(
        self,
        operation: str,
        kind: str,
        attributes: Mapping[str, str],
        items: AsyncIterator[_Item],
        traceparent: str | None,
        tracestate: str | None,
    ) -> AsyncIterator[_Item]:
        span, ctx = self.start(operation, kind, attributes, traceparent, tracestate)
        try:
            async with contextlib.aclosing(self._carried_stream(ctx, items)) as carried:
                async for item in carried:
                    yield item
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):  # the consumer stopped reading: no failure
                self.failed(span, exc, kind)
            raise
        finally:
            span.end()


#: What ``span`` yields when no span is recorded (its callers do not use it).
_NO_SPAN: Any = None


_UNRESOLVED: Any = object()
_tracing: Tracing | None = _UNRESOLVED


def tracing() -> Tracing | None:
    """The tracing API if ``opentelemetry-api`` is installed and not turned off, else ``None``;
    resolved once per process."""
    global _tracing
    if _tracing is _UNRESOLVED:
        if os.environ.get("A2A_TRACING", "").strip().lower() in ("0", "off", "false", "no"):
            _tracing = None
        else:
            try:
                _tracing = Tracing()
            except ImportError:
                _tracing = None
    return _tracing
