"""Fixtures of the conformance suite: servers on free ports, raw wire access, clients per binding.

Every test that takes ``binding`` (directly or through ``client`` / ``raw``) runs once per HTTP
binding (JSON-RPC and HTTP+JSON).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from a2a import A2AClient, A2AServer, Agent, RetryPolicy, ServerConfig

from .helpers import Gate, Raw, load_module

StartServer = Callable[..., Awaitable[A2AServer]]
OpenClient = Callable[..., Awaitable[A2AClient]]
OpenRaw = Callable[[A2AServer], Raw]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """A bare httpx client: no default A2A-Version header, no credentials."""
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
async def serve() -> AsyncIterator[StartServer]:
    """``await serve(agent, auth=..., config=..., store=...)``: a server on a free loopback port."""
    servers: list[A2AServer] = []

    async def start(agent: Agent, **kwargs: Any) -> A2AServer:
        config = kwargs.pop("config", None) or ServerConfig()
        config.port = 0
        server = A2AServer(agent, config=config, **kwargs)
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


@pytest.fixture
async def open_client(binding: str) -> AsyncIterator[OpenClient]:
    """``await open_client(server, credentials=...)``: an ``A2AClient`` on the test's binding."""
    clients: list[A2AClient] = []

    async def open_(server: A2AServer, **kwargs: Any) -> A2AClient:
        assert server.url is not None
        kwargs.setdefault("retry", RetryPolicy.none())
        kwargs.setdefault("timeout", 10)
        client = A2AClient(server.url, binding=binding, **kwargs)
        clients.append(client)
        return client

    yield open_
    for client in clients:
        await client.close()


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
