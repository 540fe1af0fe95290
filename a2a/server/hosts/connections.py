"""Connections under bounds: how long a peer may take, how many connections it may hold, and a
JSON answer to a request head that is too long or malformed.

aiohttp's low-level ``web.Server`` is an asyncio protocol factory; ``GuardedConnection`` is an
asyncio protocol of ours that sits in front of the protocol it makes (composition, public APIs
only: the connection forwards the transport's events to aiohttp's protocol, which writes to the
transport itself). The server's handler tells the connection when a request starts being served
and when it is answered (``Connections.serving`` / ``served``, by the request's transport), so:

- one deadline per connection, by phase (checked by the server's one ``DeadlineSweep``, not a
  timer per connection): a request's head must be complete within ``header_timeout`` of its
  first byte (or of the connection's start), and a kept-alive connection must start its next
  request within ``idle_timeout``; over either, the connection is closed. A request being served
  has no deadline here: a blocking send, an SSE stream or a WebSocket lasts as long as it needs
  (a body that trickles is held to ``body_timeout`` where it is read: ``bindings.messages.read_body``);
- connections are counted by ``ConnectionGuard``, in total and per client address. At a cap the
  connection idle the longest (waiting for a request, not serving one; one kept alive after an
  answer only if no other is idle) is closed to make room, so idle sockets cannot lock clients
  out; when none is idle the newcomer is answered 503 with ``Retry-After`` and closed, before the
  process runs out of file descriptors;
- a request head is looked at as it arrives (before aiohttp's parser sees it): a request line
  over ``MAX_LINE`` bytes is 414, a header line over it 431, a request line that is not
  ``METHOD target HTTP/x.y`` 400, each a JSON error framed as the endpoint the path names and
  logged in one line. What aiohttp's parser refuses beyond that it answers itself (plain text).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from typing import cast

from aiohttp import web

from ...errors import InvalidRequestError, ProtocolError
from ..bindings.messages import server_software
from ..bindings.routing import ErrorFraming, status_body
from ..engine.limits import HttpLimits
from ..operations.access_log import ExchangeLayer
from .deadline_sweep import DeadlineSweep, resolution_for

__all__ = ["ConnectionGuard", "Connections", "GuardedConnection", "TooManyConnectionsError", "MAX_LINE"]

log = logging.getLogger("a2a.server")

#: The longest request line or header line (aiohttp's own default limit for both).
MAX_LINE = 8190
#: Bytes of a refused body always thrown away (rather than reset), whatever the body limit.
_DRAIN_BYTES_FLOOR = 1024 * 1024
#: How often refusals for too many connections are logged (a flood would flood the log).
_REFUSAL_LOG_INTERVAL = 10.0
#: A request line: a method (an RFC 9110 token), a target, a version.
_REQUEST_LINE = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+ [^ \x00-\x20\x7f]+ HTTP/[0-9]\.[0-9]")
_METHOD_SO_FAR = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]*")

# The phases of a connection, each with its deadline (or none).
_WAITING = 0  # for the first byte of a request: idle_timeout (header_timeout for a new connection)
_HEAD = 1  # reading a request's head: header_timeout from its first byte
_SERVING = 2  # its head is whole (the handler has it, or is about to): no deadline here


class TooManyConnectionsError(ProtocolError):
    code, http_status, grpc_status, reason = -32603, 503, "UNAVAILABLE", "TOO_MANY_CONNECTIONS"
    default_message = "The server holds too many connections: retry later"


class _UriTooLongError(InvalidRequestError):
    http_status = 414


class _HeaderTooLongError(InvalidRequestError):
    http_status = 431


class ConnectionGuard:
    """Counts the server's connections, in total and per client address, and picks which idle
    one to close when a cap is reached."""

    def __init__(self, limits: HttpLimits) -> None:
        self.cap = limits.connection_cap
        self.per_client = limits.max_connections_per_client
        self.total = 0
        self._by_client: dict[str, int] = {}
        # Idle connections, the one idle the longest first (dicts keep insertion order): those
        # that have not completed a request yet (or whose request was refused), closed first
        # to make room, and those kept alive after an answer.
        self._idle_fresh: dict[GuardedConnection, None] = {}
        self._idle_kept: dict[GuardedConnection, None] = {}
        #: Per address, the same (the value: kept alive).
        self._idle_by_client: dict[str, dict[GuardedConnection, bool]] = {}
        self.refused = 0
        self.evicted = 0
        self._refusals_logged_at = -_REFUSAL_LOG_INTERVAL
        self._refusals_unlogged = 0
        body = status_body(TooManyConnectionsError())[0]
        self.refusal = _answer(
            503, "Service Unavailable", body, "application/json", f"Retry-After: {limits.retry_after}\r\n"
        )

    def admit(self, conn: GuardedConnection, client: str) -> bool:
        """Count ``conn`` in, closing an idle connection to make room if a cap is reached;
        ``False`` when there is no room."""
        if self._by_client.get(client, 0) >= self.per_client and not self._evict(self._oldest_of(client)):
            return self._refuse(client, "from this address")
        if self.total >= self.cap and not (self._evict(self._idle_fresh) or self._evict(self._idle_kept)):
            return self._refuse(client, "in total")
        self.total += 1
        self._by_client[client] = self._by_client.get(client, 0) + 1
        return True

    def release(self, conn: GuardedConnection, client: str) -> None:
        self.busy(conn, client)
        self.total -= 1
        left = self._by_client[client] - 1
        if left:
            self._by_client[client] = left
        else:
            del self._by_client[client]

    def idle(self, conn: GuardedConnection, client: str, *, kept: bool = False) -> None:
        """``conn`` waits for a request: it may be closed to make room (the longest idle first,
        a connection ``kept`` alive after an answer only when no other is idle: a flood of new
        connections does not push out the clients that are being served)."""
        self._idle_fresh.pop(conn, None)
        self._idle_kept.pop(conn, None)
        (self._idle_kept if kept else self._idle_fresh)[conn] = None
        mine = self._idle_by_client.setdefault(client, {})
        mine.pop(conn, None)
        mine[conn] = kept

    def busy(self, conn: GuardedConnection, client: str) -> None:
        if self._idle_fresh.pop(conn, 0) is None or self._idle_kept.pop(conn, 0) is None:
            mine = self._idle_by_client[client]
            del mine[conn]
            if not mine:
                del self._idle_by_client[client]

    def _oldest_of(self, client: str) -> GuardedConnection | None:
        """The connection of ``client`` to close to make room (as in total: one kept alive last)."""
        mine = self._idle_by_client.get(client)
        if not mine:
            return None
        return next((conn for conn, kept in mine.items() if not kept), None) or next(iter(mine))

    def _evict(self, idle: dict[GuardedConnection, None] | GuardedConnection | None) -> bool:
        if not idle:
            return False
        victim = idle if isinstance(idle, GuardedConnection) else next(iter(idle))
        self.evicted += 1
        victim.evict()  # releases it at once: the room is the newcomer's
        return True

    def _refuse(self, client: str, scope: str) -> bool:
        self.refused += 1
        self._refusals_unlogged += 1
        now = asyncio.get_running_loop().time()
        if now - self._refusals_logged_at >= _REFUSAL_LOG_INTERVAL:
            log.warning(
                "refused %d connection(s) with 503: too many connections %s (last from %s; %d open, caps %d in "
                "total and %d per address)",
                self._refusals_unlogged,
                scope,
                client,
                self.total,
                self.cap,
                self.per_client,
            )
            self._refusals_logged_at = now
            self._refusals_unlogged = 0
        return False


class Connections:
    """The guarded connections of one server: the protocol factory to listen with, and what its
    handler tells them (by the request's transport)."""

    def __init__(
        self,
        server: web.Server,
        limits: HttpLimits,
        framing: Callable[[str], ErrorFraming],
        exchanges: ExchangeLayer | None = None,
        *,
        max_body: int = 0,
    ) -> None:
        self.server = server
        #: The most bytes of a refused body thrown away before the connection is closed.
        self.drain_bytes = max(max_body, _DRAIN_BYTES_FLOOR)
        #: The access log and status counts, for the requests refused here (``None``: off).
        self.exchanges = exchanges
        self.limits = limits
        self.framing = framing
        self.guard = ConnectionGuard(limits)
        self.sweep: DeadlineSweep | None = None
        self._by_transport: dict[asyncio.BaseTransport, GuardedConnection] = {}

    def __call__(self) -> GuardedConnection:
        if self.sweep is None:
            self.sweep = DeadlineSweep(asyncio.get_running_loop(), resolution_for(self.limits))
        return GuardedConnection(self, self.sweep)

    def serving(self, transport: asyncio.BaseTransport | None) -> None:
        """A request on ``transport`` reached the handler: its connection has no deadline now."""
        conn = self._by_transport.get(transport) if transport is not None else None
        if conn is not None:
            conn.serving()

    def served(self, transport: asyncio.BaseTransport | None, *, body_read: bool = True) -> None:
        """The handler is done with a request on ``transport``: the connection waits for the next
        (``body_read=False``: the rest of its body is still to come, and aiohttp throws it away
        then closes the connection: it is not a request head)."""
        conn = self._by_transport.get(transport) if transport is not None else None
        if conn is not None:
            conn.served(body_read=body_read)

    def close(self) -> None:
        if self.sweep is not None:
            self.sweep.close()


def _answer(status: int, reason: str, body: bytes, content_type: str, extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        f"Server: {server_software()}\r\n{extra}Connection: close\r\n\r\n"
    ).encode() + body


class GuardedConnection(asyncio.Protocol):
    """One accepted socket: aiohttp's protocol behind it, the guard's accounting and deadlines."""

    def __init__(self, connections: Connections, sweep: DeadlineSweep) -> None:
        self._connections = connections
        self._sweep = sweep
        self._limits = connections.limits
        self._guard = connections.guard
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._client: str | None = None
        self._phase = _WAITING
        self._deadline: float | None = None
        self._head = bytearray()
        self._served_one = False
        self._closed = False
        #: Bytes of a refused body still to be thrown away (``None``: not draining one).
        self._drain_left: int | None = None

    # ---- the transport's events, forwarded ------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A transport of the running loop's kind (uvloop's are not asyncio.Transport subclasses).
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) and peer else "-"
        if not self._guard.admit(self, client):
            self._transport.write(self._guard.refusal)
            self._transport.close()
            self._closed = True
            return
        self._client = client
        self._connections._by_transport[transport] = self
        self._guard.idle(self, client)
        self._arm(self._limits.header_timeout)
        inner = self._inner = self._connections.server()
        inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._inner is None or self._closed:
            return
        if self._drain_left is not None:
            self._drain_left -= len(data)
            if self._drain_left < 0:
                log.debug("closing a connection from %s: the rest of a refused body is too long", self._client)
                self._close()
                return
        elif self._phase != _SERVING:
            if self._phase == _WAITING:
                self._phase = _HEAD
                self._arm(self._limits.header_timeout)
            if self._scan(data):
                return
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._release()
        if self._inner is not None:
            self._inner.connection_lost(exc)

    # ---- what the handler tells it --------------------------------------------------------

    def serving(self) -> None:
        self._phase = _SERVING
        self._head.clear()
        self._disarm()
        if self._client is not None:
            self._guard.busy(self, self._client)

    def served(self, *, body_read: bool = True) -> None:
        if self._closed:
            return
        self._phase = _WAITING if body_read else _SERVING
        if not body_read:
            self._drain_left = self._connections.drain_bytes
        self._served_one = True
        self._arm(self._limits.idle_timeout)
        if self._client is not None:
            self._guard.idle(self, self._client, kept=True)

    # ---- the guard's side -----------------------------------------------------------------

    @property
    def deadline(self) -> float | None:
        return self._deadline

    def expired(self) -> None:
        log.debug("closing a connection from %s: its %s deadline passed", self._client, _PHASES[self._phase])
        self._close()

    def evict(self) -> None:
        log.debug("closing an idle connection from %s to make room", self._client)
        self._close()

    def _close(self) -> None:
        self._release()
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()

    def _release(self) -> None:
        self._disarm()
        if self._client is not None:
            self._guard.release(self, self._client)
            self._client = None
        if self._transport is not None:
            self._connections._by_transport.pop(self._transport, None)

    def _arm(self, timeout: float) -> None:
        self._deadline = asyncio.get_running_loop().time() + timeout
        self._sweep.watch(self)

    def _disarm(self) -> None:
        self._deadline = None
        self._sweep.forget(self)

    # ---- the request head -----------------------------------------------------------------

    def _scan(self, data: bytes) -> bool:
        """Look at ``data``, the next bytes of a request head: ``True`` when the request was
        refused (answered and closed here, aiohttp never sees it)."""
        start = len(self._head)
        self._head += data
        head = bytes(self._head)
        end = head.find(b"\r\n\r\n", max(0, start - 3))
        if end >= 0:
            head = head[: end + 2]
        first_end = head.find(b"\r\n")
        first = head if first_end < 0 else head[:first_end]
        error: ProtocolError | None = None
        if len(first) > MAX_LINE:
            error = _UriTooLongError(f"The request line is over {MAX_LINE} bytes")
        elif first_end < 0:
            method = first.split(b" ", 1)[0]
            if _METHOD_SO_FAR.fullmatch(method) is None:
                error = InvalidRequestError("The request line is not METHOD target HTTP/1.1")
        elif _REQUEST_LINE.fullmatch(first) is None:
            error = InvalidRequestError("The request line is not METHOD target HTTP/1.1")
        else:
            lines = head[first_end + 2 :].split(b"\r\n")
            if any(len(line) > MAX_LINE for line in lines):
                error = _HeaderTooLongError(f"A header line is over {MAX_LINE} bytes")
        if error is None:
            if end >= 0:
                # The head is whole: what follows is its body (or a pipelined request, left to
                # aiohttp's parser), until the handler is done with it.
                self._head.clear()
                self._phase = _SERVING
                self._disarm()
            return False
        self._refuse(first, error)
        return True

    def _refuse(self, first: bytes, error: ProtocolError) -> None:
        parts = first.split(b" ")
        target = parts[1].decode("latin-1") if len(parts) > 1 else "/"
        path = target.split("?", 1)[0][:200]
        body, content_type = self._connections.framing(path)(error)
        log.warning("refused a request from %s with %d: %s", self._client, error.http_status, error.message)
        layer = self._connections.exchanges
        if layer is not None:
            exchange = layer.begin(path, unparsed=True)
            layer.end(self._client, "-", "-", exchange, error.http_status, time.perf_counter(), unparsed=True)
        reason = {400: "Bad Request", 414: "URI Too Long", 431: "Request Header Fields Too Large"}
        transport = self._transport
        self._release()
        if transport is not None:
            transport.write(_answer(error.http_status, reason.get(error.http_status, "Error"), body, content_type))
            transport.close()


_PHASES = {_WAITING: "idle", _HEAD: "header", _SERVING: "serving"}
