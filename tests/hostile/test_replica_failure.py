"""A replica dies: the others notice within seconds, and end its tasks once.

The fast tests drive ``RedisCoordination`` directly on a real redis-server with short timings
(a replica "dies" by stopping its heartbeats without leaving, as SIGKILL would); the slow one
SIGKILLs an ``a2a serve`` replica with the default timings and measures, through the survivor,
the three things a client sees: the task ending, CancelTask, and a retried blocking send.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from a2a import A2AClient, RetryPolicy
from a2a.client import user_message
from a2a.protocol.codec import encode
from a2a.server import Agent
from a2a.server.backends.base import BackendError, open_backend
from a2a.server.backends.redis.coordination import HEARTBEAT_SECONDS, LEASE_TTL_SECONDS, RedisCoordination
from a2a.server.backends.store import TaskRecord
from a2a.server.engine.events import LoggedEvent
from a2a.server.engine.handler import RESTART_NOTE
from a2a.server.engine.serving import open_handler
from a2a.types import Artifact, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus
from tests.durability.conftest import ServeProcess, poll_until, serve_env
from tests.redis_server import redis_server

#: With the default timings a death is noticed 2-4 s after it (lease 3 s, heartbeat 1 s); the
#: bound is generous for a loaded machine, and far below the 28 s it took before.
DETECTION_BOUND = 8.0
assert LEASE_TTL_SECONDS + HEARTBEAT_SECONDS < DETECTION_BOUND


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis-replica-failure")) as url:
        yield url


class Replica:
    """A coordination with short timings, and what its recoveries were asked to do."""

    def __init__(self, redis: aioredis.Redis, namespace: str) -> None:
        self.coordination = RedisCoordination(
            redis, namespace=namespace, lease_ttl=0.4, heartbeat=0.1, sweep_every=3600
        )
        self.recoveries = 0

    async def start(self) -> None:
        async def cancel(_task_id: str) -> None:
            return None

        async def recover() -> int:
            self.recoveries += 1
            return 0

        await self.coordination.start(cancel=cancel, recover=recover)

    def die(self) -> None:
        """Stop beating without leaving (what SIGKILL does): its hash lapses on its own."""
        for task in self.coordination._background:
            task.cancel()


@pytest.fixture
async def three(redis_url: str) -> AsyncIterator[list[Replica]]:
    redis = aioredis.from_url(redis_url)
    namespace = f"rf-{uuid.uuid4().hex[:12]}"
    replicas = [Replica(redis, namespace) for _ in range(3)]
    for replica in replicas:
        await replica.start()
    yield replicas
    for replica in replicas:
        await replica.coordination.close()
    await redis.aclose()


async def test_a_dead_replica_is_found_by_exactly_one_survivor_and_its_leases_lapse(three: list[Replica]) -> None:
    a, b, c = three
    a.coordination.run_started("t1")
    await asyncio.sleep(0.05)  # the lease write is in the background
    assert await b.coordination.is_running_elsewhere("t1")
    assert not await a.coordination.is_running_elsewhere("t1"), "its own run is not 'elsewhere'"
    assert not await b.coordination.claim_orphan("t1"), "a live replica's task is no orphan"
    assert not await b.coordination.request_cancel("nobody-runs-this"), "nobody to ask: cancelled at once"

    a.die()
    died = time.monotonic()

    async def recovered() -> bool | None:
        return True if b.recoveries + c.recoveries else None

    await poll_until(recovered, timeout=5, interval=0.02, what="a survivor to notice the death")
    noticed = time.monotonic() - died
    await asyncio.sleep(0.5)  # several more beats: nobody else recovers the same death
    assert (b.recoveries, c.recoveries) in ((1, 0), (0, 1)), "one survivor recovers each death"
    assert noticed < 0.4 + 0.1 + 1.0, f"noticed {noticed:.2f}s after the death (lease 0.4 s, heartbeat 0.1 s)"
    assert not await b.coordination.is_running_elsewhere("t1"), "the dead replica's leases lapsed with it"

    # Ending the orphan: one claimant at a time, and the claim is given back.
    assert await b.coordination.claim_orphan("t1")
    assert not await c.coordination.claim_orphan("t1"), "two replicas would end it twice"
    await c.coordination.release_orphan("t1")  # not c's claim: changes nothing
    assert not await c.coordination.claim_orphan("t1")
    await b.coordination.release_orphan("t1")
    assert await c.coordination.claim_orphan("t1")


async def test_a_replica_that_comes_back_after_a_stall_holds_its_leases_again(three: list[Replica]) -> None:
    a, b, _ = three
    a.coordination.run_started("t2")
    await asyncio.sleep(0.05)
    a.die()

    async def lapsed() -> bool | None:
        return None if await b.coordination.is_running_elsewhere("t2") else True

    await poll_until(lapsed, timeout=5, what="the stalled replica's lease to lapse")
    await a.coordination._heartbeat_once()  # the stall is over: the next beat
    assert await b.coordination.is_running_elsewhere("t2"), "its running task is leased again"


async def test_the_timings_are_checked_and_set_from_the_store_url(redis_url: str) -> None:
    backend = open_backend(f"{redis_url}?lease_ttl=6&heartbeat=2&recovery_sweep=60")
    coordination = backend.coordination
    assert isinstance(coordination, RedisCoordination)
    assert (coordination.lease_ttl, coordination.heartbeat, coordination.sweep_every) == (6.0, 2.0, 60.0)
    await backend.tasks.close()
    for bad in ("lease_ttl=1&heartbeat=1", "heartbeat=x", "recovery_sweep=0", "lease_ttl=-3"):
        with pytest.raises(BackendError):
            open_backend(f"{redis_url}?{bad}")


async def test_a_dead_replicas_unsaved_chunks_are_followed_by_the_end_it_is_given(redis_url: str) -> None:
    """A replica saves artifact chunks in batches but publishes each at once: when it dies, the
    task's stream may be ahead of the stored task. The FAILED event comes after the last chunk
    (else Redis refuses the append and the stream's readers never see the end)."""
    handler = open_handler(
        Agent("Idle", "runs nothing"), open_backend(redis_url, namespace=f"rf-{uuid.uuid4().hex[:12]}")
    )
    task = Task(id="t-chunks", context_id="c", status=TaskStatus(state=TaskState.WORKING))
    await handler.store.save(TaskRecord(task, last_seq=1))  # saved with its first event only
    for seq in range(1, 5):
        if seq == 1:
            event = StreamResponse(task=task)
        else:
            chunk = Artifact(artifact_id="out", parts=[Part(text=f"chunk {seq}")])
            event = StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(task_id=task.id, context_id="c", artifact=chunk)
            )
        await handler.bus.publish(task.id, LoggedEvent(seq, event, encode(event)))
    try:
        assert await handler.recover() == 1
        seen = []
        async with asyncio.timeout(5):
            async for logged in handler.bus.follow(task.id, 1):
                seen.append(logged.seq)
        assert seen == [1, 2, 3, 4, 5], seen
        assert (await handler.store.get(task.id)).task.status.state == TaskState.FAILED  # type: ignore[union-attr]
    finally:
        await handler.shutdown()


