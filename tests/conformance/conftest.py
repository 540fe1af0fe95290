"""Fixtures of the conformance suite: servers on free ports, raw wire access, clients per binding.

Which bindings a test runs over is decided here, once, not in the tests:

- a test that talks through the A2A client (``client``, ``open_client``, ``greeter``) runs over
  every binding: JSON-RPC and HTTP+JSON, our WebSocket binding (the same ``A2AServer``, the
  client on the WebSocket interface of its card) and our stdio binding (``serve_stdio`` in this
  process on one end of two pipes, serving the server's agent, store, bus and authentication;
  see ``helpers.open_stdio_twin``), and the in-process ``LocalTransport`` (``LOCAL``: the
  server's own ``RequestHandler`` called directly, no sockets, every object through the wire
  codec);
- a test needs a *capability* when it checks something only some bindings have: raw HTTP
  (``raw``, ``open_raw`` or ``http``, directly or through another fixture: hand-made requests,
  HTTP statuses, SSE framing, headers; or the marker ``http_only``), or a binding that
  authenticates its caller (marker ``needs_authentication``: an in-process caller is trusted and
  names its principal), or one that carries requests as JSON a test can write by hand (marker
  ``raw_json``: key names, enum forms). It runs over the bindings that declare that capability in
  ``CAPABILITIES``, and nowhere else: no test body asks which binding it is on.

``pytest_generate_tests`` below reads the test's whole fixture closure and markers and
parametrizes ``binding`` (indirectly) with the bindings that apply.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from a2a import A2AClient, A2AServer, Agent, RetryPolicy, ServerConfig
from a2a.errors import ProtocolError
from a2a.local import LocalTransport, local_card
from a2a.protocol.version import PROTOCOL_VERSION, VERSION_HEADER

from ..asgi_serving import AsgiServed
from .helpers import (
    STDIO_SERVES_A_HANDLER,
    WAIT,
    Gate,
    Raw,
    StdioTwin,
    TestServer,
    bounded,
    load_module,
    open_stdio_twin,
)

StartServer = Callable[..., Awaitable[A2AServer]]
OpenClient = Callable[..., Awaitable[A2AClient]]
OpenRaw = Callable[[A2AServer], Raw]

#: Capability: hand-made HTTP requests reach the server (statuses, headers, SSE framing).
RAW_HTTP = "raw HTTP"
#: Capability: the binding checks the caller's credentials and refuses a caller without the
#: right ones. An in-process caller is trusted instead: it names its principal.
AUTHENTICATION = "authentication"

#: Capability: the binding carries requests as JSON text a test can write by hand (key names,
#: enum forms); the in-process binding passes typed objects instead.
RAW_JSON = "raw JSON"

#: Every binding of the matrix and what it offers beyond the A2A operations themselves.
CAPABILITIES: dict[str, frozenset[str]] = {
    "JSONRPC": frozenset({RAW_HTTP, AUTHENTICATION, RAW_JSON}),
    "HTTP+JSON": frozenset({RAW_HTTP, AUTHENTICATION, RAW_JSON}),
    "WEBSOCKET": frozenset({AUTHENTICATION, RAW_JSON}),
    "STDIO": frozenset({AUTHENTICATION, RAW_JSON}),
    "LOCAL": frozenset(),
}

#: Fixtures that speak HTTP by hand: a test that uses any of them needs ``RAW_HTTP``.
HTTP_ONLY_FIXTURES = frozenset({"http", "raw", "open_raw"})
#: Markers that declare a capability a test needs.
CAPABILITY_MARKERS = {"http_only": RAW_HTTP, "needs_authentication": AUTHENTICATION, "raw_json": RAW_JSON}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "http_only(reason): this conformance test needs raw HTTP (JSONRPC, HTTP+JSON)")
    config.addinivalue_line(
        "markers",
        "needs_authentication: this conformance test needs a binding that authenticates its caller "
        "(not the in-process LOCAL binding, whose caller names its principal)",
    )
    config.addinivalue_line(
        "markers", "raw_json: this conformance test writes requests as JSON by hand (every binding but LOCAL)"
    )
    config.addinivalue_line(
        "markers",
        "aiohttp_host_only(reason): what the test checks is the aiohttp host's (its middlewares, its "
        "answers to Expect); under ASGI the framework or the server owns it",
    )
    config.addinivalue_line(
        "markers",
        "patches_server_handler: the test patches server.handler while calls run; over stdio that "
        "reaches the calls only if serve_stdio can serve the server's own handler",
    )


def needed_capabilities(metafunc: pytest.Metafunc) -> set[str]:
    """What a test needs of its binding, from its fixtures and markers."""
    needed = {RAW_HTTP} if HTTP_ONLY_FIXTURES & set(metafunc.fixturenames) else set()
    for marker, capability in CAPABILITY_MARKERS.items():
        if metafunc.definition.get_closest_marker(marker):
            needed.add(capability)
    return needed


def bindings_for(metafunc: pytest.Metafunc) -> list[Any]:
    """The bindings a test runs over: every binding that offers all the test needs."""
    needed = needed_capabilities(metafunc)
    bindings: list[Any] = [name for name, offered in CAPABILITIES.items() if needed <= offered]
    if (
        "STDIO" in bindings
        and metafunc.definition.get_closest_marker("patches_server_handler")
        and not STDIO_SERVES_A_HANDLER
    ):
        reason = (
            "serve_stdio cannot serve an existing RequestHandler: the stdio twin runs its own handler "
            "over the server's store and bus, which the test's patch of server.handler does not reach"
        )
        bindings[bindings.index("STDIO")] = pytest.param("STDIO", marks=pytest.mark.xfail(reason=reason, run=False))
    return bindings


#: The hosts an HTTP server of the suite runs on: aiohttp (``A2AServer.start``) and ASGI (its
#: ``asgi()`` under uvicorn). The bindings that do not reach the server over HTTP run on one.
HOSTS = ["aiohttp", "asgi"]
_HTTP_SERVED = frozenset({"JSONRPC", "HTTP+JSON", "WEBSOCKET"})


def _hosts(metafunc: pytest.Metafunc) -> list[str]:
    return HOSTS[:1] if metafunc.definition.get_closest_marker("aiohttp_host_only") else HOSTS


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    hosted = "host" in metafunc.fixturenames
    if "binding" in metafunc.fixturenames:
        bindings = bindings_for(metafunc)
        if not hosted:
            metafunc.parametrize("binding", bindings, indirect=True)
            return
        pairs = []
        for entry in bindings:
            name = entry.values[0] if hasattr(entry, "values") else entry
            for host in _hosts(metafunc) if name in _HTTP_SERVED else HOSTS[:1]:
                marks = entry.marks if hasattr(entry, "marks") else ()
                pairs.append(pytest.param(name, host, marks=marks, id=f"{name}-{host}"))
        metafunc.parametrize(("binding", "host"), pairs, indirect=True)
    elif hosted:
        metafunc.parametrize("host", _hosts(metafunc), indirect=True)


@pytest.fixture
def host(request: pytest.FixtureRequest) -> str:
    """The host that serves the test's servers (parametrized by ``pytest_generate_tests``)."""
    return str(request.param)


