"""The access log, and the per-request record that the metrics and the access log share.

``ExchangeLayer`` is a middleware (the dispatcher's own kind), put outermost by ``A2AServer``
only when the access log or the metrics are on: without both, requests do not pass through it
at all. It opens an ``Exchange`` for the request (the handler's observer fills in the A2A
operation and the caller), and when the answer is done it counts the status code and writes one
line at INFO on the logger ``a2a.access``:

    127.0.0.1 POST /a2a/jsonrpc 200 2.1ms SendMessage JSONRPC alice

(client address, HTTP method, path, status, duration, operation, binding, principal; ``-`` for
what is not known; status 499 when the client went away before its answer). The path is logged
without its query string, and no header is logged: credentials (a bearer token, an API key, a
WebSocket ``access_token`` query parameter) never reach the log. The same fields are attributes
of the log record, so ``--log-format json`` writes them as JSON members. A WebSocket connection
is one line, written when it closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from .metrics import Metrics
from .observe import EXCHANGE, Exchange

__all__ = ["ACCESS_LOGGER", "ExchangeLayer"]

ACCESS_LOGGER = "a2a.access"
log = logging.getLogger(ACCESS_LOGGER)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_LINE = "%s %s %s %d %.1fms %s %s %s"
#: A request whose client went away before its answer (as nginx logs it).
CLIENT_CLOSED = 499


class ExchangeLayer:
    """The middleware: ``bindings`` maps path prefixes to binding names (longest first)."""

    def __init__(self, bindings: Sequence[tuple[str, str]], *, access_log: bool, metrics: Metrics | None) -> None:
        self._bindings = sorted(bindings, key=lambda entry: len(entry[0]), reverse=True)
        self._log = access_log
        self._metrics = metrics

    def _binding(self, path: str) -> str:
        for prefix, name in self._bindings:
            if path.startswith(prefix):
                return name
        return "-"

    async def __call__(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        exchange = Exchange(self._binding(request.path))
        if "Upgrade" in request.headers:
            # A connection carries many calls: its line names none of them (the metrics do).
            exchange.operation = "-"
        token = EXCHANGE.set(exchange)
        status = 500
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        except asyncio.CancelledError:
            status = CLIENT_CLOSED
            raise
        finally:
            EXCHANGE.reset(token)
            if self._metrics is not None:
                self._metrics.http.inc((str(status),))
            if self._log and log.isEnabledFor(logging.INFO):
                self._write(request, exchange, status, (time.perf_counter() - started) * 1000.0)

    @staticmethod
    def _write(request: web.Request, exchange: Exchange, status: int, millis: float) -> None:
        fields = {
            "remote": request.remote or "-",
            "http_method": request.method,
            # Still percent-encoded: a "%0A" in a path cannot start a forged line.
            "path": request.rel_url.raw_path,
            "status": status,
            "duration_ms": round(millis, 2),
            "operation": exchange.operation or "-",
            "binding": exchange.binding,
            "principal": exchange.principal or "-",
        }
        args = (
            fields["remote"],
            fields["http_method"],
            fields["path"],
            status,
            millis,
            fields["operation"],
            fields["binding"],
            fields["principal"],
        )
        # The record is made here rather than by ``log.info``, which would also look up the
        # calling source line: that lookup was a third of the line's cost, for a location that
        # is always this one.
        log.handle(log.makeRecord(ACCESS_LOGGER, logging.INFO, __file__, 0, _LINE, args, None, None, fields))
