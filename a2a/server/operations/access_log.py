"""The access log, and the per-request record that the metrics and the access log share.

``ExchangeLayer`` exists only when the access log or the metrics are on: without both,
requests do not pass through it at all. It opens an ``Exchange`` for the request (the
handler's observer fills in the A2A operation and the caller), and when the answer is done it
counts the status code and writes one line at INFO on the logger ``a2a.access``:

    127.0.0.1 POST /a2a/jsonrpc 200 2.1ms SendMessage JSONRPC alice

(client address, HTTP method, path, status, duration, operation, binding, principal; ``-`` for
what is not known; status 499 when the client went away before its answer). The path is logged
without its query string, and no header is logged: credentials (a bearer token, an API key, a
WebSocket ``access_token`` query parameter) never reach the log. The same fields are attributes
of the log record, so ``--log-format json`` writes them as JSON members. A WebSocket connection
is one line, written when it closes.

Who calls it: each host, around every request: the aiohttp host as its outermost middleware
(``around``), the ASGI host around its exchange, and the connection guard for a request head it
refuses before any host sees it (``unparsed``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TextIO

from aiohttp import web

from ..engine.observe import EXCHANGE, Exchange
from .metrics import Metrics

__all__ = ["ACCESS_LOGGER", "AccessLogHandler", "ExchangeLayer"]

ACCESS_LOGGER = "a2a.access"
log = logging.getLogger(ACCESS_LOGGER)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_LINE = "%s %s %s %d %.1fms %s %s %s"
#: The same line as ``AccessLogHandler`` writes it (logging's default format, milliseconds on).
_TEXT_LINE = "%s,%03d INFO " + ACCESS_LOGGER + ": " + _LINE + "\n"
#: A request whose client went away before its answer (as nginx logs it).
CLIENT_CLOSED = 499


class ExchangeLayer:
    """The middleware: ``bindings`` maps path prefixes to binding names (longest first)."""

    def __init__(self, bindings: Sequence[tuple[str, str]], *, access_log: bool, metrics: Metrics | None) -> None:
        self._bindings = sorted(bindings, key=lambda entry: len(entry[0]), reverse=True)
        # A binding's own path (the JSON-RPC endpoint, the WebSocket one) is found by one lookup.
        self._exact = {prefix: name for prefix, name in bindings if not prefix.endswith("/")}
        self._log = access_log
        self._metrics = metrics

    def _binding(self, path: str) -> str:
        name = self._exact.get(path)
        if name is not None:
            return name
        for prefix, name in self._bindings:
            if path.startswith(prefix):
                return name
        return "-"

    def begin(self, raw_path: str, *, upgrade: bool = False, unparsed: bool = False) -> Exchange:
        """The exchange of a request to ``raw_path`` (its path, still percent-encoded: what the
        line shows, so a "%0A" in a path cannot start a forged line; the binding's prefixes are
        plain ASCII either way); the caller makes it the current one (``EXCHANGE``) for what
        serves the request. ``upgrade``: it asks for another protocol (a WebSocket), whose
        connection carries many calls, so its line names none of them (the metrics do).
        ``unparsed``: see ``end``."""
        exchange = Exchange("-" if unparsed else self._binding(raw_path))
        if upgrade:
            exchange.operation = "-"
        return exchange

    def end(
        self,
        remote: str | None,
        method: str,
        raw_path: str,
        exchange: Exchange,
        status: int,
        started: float,
        *,
        unparsed: bool = False,
    ) -> None:
        """The request of ``remote`` (the client's address) is answered (``status``;
        ``CLIENT_CLOSED``: its client left first): its status counted, its line written
        (``started``: its ``time.perf_counter()``). ``unparsed``: refused by the HTTP parser,
        so no method or path is known (``-``)."""
        if self._metrics is not None:
            self._metrics.http.inc((str(status),))
        if self._log and log.isEnabledFor(logging.INFO):
            millis = (time.perf_counter() - started) * 1000.0
            path = raw_path
            if unparsed:
                method = path = "-"
            handlers = log.handlers
            if len(handlers) == 1 and type(handlers[0]) is AccessLogHandler and handlers[0].formatter is None:
                # ``a2a serve``'s own handler writing text, and nothing else listening: the
                # line without a LogRecord, which cost as much as the rest of the line.
                handlers[0].add_line(
                    remote or "-",
                    method,
                    path,
                    status,
                    millis,
                    exchange.operation or "-",
                    exchange.binding,
                    exchange.principal or "-",
                )
            else:
                self._write(remote, method, path, exchange, status, millis)

    async def around(self, request: web.Request, handler: Handler, mount: str = "") -> web.StreamResponse:
        """As an aiohttp middleware (the aiohttp host): around everything that serves the
        request, at the server's ``mount`` point; the ASGI host calls ``begin`` and ``end``."""
        started = time.perf_counter()
        raw_path = request.rel_url.raw_path
        exchange = self.begin(raw_path[len(mount) :] if mount else raw_path, upgrade="Upgrade" in request.headers)
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
            self.end(request.remote, request.method, raw_path, exchange, status, started)

    @staticmethod
    def _write(remote: str | None, method: str, path: str, exchange: Exchange, status: int, millis: float) -> None:
        """The line as a ``LogRecord``: for any handler, and formatters such as JSON's."""
        fields = {
            "remote": remote or "-",
            "http_method": method,
            "path": path,
            "status": status,
            "duration_ms": round(millis, 2),
            "operation": exchange.operation or "-",
            "binding": exchange.binding,
            "principal": exchange.principal or "-",
        }
        args = (
            fields["remote"],
            fields["http_method"],
            path,
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


class AccessLogHandler(logging.Handler):
    """Where ``a2a serve`` writes the access log: a stream (stderr), in batches.

    A line through logging's ``StreamHandler`` and ``Formatter`` cost about 29 µs (the time
    formatted anew for every line, a write and a flush each): a third of what serving a
    ``SendMessage`` costs. Here the time prefix is formatted once per second, lines are kept
    and written together, at most ``flush_after`` seconds after the first of them (or once
    ``max_lines`` are waiting, or when logging shuts down at exit): about 6 µs a line. The text
    is what the root handler's default format writes (``asctime levelname name: message``);
    with a formatter set (``--log-format json``) the formatter writes it.
    """

    def __init__(self, stream: TextIO, *, flush_after: float = 0.2, max_lines: int = 256) -> None:
        super().__init__()
        self.stream = stream
        self.flush_after = flush_after
        self.max_lines = max_lines
        self._lines: list[str] = []
        self._flush_due: asyncio.TimerHandle | None = None
        self._second = -1
        self._prefix = ""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self._text(record)
        except Exception:  # noqa: BLE001 - logging's own contract: a bad record is reported, never raised
            self.handleError(record)
            return
        self._append(line)

    def add_line(
        self,
        remote: str,
        method: str,
        path: str,
        status: int,
        millis: float,
        operation: str,
        binding: str,
        principal: str,
    ) -> None:
        """An access line at INFO, without a ``LogRecord`` (see ``ExchangeLayer``): formatted in
        one step, the time prefix reused within its second."""
        now = time.time()
        second = int(now)
        if second != self._second:
            self._stamp(now)
        ms = int(now * 1000) % 1000
        self._lines.append(
            _TEXT_LINE % (self._prefix, ms, remote, method, path, status, millis, operation, binding, principal)
        )
        if len(self._lines) >= self.max_lines:
            self.flush()
        elif self._flush_due is None:
            self._flush_later()

    def _append(self, line: str) -> None:
        self._lines.append(line + "\n")
        if len(self._lines) >= self.max_lines:
            self.flush()
        elif self._flush_due is None:
            self._flush_later()

    def _flush_later(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on an event loop: nothing would flush later
            self.flush()
            return
        self._flush_due = loop.call_later(self.flush_after, self.flush)

    def _text(self, record: logging.LogRecord) -> str:
        if self.formatter is not None:
            return self.format(record)
        stamp = self._stamp(record.created)
        return f"{stamp},{int(record.msecs):03d} {record.levelname} {record.name}: {record.getMessage()}"

    def _stamp(self, created: float) -> str:
        """``asctime`` without its milliseconds, formatted once a second."""
        second = int(created)
        if second != self._second:
            self._second = second
            self._prefix = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        return self._prefix

    def flush(self) -> None:
        if self._flush_due is not None:
            self._flush_due.cancel()
            self._flush_due = None
        if not self._lines:
            return
        text = "".join(self._lines)
        self._lines.clear()
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the stream is gone (a closed pipe): the lines go with it
            pass

    def close(self) -> None:
        self.flush()
        super().close()
