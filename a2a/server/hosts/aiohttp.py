"""The aiohttp host: the server core as an aiohttp application, and on a port of its own.

Public aiohttp APIs only. ``application`` makes a ``web.Application`` with one catch-all route
whose handler turns aiohttp's request into an ``HttpRequest``, asks the core, and writes the
answer (``web.Response``, ``web.StreamResponse`` or ``web.WebSocketResponse``). The same
application is what ``A2AServer.app()`` gives an aiohttp user to mount, and what
``A2AServer.start`` serves: there through an ``AppRunner`` whose low-level server (the runner's
``server``, an asyncio protocol factory) is put behind ``connections.GuardedConnection`` for the
connection bounds, listening with ``loop.create_server``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from aiohttp import WSMsgType, web

from ...errors import InvalidRequestError, PayloadTooLargeError
from ..bindings.messages import Answer, Headers, HttpRequest, Reply, Streamed, Upgrade, Write, server_software
from ..bindings.routing import ErrorFraming, status_body
from ..engine.limits import HttpLimits
from ..operations.access_log import ExchangeLayer
from .connections import Connections

__all__ = ["AiohttpHost", "Core"]

#: The core a host serves: an answer for a request.
Core = Callable[[HttpRequest], Awaitable[Answer]]
Hook = Callable[[], Awaitable[None]]

_CATCH_ALL = "/{tail:.*}"
_CATCH_ALL_SHOWN = "/{tail}"


class _Body:
    """A request's body as aiohttp's request reads it. A plain body is read with ``read()``,
    which keeps it (a middleware may have read it first) and applies the application's
    ``client_max_size`` (the server's body limit); an encoded one chunk by chunk from
    ``content``, so that ``read_body`` inflates it in bounded steps as it arrives."""

    __slots__ = ("_request", "exists", "length")

    def __init__(self, request: web.BaseRequest) -> None:
        self._request = request
        self.length = request.content_length
        self.exists = request.body_exists

    async def chunks(self) -> AsyncIterator[bytes]:
        request = self._request
        encoding = request.headers.get("Content-Encoding", "").strip().lower()
        if not encoding or encoding == "identity":
            try:
                whole = await request.read()
            except web.HTTPRequestEntityTooLarge as exc:
                raise PayloadTooLargeError(
                    f"Request body is over the limit of {request.client_max_size} bytes"
                ) from exc
            if whole:
                yield whole
            return
        content = request.content
        while chunk := await content.readany():
            yield chunk


class _Channel:
    """A ``WebSocketChannel`` over aiohttp's ``WebSocketResponse``."""

    __slots__ = ("_max", "_ws")

    def __init__(self, ws: web.WebSocketResponse, max_message_bytes: int) -> None:
        self._ws = ws
        self._max = max_message_bytes

    async def receive(self) -> str | bytes | None:
        while True:
            message = await self._ws.receive()
            if message.type is WSMsgType.TEXT or message.type is WSMsgType.BINARY:
                data: str | bytes = message.data
                if len(data) > self._max and (isinstance(data, bytes) or len(data.encode()) > self._max):
                    await self.close(1009, f"message over the limit of {self._max} bytes")
                    return None
                return data
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return None

    async def send(self, data: bytes) -> None:
        await self._ws.send_str(data.decode())

    async def close(self, code: int, reason: str) -> None:
        await self._ws.close(code=code, message=reason.encode())


class _ExpectationFailed(InvalidRequestError):
    http_status = 417


def _middleware(given: Any) -> Any:
    """A middleware of the user's, marked as aiohttp's new-style kind (``web.middleware``) on a
    function of ours: the given one may be a bound method, which takes no attribute."""

    async def run(request: web.Request, handler: Any) -> web.StreamResponse:
        response: web.StreamResponse = await given(request, handler)
        return response

    return web.middleware(run)


async def _gone(_data: bytes) -> None:
    raise ConnectionResetError("the client is gone")


class AiohttpHost:
    """One server core as an aiohttp application (see the module's docstring)."""

    def __init__(
        self,
        core: Core,
        *,
        start: Hook,
        stop: Sequence[Hook],
        limits: HttpLimits,
        exchanges: ExchangeLayer | None,
        middlewares: Sequence[Any] = (),
        framing: Callable[[str], ErrorFraming] = lambda _path: status_body,
        max_body: int = 0,
    ) -> None:
        self._max_body = max_body
        self._core = core
        self._start = start
        self._stop = stop
        self._limits = limits
        self._exchanges = exchanges
        self._middlewares = tuple(middlewares)
        self._framing = framing
        self._server_header = server_software()
        #: Set while ``listen`` serves: the guarded connections, told when a request is served.
        self.connections: Connections | None = None
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None

    # ---- the application --------------------------------------------------------------------

    def application(self) -> web.Application:
        """A new aiohttp application serving the core at whatever prefix it is mounted."""
        mount: list[str] = [""]
        middlewares = [_middleware(m) for m in self._middlewares]
        layer = self._exchanges
        if layer is not None:

            async def exchange(request: web.Request, handler: Any) -> web.StreamResponse:
                return await layer.around(request, handler, mount[0])

            # Outermost, so that the line and the status count include what the others answer.
            middlewares.insert(0, web.middleware(exchange))
        # As the root application (``start``, or ``web.run_app(server.app())``), its server
        # leaves request bodies to ``read_body`` to inflate, under the decoded-size limit, and
        # reads the rest of a refused body for at most ``drain_timeout``; mounted in another
        # application, the other's server settings apply (``HttpRequest.body_decoded``).
        app = web.Application(
            client_max_size=self._max_body or 1024**2,
            middlewares=middlewares,
            handler_args={"auto_decompress": False, "lingering_time": self._limits.drain_timeout},
        )
        route = app.router.add_route("*", _CATCH_ALL, self._handler(mount), expect_handler=self._expect(mount))

        async def on_startup(_app: web.Application) -> None:
            # By now the application is mounted: aiohttp has put the prefix in front of the route.
            mount[0] = route.resource.canonical.removesuffix(_CATCH_ALL_SHOWN) if route.resource else ""
            await self._start()

        async def on_shutdown(_app: web.Application) -> None:
            for hook in self._stop:
                await hook()

        app.on_startup.append(on_startup)
        app.on_shutdown.append(on_shutdown)
        return app

    def _handler(self, mount: list[str]) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            connections = self.connections
            transport = request.transport
            if connections is not None:
                connections.serving(transport)
            try:
                answer = await self._core(self._request(request, mount[0]))
                response = await self._respond(request, answer)
                if not request.content.is_eof() and isinstance(response, web.Response):
                    # Answered before its body was read whole (413, 401 ...): the rest is read
                    # for at most ``drain_timeout`` and thrown away, then the connection closes.
                    response.force_close()
                return response
            finally:
                if connections is not None:
                    connections.served(transport, body_read=request.content.is_eof())

        return handle

    def _expect(self, mount: list[str]) -> Callable[[web.Request], Awaitable[web.StreamResponse | None]]:
        async def expect(request: web.Request) -> web.StreamResponse | None:
            """``Expect``: ``100-continue`` asks for the body (an interim answer); anything else
            is 417, in the JSON of the endpoint the path names."""
            expectation = request.headers.get("Expect", "")
            if expectation.lower() == "100-continue":
                if request.version >= (1, 1):
                    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return None
            error = _ExpectationFailed(f"Unknown Expect: {expectation[:100]}")
            path = self._request(request, mount[0]).route_path
            body, content_type = self._framing(path)(error)
            return self._response(Reply(417, content_type, body))

        return expect

    @staticmethod
    def _request(request: web.Request, mount: str) -> HttpRequest:
        raw = request.rel_url.raw_path
        if mount and raw.startswith(mount):
            raw = raw[len(mount) :] or "/"
        return HttpRequest(
            request.method,
            raw,
            request.query_string,
            Headers.of(request.headers.items()),
            _Body(request),
            request.remote,
            request.scheme,
            request.host,
            mount,
            # Mounted, the application we are in decides whether aiohttp inflates bodies.
            None if mount else False,
        )

    async def _respond(self, request: web.Request, answer: Answer) -> web.StreamResponse:
        if isinstance(answer, Reply):
            return self._response(answer)
        if isinstance(answer, Streamed):
            return await self._stream(request, answer)
        return await self._upgrade(request, answer)

    def _response(self, reply: Reply) -> web.Response:
        headers = {"Content-Type": reply.content_type, "Server": self._server_header}
        if reply.headers:
            headers.update(reply.headers)
        return web.Response(status=reply.status, body=reply.body, headers=headers)

    async def _stream(self, request: web.Request, answer: Streamed) -> web.StreamResponse:
        response = web.StreamResponse(status=answer.status, headers={**answer.headers, "Server": self._server_header})
        write: Write = _gone
        with contextlib.suppress(ConnectionError):
            await response.prepare(request)
            write = response.write
        await answer.produce(write)  # it ends the stream's events even when the client is gone
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
        return response

    async def _upgrade(self, request: web.Request, answer: Upgrade) -> web.StreamResponse:
        # aiohttp closes a message over its limit with 1009 and no reason: its limit is twice
        # ours, and the channel closes one over ours with a reason that names the limit.
        limit = answer.max_message_bytes
        ws = web.WebSocketResponse(max_msg_size=2 * limit, heartbeat=answer.heartbeat, compress=False)
        if not ws.can_prepare(request).ok:
            return self._response(answer.refusal)
        ws.headers.update(answer.headers)
        ws.headers["Server"] = self._server_header
        await ws.prepare(request)
        await answer.serve(_Channel(ws, limit))
        if not ws.closed:
            await ws.close()
        return ws

    # ---- on a port of its own ---------------------------------------------------------------

    async def listen(self, host: str, port: int, *, shutdown_timeout: float) -> tuple[str, int]:
        """Serve on ``host:port`` (``0``: a free one) behind the connection guard; the address."""
        limits = self._limits
        # handler_cancellation: a client that goes away cancels its request's handler, so a
        # stream left before it saw a task id cancels the run nobody else can reach.
        runner = web.AppRunner(
            self.application(),
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            keepalive_timeout=limits.idle_timeout,
            shutdown_timeout=shutdown_timeout,
        )
        await runner.setup()  # the application's start-up: the core's start steps
        self._runner = runner
        assert runner.server is not None
        connections = self.connections = Connections(
            runner.server, limits, self._framing, self._exchanges, max_body=self._max_body
        )
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(connections, host, port, reuse_address=True)
        bound = self._listener.sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def close(self) -> None:
        """Stop listening, run the stop steps, let open requests finish (``shutdown_timeout``)."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.connections is not None:
            self.connections.close()
            self.connections = None
