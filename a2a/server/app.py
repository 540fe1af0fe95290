"""The aiohttp server: the agent card, JSON-RPC, REST (with SSE) and WebSocket on one port.

``A2AServer`` composes the pieces, and one ``routing.Dispatcher`` serves its routes, in either
of two settings that run the same start and stop steps:

- ``start``/``stop`` (or ``async with``): on aiohttp's low-level server, on a port (``0``
  picks a free one); what the CLI and the tests both do.
- ``app()``: an aiohttp ``Application`` whose one catch-all route hands every request to the
  dispatcher, to embed the server in a larger application (mounted at any prefix).

Middlewares (aiohttp's kind) are given to the server, ``A2AServer(middlewares=[...])``, and the
dispatcher runs them in both settings.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import gc
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import RawRequestMessage
from aiohttp.streams import StreamReader
from aiohttp.web_protocol import RequestHandler as HttpProtocol

from ..protocol import v03
from ..protocol.card import CARD_PATH
from ..protocol.codec import encode
from ..protocol.connection import WEBSOCKET_BINDING
from ..protocol.nesting import DEFAULT_MAX_JSON_DEPTH
from ..protocol.version import PROTOCOL_VERSION
from ..types import AgentCard, AgentInterface
from .access_log import ExchangeLayer
from .agent import Agent
from .auth import ApiKeyAuth, Authenticator, BearerAuth
from .backend import Backend
from .connections import GuardedServer
from .health import HEALTHZ_PATH, READYZ_PATH, Health
from .http_common import DEFAULT_SSE_HEARTBEAT
from .http_jsonrpc import JsonRpcBinding, jsonrpc_error_body
from .http_rest import RestBinding, rest_error_body
from .json_answer import FastRoute
from .limits import HttpLimits
from .metrics import Metrics, TimedStore
from .observe import Observer
from .push import PushNotifier
from .request_body import BODY_LIMITS
from .routing import Dispatcher, Middleware, Route
from .server_header import ServedRequest, server_software, set_server_header
from .serving import open_handler, served_card
from .store import TaskStore
from .ws import WebSocketBinding, WebSocketConfig

__all__ = [
    "CARD_PATH",
    "DEFAULT_MAX_BODY_BYTES",
    "JSONRPC_PATH",
    "REST_PATH",
    "A2AServer",
    "HttpLimits",
    "ServerConfig",
]

log = logging.getLogger("a2a.server")

#: The bindings ``ServerConfig.bindings`` may name.
BINDINGS = ("jsonrpc", "rest", "ws")
JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"
METRICS_PATH = "/metrics"
#: Request bodies above this are refused with 413 (configurable per server).
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024

ShutdownHook = Callable[[], Awaitable[None]]


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    #: The address clients should use (behind a proxy); by default the address we listen on.
    public_url: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: Deepest nesting of objects and arrays in a request body or message, on every binding;
    #: deeper: -32600 / HTTP 400, refused before it is decoded.
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
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
    #: One line per request at INFO on the logger ``a2a.access`` (``a2a serve`` turns it on;
    #: ``--no-access-log`` off). Off: requests do not pass through the access layer at all.
    access_log: bool = False
    #: Prometheus text at ``GET /metrics`` (``a2a serve --metrics``). Off: nothing is recorded.
    metrics: bool = False
    #: Seconds between heartbeat comments on an SSE stream (``None``: none), so that clients
    #: and proxies that bound a stream's silence keep quiet but live streams open.
    sse_heartbeat: float | None = DEFAULT_SSE_HEARTBEAT
    #: Timeouts, connection caps and request encodings (``limits.HttpLimits``). ``start`` applies
    #: them all; an embedded ``app()`` only the encodings (the host's server owns its sockets).
    limits: HttpLimits = field(default_factory=HttpLimits)
    #: The bindings served and declared in the card (``a2a serve --bindings``): any of
    #: ``jsonrpc``, ``rest``, ``ws`` (``ws`` also needs ``websocket.enabled``).
    bindings: frozenset[str] = frozenset(BINDINGS)
    #: Serve A2A 0.3 beside 1.0 on the JSON-RPC endpoint (requests without ``A2A-Version``, or
    #: with 0.3) and put the 0.3 fields in the card (``a2a serve --no-v03`` turns it off).
    serve_v03: bool = True


@dataclass(frozen=True, slots=True)
class _Serving:
    """The server's routes, mounted at one prefix, and its start and stop steps."""

    dispatcher: Dispatcher
    start: Callable[[], Awaitable[None]]
    stop_hooks: Sequence[ShutdownHook]
    limits: HttpLimits
    #: The access log and status counts (``None``: off), when the connections run them
    #: (``start``); an embedded server's dispatcher has them as its outermost middleware.
    exchanges: ExchangeLayer | None = None
    #: What ``start``'s connections answer themselves, by exact path (``connections``).
    fast_routes: Mapping[str, FastRoute] | None = None

    async def stop(self) -> None:
        """The stop steps, in order (before open requests are waited for: see ``_serving``)."""
        for hook in self.stop_hooks:
            await hook()


