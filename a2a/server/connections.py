"""Connections under bounds: how long a peer may take, how many connections it may hold, and a
JSON answer to a request aiohttp cannot parse.

One mechanism at the connection, where aiohttp's low-level server makes a protocol per accepted
socket: ``GuardedServer`` (a ``web.Server``) makes ``_GuardedConnection``s (aiohttp's
``RequestHandler``), which

- keep one deadline per connection, by phase (checked by the server's one ``DeadlineSweep``,
  not a timer per connection): the request's headers must be complete within
  ``header_timeout`` of the connection's start (or of the first byte of a following request),
  its body within ``body_timeout`` of its headers (else 408), and a kept-alive connection must
  start its next request within ``idle_timeout``. A request being served has no deadline: a
  blocking send, an SSE stream or a WebSocket (upgraded: it keeps its own heartbeat) lasts
  as long as it needs;
- are counted by ``ConnectionGuard``, in total and per client address. At a cap the connection
  idle the longest (waiting for a request, not serving one; one kept alive after an answer
  only if no other is idle) is closed to make room, so idle sockets cannot lock clients out;
  when none is idle the newcomer is answered 503 with ``Retry-After`` and closed, before the
  process runs out of file descriptors;
- answer what aiohttp's parser refuses (a URL over 8 KiB, a header too long, a bad request line)
  with a JSON error framed as the endpoint the path names (414, 431 or 400), logged in one line.

The fast path. A request aiohttp's parser has read whole (headers and body, in the reads so far)
that one of ``fast_routes`` answers without aiohttp's request machinery (a unary JSON-RPC call,
``JsonRpcBinding.unary``; REST's ``message:send``, ``RestBinding.unary``) is answered by the
connection itself: no ``web.Request``, no task of aiohttp's per request, no response object; the
answer's head and body go out in one write. The parser, the limits, the deadlines, the guard and
the access layer are the same for both paths; only who serves the parsed request differs. It
applies only to a plain ``POST`` on HTTP/1.1 at the route's exact path (no query), kept alive,
with no ``Expect``, ``Upgrade``, ``Content-Encoding`` or chunked body, within the body limit,
when nothing else is being served on the connection (answers stay in order); everything else
(and whatever the route hands back, ``None``: a stream, a 0.3 request) is aiohttp's, as before.

Request bodies are not inflated by aiohttp here (``auto_decompress=False``: see
``request_body``). A request answered before its body was read whole has the rest thrown away,
never inflated, for at most ``drain_timeout`` seconds and as many bytes as the body limit (at
least 1 MiB): a client that sends its whole body before reading, as most do, then gets its
answer instead of a reset; past either bound, the connection is closed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from aiohttp import web
from aiohttp.http import HttpVersion11
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong
from aiohttp.http_parser import RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD, StreamReader
from aiohttp.web_protocol import ERROR as PARSER_REFUSED
from aiohttp.web_protocol import RequestHandler

from ..errors import InternalError, InvalidRequestError, ProtocolError
from .access_log import CLIENT_CLOSED, ExchangeLayer
from .deadline_sweep import DeadlineSweep, resolution_for
from .json_answer import FastRoute, Reply, answer_head
from .limits import HttpLimits
from .observe import EXCHANGE, Exchange
from .request_body import BodyTimeout
from .routing import ErrorFraming, status_body

__all__ = ["ConnectionGuard", "GuardedServer", "TooManyConnectionsError"]

log = logging.getLogger("a2a.server")

#: How much of a request's start is kept, to frame an error about it (its method and path).
_HEAD_BYTES = 256
#: Bytes of a refused body always thrown away (rather than reset), whatever the body limit.
_DRAIN_BYTES_FLOOR = 1024 * 1024
#: How often refusals for too many connections are logged (a flood would flood the log).
_REFUSAL_LOG_INTERVAL = 10.0

# The phases of a connection, each with its deadline (or none).
_WAITING = 0  # for the first byte of a request (kept alive): idle_timeout
_HEADERS = 1  # reading a request's headers: header_timeout from the phase's start
_BODY = 2  # reading its body: body_timeout from the end of the headers
_SERVING = 3  # the request is served (or the connection upgraded): no deadline
_TIMED_OUT = 4  # its body ran out of time: closed if not answered soon
_DRAINING = 5  # answered before its body was read: the rest is thrown away, within bounds


class TooManyConnectionsError(ProtocolError):
    code, http_status, grpc_status, reason = -32603, 503, "UNAVAILABLE", "TOO_MANY_CONNECTIONS"
    default_message = "The server holds too many connections: retry later"


class _UriTooLongError(InvalidRequestError):
    http_status = 414


class _HeaderTooLongError(InvalidRequestError):
    http_status = 431


class _HandlerTimeoutError(InternalError):
    http_status = 504


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
        self._idle_fresh: dict[_GuardedConnection, None] = {}
        self._idle_kept: dict[_GuardedConnection, None] = {}
        #: Per address, the same (the value: kept alive).
        self._idle_by_client: dict[str, dict[_GuardedConnection, bool]] = {}
        self.refused = 0
        self.evicted = 0
        self._refusals_logged_at = -_REFUSAL_LOG_INTERVAL
        self._refusals_unlogged = 0
        body = status_body(TooManyConnectionsError())[0]
        self.refusal = (
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            + f"Retry-After: {limits.retry_after}\r\nContent-Length: {len(body)}\r\n".encode()
            + b"Connection: close\r\n\r\n"
            + body
        )

    def admit(self, conn: _GuardedConnection, client: str) -> bool:
        """Count ``conn`` in, closing an idle connection to make room if a cap is reached;
        ``False`` when there is no room."""
        if self._by_client.get(client, 0) >= self.per_client and not self._evict(self._oldest_of(client)):
            return self._refuse(client, "from this address")
        if self.total >= self.cap and not (self._evict(self._idle_fresh) or self._evict(self._idle_kept)):
            return self._refuse(client, "in total")
        self.total += 1
        self._by_client[client] = self._by_client.get(client, 0) + 1
        return True

    def release(self, conn: _GuardedConnection, client: str) -> None:
        self.busy(conn, client)
        self.total -= 1
        left = self._by_client[client] - 1
        if left:
            self._by_client[client] = left
        else:
            del self._by_client[client]

    def idle(self, conn: _GuardedConnection, client: str, *, kept: bool = False) -> None:
        """``conn`` waits for a request: it may be closed to make room (the longest idle first,
        a connection ``kept`` alive after an answer only when no other is idle: a flood of new
        connections does not push out the clients that are being served)."""
        self._idle_fresh.pop(conn, None)
        self._idle_kept.pop(conn, None)
        (self._idle_kept if kept else self._idle_fresh)[conn] = None
        mine = self._idle_by_client.setdefault(client, {})
        mine.pop(conn, None)
        mine[conn] = kept

    def busy(self, conn: _GuardedConnection, client: str) -> None:
        if self._idle_fresh.pop(conn, 0) is None or self._idle_kept.pop(conn, 0) is None:
            mine = self._idle_by_client[client]
            del mine[conn]
            if not mine:
                del self._idle_by_client[client]

    def _oldest_of(self, client: str) -> _GuardedConnection | None:
        """The connection of ``client`` to close to make room (as in total: one kept alive last)."""
        mine = self._idle_by_client.get(client)
        if not mine:
            return None
        return next((conn for conn, kept in mine.items() if not kept), None) or next(iter(mine))

    def _evict(self, idle: dict[_GuardedConnection, None] | _GuardedConnection | None) -> bool:
        if not idle:
            return False
        victim = idle if isinstance(idle, _GuardedConnection) else next(iter(idle))
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


class GuardedServer(web.Server):
    """aiohttp's low-level server, making guarded connections (see the module's docstring)."""

    def __init__(
        self,
        handler: Any,
        *,
        limits: HttpLimits,
        max_body: int,
        framing: Callable[[str], ErrorFraming],
        exchanges: ExchangeLayer | None = None,
        fast_routes: Mapping[str, FastRoute] | None = None,
        **kwargs: Any,
    ) -> None:
        # No "lingering" (aiohttp would parse and inflate the rest of a refused body): the
        # connection throws it away itself. Not aiohttp's keep-alive timer either: the
        # connection's own deadline covers idleness (``keepalive_timeout=0`` arms none at the
        # connection's start; ``_NO_TIMER`` stands in after each answer).
        super().__init__(handler, auto_decompress=False, lingering_time=0, keepalive_timeout=0, **kwargs)
        self.limits = limits
        #: Every connection's deadline, checked by one timer (created on the first connection).
        self.sweep: DeadlineSweep | None = None
        #: The most bytes of a refused body thrown away before the connection is closed.
        self.drain_bytes = max(max_body, _DRAIN_BYTES_FLOOR)
        self.max_body = max_body
        #: The requests the connections answer themselves, by exact path (see the module's
        #: docstring); ``None``: none.
        self.fast_routes = fast_routes or None
        self.guard = ConnectionGuard(limits)
        #: How an error is framed at a path (the dispatcher's framing).
        self.framing = framing
        #: The access log and the status counts (``None``: neither is on): each connection
        #: opens its requests' exchanges and ends them (see ``access_log``).
        self.exchanges = exchanges

    def __call__(self) -> _GuardedConnection:
        if self.sweep is None:
            self.sweep = DeadlineSweep(self._loop, resolution_for(self.limits))
        return _GuardedConnection(self, self.sweep, loop=self._loop, **self._kwargs)

    async def shutdown(self, timeout: float | None = None) -> None:
        await super().shutdown(timeout)
        if self.sweep is not None:
            self.sweep.close()


class _NoTimer:
    """Stands in for aiohttp's keep-alive timer, which aiohttp arms after an answer only when it
    has none: a timer handle per connection, alive as long as the connection (ours is the
    deadline sweep). Cancelling it does nothing; it never runs."""

    __slots__ = ()

    def cancel(self) -> None:
        pass


_NO_TIMER = cast(asyncio.Handle, _NoTimer())


class _GuardedConnection(RequestHandler):
    __slots__ = (
        "_body",
        "_client",
        "_deadline",
        "_drain_left",
        "_exchange",
        "_exchange_started",
        "_exchanges",
        "_fast_routes",
        "_fast_task",
        "_guard",
        "_head",
        "_limits",
        "_line",
        "_make",
        "_phase",
        "_server",
        "_sweep",
        "_unparsed",
    )

    def __init__(self, manager: GuardedServer, sweep: DeadlineSweep, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self._keepalive_handle = _NO_TIMER
        self._server = manager
        self._sweep = sweep
        self._guard = manager.guard
        self._limits = manager.limits
        self._client: str | None = None  # set once counted in
        self._phase = _HEADERS
        self._deadline: float | None = None
        self._body: StreamReader | None = None
        self._drain_left = 0
        self._head = b""
        #: The exchange of the request being served, until its line is written.
        self._exchange: Exchange | None = None
        #: What its line names: the client's address, the method and the (raw) path.
        self._line: tuple[str | None, str, str] = ("", "-", "-")
        self._exchange_started = 0.0
        self._unparsed = False
        self._exchanges = manager.exchanges
        self._make: Callable[..., web.BaseRequest] | None = None
        self._fast_routes = manager.fast_routes
        #: The request being answered on the fast path.
        self._fast_task: asyncio.Task[None] | None = None
        if self._exchanges is not None:
            self._make = self._request_factory
            self._request_factory = self._make_request

    # ---- counting in and out -----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        client = str(peer[0]) if isinstance(peer, tuple) else ""
        if not self._guard.admit(self, client):
            # Answered before its request is read: the answer does not depend on it, and
            # reading it would hold the descriptor the cap is there to save.
            self._force_close = True
            self._manager = None  # aiohttp's connection_lost then has nothing to undo
            assert isinstance(transport, asyncio.Transport)
            transport.write(self._guard.refusal)
            transport.close()
            return
        self._client = client
        super().connection_made(transport)
        self._guard.idle(self, client)
        self._arm(self._limits.header_timeout)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._exchange is not None:
            # Gone before its answer was written whole (its handler is cancelled next).
            self._end_exchange(CLIENT_CLOSED)
        self._release()
        if self._fast_task is not None:
            self._fast_task.cancel()  # as aiohttp cancels its handlers (``handler_cancellation``)
        super().connection_lost(exc)

    def _release(self) -> None:
        if self._client is not None:
            self._guard.release(self, self._client)
            self._client = None
        self._disarm()

    def evict(self) -> None:
        """Closed to make room for a new connection (this one was idle the longest)."""
        log.debug("closing an idle connection from %s to make room", self._client)
        self._release()
        self.force_close()

    # ---- the exchange (access log, status counts) ----------------------------------------

    def _make_request(self, *args: Any) -> web.BaseRequest:
        """aiohttp's request factory, called just before the request's task is made: the
        exchange made current here is the one that task (a copy of this context) serves."""
        assert self._make is not None and self._exchanges is not None
        request: web.BaseRequest = self._make(*args)
        # What the parser refused (``handle_error``) is served as aiohttp's placeholder request
        # (``UNKNOWN /``): its line shows no method, path or binding rather than that one's.
        self._unparsed = args[0] is PARSER_REFUSED
        raw_path = request.rel_url.raw_path
        self._exchange = self._exchanges.begin(raw_path, upgrade="Upgrade" in request.headers, unparsed=self._unparsed)
        # Set in this connection's task: the request's task, made next, runs in a copy of its
        # context (and the next request's replaces it here).
        EXCHANGE.set(self._exchange)
        self._exchange_started = time.perf_counter()
        self._line = (request.remote, request.method, raw_path)
        return request

    def _end_exchange(self, status: int) -> None:
        exchange, self._exchange = self._exchange, None
        assert exchange is not None and self._exchanges is not None
        remote, method, path = self._line
        self._exchanges.end(remote, method, path, exchange, status, self._exchange_started, unparsed=self._unparsed)

    # ---- phases ------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._phase == _DRAINING:
            self._drain(data)
            return
        started = False
        if self._phase == _WAITING and data:
            # A request starts: its headers' deadline is armed below, unless they are complete
            # in this very read (most requests), which would disarm it at once.
            self._phase, started = _HEADERS, True
            self._head = data[:_HEAD_BYTES]
        elif self._phase == _HEADERS and len(self._head) < _HEAD_BYTES:
            self._head += data[: _HEAD_BYTES - len(self._head)]
        parsed = self._request_count
        # aiohttp's loop waiting for a request: not woken by its parser, but by ``_take``,
        # which may answer the request on the fast path instead.
        waiter = self._waiter
        held = self._fast_routes is not None and waiter is not None and not waiter.done()
        if held:
            self._waiter = None
        try:
            super().data_received(data)
        finally:
            if held:
                self._waiter = waiter
        if started and self._request_count == parsed:
            self._arm(self._limits.header_timeout)
        if self._request_count != parsed and self._messages:
            # A request's headers are complete: its body, if any, is what is read next.
            if self._client is not None:
                self._guard.busy(self, self._client)
            message, payload = self._messages[-1]
            if payload is not EMPTY_PAYLOAD and not payload.is_eof():
                self._phase, self._body = _BODY, payload
                self._arm(self._limits.body_timeout)
            else:
                # What the parser refused is answered (``handle_error``) framed by its path.
                self._serving(keep_head=not isinstance(message, RawRequestMessage))
            if held and self._fast_task is None:
                self._take()
        elif self._phase == _BODY and self._body is not None and self._body.is_eof():
            self._serving()

    # ---- the fast path ------------------------------------------------------------------

    def _take(self) -> None:
        """Serve the request the parser queued while aiohttp's loop waited: here, when it is
        the only one and the fast path answers it; else by aiohttp's loop, woken."""
        if len(self._messages) == 1:
            message, payload = self._messages[0]
            answering = self._fast_answer(message, payload)
            if answering is not None:
                self._messages.popleft()
                self._serve_fast(cast(RawRequestMessage, message), answering)
                return
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _fast_answer(self, message: Any, payload: StreamReader) -> Awaitable[Reply] | None:
        """The answer the fast path gives ``message`` (see the module's docstring), or ``None``."""
        assert self._fast_routes is not None
        if type(message) is not RawRequestMessage:
            return None
        route = self._fast_routes.get(message.path)
        if (
            route is None
            or message.method != "POST"
            or message.version != HttpVersion11
            or message.should_close
            or message.upgrade
            or message.chunked
            or payload is EMPTY_PAYLOAD
            or not payload.is_eof()
        ):
            return None
        headers = message.headers
        if "Expect" in headers or "Content-Encoding" in headers:
            return None
        # The body as the parser fed it, left in place: what the route hands back (``None``)
        # is served by aiohttp's path, which reads it.
        buffered = getattr(payload, "_buffer", None)
        if buffered is None or getattr(payload, "_buffer_offset", None):
            return None
        body = b"".join(buffered)
        if len(body) > self._server.max_body:
            return None  # refused with 413 by aiohttp's path, which frames it
        return route(headers, body)

    def _serve_fast(self, message: RawRequestMessage, answering: Awaitable[Reply]) -> None:
        parser = self._parser
        if parser is not None and hasattr(parser, "message_consumed"):
            parser.message_consumed()  # aiohttp >= 3.14 counts the messages it queued
        if self._manager is not None:
            self._manager.requests_count += 1
        exchange = None
        if self._exchanges is not None:
            self._unparsed = False
            exchange = self._exchange = self._exchanges.begin(message.path)
            self._exchange_started = time.perf_counter()
            self._line = (self._client, message.method, message.path)
        # In progress from now: a shutdown that starts before the task's first step waits for it.
        self._request_in_progress = True
        self._fast_task = self._loop.create_task(self._answer_fast(message.path, answering, exchange))

    async def _answer_fast(self, path: str, answering: Awaitable[Reply], exchange: Exchange | None) -> None:
        if exchange is not None:
            EXCHANGE.set(exchange)  # this task's own context: what serves the request sees it
        close = False
        try:
            try:
                status, content_type, body, headers = await answering
                head = answer_head(status, content_type, len(body), headers)
            except Exception:  # noqa: BLE001 - a fault of ours: answered as such, the connection closed
                self.log_exception("Error handling request from %s", self._client)
                error = InternalError()
                status, close = error.http_status, True
                body, content_type = self._server.framing(path)(error)
                head = answer_head(status, content_type, len(body), {"Connection": "close"})
            transport = self.transport
            if transport is None or transport.is_closing():
                return  # its client left: ``connection_lost`` ended the exchange
            transport.write(head + body)
            if self._exchange is not None:
                self._end_exchange(status)
            if self._paused:
                await self._drain_helper()  # a client that does not read holds its next request
        except ConnectionError:
            return
        finally:
            self._fast_task = None
            self._request_in_progress = False  # aiohttp's shutdown waits for this (``_handler_waiter``)
            done = self._handler_waiter
            if done is not None and not done.done():
                done.set_result(None)
        if close or self._force_close or self._close:
            self.force_close()
        elif self._messages:
            self._take()
        elif self._client is not None:
            self._waiting()

    def _serving(self, *, keep_head: bool = False) -> None:
        """The request is served: no deadline, and (unless an error is still to be framed by
        its path) no start of it kept: a long stream holds neither."""
        self._phase, self._body = _SERVING, None
        if not keep_head:
            self._head = b""
        self._disarm()

    async def finish_response(
        self, request: web.BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        # Answered before its body was read whole (refused, or timed out): the connection ends
        # after this answer, and says so.
        unread = self._client is not None and not self._upgraded and not request.content.is_eof()
        if unread and not resp.prepared:
            resp.force_close()
        try:
            answered = await super().finish_response(request, resp, start_time)
        except Exception:  # aiohttp's ``start`` logs it and closes the connection
            if self._exchange is not None:
                self._end_exchange(500)
            raise
        if self._exchange is not None:
            # The answer is written, or its client went away as it was (a write that failed,
            # or the transport closing after one did; a WebSocket's closes with its end).
            transport = self.transport
            reset = answered[1] or transport is None or (transport.is_closing() and resp.status != 101)
            self._end_exchange(CLIENT_CLOSED if reset else resp.status)
        if self._client is None or self._upgraded:
            return answered
        if unread:
            self._discard_rest()
        elif not self._messages:
            self._waiting()
        return answered

    def _waiting(self) -> None:
        """Kept alive: waiting for the next request."""
        assert self._client is not None
        self._phase, self._body, self._head = _WAITING, None, b""
        self._guard.idle(self, self._client, kept=True)
        self._arm(self._limits.idle_timeout)

    def _discard_rest(self) -> None:
        """Throw away what still arrives of the answered request's body, within bounds, then
        close: closing at once, with its bytes unread, would reset the connection, and the
        client that is still sending (most send the whole body before they read) would lose
        the answer."""
        assert self._client is not None
        if self._limits.drain_timeout <= 0:
            self.force_close()
            return
        # aiohttp's loop then ends without reading (its "lingering" would parse, and inflate)
        # and leaves the transport to us.
        self._force_close = True
        self._phase, self._body, self._drain_left = _DRAINING, None, self._server.drain_bytes
        self._guard.idle(self, self._client)  # serving nothing: it may make room
        self._arm(self._limits.drain_timeout)

    def _drain(self, data: bytes) -> None:
        self._drain_left -= len(data)
        if self._drain_left < 0:
            log.info("closing a connection from %s: the rest of a refused body is too long to read", self._client)
            self.force_close()

    # ---- the deadline ------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._deadline = self._loop.time() + seconds
        self._sweep.watch(self)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline = None
            self._sweep.forget(self)

    @property
    def deadline(self) -> float | None:
        return self._deadline

    def expired(self) -> None:
        """The sweep found the deadline passed (it no longer watches this connection)."""
        self._deadline = None
        if self.transport is None:
            return
        if self._phase == _BODY and self._body is not None:
            # The handler reading it answers 408 (``request_body``); the connection then
            # throws the rest away and closes. One whose handler does not answer soon is closed.
            log.info("a request body from %s did not arrive within %g s", self._client, self._limits.body_timeout)
            self._body.set_exception(BodyTimeout())
            self._phase, self._body = _TIMED_OUT, None
            self._arm(min(self._limits.header_timeout, 5.0))
        elif self._phase == _DRAINING:
            self.force_close()
        elif self._phase in (_WAITING, _HEADERS) and not self._request_in_progress:
            if self._phase == _HEADERS:
                log.info("closing a connection from %s: no complete request headers within its time", self._client)
            self.force_close()
        elif self._phase == _TIMED_OUT:
            self.force_close()

    # ---- what the parser refuses -------------------------------------------------------

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's answer to a request it could not parse or serve, as a JSON error framed as
        the endpoint at its path frames errors; one log line for bad input, a traceback only
        for a bug (an exception that escaped a handler)."""
        error: ProtocolError
        if isinstance(exc, HttpProcessingError):
            detail = (exc.message or type(exc).__name__).splitlines()[0][:200]
            if isinstance(exc, LineTooLong):
                limit = exc.args[1] if len(exc.args) > 1 else "the limit of"
                if self._in_target(exc):
                    error = _UriTooLongError(f"The request target (URL) is over {limit} bytes")
                else:
                    error = _HeaderTooLongError(f"A request header is over {limit} bytes")
            else:
                error = InvalidRequestError(f"Malformed HTTP request: {detail}")
            log.warning("bad HTTP request from %s: %s", request.remote, error.message)
        elif status == 504:
            error = _HandlerTimeoutError("The request timed out")
            log.warning("a request from %s timed out in its handler", request.remote)
        else:
            error = InternalError()
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
        if request.writer.output_size > 0:
            # Nothing more can be answered: aiohttp's ``start`` closes the connection. Its line
            # says what went wrong, not that the client left.
            if self._exchange is not None:
                self._end_exchange(error.http_status)
            raise ConnectionError("Response is sent already, cannot send another response with the error message")
        path = self._path() if isinstance(exc, HttpProcessingError) else request.path
        body, content_type = self._server.framing(path)(error)
        response = web.Response(status=error.http_status, body=body, content_type=content_type)
        response.force_close()
        return response

    def _path(self) -> str:
        parts = self._head.split(b" ", 2)
        if len(parts) < 2:
            return "/"
        return parts[1].split(b"?", 1)[0].decode("latin-1")

    def _in_target(self, exc: LineTooLong) -> bool:
        """Whether the line over the limit is the request target (else a header)."""
        line = exc.args[0] if exc.args else b""
        start = (line.encode("latin-1", "replace") if isinstance(line, str) else line)[:32]
        parts = self._head.split(b" ", 2)
        return bool(start) and len(parts) >= 2 and parts[1][:32].startswith(start.rstrip(b"."))
