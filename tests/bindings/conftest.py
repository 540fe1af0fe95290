"""Fixtures for the WebSocket and stdio bindings: one client fixture over all four bindings."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from a2a import A2AClient, A2AServer, RetryPolicy
from a2a.protocol.connection import WEBSOCKET_BINDING

from ._bindings_support import ECHO_STDIO

#: Every binding the conformance cases run over (the HTTP ones too, as the reference); over
#: stdio each test starts the echo agent as a child process.
ALL_BINDINGS = ["JSONRPC", "HTTP+JSON", "WEBSOCKET", pytest.param("STDIO", marks=pytest.mark.slow)]


def make_client(binding: str, server: A2AServer) -> A2AClient:
    if binding == "STDIO":
        return A2AClient.stdio(ECHO_STDIO, retry=RetryPolicy.none(), timeout=10)
    assert server.url is not None
    wanted = WEBSOCKET_BINDING if binding == "WEBSOCKET" else binding
    return A2AClient(server.url, binding=wanted, retry=RetryPolicy.none(), timeout=10)


@pytest.fixture(params=ALL_BINDINGS)
async def any_client(request: pytest.FixtureRequest, echo_server: A2AServer) -> AsyncIterator[A2AClient]:
    async with make_client(str(request.param), echo_server) as client:
        yield client


@pytest.fixture
async def ws_client(echo_server: A2AServer) -> AsyncIterator[A2AClient]:
    async with make_client("WEBSOCKET", echo_server) as client:
        yield client


@pytest.fixture
def ws_url(echo_server: A2AServer) -> str:
    assert echo_server.url is not None
    return echo_server.url.replace("http://", "ws://") + "/a2a/ws"