#: The serving of an embedded server (``app()``), made when the application starts.
_SERVING = web.AppKey("a2a_serving", _Serving)
#: The path of ``app()``'s one route, and what is left of it once aiohttp put the mount prefix
#: in front (``add_subapp``).
_CATCH_ALL = "/{tail:.*}"
_CATCH_ALL_SHOWN = "/{tail}"


class _Runner(web.ServerRunner):
    """aiohttp's low-level server runner, running the server's start and stop steps where an
    application runner runs its application's start-up and shutdown."""

    def __init__(self, server: web.Server, serving: _Serving, *, shutdown_timeout: float) -> None:
        super().__init__(server, shutdown_timeout=shutdown_timeout)
        self._serving = serving

    async def _make_server(self) -> web.Server:
        await self._serving.start()
        return await super()._make_server()

    async def shutdown(self) -> None:
        await self._serving.stop()


class _LimitedRequest(ServedRequest):
    """A request of ``A2AServer.start``: ``request[BODY_LIMITS]`` (how ``read_body`` inflates
    its body) is its server's, answered by its class (``_limited_request``) rather than stored
    in each request, whose state would then hold a table of its own for the whole request (an
    open stream's whole life)."""

    body_limits: HttpLimits = HttpLimits()

    def __getitem__(self, key: Any) -> Any:
        if key is BODY_LIMITS:
            return self.body_limits
        return super().__getitem__(key)


def _limited_request(limits: HttpLimits) -> type[_LimitedRequest]:
    """The request class of one server (made once, when it starts)."""
    return type("ServedRequest", (_LimitedRequest,), {"body_limits": limits})


async def _dispatch(request: web.Request) -> web.StreamResponse:
    """``app()``'s one route: the embedded server's dispatcher serves every request."""
    serving = request.app[_SERVING]
    request[BODY_LIMITS] = serving.limits
    return await serving.dispatcher(request)


async def _expect_in_dispatcher(_request: web.Request) -> None:
    """The dispatcher answers ``Expect`` itself (after routing, as when ``start`` serves it)."""
    return None


