"""Two ``a2a serve`` replicas of the echo agent on one real redis-server, over HTTP.

A task started through A is read, listed, followed (SSE, live, in order), cancelled and retried
through B; ownership holds across them; and when A is SIGKILLed, B notices within seconds and
ends A's task FAILED. Both servers require bearer tokens (alice and bob).
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a.client import user_message
from a2a.errors import AuthenticationRequiredError, TaskNotFoundError
from a2a.protocol.jsonrpc import decode_response, encode_request
from a2a.protocol.sse import SSEDecoder
from a2a.protocol.version import PROTOCOL_VERSION, VERSION_HEADER
from a2a.server.backends.redis.coordination import HEARTBEAT_SECONDS, LEASE_TTL_SECONDS
from a2a.server.engine.handler import RESTART_NOTE
from a2a.types import (
    Role,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from tests.durability.conftest import ServeProcess, poll_until, serve_env

TOKENS = {"alice": "alice-secret-token", "bob": "bob-secret-token"}
#: How long a single wait for a state may take (not counting the recovery sweep).
WAIT = 15.0
#: How long CancelTask through B may take to end A's work: far less than the hold, and less
#: than B's fallback of marking the task itself (REMOTE_CANCEL_WAIT, 10 s).
CANCEL_PROMPT = 5.0
#: A's liveness (3 s) must lapse and B's next heartbeat (1 s) notice it: the worst case, and a
#: generous margin for a loaded machine (the bound pinned by tests/hostile/test_replica_failure).
RECOVERY_WAIT = LEASE_TTL_SECONDS + HEARTBEAT_SECONDS + 15.0
STREAM_CHUNKS = 10_000

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]  # `a2a serve` replicas on a redis-server


@dataclass
class Replicas:
    a: ServeProcess
    b: ServeProcess
    namespace: str
    redis_url: str

    def client(self, server: ServeProcess, who: str | None = "alice") -> A2AClient:
        credentials = BearerToken(TOKENS[who]) if who else None
        return A2AClient(server.url, credentials=credentials, retry=RetryPolicy.none(), timeout=WAIT)


def _start_pair(redis_url: str, tmp_path: Path, servers: list[ServeProcess]) -> Replicas:
    namespace = f"dur-{uuid.uuid4().hex[:12]}"
    store = f"{redis_url}?namespace={namespace}"
    env = serve_env(A2A_BEARER_TOKENS=",".join(f"{who}:{token}" for who, token in TOKENS.items()))
    made = []
    for name in ("a", "b"):
        args = ["examples/echo_agent.py:agent", "--port", "0", "--store", store, "--auth", "bearer"]
        server = ServeProcess(args, log_path=tmp_path / f"serve-{name}.err", env=env)
        servers.append(server)
        made.append(server)
    for server in made:
        server.wait_serving()
    assert made[0].url != made[1].url
    return Replicas(made[0], made[1], namespace, redis_url)


@pytest.fixture
def replicas(redis_url: str, tmp_path: Path, servers: list[ServeProcess]) -> Iterator[Replicas]:
    pair = _start_pair(redis_url, tmp_path, servers)
    yield pair
    for server in (pair.a, pair.b):
        if server.alive:
            assert server.terminate() == 0, f"a2a serve did not stop cleanly: {server.stderr_tail()}"


@pytest.fixture
async def alice_a(replicas: Replicas) -> AsyncIterator[A2AClient]:
    async with replicas.client(replicas.a) as client:
        yield client


@pytest.fixture
async def alice_b(replicas: Replicas) -> AsyncIterator[A2AClient]:
    async with replicas.client(replicas.b) as client:
        yield client


@dataclass
class Subscription:
    """A raw SSE SubscribeToTask on the JSON-RPC binding: each event with its SSE id, as it arrives."""

    events: list[tuple[int | None, StreamResponse, float]] = field(default_factory=list)
    status: int = 0

    @property
    def ids(self) -> list[int | None]:
        return [event_id for event_id, _, _ in self.events]

    @property
    def last(self) -> StreamResponse:
        return self.events[-1][1]

    async def run(self, base_url: str, task_id: str, token: str) -> None:
        body = encode_request(1, "SubscribeToTask", SubscribeToTaskRequest(id=task_id))
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Authorization": f"Bearer {token}",
            VERSION_HEADER: PROTOCOL_VERSION,
        }
        timeout = httpx.Timeout(WAIT, read=None)
        async with (
            httpx.AsyncClient(timeout=timeout) as http,
            http.stream("POST", f"{base_url}/a2a/jsonrpc", content=body, headers=headers) as response,
        ):
            self.status = response.status_code
            assert response.headers.get("content-type", "").startswith("text/event-stream"), await response.aread()
            decoder = SSEDecoder()
            async for chunk in response.aiter_raw():
                for event in decoder.feed(chunk):
                    assert event.event == "message", event
                    item = decode_response(event.data.encode(), StreamResponse)
                    self.events.append((int(event.id) if event.id else None, item, time.monotonic()))


def _final_state(item: StreamResponse) -> TaskState | None:
    if isinstance(item.status_update, TaskStatusUpdateEvent):
        return item.status_update.status.state
    if isinstance(item.task, Task):
        return item.task.status.state
    return None


def _text(task: Task) -> str:
    message = task.status.message
    return "".join(p.text or "" for p in message.parts) if message is not None else ""


def _assert_ids_strictly_increasing(sub: Subscription) -> None:
    ids = sub.ids
    assert ids and all(i is not None for i in ids), f"every SSE event carries an id: {ids[:10]}"
    numbers = [i for i in ids if i is not None]
    assert all(b > a for a, b in itertools.pairwise(numbers)), f"SSE ids not strictly increasing: {numbers[:20]}"


async def _state_is(client: A2AClient, task_id: str, *states: TaskState) -> Task | None:
    task = await client.get_task(task_id)
    return task if task.status.state in states else None


async def _subscribed(sub: Subscription, runner: asyncio.Task[None]) -> bool | None:
    if runner.done():
        runner.result()  # raise what ended it
        raise AssertionError("the subscription ended before its first event")
    return True if sub.events else None


async def _working(client: A2AClient, task_id: str) -> Task:
    async def probe() -> Task | None:
        return await _state_is(client, task_id, TaskState.WORKING)

    return await poll_until(probe, timeout=WAIT, what=f"task {task_id} WORKING")


# ---- read, list, follow ---------------------------------------------------------------------


async def test_b_reads_lists_and_follows_live_a_task_running_on_a(
    replicas: Replicas, alice_a: A2AClient, alice_b: A2AClient
) -> None:
    started = await alice_a.send(f"stream:{STREAM_CHUNKS}", return_immediately=True)
    assert isinstance(started, Task)
    sub = Subscription()
    runner = asyncio.create_task(sub.run(replicas.b.url, started.id, TOKENS["alice"]))
    try:
        read = await alice_b.get_task(started.id)
        assert read.id == started.id and read.context_id == started.context_id
        listed = await alice_b.list_tasks(page_size=100)
        assert started.id in [task.id for task in listed.tasks]
        async with asyncio.timeout(60):
            await runner
    finally:
        runner.cancel()
    assert sub.status == 200

    # The first event is the task as B read it, mid-stream; then every later chunk, live.
    first = sub.events[0][1]
    assert isinstance(first.task, Task), first
    assert not first.task.status.state.is_terminal, "subscribed after the stream ended: nothing was live"
    already = [p.text for a in first.task.artifacts or [] for p in a.parts]
    later = [
        p.text for _, e, _ in sub.events[1:] if isinstance(e.artifact_update, TaskArtifactUpdateEvent)
        for p in e.artifact_update.artifact.parts
    ]  # fmt: skip
    assert len(later) > 0, "B's subscriber got none of A's chunks live"
    assert already + later == [f"chunk {i}" for i in range(STREAM_CHUNKS)], "chunks missing, repeated or out of order"
    assert _final_state(sub.last) == TaskState.COMPLETED
    _assert_ids_strictly_increasing(sub)
    numbers = [i for i in sub.ids if i is not None]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), "a gap in the SSE ids"

    for client in (alice_a, alice_b):
        done = await client.get_task(started.id)
        assert done.status.state == TaskState.COMPLETED
    print(f"\nB's subscriber joined at chunk {len(already)}, then got {len(later)} chunks live from A")


# ---- cancel -----------------------------------------------------------------------------------


async def _lease_holders(redis: aioredis.Redis, namespace: str, task_id: str) -> int:
    """How many replicas hold the task's lease (a field of their ``{ns}:replica:{id}`` hash)."""
    members: set[bytes] = await redis.smembers(f"{namespace}:replicas")  # type: ignore[misc]
    held = [await redis.hexists(f"{namespace}:replica:{m.decode()}", task_id) for m in members]  # type: ignore[misc]
    return sum(1 for h in held if h)