# ---- a2a serve replicas, SIGKILL ------------------------------------------------------------


def _start(store: str, name: str, tmp_path: Path, servers: list[ServeProcess]) -> ServeProcess:
    server = ServeProcess(
        ["examples/echo_agent.py:agent", "--port", "0", "--store", store], log_path=tmp_path / name, env=serve_env()
    )
    servers.append(server)
    server.wait_serving()
    return server


@pytest.mark.slow  # two `a2a serve` processes
@pytest.mark.timeout(90)
async def test_through_the_survivor_a_dead_replicas_tasks_end_within_seconds(redis_url: str, tmp_path: Path) -> None:
    store = f"{redis_url}?namespace=rf-{uuid.uuid4().hex[:12]}"
    servers: list[ServeProcess] = []
    try:
        a = _start(store, "a.err", tmp_path, servers)
        b = _start(store, "b.err", tmp_path, servers)
        retried = user_message("hold:300", message_id=f"retry-{uuid.uuid4().hex}")
        async with (
            A2AClient(a.url, retry=RetryPolicy.none(), timeout=30) as on_a,
            A2AClient(b.url, retry=RetryPolicy.none(), timeout=30) as on_b,
        ):
            watched = await on_a.send("hold:300", return_immediately=True)
            cancelled = await on_a.send("hold:300", return_immediately=True)
            again = await on_a.send(retried, return_immediately=True)
            assert isinstance(watched, Task) and isinstance(cancelled, Task) and isinstance(again, Task)
            for task in (watched, cancelled, again):

                async def working(task_id: str = task.id) -> bool | None:
                    return True if (await on_b.get_task(task_id)).status.state == TaskState.WORKING else None

                await poll_until(working, timeout=15, what="the task WORKING through B")
            await asyncio.to_thread(a.kill)
            killed = time.monotonic()

            async def timed(call: asyncio.Future[Task] | asyncio.Task[Task]) -> tuple[Task, float]:
                task = await call
                return task, time.monotonic() - killed

            async def ended() -> Task:
                while True:
                    task = await on_b.get_task(watched.id)
                    if task.status.state.is_terminal:
                        return task
                    await asyncio.sleep(0.05)

            async def resent() -> Task:
                answer = await on_b.send(retried)
                assert isinstance(answer, Task)
                return answer

            async with asyncio.timeout(30):  # a hang guard; the bound is asserted below
                (seen, detect), (cancel, cancel_took), (resend, resend_took) = await asyncio.gather(
                    timed(asyncio.ensure_future(ended())),
                    timed(asyncio.ensure_future(on_b.cancel_task(cancelled.id))),
                    timed(asyncio.ensure_future(resent())),
                )
            figures = (
                f"task ended {detect:.1f}s, cancel {cancel_took:.1f}s, retried send {resend_took:.1f}s after the kill"
            )
            assert detect < DETECTION_BOUND and cancel_took < DETECTION_BOUND and resend_took < DETECTION_BOUND, figures
            assert seen.status.state == TaskState.FAILED
            # The cancel ends the orphan CANCELED, unless B's recovery of the dead replica ended it first.
            assert cancel.status.state in (TaskState.CANCELED, TaskState.FAILED), cancel.status.state
            assert resend.id == again.id and resend.status.state == TaskState.FAILED, "the retry finds its task, ended"
            # Ended once: one final status message, however many paths raced to end it.
            for task_id in (watched.id, cancelled.id, again.id):
                history = (await on_b.get_task(task_id)).history or []
                ends = [m for m in history if "".join(p.text or "" for p in m.parts) in (RESTART_NOTE, "Canceled")]
                assert len(ends) <= 1, f"task {task_id} was ended more than once: {history}"
            print(f"\n{figures}")
    finally:
        for server in servers:
            with contextlib.suppress(Exception):
                server.kill()
