"""The aiohttp application: the agent card, JSON-RPC and REST (with SSE) on one port.

``A2AServer`` composes the pieces; ``start``/``stop`` (or ``async with``) run it on a port
(``0`` picks a free one), which is what the CLI and the tests both do.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler as HttpProtocol

from ..protocol.card import CARD_PATH
from ..protocol.codec import encode
from ..protocol.connection import WEBSOCKET_BINDING
from ..protocol.version import PROTOCOL_VERSION
from ..types import AgentCard, AgentInterface
from .agent import Agent
from .auth import ApiKeyAuth, Authenticator, BearerAuth
from .backend import Backend
from .http_jsonrpc import JsonRpcBinding
from .http_rest import RestBinding
from .push import PushNotifier
from .routing import Dispatcher, Route, install
from .serving import open_handler, served_card
from .store import TaskStore
from .ws import WebSocketBinding, WebSocketConfig, websocket_url

__all__ = ["CARD_PATH", "DEFAULT_MAX_BODY_BYTES", "JSONRPC_PATH", "REST_PATH", "A2AServer", "ServerConfig"]

log = logging.getLogger("a2a.server")

JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"
#: Request bodies above this are refused with 413 (configurable per server).
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

ShutdownHook = Callable[[], Awaitable[None]]


async def _shut_down(hooks: Sequence[ShutdownHook]) -> None:
    """The server's shutdown steps, in order (both ways of serving run the same ones)."""
    for hook in hooks:
        await hook()


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    #: The address clients should use (behind a proxy); by default the address we listen on.
    public_url: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    card_max_age: int = 300
    #: Seconds to let open requests finish on shutdown.
    shutdown_timeout: float = 5.0
    #: Tune the garbage collector for serving (process-wide, so off unless the process is ours:
    #: ``a2a serve`` turns it on): objects alive at start are frozen out of collections and
    #: young collections run every 20,000 allocations instead of 700. A busy server spends a
    #: fifth to a third of its time in the collector otherwise, with pauses of half a second.
    tune_gc: bool = False
    #: The WebSocket binding (path, limits, keepalive); ``enabled=False`` leaves it out.
    websocket: WebSocketConfig = field(default_factory=WebSocketConfig)


class _LeanRunner(web.ServerRunner):
    """aiohttp's low-level server runner, with the shutdown steps an application would run."""

    def __init__(self, server: web.Server, hooks: Sequence[ShutdownHook], *, shutdown_timeout: float) -> None:
        super().__init__(server, shutdown_timeout=shutdown_timeout)
        self._hooks = hooks

    async def shutdown(self) -> None:
        await _shut_down(self._hooks)