@pytest.fixture
def binding(request: pytest.FixtureRequest) -> str:
    """The binding under test (parametrized by ``pytest_generate_tests``)."""
    return str(request.param)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """A bare httpx client: no default A2A-Version header, no credentials."""
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
async def serve(host: str) -> AsyncIterator[StartServer]:
    """``await serve(agent, auth=..., config=..., store=..., push=...)``: a server on a free loopback port.

    The same server for every binding: its HTTP bindings and WebSocket interface on that port
    (served by the test's ``host``), and its stdio twins (opened by ``open_client``) serving the
    same agent, store and auth.
    """
    servers: list[A2AServer | AsgiServed] = []

    async def start(agent: Agent, **kwargs: Any) -> A2AServer:
        config = kwargs.pop("config", None) or ServerConfig()
        config.port = 0
        server = TestServer(agent, config=config, **kwargs)
        if host == "asgi":
            served = AsgiServed(server)
            await served.start()
            servers.append(served)
        else:
            await server.start()
            servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


@pytest.fixture
async def open_client(binding: str, serve: StartServer) -> AsyncIterator[OpenClient]:
    """``await open_client(server, credentials=...)``: an ``A2AClient`` on the test's binding.

    (It asks for ``serve`` only so that the servers it made stop after the clients close.)
    """
    clients: list[A2AClient] = []
    twins: list[StdioTwin] = []

    async def open_(server: A2AServer, **kwargs: Any) -> A2AClient:
        assert server.url is not None
        kwargs.setdefault("retry", RetryPolicy.none())
        kwargs.setdefault("timeout", 10)
        if binding == "STDIO":
            client = await _stdio_client(server, twins, **kwargs)
        elif binding == "LOCAL":
            client = _local_client(server, **kwargs)
        else:
            client = A2AClient(server.url, binding=binding, **kwargs)
        clients.append(client)
        return client

    yield open_
    for client in clients:
        await bounded(client.close())
    for twin in twins:
        # Its input ended with the client: the stdio server finishes and exits cleanly.
        assert await twin.wait_closed() == 0, "the stdio server ended with an error status"