async def _stop_embedded(app: web.Application) -> None:
    await app[_SERVING].stop()


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
        middlewares: Sequence[Middleware] = (),
    ) -> None:
        """``backend`` is where tasks, streams and push configs live (``open_backend(url)``); by
        default all in memory. ``store`` is a shorthand for a one-process backend around that
        task store (``Backend.around``).

        ``push=True`` offers push notifications, configs kept in the backend's push store (a
        backend without one is a ``BackendError`` here); webhooks must be public addresses
        unless ``push_allow`` lists CIDRs or host names (e.g. ``"127.0.0.0/8"`` for tests). A
        ``PushNotifier`` may be given instead.

        ``middlewares`` (aiohttp's kind: ``async def mw(request, handler)``) run around every
        request, the first one outermost, however the server is served."""
        if backend is not None and store is not None:
            raise TypeError("A2AServer: give backend= or store=, not both")
        self.agent = agent
        self.config = config or ServerConfig()
        self.authenticator = auth if isinstance(auth, Authenticator) else Authenticator(list(auth))
        self.middlewares = tuple(middlewares)
        backend = backend or (Backend.in_memory() if store is None else Backend.around(store))
        #: The server's metrics (``config.metrics``), else ``None``.
        self.metrics = Metrics() if self.config.metrics else None
        if self.metrics is not None:
            backend = dataclasses.replace(backend, tasks=TimedStore(backend.tasks, self.metrics.store))
        self.handler = open_handler(
            agent, backend, push=push, push_allow=push_allow, authenticates=self.authenticator.enabled
        )
        if self.metrics is not None:
            self.metrics.tasks.collect = lambda: [((state,), n) for state, n in self.handler.running_states().items()]
            if self.handler.push is not None:
                self.handler.push.on_attempt = self.metrics.push_delivered
        if self.metrics is not None or self.config.access_log:
            # The observer counts each operation, and tells the access log its name and caller.
            traced = self.handler.observer.tracing if self.handler.observer is not None else None
            self.handler.observer = Observer(traced, self.metrics, agent=agent.name)
        self._cards: dict[str, tuple[bytes, str]] = {}
        self._runner: web.BaseRunner | None = None
        self.url: str | None = self.config.public_url
        #: The address listened on (``http://host:port``), set by ``start``; ``url`` is the public one.
        self.bound_url: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.app is not A2AServer.app:
            # ``start`` once served an overriding ``app()``; now it would silently leave out
            # what the override adds (an authenticating middleware, say).
            raise TypeError(
                f"{cls.__name__} overrides app(), which start() does not serve: give middlewares with "
                "A2AServer(..., middlewares=[...]) instead (app() is for embedding the server)"
            )

    # ---- the card ----------------------------------------------------------------------

    def interfaces(self, base_url: str) -> list[AgentInterface]:
        """Every interface this server offers, in preference order."""
        base = base_url.rstrip("/")
        served = self.config.bindings
        interfaces = []
        if "jsonrpc" in served:
            url = base + JSONRPC_PATH
            interfaces.append(AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION))
        if "rest" in served:
            url = base + REST_PATH
            interfaces.append(AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version=PROTOCOL_VERSION))
        ws = self.config.websocket
        if ws.enabled and "ws" in served:
            # At the card's own origin (http(s)://, the URL that upgrades), not ws://: clients
            # such as ADK refuse a card whose interfaces are not all same-origin; ours map the
            # scheme when they connect (``transport.ws.connect_url``). See protocol.md.
            url = base + ws.path
            entry = AgentInterface(url=url, protocol_binding=WEBSOCKET_BINDING, protocol_version=PROTOCOL_VERSION)
            interfaces.insert(0 if ws.preferred else len(interfaces), entry)
        return interfaces

    def card(self, base_url: str) -> AgentCard:
        return served_card(self.handler, self.authenticator, self.interfaces(base_url))

    def _card_body(self, base_url: str) -> tuple[bytes, str]:
        cached = self._cards.get(base_url)
        if cached is None:
            card = self.card(base_url)
            # One card for both versions: the 0.3 fields beside the 1.0 ones (``v03``).
            body = encode(v03.card_to_v03(msgspec.to_builtins(card)) if self.config.serve_v03 else card)
            cached = (body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
            if len(self._cards) < 16:  # the Host header picks the entry; keep the cache bounded
                self._cards[base_url] = cached
        return cached

    def _base_url(self, request: web.BaseRequest, mount: str) -> str:
        return self.url or f"{request.scheme}://{request.host}{mount}"

    def _request_card(self, request: web.BaseRequest, mount: str = "") -> AgentCard:
        return self.card(self._base_url(request, mount))

    async def _serve_card(self, request: web.BaseRequest, mount: str = "") -> web.Response:
        body, etag = self._card_body(self._base_url(request, mount))
        headers = {"ETag": etag, "Cache-Control": f"public, max-age={self.config.card_max_age}"}
        if etag in request.headers.get("If-None-Match", ""):
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers=headers, content_type="application/json")

    # ---- serving -----------------------------------------------------------------------

    def _serving(self, mount: str = "", *, own_connections: bool = False) -> _Serving:
        """The card, JSON-RPC, REST and (when enabled) WebSocket endpoints under ``mount`` (the
        prefix an embedding application mounted the server at), bound to this server; and what
        to do, in order, to start and to stop. ``own_connections``: served on ``start``'s
        connections, which then run the access layer themselves (see ``access_log``)."""
        limit = self.config.max_body_bytes
        depth = self.config.max_json_depth
        heartbeat = self.config.sse_heartbeat
        jsonrpc = JsonRpcBinding(
            self.handler,
            self.authenticator,
            limit,
            max_json_depth=depth,
            heartbeat=heartbeat,
            serve_v03=self.config.serve_v03,
        )
        rest = RestBinding(
            self.handler,
            self.authenticator,
            limit,
            mount + REST_PATH,
            max_json_depth=depth,
            heartbeat=heartbeat,
            serve_v03=self.config.serve_v03,
        )
        get = frozenset({"GET", "HEAD"})
        card = functools.partial(self._request_card, mount=mount)
        links = {"health": mount + HEALTHZ_PATH, "ready": mount + READYZ_PATH}
        if self.metrics is not None:
            links["metrics"] = mount + METRICS_PATH
        health = Health(self.handler, card, lambda request: self._base_url(request, mount) + CARD_PATH, links)
        routes = [
            Route(mount + CARD_PATH, functools.partial(self._serve_card, mount=mount), get),
            # Operations: no credentials, never the agent.
            Route(mount or "/", health.root, get),
            Route(mount + HEALTHZ_PATH, health.live, get),
            Route(mount + READYZ_PATH, health.ready, get),
        ]
        if self.metrics is not None:
            routes.append(Route(mount + METRICS_PATH, self.metrics.serve, get))
        served = self.config.bindings
        bindings = []
        if "jsonrpc" in served:
            routes.append(Route(mount + JSONRPC_PATH, jsonrpc.handle, frozenset({"POST"}), errors=jsonrpc_error_body))
            bindings.append((mount + JSONRPC_PATH, "JSONRPC"))
        if "rest" in served:
            routes.append(Route(mount + REST_PATH, rest.handle, None, prefix=True, errors=rest_error_body))
            bindings.append((mount + REST_PATH + "/", "HTTP+JSON"))
        # Stop steps run before aiohttp waits for the open requests (``on_shutdown``, not a
        # cleanup context): readiness says so first, then the runs end CANCELED, so that
        # streams and blocking sends are answered that at once instead of being cut off after
        # ``shutdown_timeout``.
        hooks: list[ShutdownHook] = [health.stop, self.handler.shutdown]
        ws = self.config.websocket
        if ws.enabled and "ws" in served:
            binding = WebSocketBinding(self.handler, self.authenticator, card, ws, limit, max_json_depth=depth)
            routes.append(Route(mount + ws.path, binding.handle, get, errors=jsonrpc_error_body))
            bindings.append((mount + ws.path, "WEBSOCKET"))
            # After the runs: the WebSocket connections flush those answers and close.
            hooks.append(functools.partial(binding.shutdown, finish_within=self.config.shutdown_timeout))
        middlewares = self.middlewares
        layer = None
        if self.config.access_log or self.metrics is not None:
            layer = ExchangeLayer(bindings, access_log=self.config.access_log, metrics=self.metrics)
            if not own_connections:
                # Outermost, so that the line and the status count include what the others answer.
                middlewares = (layer, *middlewares)
        # Before the first request: the handler listens to the other replicas, and tasks a
        # dead server left running end.
        dispatcher = Dispatcher(routes, middlewares)
        fast: dict[str, FastRoute] = {}
        if own_connections and not middlewares:  # middlewares must see every request as aiohttp's
            if "jsonrpc" in served:
                fast = {mount + JSONRPC_PATH: jsonrpc.unary, mount + JSONRPC_PATH + "/": jsonrpc.unary}
            if "rest" in served:
                fast.update(rest.unary_routes())
        exchanges = layer if own_connections else None
        return _Serving(dispatcher, self.handler.start, hooks, self.config.limits, exchanges, fast)

    def app(self) -> web.Application:
        """The server as an aiohttp application, to embed in a larger one (for example
        ``parent.add_subapp("/agent", server.app())``): its one route hands every request to
        the same dispatcher that ``start`` serves, with the server's middlewares; the card
        names the URLs under the prefix it is mounted at."""
        # When it is the root application, its server leaves request bodies to ``read_body`` to
        # inflate (the rest of a refused one is read for ``drain_timeout``, not inflated);
        # mounted in another, the other's settings apply (aiohttp inflates, under the same
        # decoded-size limit).
        app = web.Application(
            client_max_size=self.config.max_body_bytes,
            handler_args={"auto_decompress": False, "lingering_time": self.config.limits.drain_timeout},
        )
        route = app.router.add_route("*", _CATCH_ALL, _dispatch, expect_handler=_expect_in_dispatcher)
        app.on_startup.append(functools.partial(self._start_embedded, route.resource))
        app.on_response_prepare.append(set_server_header)
        app.on_shutdown.append(_stop_embedded)
        return app

    async def _start_embedded(self, resource: web.AbstractResource | None, app: web.Application) -> None:
        # By now the application is mounted: aiohttp has put the prefix in front of the route.
        assert resource is not None
        serving = app[_SERVING] = self._serving(mount=resource.canonical.removesuffix(_CATCH_ALL_SHOWN))
        await serving.start()

    def _request_factory(self) -> Callable[..., web.Request]:
        limit = self.config.max_body_bytes
        request_class = _limited_request(self.config.limits)
        loop = asyncio.get_running_loop()

        def make_request(
            message: RawRequestMessage,
            payload: StreamReader,
            protocol: HttpProtocol,
            writer: AbstractStreamWriter,
            task: asyncio.Task[None],
        ) -> web.Request:
            # The low-level server's requests allow 1 MiB bodies; ours allow the configured size.
            # A ``web.Request`` (an application's kind, without its match info) for middlewares.
            return request_class(message, payload, protocol, writer, task, loop, client_max_size=limit)

        return make_request

    async def start(self, host: str | None = None, port: int | None = None) -> str:
        """Listen (``port=0``: any free port) and return the base URL."""
        host = host or self.config.host
        port = self.config.port if port is None else port
        if self.config.tune_gc:
            gc.collect()
            gc.freeze()
            gc.set_threshold(20_000, 20, 20)
        serving = self._serving(own_connections=True)
        # handler_cancellation: a client that goes away cancels its request's handler, so a
        # stream left before it saw a task id cancels the run nobody else can reach.
        # GuardedServer: timeouts, connection caps and JSON answers to unparsable requests, at
        # the connection (``connections``).
        server = GuardedServer(
            serving.dispatcher,
            limits=self.config.limits,
            max_body=self.config.max_body_bytes,
            framing=serving.dispatcher.framing,
            request_factory=self._request_factory(),
            exchanges=serving.exchanges,
            fast_routes=serving.fast_routes,
            access_log=None,
            handler_cancellation=True,
        )
        runner = self._runner = _Runner(server, serving, shutdown_timeout=self.config.shutdown_timeout)
        await runner.setup()  # runs the start steps
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
        self.bound_url = f"http://{shown}:{bound[1]}"
        self.url = self.config.public_url or self.bound_url
        log.info("%s serving %r at %s", server_software(), self.agent.name, self.url)
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
