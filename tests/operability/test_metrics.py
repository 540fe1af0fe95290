"""Metrics: Prometheus text at ``GET /metrics`` when enabled, against a running server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web

from a2a import A2AClient, A2AServer, Agent, RequestContext, ServerConfig
from a2a.errors import TaskNotFoundError
from a2a.server.operations.metrics import Histogram

WAIT = 20.0
# One sample line of the text format: name, optional labels, a number.
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$')


class _Held(Agent):
    """An agent whose ``hold`` skill works until released."""

    def __init__(self) -> None:
        super().__init__("Metered", "is measured")
        self.release = asyncio.Event()
        self.working = asyncio.Event()

        @self.skill()
        async def echo(text: str) -> str:
            return text

        @self.skill()
        async def hold(ctx: RequestContext) -> None:
            await ctx.working("holding")
            self.working.set()
            await self.release.wait()
            await ctx.complete("released")


def _parse(text: str) -> dict[str, float]:
    """Every sample, keyed by its name and labels as written; checks each line's syntax."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a valid sample line: {line!r}"
        samples[match.group(1) + (match.group(2) or "")] = float(match.group(3))
    return samples


@pytest.fixture
async def server() -> AsyncIterator[A2AServer]:
    async with A2AServer(_Held(), config=ServerConfig(port=0, metrics=True)) as running:
        yield running


async def _scrape(server: A2AServer) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=server.url or "") as http:
        answer = await http.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return _parse(answer.text)


async def test_requests_by_operation_binding_and_outcome(server: A2AServer) -> None:
    async with A2AClient(server.url) as client:
        await client.send("hi", skill="echo")
        with pytest.raises(TaskNotFoundError):
            await client.get_task("nope")
        [_ async for _ in client.stream("streamed", skill="echo")]
    async with A2AClient(server.url, binding="HTTP+JSON") as client:
        await client.send("hi", skill="echo")
    async with A2AClient(server.url, binding="WEBSOCKET") as client:
        await client.send("hi", skill="echo")
    async with httpx.AsyncClient(base_url=server.url or "") as http:
        await http.get("/nowhere")
    samples = await _scrape(server)
    key = 'a2a_requests_total{operation="%s",binding="%s",outcome="%s"}'
    assert samples[key % ("SendMessage", "JSONRPC", "ok")] == 1
    assert samples[key % ("GetTask", "JSONRPC", "TASK_NOT_FOUND")] == 1
    assert samples[key % ("SendStreamingMessage", "JSONRPC", "ok")] == 1
    assert samples[key % ("SendMessage", "HTTP+JSON", "ok")] == 1
    assert samples[key % ("SendMessage", "WEBSOCKET", "ok")] == 1
    count = 'a2a_request_duration_seconds_count{operation="SendMessage",binding="JSONRPC"}'
    inf = 'a2a_request_duration_seconds_bucket{operation="SendMessage",binding="JSONRPC",le="+Inf"}'
    assert samples[count] == samples[inf] == 1
    assert samples['a2a_http_responses_total{code="404"}'] == 1
    assert samples['a2a_tasks_ended_total{state="TASK_STATE_COMPLETED"}'] >= 4
    assert samples['a2a_store_duration_seconds_count{operation="save"}'] >= 1
    assert samples['a2a_open_streams{binding="JSONRPC"}'] == 0


async def test_open_streams_and_tasks_by_state_while_a_task_works(server: A2AServer) -> None:
    agent = server.agent
    assert isinstance(agent, _Held)
    async with A2AClient(server.url) as client:
        stream = client.stream("wait", skill="hold")
        first = await asyncio.wait_for(anext(stream), WAIT)
        assert first is not None
        await asyncio.wait_for(agent.working.wait(), WAIT)
        during = await _scrape(server)
        agent.release.set()
        [_ async for _ in stream]
    after = await _scrape(server)
    assert during['a2a_open_streams{binding="JSONRPC"}'] == 1
    assert during['a2a_tasks{state="TASK_STATE_WORKING"}'] == 1
    assert after['a2a_open_streams{binding="JSONRPC"}'] == 0
    assert 'a2a_tasks{state="TASK_STATE_WORKING"}' not in after


async def test_push_deliveries_are_counted() -> None:
    received: list[bytes] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.read())
        # The first attempt fails, the retry is delivered.
        return web.Response(status=503 if len(received) == 1 else 200, headers={"Retry-After": "0"})

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        config = ServerConfig(port=0, metrics=True)
        server = A2AServer(_Held(), config=config, push=True, push_allow="127.0.0.0/8")
        async with server, A2AClient(server.url) as client:
            task = await client.send("x", skill="hold", return_immediately=True)
            await client.create_push_config(task.id, f"http://127.0.0.1:{port}/hook")
            assert isinstance(server.agent, _Held)
            server.agent.release.set()
            for _ in range(200):
                samples = await _scrape(server)
                if samples.get('a2a_push_deliveries_total{outcome="delivered"}', 0) >= 1:
                    break
                await asyncio.sleep(0.05)
    finally:
        await runner.cleanup()
    assert samples['a2a_push_deliveries_total{outcome="delivered"}'] >= 1
    assert samples['a2a_push_deliveries_total{outcome="failed"}'] >= 1


async def test_off_by_default_and_nothing_recorded() -> None:
    async with A2AServer(_Held(), config=ServerConfig(port=0)) as server:
        assert server.metrics is None
        assert type(server.handler.store).__name__ == "InMemoryTaskStore"  # not timed
        async with httpx.AsyncClient(base_url=server.url or "") as http:
            answer = await http.get("/metrics")
    assert answer.status_code == 404


def test_histogram_buckets_are_cumulative_in_the_text() -> None:
    histogram = Histogram("h", "help", ("op",), (0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 2.0):
        histogram.observe(("x",), value)
    assert histogram.lines() == [
        'h_bucket{op="x",le="0.1"} 2',
        'h_bucket{op="x",le="1"} 3',
        'h_bucket{op="x",le="+Inf"} 4',
        'h_sum{op="x"} 2.65',
        'h_count{op="x"} 4',
    ]
