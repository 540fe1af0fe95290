"""Streams survive dropped connections: the client resumes from the last event id it saw.

A proxy on loopback cuts event-stream responses at random byte offsets; every stream must still
end with exactly the full sequence of events: no gap, no duplicate, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable

import pytest

from a2a import A2AClient, A2AServer, Agent, RequestContext, RetryPolicy, ServerConfig
from a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent

CHUNKS = 30
ROUNDS = 100


def streaming_agent() -> Agent:
    agent = Agent("Chunky", "streams chunks")

    @agent.skill(tags=["test"])
    async def chunks(ctx: RequestContext) -> None:
        await ctx.working("starting")
        for i in range(CHUNKS):
            await ctx.artifact(f"chunk {i}", artifact_id="out", append=i > 0, last_chunk=i == CHUNKS - 1)
            if i % 5 == 0:
                await asyncio.sleep(0.001)  # some cuts land while the task is live, some after it ended

    return agent


class CuttingProxy:
    """Forwards TCP to ``target``; cuts an event-stream response after ``cut()`` bytes (or not)."""

    def __init__(self, target_port: int, cut: Callable[[], int | None]) -> None:
        self.target_port = target_port
        self.cut = cut
        self.cuts = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        pump_up = asyncio.create_task(self._pump(reader, up_writer, None))
        try:
            await self._pump(up_reader, writer, self.cut)
        finally:
            pump_up.cancel()
            with contextlib.suppress(BaseException):
                await pump_up
            for w in (writer, up_writer):
                w.close()
            self._tasks.discard(task)

    async def _pump(
        self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, cut: Callable[[], int | None] | None
    ) -> None:
        """Copy ``src`` to ``dst``; each event-stream response (a keep-alive connection carries
        many) may be cut at a fresh random offset."""
        limit: int | None = None
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while data := await src.read(4096):
                if cut is not None and b"text/event-stream" in data:
                    chosen = cut()
                    limit = None if chosen is None else chosen
                if limit is not None and len(data) > limit:
                    dst.write(data[:limit])
                    await dst.drain()
                    self.cuts += 1
                    return  # the connection is dropped mid-stream
                if limit is not None:
                    limit -= len(data)
                dst.write(data)
                await dst.drain()


@pytest.fixture
async def server() -> AsyncIterator[A2AServer]:
    async with A2AServer(streaming_agent(), config=ServerConfig(port=0)) as srv:
        yield srv


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_hundred_random_drops_leave_no_gap_and_no_duplicate(server: A2AServer, binding: str) -> None:
    rng = random.Random(1234)
    assert server.url is not None
    port = int(server.url.rsplit(":", 1)[1])
    # Cut 80% of event streams, anywhere from inside the headers to deep into the events.
    proxy = CuttingProxy(port, lambda: rng.randrange(100, 6000) if rng.random() < 0.8 else None)
    proxy_port = await proxy.start()
    card = await _card(server)
    # The card names the real port; the client must go through the proxy.
    retry = RetryPolicy(max_attempts=6, initial_backoff=0.001, max_backoff=0.01, deadline=30)
    base = f"http://127.0.0.1:{proxy_port}"
    interfaces = [
        i.__class__(url=i.url.replace(server.url, base), protocol_binding=i.protocol_binding)
        for i in card.supported_interfaces
    ]
    card = card.__class__(**{**_fields(card), "supported_interfaces": interfaces})
    try:
        async with A2AClient(card=card, binding=binding, retry=retry, timeout=10) as client:
            async with asyncio.timeout(120):
                for _ in range(ROUNDS):
                    events = [e.payload async for e in client.stream("go")]
                    _check_complete(events)
    finally:
        await proxy.close()
    assert proxy.cuts >= ROUNDS // 2, f"only {proxy.cuts} streams were cut: the test would prove little"


def _check_complete(events: list[object]) -> None:
    assert isinstance(events[0], Task)
    chunks = [e.artifact.parts[0].text for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    if chunks:
        # Resumed (or never cut): every chunk exactly once, in order.
        assert chunks == [f"chunk {i}" for i in range(CHUNKS)], chunks
        last = events[-1]
        assert isinstance(last, TaskStatusUpdateEvent) and last.status.state == TaskState.COMPLETED
    else:
        # Cut before any chunk and resumed after the task ended and its events expired: the
        # final task carries everything (not expected with the default retention).
        final = events[-1]
        assert isinstance(final, Task) and final.status.state == TaskState.COMPLETED


async def _card(server: A2AServer):  # type: ignore[no-untyped-def]
    assert server.url is not None
    return server.card(server.url)


def _fields(obj: object) -> dict[str, object]:
    return {name: getattr(obj, name) for name in obj.__struct_fields__}  # type: ignore[attr-defined]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_the_server_resumes_exactly_after_last_event_id(server: A2AServer, binding: str) -> None:
    import httpx

    from a2a.protocol.sse import SSEDecoder

    assert server.url is not None
    async with A2AClient(server.url, binding=binding, retry=RetryPolicy.none(), timeout=10) as client:
        events = [e async for e in client.stream("go")]
    task_id = events[0].payload.id  # type: ignore[union-attr]
    headers = {"A2A-Version": "1.0", "Last-Event-ID": "7", "Accept": "text/event-stream"}
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        request = ("POST", f"{server.url}/a2a/jsonrpc", body)
    else:
        request = ("GET", f"{server.url}/a2a/rest/tasks/{task_id}:subscribe", None)
    decoder = SSEDecoder()
    ids: list[str | None] = []
    async with (
        httpx.AsyncClient(timeout=10) as http,
        http.stream(request[0], request[1], json=request[2], headers=headers) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        async for chunk in response.aiter_raw():
            ids += [event.id for event in decoder.feed(chunk)]
    # The task ended, but its events are retained: exactly those after 7, once each.
    total = len(events)
    assert ids == [str(seq) for seq in range(8, total + 1)]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "WEBSOCKET"])
async def test_follow_picks_a_task_up_after_an_event_id(server: A2AServer, binding: str) -> None:
    assert server.url is not None
    async with A2AClient(server.url, binding=binding, retry=RetryPolicy.none(), timeout=10) as client:
        seen = [e.payload async for e in client.stream("go")]
        task = seen[0]
        assert isinstance(task, Task)
        # Event ids are the task's sequence numbers, from 1: exactly the events after the 7th.
        after = [e.payload async for e in client.follow(task.id, after_event_id="7")]
        # Without an event id, a task that has ended is its final state (subscribe would refuse).
        final = [e.payload async for e in client.follow(task.id)]
        with pytest.raises(ValueError, match="after_event_id"):
            await client.follow(task.id, after_event_id="seven").__anext__()
    assert after == seen[7:]
    assert len(final) == 1 and isinstance(final[0], Task) and final[0].status.state == TaskState.COMPLETED