class A2AServer:
    """Serves one agent over every HTTP binding on one port."""

    def __init__(
        self,
        agent: Agent,
        *,
        backend: Backend | None = None,
        store: TaskStore | None = None,
        auth: Authenticator | Sequence[BearerAuth | ApiKeyAuth] = (),
        config: ServerConfig | None = None,
        push: PushNotifier | bool = False,
        push_allow: str | Sequence[str] | None = None,
    ) -> None:
        """``backend`` is where tasks, streams and push configs live (``open_backend(url)``); by
        default all in memory. ``store`` is a shorthand for a one-process backend around that
        task store (``Backend.around``).

        ``push=True`` offers push notifications, configs kept in the backend's push store (a
        backend without one is a ``BackendError`` here); webhooks must be public addresses
        unless ``push_allow`` lists CIDRs or host names (e.g. ``"127.0.0.0/8"`` for tests). A
        ``PushNotifier`` may be given instead."""
        if backend is not None and store is not None:
            raise TypeError("A2AServer: give backend= or store=, not both")
        self.agent = agent
        self.config = config or ServerConfig()
        self.authenticator = auth if isinstance(auth, Authenticator) else Authenticator(list(auth))
        backend = backend or (Backend.in_memory() if store is None else Backend.around(store))
        self.handler = open_handler(agent, backend, push=push, push_allow=push_allow)
        self._cards: dict[str, tuple[bytes, str]] = {}
        self._runner: web.BaseRunner | None = None
        self.url: str | None = self.config.public_url

    # ---- the card ----------------------------------------------------------------------

    def interfaces(self, base_url: str) -> list[AgentInterface]:
        """Every interface this server offers, in preference order."""
        base = base_url.rstrip("/")
        interfaces = [
            AgentInterface(url=base + JSONRPC_PATH, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION),
            AgentInterface(url=base + REST_PATH, protocol_binding="HTTP+JSON", protocol_version=PROTOCOL_VERSION),
        ]
        ws = self.config.websocket
        if ws.enabled:
            url = websocket_url(base, ws.path)
            entry = AgentInterface(url=url, protocol_binding=WEBSOCKET_BINDING, protocol_version=PROTOCOL_VERSION)
            interfaces.insert(0 if ws.preferred else len(interfaces), entry)
        return interfaces

    def card(self, base_url: str) -> AgentCard:
        return served_card(self.handler, self.authenticator, self.interfaces(base_url))

    def _card_body(self, base_url: str) -> tuple[bytes, str]:
        cached = self._cards.get(base_url)
        if cached is None:
            body = encode(self.card(base_url))
            cached = (body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
            if len(self._cards) < 16:  # the Host header picks the entry; keep the cache bounded
                self._cards[base_url] = cached
        return cached

    def _request_card(self, request: web.BaseRequest) -> AgentCard:
        return self.card(self.url or f"{request.scheme}://{request.host}")

    async def _serve_card(self, request: web.BaseRequest) -> web.Response:
        base = self.url or f"{request.scheme}://{request.host}"
        body, etag = self._card_body(base)
        headers = {"ETag": etag, "Cache-Control": f"public, max-age={self.config.card_max_age}"}
        if etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers=headers, content_type="application/json")

    # ---- the application ---------------------------------------------------------------

    def _endpoints(self) -> tuple[list[Route], list[ShutdownHook]]:
        """The card, JSON-RPC, REST and (when enabled) WebSocket endpoints, bound to this server,
        and what to do, in order, when it shuts down."""
        limit = self.config.max_body_bytes
        jsonrpc = JsonRpcBinding(self.handler, self.authenticator, limit)
        rest = RestBinding(self.handler, self.authenticator, limit, REST_PATH)
        routes = [
            Route(CARD_PATH, self._serve_card, frozenset({"GET", "HEAD"})),
            Route(JSONRPC_PATH, jsonrpc.handle, frozenset({"POST"})),
            Route(REST_PATH, rest.handle, None, prefix=True),
        ]
        hooks: list[ShutdownHook] = [self.handler.shutdown]
        if self.config.websocket.enabled:
            ws = WebSocketBinding(self.handler, self.authenticator, self._request_card, self.config.websocket, limit)
            routes.append(Route(self.config.websocket.path, ws.handle, frozenset({"GET", "HEAD"})))
            # First the runs end CANCELED (streams and blocking sends learn it), then the
            # WebSocket connections flush those answers and close.
            hooks.append(functools.partial(ws.shutdown, finish_within=self.config.shutdown_timeout))
        return routes, hooks

    def app(self) -> web.Application:
        """The server as an aiohttp application: to mount in a larger one, or to add middlewares.

        ``start`` serves this application when a subclass overrides ``app``; otherwise it serves
        the same routes without the application layer (see ``a2a.server.routing``).
        """
        app = web.Application(client_max_size=self.config.max_body_bytes)
        routes, hooks = self._endpoints()
        install(app, routes)
        app.on_startup.append(self._on_startup)
        app.on_shutdown.append(lambda _app: _shut_down(hooks))
        return app

    async def _on_startup(self, _app: web.Application) -> None:
        # Before the first request: the bus listens, and tasks a dead server left running end.
        await self.handler.start()

    def _make_runner(self) -> web.BaseRunner:
        shutdown_timeout = self.config.shutdown_timeout
        if type(self).app is not A2AServer.app:
            return web.AppRunner(self.app(), access_log=None, shutdown_timeout=shutdown_timeout)
        limit = self.config.max_body_bytes
        loop = asyncio.get_running_loop()

        def make_request(
            message: RawRequestMessage,
            payload: StreamReader,
            protocol: HttpProtocol,
            writer: AbstractStreamWriter,
            task: asyncio.Task[None],
        ) -> web.BaseRequest:
            # The low-level server's requests allow 1 MiB bodies; ours allow the configured size.
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=limit)

        routes, hooks = self._endpoints()
        server = web.Server(Dispatcher(routes), request_factory=make_request, access_log=None)
        return _LeanRunner(server, hooks, shutdown_timeout=shutdown_timeout)

    async def start(self, host: str | None = None, port: int | None = None) -> str:
        """Listen (``port=0``: any free port) and return the base URL."""
        host = host or self.config.host
        port = self.config.port if port is None else port
        if self.config.tune_gc:
            gc.collect()
            gc.freeze()
            gc.set_threshold(20_000, 20, 20)
        runner = self._runner = self._make_runner()
        if not isinstance(runner, web.AppRunner):
            await self.handler.start()  # what the application's on_startup does
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
        self.url = self.config.public_url or f"http://{shown}:{bound[1]}"
        log.info("serving %r at %s", self.agent.name, self.url)
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> A2AServer:
        if self._runner is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