async def test_cancel_through_b_stops_the_work_running_on_a(
    replicas: Replicas, alice_a: A2AClient, alice_b: A2AClient
) -> None:
    started = await alice_a.send("hold:30", return_immediately=True)
    assert isinstance(started, Task)
    await _working(alice_b, started.id)
    redis = aioredis.from_url(replicas.redis_url)
    sub = Subscription()
    runner = asyncio.create_task(sub.run(replicas.b.url, started.id, TOKENS["alice"]))
    try:

        async def lease_held() -> bool | None:
            return True if await _lease_holders(redis, replicas.namespace, started.id) == 1 else None

        await poll_until(lease_held, timeout=WAIT, what="A to hold the lease of the task it runs")
        await poll_until(lambda: _subscribed(sub, runner), timeout=WAIT, what="B's subscription")
        t0 = time.monotonic()
        canceled = await alice_b.cancel_task(started.id)
        took = time.monotonic() - t0
        assert canceled.status.state == TaskState.CANCELED
        assert took < CANCEL_PROMPT, f"CancelTask through B took {took:.1f}s"
        # The status message is the one A's run writes as its agent unwinds ("Canceled"); B's
        # own fallback (for a task nobody runs) would have written none.
        assert _text(canceled) == "Canceled", _text(canceled)

        # A's run has ended: it gave its lease back.
        async def lease_gone() -> bool | None:
            return True if await _lease_holders(redis, replicas.namespace, started.id) == 0 else None

        await poll_until(lease_gone, timeout=CANCEL_PROMPT, what="A to release the task's lease")
        async with asyncio.timeout(WAIT):
            await runner
    finally:
        runner.cancel()
        await redis.aclose()
    on_a = await alice_a.get_task(started.id)
    assert on_a.status.state == TaskState.CANCELED
    assert _final_state(sub.last) == TaskState.CANCELED, "B's subscriber saw the end of A's task"
    _assert_ids_strictly_increasing(sub)
    print(f"\nCancelTask through B returned CANCELED after {took * 1000:.0f} ms (the hold was 30 s)")


