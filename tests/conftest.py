"""Shared fixtures: the example agents, a live server on a free port, and clients per binding."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from a2a import A2AClient, A2AServer, Agent, RetryPolicy, ServerConfig
from a2a.loader import load_object

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: The HTTP bindings: what suites that reach a server by its URL run over (``binding`` below).
#: The conformance suite declares its own matrix (``tests/conformance/conftest.py``).
HTTP_BINDINGS = ["JSONRPC", "HTTP+JSON"]
BINDINGS = HTTP_BINDINGS


@contextlib.asynccontextmanager
async def embedded(app: web.Application, mount: str = "") -> AsyncIterator[str]:
    """Serve ``app`` (an embedded ``A2AServer.app()``, say) on a free loopback port, mounted at
    ``mount`` in a parent application when given; yields its base URL (``mount`` included)."""
    if mount:
        parent = web.Application()
        parent.add_subapp(mount, app)
        app = parent
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}{mount}"
    finally:
        await runner.cleanup()


def load_example(name: str, attr: str = "agent") -> Agent:
    agent = load_object(f"{EXAMPLES / name}:{attr}")
    assert isinstance(agent, Agent)
    return agent


@pytest.fixture(autouse=True)
def _asyncio_debug() -> None:
    """asyncio debug mode everywhere: slow callbacks and never-awaited coroutines get reported."""
    with contextlib.suppress(RuntimeError):  # a synchronous test has no running loop
        asyncio.get_running_loop().set_debug(True)


@pytest.fixture
def echo_agent() -> Agent:
    return load_example("echo_agent.py")


@pytest.fixture
async def echo_server(echo_agent: Agent) -> AsyncIterator[A2AServer]:
    async with A2AServer(echo_agent, config=ServerConfig(port=0)) as server:
        yield server


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(echo_server: A2AServer, binding: str) -> AsyncIterator[A2AClient]:
    assert echo_server.url is not None
    async with A2AClient(echo_server.url, binding=binding, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


def python() -> str:
    return sys.executable