async def _stdio_client(server: A2AServer, twins: list[StdioTwin], **kwargs: Any) -> A2AClient:
    """A client on a new stdio connection to ``server``: the version and credentials go once,
    in ``initialize``, as ``A2AClient.stdio`` sends them to a child process."""
    credentials = kwargs.pop("credentials", None)
    headers = {VERSION_HEADER: PROTOCOL_VERSION, **(kwargs.pop("headers", None) or {})}
    if credentials is not None:
        headers.update(credentials.headers(None))
    twin = open_stdio_twin(server, headers)
    twins.append(twin)
    # Handshake now, so the server side is serving before the test's first call. A refused
    # initialize is sent again by the first call, which then raises the error itself.
    with contextlib.suppress(ProtocolError):
        await bounded(twin.transport.start(), WAIT)
    return A2AClient(transport=twin.transport, **kwargs)


def _local_client(server: A2AServer, **kwargs: Any) -> A2AClient:
    """A client that calls ``server``'s own handler in this process, through ``LocalTransport``.

    An in-process caller is trusted and names its principal: the one the server's authenticator
    gives its credentials, as an application that embeds the agent would have checked them.
    """
    credentials = kwargs.pop("credentials", None)
    principal = server.authenticator.authenticate(credentials.headers(None)) if credentials is not None else None
    transport = LocalTransport(server.handler, principal=principal)
    return A2AClient(card=local_card(server.handler), transport=transport, **kwargs)


@pytest.fixture
async def client(echo_server: A2AServer, open_client: OpenClient) -> A2AClient:
    """The echo agent on the test's binding."""
    return await open_client(echo_server)


@pytest.fixture
def open_raw(http: httpx.AsyncClient, binding: str) -> OpenRaw:
    """``open_raw(server)``: hand-made requests on the test's binding."""

    def open_(server: A2AServer) -> Raw:
        assert server.url is not None
        return Raw(http, server.url, binding)

    return open_


@pytest.fixture
def raw(echo_server: A2AServer, open_raw: OpenRaw) -> Raw:
    """Hand-made requests to the echo agent on the test's binding."""
    return open_raw(echo_server)


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
async def greeter_server(serve: StartServer) -> A2AServer:
    """The input-required example agent (asks for a name, then greets)."""
    return await serve(load_module("input_required_agent.py").agent)


@pytest.fixture
async def greeter(greeter_server: A2AServer, open_client: OpenClient) -> A2AClient:
    return await open_client(greeter_server)