# ---- ownership ----------------------------------------------------------------------------------


async def test_ownership_holds_across_replicas(replicas: Replicas, alice_a: A2AClient, alice_b: A2AClient) -> None:
    started = await alice_a.send("hold:30", return_immediately=True)
    assert isinstance(started, Task)
    await _working(alice_b, started.id)
    for server in (replicas.b, replicas.a):
        async with replicas.client(server, "bob") as bob:
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(started.id)
            assert started.id not in [task.id for task in (await bob.list_tasks(page_size=100)).tasks]
            with pytest.raises(TaskNotFoundError):
                await bob.cancel_task(started.id)
            with pytest.raises(TaskNotFoundError):
                async for _ in bob.subscribe(started.id):
                    pass
        async with replicas.client(server, None) as nobody:
            with pytest.raises(AuthenticationRequiredError):
                await nobody.get_task(started.id)
    still = await alice_b.get_task(started.id)
    assert still.status.state == TaskState.WORKING, "bob's attempts changed nothing"
    assert (await alice_b.cancel_task(started.id)).status.state == TaskState.CANCELED


# ---- idempotency --------------------------------------------------------------------------------


async def test_a_retry_through_b_returns_the_task_started_on_a(alice_a: A2AClient, alice_b: A2AClient) -> None:
    message = user_message("hold:1", message_id=f"retry-{uuid.uuid4().hex}")
    first = await alice_a.send(message, return_immediately=True)
    assert isinstance(first, Task)
    # The same message again, through B, while A still runs it: B answers with A's task, once done.
    again = await alice_b.send(message)
    assert isinstance(again, Task)
    assert again.id == first.id
    assert again.status.state == TaskState.COMPLETED
    once_more = await alice_b.send(message)
    assert isinstance(once_more, Task) and once_more.id == first.id

    task = await alice_a.get_task(first.id)
    history = [(m.role, "".join(p.text or "" for p in m.parts)) for m in task.history or []]
    assert history == [
        (Role.USER, "hold:1"),
        (Role.AGENT, "holding for 1s"),
        (Role.AGENT, "held for 1s"),
    ], f"the agent ran more than once: {history}"
    mine = [t for t in (await alice_b.list_tasks(page_size=100)).tasks if _has_message(t, message.message_id)]
    assert [t.id for t in mine] == [first.id], "one task for the messageId"

    # A different message under the same messageId is a new message (spec §3.3.1: the messageId
    # is used "to detect duplicate messages"; this is none), on any replica.
    changed = user_message("hold:0", message_id=message.message_id)
    other = await alice_b.send(changed)
    assert isinstance(other, Task) and other.id != first.id


def _has_message(task: Task, message_id: str) -> bool:
    return any(m.message_id == message_id for m in task.history or [])


# ---- a replica dies -------------------------------------------------------------------------------


@pytest.mark.timeout(RECOVERY_WAIT + 60)
async def test_b_fails_the_task_of_a_sigkilled_replica(
    replicas: Replicas, alice_a: A2AClient, alice_b: A2AClient
) -> None:
    started = await alice_a.send("hold:300", return_immediately=True)
    assert isinstance(started, Task)
    await _working(alice_b, started.id)
    sub = Subscription()
    runner = asyncio.create_task(sub.run(replicas.b.url, started.id, TOKENS["alice"]))
    try:
        await poll_until(lambda: _subscribed(sub, runner), timeout=WAIT, what="B's subscription")
        await asyncio.to_thread(replicas.a.kill)
        killed = time.monotonic()

        async def failed() -> Task | None:
            return await _state_is(alice_b, started.id, TaskState.FAILED, TaskState.CANCELED, TaskState.COMPLETED)

        ended = await poll_until(failed, timeout=RECOVERY_WAIT, interval=0.25, what="B to fail A's task")
        took = time.monotonic() - killed
        async with asyncio.timeout(WAIT):
            await runner
    finally:
        runner.cancel()
    assert ended.status.state == TaskState.FAILED
    assert _text(ended) == RESTART_NOTE
    assert _final_state(sub.last) == TaskState.FAILED, "B's subscriber saw the task fail"
    _assert_ids_strictly_increasing(sub)
    print(f"\nB marked the task of SIGKILLed A FAILED {took:.1f}s after the kill")
