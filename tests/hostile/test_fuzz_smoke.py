"""A small, seeded run of ``benchmarks/fuzz_bindings.py`` on every binding, in this process.

The same bodies as the long battery (mutated requests of every operation and the known
malformations), a few hundred per binding: no 5xx, no -32603, no dropped connection, no hang,
no death of the stdio server, and no traceback in the log.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import random
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import aiohttp
import pytest

from a2a import A2AServer, Agent, ServerConfig
from a2a.server.backends.base import Backend
from a2a.server.channels.stdio import StdioConfig, serve_stdio
from tests.asgi_serving import HOSTS, hosted

ROOT = Path(__file__).resolve().parents[2]
BODIES = 300
SEED = 16
WAIT = 10.0


def _load_fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_bindings", ROOT / "benchmarks" / "fuzz_bindings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzzer()


@pytest.fixture(params=HOSTS)
async def server(echo_agent: Agent, request: pytest.FixtureRequest) -> AsyncIterator[A2AServer]:
    """The echo agent served by each host: aiohttp (``start``) and ASGI (uvicorn)."""
    async with hosted(A2AServer(echo_agent, config=ServerConfig(port=0), push=True), request.param) as running:
        yield running


def _bodies(binding: str, task_id: str) -> list[object]:
    stream = fuzz.cases(random.Random(f"{SEED}-{binding}"), task_id)
    return [next(stream) for _ in range(BODIES)]


def _assert_clean(tally: object, caplog: pytest.LogCaptureFixture) -> None:
    assert tally.sent == BODIES  # type: ignore[attr-defined]
    assert tally.failures == 0, "\n".join([tally.line(), *tally.examples])  # type: ignore[attr-defined]
    for record in caplog.records:
        assert record.exc_info is None, f"a traceback in the log: {record.getMessage()}"
        assert record.levelno < logging.ERROR, f"logged at {record.levelname}: {record.getMessage()}"


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_http_bindings(server: A2AServer, caplog: pytest.LogCaptureFixture, binding: str) -> None:
    assert server.url is not None
    task_id = await fuzz._make_task(server.url)
    # (A REST request whose URL is over 8 KB is not sent: aiohttp refuses it before any binding.)
    tally = await fuzz.fuzz_http(binding, server.url, _bodies(binding, task_id), WAIT, lambda: True)
    _assert_clean(tally, caplog)


async def test_websocket(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    assert server.url is not None
    task_id = await fuzz._make_task(server.url)
    url = server.url.replace("http://", "ws://") + "/a2a/ws"
    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=fuzz.VERSION) as ws:
        tally = await fuzz.fuzz_connection("ws", fuzz.WsChannel(ws), _bodies("ws", task_id), WAIT)
        assert not ws.closed
    _assert_clean(tally, caplog)


async def test_stdio(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    assert server.url is not None
    task_id = await fuzz._make_task(server.url)
    to_agent_read, to_agent_write = os.pipe()
    from_agent_read, from_agent_write = os.pipe()
    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(
        serve_stdio(
            server.agent,
            backend=Backend(server.handler.store, server.handler.bus),
            config=StdioConfig(),
            stdin_fd=to_agent_read,
            stdout_fd=from_agent_write,
            stop=stop,
        )
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**25)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_agent_read, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(to_agent_write, "wb", 0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    channel = fuzz.LineChannel(reader, writer)
    try:
        await channel.send(
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"serviceParameters":{"A2A-Version":"1.0"}}}'
        )
        assert b'"result"' in (await asyncio.wait_for(channel.receive(), WAIT) or b"")
        tally = await fuzz.fuzz_connection("stdio", channel, _bodies("stdio", task_id), WAIT)
        assert not serving.done(), "the stdio server goes on"
    finally:
        stop.set()
        transport.close()
        await asyncio.wait_for(serving, WAIT)
        os.close(to_agent_read)
        os.close(from_agent_write)
    _assert_clean(tally, caplog)
