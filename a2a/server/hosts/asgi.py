"""The ASGI host: the server core as an ASGI application (HTTP, WebSocket and lifespan).

``A2AServer(agent).asgi()`` runs under any ASGI server (uvicorn, hypercorn, granian) and mounts
under a prefix in FastAPI or Starlette (``app.mount("/agents/orders", server.asgi())``): the
card's URLs follow the prefix (the scope's ``root_path``) and the request's ``Host``.

Start and stop. As the root application, the server's ``lifespan`` messages start the core (the
handler, the stores, the push worker) and stop it. Frameworks do not pass lifespan messages to
mounted applications, so a mounted server starts itself on its first request; to stop it cleanly
(open runs end CANCELED, stores closed), enter ``lifespan()`` from the parent's lifespan
(``FastAPI(lifespan=server_app.lifespan)``, or inside your own).

Bounds. The body limit, the decoded-size limit of an encoded body, its inflation ratio and the
body's deadline, the JSON depth, and the WebSocket message size are enforced here, inside the
application; the bounds of the connection itself (header and idle timeouts, connection caps,
header sizes) belong to the ASGI server's own settings: see docs/deployment.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from typing import Any
from urllib.parse import quote

from ..bindings.messages import Answer, Headers, HttpRequest, Reply, Upgrade, server_software
from ..engine.observe import EXCHANGE
from ..operations.access_log import CLIENT_CLOSED, ExchangeLayer

__all__ = ["AsgiApp"]

log = logging.getLogger("a2a.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Core = Callable[[HttpRequest], Awaitable[Answer]]
Hook = Callable[[], Awaitable[None]]

#: Close codes (RFC 6455 §7.4.1).
_POLICY = 1008
_TOO_BIG = 1009


class _Gone(ConnectionResetError):
    """The client went away (``http.disconnect``)."""


class _Body:
    """A request's body as ASGI's ``http.request`` messages carry it."""

    __slots__ = ("_receive", "done", "exists", "length")

    def __init__(self, receive: Receive, headers: Headers) -> None:
        self._receive = receive
        length = headers.get("content-length")
        self.length = int(length) if length is not None and length.isdigit() else None
        self.exists = bool(self.length) or "chunked" in (headers.get("transfer-encoding") or "")
        #: Set once the body was read whole (at once when there is none): what ``receive``
        #: brings after that is the client's leaving.
        self.done = asyncio.Event()
        if not self.exists:
            self.done.set()

    async def chunks(self) -> AsyncIterator[bytes]:
        while not self.done.is_set():
            message = await self._receive()
            if message["type"] == "http.disconnect":
                raise _Gone("the client went away while sending its body")
            if not message.get("more_body", False):
                self.done.set()
            chunk = message.get("body", b"")
            if chunk:
                yield chunk


class _Channel:
    """A ``WebSocketChannel`` over ASGI's ``websocket.*`` messages."""

    __slots__ = ("_closed", "_max", "_receive", "_send")

    def __init__(self, receive: Receive, send: Send, max_message_bytes: int) -> None:
        self._receive = receive
        self._send = send
        self._max = max_message_bytes
        self._closed = False

    async def receive(self) -> str | bytes | None:
        while not self._closed:
            message = await self._receive()
            kind = message["type"]
            if kind == "websocket.disconnect":
                self._closed = True
                return None
            if kind != "websocket.receive":
                continue
            data: str | bytes | None = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            size = len(data) if isinstance(data, bytes) else len(data.encode())
            if size > self._max:
                await self.close(_TOO_BIG, f"message over the limit of {self._max} bytes")
                return None
            return data
        return None

    async def send(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionResetError("the WebSocket is closed")
        await self._send({"type": "websocket.send", "text": data.decode()})

    async def close(self, code: int, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # the server may have closed it already
            await self._send({"type": "websocket.close", "code": code, "reason": reason})


def _path_under(scope: Scope) -> tuple[str, str]:
    """The request's raw path under the mount point, and the mount point (``root_path``)."""
    mount = str(scope.get("root_path") or "").rstrip("/")
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if isinstance(raw, bytes) else quote(str(scope.get("path") or "/"))
    path = path.split("?", 1)[0]
    if mount and path.startswith(mount):
        # Starlette's Mount keeps the whole path and extends root_path; others strip it.
        path = path[len(mount) :]
    return path or "/", mount


def _request(scope: Scope, receive: Receive, method: str) -> HttpRequest:
    headers = Headers.of((name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"])
    path, mount = _path_under(scope)
    server = scope.get("server")
    host = headers.get("host") or (f"{server[0]}:{server[1]}" if server else "localhost")
    client = scope.get("client")
    scheme = str(scope.get("scheme") or "http")
    return HttpRequest(
        method,
        path,
        scope.get("query_string", b"").decode("latin-1"),
        headers,
        _Body(receive, headers),
        str(client[0]) if client else None,
        {"ws": "http", "wss": "https"}.get(scheme, scheme),
        host,
        mount,
    )


def _head(status: int, content_type: str | None, extra: Any, length: int | None) -> Message:
    headers = [(b"server", server_software().encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type.encode("latin-1")))
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    if extra:
        headers += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in extra.items()]
    return {"type": "http.response.start", "status": status, "headers": headers}


class AsgiApp:
    """One server core as an ASGI application (see the module's docstring)."""

    def __init__(
        self, core: Core, *, start: Hook, stop: Sequence[Hook], exchanges: ExchangeLayer | None = None
    ) -> None:
        self._core = core
        self._start = start
        self._stop = stop
        self._exchanges = exchanges
        self._started: asyncio.Task[None] | None = None
        self._stopped = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        await self.started()
        if kind == "http":
            await self._exchange(scope, receive, send, self._http)
        elif kind == "websocket":
            await self._exchange(scope, receive, send, self._websocket)

    # ---- start and stop ---------------------------------------------------------------------

    async def started(self) -> None:
        """Start the core once (the first caller starts it; the others wait for it)."""
        if self._started is None:
            self._started = asyncio.ensure_future(self._start())
        await asyncio.shield(self._started)

    async def stopped(self) -> None:
        """Run the stop steps once: readiness says stopping, open runs end CANCELED,
        WebSocket connections are closed, stores are closed."""
        if self._stopped or self._started is None:
            return
        self._stopped = True
        for hook in self._stop:
            await hook()

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: object = None) -> AsyncIterator[None]:
        """Start and stop with the application this one is mounted in
        (``FastAPI(lifespan=agent.lifespan)``)."""
        await self.started()
        try:
            yield
        finally:
            await self.stopped()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.started()
                except Exception as exc:
                    log.exception("the A2A server could not start")
                    await send({"type": "lifespan.startup.failed", "message": f"{type(exc).__name__}: {exc}"})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stopped()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # ---- one exchange -----------------------------------------------------------------------

    async def _exchange(
        self, scope: Scope, receive: Receive, send: Send, serve: Callable[[Scope, Receive, Send], Awaitable[int]]
    ) -> None:
        layer = self._exchanges
        if layer is None:
            await serve(scope, receive, send)
            return
        started = time.perf_counter()
        raw = scope.get("raw_path")
        raw_path = (raw.decode("latin-1") if isinstance(raw, bytes) else str(scope.get("path", "/"))).split("?")[0]
        exchange = layer.begin(_path_under(scope)[0], upgrade=scope["type"] == "websocket")
        token = EXCHANGE.set(exchange)
        status = 500
        try:
            status = await serve(scope, receive, send)
        except (asyncio.CancelledError, ConnectionError):
            status = CLIENT_CLOSED
            raise
        finally:
            EXCHANGE.reset(token)
            client = scope.get("client")
            method = str(scope.get("method", "GET"))
            layer.end(str(client[0]) if client else None, method, raw_path, exchange, status, started)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> int:
        request = _request(scope, receive, str(scope["method"]))
        body = request.body
        assert isinstance(body, _Body)
        gone = asyncio.Event()
        answering = asyncio.ensure_future(self._answer(request, send, gone))

        async def watch() -> None:
            # Once the body is read, what comes is the client's leaving: as aiohttp cancels a
            # handler whose client left, the exchange is canceled (a stream left before it
            # showed a task id then cancels the run nobody else can reach).
            await body.done.wait()
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            answering.cancel()

        watching = asyncio.ensure_future(watch())
        try:
            return await answering
        except asyncio.CancelledError:
            if gone.is_set():
                return CLIENT_CLOSED
            raise
        except _Gone:
            return CLIENT_CLOSED
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)

    async def _answer(self, request: HttpRequest, send: Send, gone: asyncio.Event) -> int:
        answer = await self._core(request)
        if isinstance(answer, Upgrade):  # a WebSocket endpoint asked without the handshake
            answer = answer.refusal
        if isinstance(answer, Reply):
            # A body left unread (413, 401 ...) is the ASGI server's to throw away or to close
            # on: asking it to close at once would reset a client still sending (docs/deployment.md).
            await send(_head(answer.status, answer.content_type, answer.headers, len(answer.body)))
            await send({"type": "http.response.body", "body": answer.body})
            return answer.status

        async def write(data: bytes) -> None:
            if gone.is_set():
                raise ConnectionResetError("the client is gone")
            await send({"type": "http.response.body", "body": data, "more_body": True})

        await send(_head(answer.status, None, answer.headers, None))
        await answer.produce(write)
        if not gone.is_set():
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        return answer.status

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> int:
        if (await receive())["type"] != "websocket.connect":
            return CLIENT_CLOSED
        answer = await self._core(_request(scope, receive, "GET"))
        if isinstance(answer, Reply):
            await self._refuse_handshake(scope, send, answer)
            return answer.status
        if not isinstance(answer, Upgrade):  # not a WebSocket endpoint
            await send({"type": "websocket.close", "code": _POLICY, "reason": "no WebSocket endpoint here"})
            return 404
        headers = [(b"server", server_software().encode())]
        headers += [(name.lower().encode(), value.encode()) for name, value in answer.headers.items()]
        await send({"type": "websocket.accept", "headers": headers})
        channel = _Channel(receive, send, answer.max_message_bytes)
        await answer.serve(channel)
        await channel.close(1000, "")
        return 101

    @staticmethod
    async def _refuse_handshake(scope: Scope, send: Send, reply: Reply) -> None:
        """A refused handshake answered as HTTP where the server can (the ASGI extension
        ``websocket.http.response``: the 401 and its challenge reach the client), else closed."""
        if "websocket.http.response" in (scope.get("extensions") or {}):
            head = _head(reply.status, reply.content_type, reply.headers, len(reply.body))
            await send({**head, "type": "websocket.http.response.start"})
            await send({"type": "websocket.http.response.body", "body": reply.body})
            return
        await send({"type": "websocket.close", "code": _POLICY, "reason": f"refused ({reply.status})"})
