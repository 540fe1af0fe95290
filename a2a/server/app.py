"""The server: the agent card, JSON-RPC, REST (with SSE), WebSocket and operations on one port.

``A2AServer`` composes the core once (``_core``: the bindings behind one ``routing.Dispatcher``,
and the steps that start and stop it), then hands it to a host:

- ``start``/``stop`` (or ``async with``): the aiohttp host on a port (``0`` picks a free one),
  behind the connection bounds (``connections``); what the CLI and the tests do.
- ``app()``: the same as an aiohttp ``Application``, to mount in a larger one at any prefix.
- ``asgi()``: the same as an ASGI application (``hosts.asgi``), for FastAPI, Starlette and any
  ASGI server (uvicorn, hypercorn, granian).

Middlewares of aiohttp's kind are given to the server, ``A2AServer(middlewares=[...])``, and run
on the aiohttp host (both of its settings); under ASGI, the framework's own middleware applies.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from ..protocol import v03
from ..protocol.card import CARD_PATH
from ..protocol.codec import encode
from ..protocol.connection import WEBSOCKET_BINDING
from ..protocol.nesting import DEFAULT_MAX_JSON_DEPTH
from ..protocol.version import PROTOCOL_VERSION
from ..types import AgentCard, AgentInterface
from .authoring.agent import Agent
from .backends.base import Backend
from .backends.store import TaskStore
from .bindings.jsonrpc import JsonRpcBinding, jsonrpc_error_body
from .bindings.messages import HttpRequest, Reply, server_software
from .bindings.rest import RestBinding, rest_error_body
from .bindings.routing import Dispatcher, Route
from .bindings.sse import DEFAULT_SSE_HEARTBEAT
from .channels.ws import WebSocketBinding, WebSocketConfig
from .engine.auth import ApiKeyAuth, Authenticator, BearerAuth
from .engine.limits import HttpLimits
from .engine.observe import Observer
from .engine.serving import open_handler, served_card
from .operations.access_log import ExchangeLayer
from .operations.health import HEALTHZ_PATH, READYZ_PATH, Health
from .operations.metrics import Metrics, TimedStore
from .push import PushNotifier

if TYPE_CHECKING:
    from aiohttp import web

    from .hosts.aiohttp import AiohttpHost
    from .hosts.asgi import AsgiApp

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
    """The server's core: its routes (relative to where it is mounted), and its start and stop steps."""

    dispatcher: Dispatcher
    start: Callable[[], Awaitable[None]]
    stop_hooks: Sequence[ShutdownHook]
    limits: HttpLimits
    #: The access log and status counts (``None``: off), run by each host around every request.
    exchanges: ExchangeLayer | None = None

    async def stop(self) -> None:
        """The stop steps, in order (before open requests are waited for: see ``_core``)."""
        for hook in self.stop_hooks:
            await hook()


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
        middlewares: Sequence[Any] = (),
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
        self._serving: _Serving | None = None
        self._host: AiohttpHost | None = None
        #: The ASGI applications made (``asgi()``): ``stop`` runs their stop steps too.
        self._asgi_apps: list[AsgiApp] = []
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

    def _base_url(self, request: HttpRequest) -> str:
        return self.url or request.base_url

    def _request_card(self, request: HttpRequest) -> AgentCard:
        return self.card(self._base_url(request))

    async def _serve_card(self, request: HttpRequest) -> Reply:
        body, etag = self._card_body(self._base_url(request))
        headers = {"ETag": etag, "Cache-Control": f"public, max-age={self.config.card_max_age}"}
        if etag in (request.headers.get("If-None-Match") or ""):
            return Reply(304, "application/json", b"", headers)
        return Reply(200, "application/json", body, headers)

    # ---- serving -----------------------------------------------------------------------

    def _core(self) -> _Serving:
        """The card, JSON-RPC, REST, (when enabled) WebSocket and operations endpoints, relative
        to where the server is mounted, bound to this server; and what to do, in order, to
        start and to stop. Made once: every host serves the same core."""
        if self._serving is not None:
            return self._serving
        limit = self.config.max_body_bytes
        depth = self.config.max_json_depth
        heartbeat = self.config.sse_heartbeat
        limits = self.config.limits
        common: dict[str, Any] = {
            "max_json_depth": depth,
            "heartbeat": heartbeat,
            "serve_v03": self.config.serve_v03,
            "limits": limits,
        }
        jsonrpc = JsonRpcBinding(self.handler, self.authenticator, limit, **common)
        rest = RestBinding(self.handler, self.authenticator, limit, REST_PATH, **common)
        get = frozenset({"GET", "HEAD"})
        links = {"health": HEALTHZ_PATH, "ready": READYZ_PATH}
        if self.metrics is not None:
            links["metrics"] = METRICS_PATH
        health = Health(self.handler, self._request_card, lambda request: self._base_url(request) + CARD_PATH, links)
        routes = [
            Route(CARD_PATH, self._serve_card, get),
            # Operations: no credentials, never the agent.
            Route("/", health.root, get),
            Route(HEALTHZ_PATH, health.live, get),
            Route(READYZ_PATH, health.ready, get),
        ]
        if self.metrics is not None:
            routes.append(Route(METRICS_PATH, self.metrics.serve, get))
        served = self.config.bindings
        bindings = []
        if "jsonrpc" in served:
            routes.append(Route(JSONRPC_PATH, jsonrpc.handle, frozenset({"POST"}), errors=jsonrpc_error_body))
            bindings.append((JSONRPC_PATH, "JSONRPC"))
        if "rest" in served:
            routes.append(Route(REST_PATH, rest.handle, None, prefix=True, errors=rest_error_body))
            bindings.append((REST_PATH + "/", "HTTP+JSON"))
        # Stop steps run before the host waits for the open requests: readiness says so first,
        # then the runs end CANCELED, so that streams and blocking sends are answered that at
        # once instead of being cut off after ``shutdown_timeout``.
        hooks: list[ShutdownHook] = [health.stop, self.handler.shutdown]
        ws = self.config.websocket
        if ws.enabled and "ws" in served:
            binding = WebSocketBinding(
                self.handler, self.authenticator, self._request_card, ws, limit, max_json_depth=depth
            )
            routes.append(Route(ws.path, binding.handle, get, errors=jsonrpc_error_body))
            bindings.append((ws.path, "WEBSOCKET"))
            # After the runs: the WebSocket connections flush those answers and close.
            hooks.append(functools.partial(binding.shutdown, finish_within=self.config.shutdown_timeout))
        layer = None
        if self.config.access_log or self.metrics is not None:
            layer = ExchangeLayer(bindings, access_log=self.config.access_log, metrics=self.metrics)
        # Before the first request: the handler listens to the other replicas, and tasks a
        # dead server left running end.
        self._serving = _Serving(Dispatcher(routes), self.handler.start, hooks, limits, layer)
        return self._serving

    def _aiohttp_host(self) -> AiohttpHost:
        from .hosts.aiohttp import AiohttpHost

        core = self._core()
        return AiohttpHost(
            core.dispatcher,
            start=core.start,
            stop=core.stop_hooks,
            limits=core.limits,
            exchanges=core.exchanges,
            middlewares=self.middlewares,
            framing=core.dispatcher.framing,
            max_body=self.config.max_body_bytes,
        )

    def app(self) -> web.Application:
        """The server as an aiohttp application, to embed in a larger one (for example
        ``parent.add_subapp("/agent", server.app())``): its one route hands every request to
        the core, with the server's middlewares; the card names the URLs under the prefix it
        is mounted at."""
        return self._aiohttp_host().application()

    def asgi(self) -> AsgiApp:
        """The server as an ASGI application (HTTP, WebSocket and lifespan), to run under any
        ASGI server or mount in FastAPI or Starlette (``app.mount("/agent", server.asgi())``);
        the card names the URLs under the prefix it is mounted at. See ``hosts.asgi``."""
        from .hosts.asgi import AsgiApp

        if self.middlewares:
            raise TypeError(
                "A2AServer(middlewares=...) are aiohttp middlewares, which an ASGI application does not run: "
                "use your ASGI framework's middleware around server.asgi() instead"
            )
        core = self._core()
        app = AsgiApp(core.dispatcher, start=core.start, stop=core.stop_hooks, exchanges=core.exchanges)
        self._asgi_apps.append(app)
        return app

    async def start(self, host: str | None = None, port: int | None = None) -> str:
        """Listen (``port=0``: any free port) and return the base URL."""
        host = host or self.config.host
        port = self.config.port if port is None else port
        if self.config.tune_gc:
            gc.collect()
            gc.freeze()
            gc.set_threshold(20_000, 20, 20)
        served = self._host = self._aiohttp_host()
        bound_host, bound_port = await served.listen(host, port, shutdown_timeout=self.config.shutdown_timeout)
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.bound_url = f"http://{shown}:{bound_port}"
        self.url = self.config.public_url or self.bound_url
        log.info("%s serving %r at %s", server_software(), self.agent.name, self.url)
        return self.url

    async def stop(self) -> None:
        """Stop serving: the port of ``start`` closes; an ASGI application of ``asgi()`` runs its
        stop steps (its ASGI server stops on its own terms)."""
        if self._host is not None:
            host, self._host = self._host, None
            await host.close()
        for app in self._asgi_apps:
            await app.stopped()

    async def __aenter__(self) -> A2AServer:
        if self._host is None:
            await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
