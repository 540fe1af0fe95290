"""Round trips of the Redis backend: commands of one loop turn share one (``RedisBatch``), an
event of a task without webhooks costs the push store none (``PushProbe``), and a plain reply
is not sent to the shared bus. Counted by redis-server itself (``INFO``), on a server of this
module's own, so nothing else adds to the counts."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from a2a.protocol.codec import encode
from a2a.server import Agent, CallContext, RequestContext
from a2a.server.backends.base import Backend, open_backend
from a2a.server.backends.redis.batch import RedisBatch
from a2a.server.backends.store import IdempotencyRecord, TaskRecord
from a2a.server.engine.events import LoggedEvent
from a2a.server.engine.serving import open_handler
from a2a.server.push.store import PushConfigRecord
from a2a.types import (
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.redis_server import redis_server


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis-round-trips")) as url:
        yield url


@pytest.fixture
async def counters(own_redis: str) -> AsyncIterator[Any]:
    client = aioredis.Redis.from_url(own_redis)

    async def read() -> dict[str, int]:
        stats: dict[str, Any] = await client.info("stats")
        commands: dict[str, Any] = await client.info("commandstats")
        counts = {"reads": int(stats["total_reads_processed"])}
        for name, value in commands.items():
            counts[name.removeprefix("cmdstat_")] = int(value["calls"])
        return counts

    yield read
    await client.aclose()


def delta(before: dict[str, int], after: dict[str, int], name: str) -> int:
    # The reading itself (two INFO commands, one round trip each) is not counted.
    own = {"reads": 2, "info": 2}.get(name, 0)
    return after.get(name, 0) - before.get(name, 0) - own


@pytest.fixture
async def backends(own_redis: str, tmp_path: Path) -> AsyncIterator[tuple[Backend, Backend]]:
    """Two replicas' backends (each its own client and pool) on one namespace."""
    made = [open_backend(own_redis, namespace=f"rt-{tmp_path.name}") for _ in range(2)]
    yield made[0], made[1]
    for backend in made:
        await backend.push.close()
        await backend.events.close()
        await backend.tasks.close()


def status_event(task_id: str, seq: int, state: TaskState = TaskState.WORKING) -> LoggedEvent:
    event = StreamResponse(
        status_update=TaskStatusUpdateEvent(task_id=task_id, context_id="c", status=TaskStatus(state=state))
    )
    return LoggedEvent(seq, event, encode(event))


async def test_commands_of_one_loop_turn_share_one_round_trip(backends: tuple[Backend, Backend], counters: Any) -> None:
    store = backends[0].tasks
    await store.get_message(("o", "t", "warm-up"))  # the pool's connection is made
    before = await counters()
    claims = await asyncio.gather(
        *(store.claim_message(("o", "t", f"m{i}"), IdempotencyRecord("f", f"task{i}")) for i in range(40))
    )
    after = await counters()
    assert claims == [None] * 40, "every claim is new"
    assert delta(before, after, "set") == 40
    assert delta(before, after, "reads") <= 2, "40 claims issued in one turn went in one pipeline"
    # Still one caller's answer each: a second claim finds the first.
    again = await store.claim_message(("o", "t", "m7"), IdempotencyRecord("g", "other"))
    assert again is not None and again.task_id == "task7"


async def test_a_failing_command_fails_its_caller_only(backends: tuple[Backend, Backend]) -> None:
    bus = backends[0].events
    await bus.publish("t1", status_event("t1", 1))
    # Seq 1 again (XADD refuses an id not above the last), beside two good publishes.
    results = await asyncio.gather(
        bus.publish("t2", status_event("t2", 1)),
        bus.publish("t1", status_event("t1", 1)),
        bus.publish("t1", status_event("t1", 2)),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], ResponseError)
    assert await bus.last_published("t1") == 2 and await bus.last_published("t2") == 1


async def test_a_script_redis_no_longer_has_is_loaded_again(backends: tuple[Backend, Backend], own_redis: str) -> None:
    store = backends[0].tasks
    task = Task(id="scripted", context_id="c", status=TaskStatus(state=TaskState.SUBMITTED))
    await store.save(TaskRecord(task))
    raw = aioredis.Redis.from_url(own_redis)
    try:
        await raw.script_flush()
    finally:
        await raw.aclose()
    task.status = TaskStatus(state=TaskState.COMPLETED)
    await store.save(TaskRecord(task, last_seq=2))
    found = await store.get("scripted")
    assert found is not None and found.task.status.state == TaskState.COMPLETED and found.last_seq == 2


async def test_an_event_of_a_task_without_webhooks_costs_the_push_store_no_command(
    backends: tuple[Backend, Backend], counters: Any
) -> None:
    bus, push = backends[0].events, backends[0].push
    # Push on: the store's first enqueue arms the bus's probe (that one reads the configs).
    await bus.publish("warm", status_event("warm", 1))
    assert await push.enqueue("warm", 1, b"{}", max_pending=10) == []
    before = await counters()
    for seq in range(1, 6):
        logged = status_event("quiet", seq)
        await bus.publish("quiet", logged)
        assert await push.enqueue("quiet", seq, logged.body, max_pending=10) == []
    after = await counters()
    assert delta(before, after, "hgetall") == 0 and delta(before, after, "hget") == 0
    assert delta(before, after, "exists") == 5, "the probe rode along with each XADD"
    assert delta(before, after, "reads") == 5, "one round trip per event, publish and push together"


async def test_a_config_registered_by_another_replica_is_seen_by_the_next_event(
    backends: tuple[Backend, Backend],
) -> None:
    (a, b), task_id = backends, "shared"
    await a.events.publish(task_id, status_event(task_id, 1))
    assert await a.push.enqueue(task_id, 1, b"one", max_pending=10) == []
    # Replica B registers a webhook for the task replica A runs.
    config = TaskPushNotificationConfig(id="hook", task_id=task_id, url="https://example.com/hook")
    assert await b.push.put_config(PushConfigRecord(config), max_configs=4)
    await a.events.publish(task_id, status_event(task_id, 2))
    queued = await a.push.enqueue(task_id, 2, b"two", max_pending=10)
    assert [q.config_id for q in queued] == ["hook"], "A's next event is queued for B's config"
    pending = await b.push.next_delivery(task_id, "hook")
    assert pending is not None and pending.seq == 2 and pending.body == b"two"
    # B deletes it: A's next event goes nowhere, without a read of the configs.
    assert await b.push.delete_config(task_id, "hook")
    await a.events.publish(task_id, status_event(task_id, 3))
    assert await a.push.enqueue(task_id, 3, b"three", max_pending=10) == []
    assert await b.push.next_delivery(task_id, "hook") is None


async def test_a_restarted_replica_queues_for_configs_registered_before(
    own_redis: str, backends: tuple[Backend, Backend], tmp_path: Path
) -> None:
    a = backends[0]
    config = TaskPushNotificationConfig(id="hook", task_id="old", url="https://example.com/hook")
    assert await a.push.put_config(PushConfigRecord(config), max_configs=4)
    fresh = open_backend(own_redis, namespace=f"rt-{tmp_path.name}")  # a new process
    try:
        for seq in (1, 2):  # the first unprobed (the store is not armed yet), the second probed
            await fresh.events.publish("old", status_event("old", seq))
            queued = await fresh.push.enqueue("old", seq, b"x", max_pending=10)
            assert [q.config_id for q in queued] == ["hook"]
    finally:
        await fresh.push.close()
        await fresh.events.close()
        await fresh.tasks.close()


def replying_agent() -> Agent:
    agent = Agent("Replier", "replies")

    @agent.skill(tags=["test"], replies=True)
    async def reply(ctx: RequestContext) -> None:
        await ctx.reply(f"you said {ctx.text}")

    return agent


async def test_a_plain_reply_goes_to_the_shared_bus_only_for_a_stream(
    own_redis: str, tmp_path: Path, counters: Any
) -> None:
    handler = open_handler(replying_agent(), open_backend(own_redis, namespace=f"rp-{tmp_path.name}"))
    await handler.start()
    try:

        def send(message_id: str) -> SendMessageRequest:
            return SendMessageRequest(message=Message(message_id=message_id, role=Role.USER, parts=[Part(text="hi")]))

        before = await counters()
        answer = await handler.send_message(send("plain"), CallContext())
        after = await counters()
        assert answer.message.parts[0].text == "you said hi"
        assert delta(before, after, "xadd") == 0, "nobody can follow a reply's stream but its own caller"
        streamed = [e async for e in handler.send_streaming_message(send("streamed"), CallContext())]
        assert [e.event.message.parts[0].text for e in streamed] == ["you said hi"]
    finally:
        await handler.shutdown()


async def test_one_batch_per_client(own_redis: str) -> None:
    first, second = aioredis.Redis.from_url(own_redis), aioredis.Redis.from_url(own_redis)
    try:
        assert RedisBatch.of(first) is RedisBatch.of(first)
        assert RedisBatch.of(first) is not RedisBatch.of(second)
    finally:
        await first.aclose()
        await second.aclose()


async def follow_all(bus: Any, task_id: str, *, until_terminal: bool = False) -> list[int]:
    return [e.seq async for e in bus.follow(task_id, 1, until_terminal=until_terminal)]


async def test_a_follower_in_the_publishing_process_reads_redis_at_most_twice(
    backends: tuple[Backend, Backend], counters: Any
) -> None:
    bus = backends[0].events
    before = await counters()
    reader = asyncio.ensure_future(follow_all(bus, "relayed"))
    await asyncio.sleep(0.05)  # the reader is waiting in Redis before the first event
    for seq in range(1, 50):
        await bus.publish("relayed", status_event("relayed", seq))
    await bus.publish("relayed", status_event("relayed", 50, TaskState.COMPLETED))
    async with asyncio.timeout(10):
        seqs = await reader
    after = await counters()
    assert seqs == list(range(1, 51)), "every event once, in order"
    assert delta(before, after, "xread") <= 2, "caught up with the relay, then no Redis read per event"


async def test_a_follower_goes_back_to_redis_for_what_another_replica_publishes(
    backends: tuple[Backend, Backend],
) -> None:
    a, b = backends[0].events, backends[1].events
    seen: list[int] = []
    five = asyncio.Event()

    async def read() -> None:
        async for logged in a.follow("moved", 1, until_terminal=True):
            seen.append(logged.seq)
            if logged.seq == 5:
                five.set()

    reader = asyncio.ensure_future(read())
    await asyncio.sleep(0.05)
    await a.publish("moved", status_event("moved", 1))
    await a.publish("moved", status_event("moved", 2))
    await a.publish("moved", status_event("moved", 3, TaskState.INPUT_REQUIRED))
    # The follow-up went to replica B, which runs the task on: its events reach A's reader
    # while A publishes nothing.
    await b.publish("moved", status_event("moved", 4))
    await b.publish("moved", status_event("moved", 5))
    async with asyncio.timeout(10):
        await five.wait()
    # And back to A.
    await a.publish("moved", status_event("moved", 6))
    await a.publish("moved", status_event("moved", 7, TaskState.COMPLETED))
    async with asyncio.timeout(10):
        await reader
    assert seen == [1, 2, 3, 4, 5, 6, 7]


async def test_a_gap_in_what_this_process_published_is_read_from_redis(backends: tuple[Backend, Backend]) -> None:
    a, b = backends[0].events, backends[1].events
    reader = asyncio.ensure_future(follow_all(a, "gap"))
    await asyncio.sleep(0.05)
    await a.publish("gap", status_event("gap", 1))
    await a.publish("gap", status_event("gap", 2))
    await asyncio.sleep(0.05)  # the reader waits on the relay for 3
    await b.publish("gap", status_event("gap", 3))  # another replica (one that took A for dead)
    await a.publish("gap", status_event("gap", 4))
    await a.publish("gap", status_event("gap", 5, TaskState.COMPLETED))
    async with asyncio.timeout(10):
        assert await reader == [1, 2, 3, 4, 5]


async def test_a_caller_that_stops_waiting_leaves_the_others_their_answers(own_redis: str) -> None:
    client = aioredis.Redis.from_url(own_redis)
    batch = RedisBatch.of(client)
    try:
        first = batch.run(lambda pipe: pipe.set("rt-cancel-a", "1"))
        second = batch.run(lambda pipe: (pipe.set("rt-cancel-b", "2"), pipe.get("rt-cancel-b")))
        first.cancel()
        async with asyncio.timeout(10):
            assert await second == [True, b"2"]
            # The cancelled caller's command was sent with the rest all the same.
            assert await batch.run(lambda pipe: pipe.get("rt-cancel-a")) == [b"1"]
    finally:
        await client.aclose()


async def test_an_unreachable_redis_fails_every_caller_and_the_batch_goes_on() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = aioredis.Redis(port=port, socket_connect_timeout=1, retry=None)
    batch = RedisBatch.of(client)
    try:
        async with asyncio.timeout(20):
            results = await asyncio.gather(
                batch.run(lambda pipe: pipe.get("x")), batch.run(lambda pipe: pipe.get("y")), return_exceptions=True
            )
            assert all(isinstance(r, RedisConnectionError) for r in results), results
            # Not stuck: the next call is sent (and fails the same way).
            with pytest.raises(RedisConnectionError):
                await batch.run(lambda pipe: pipe.get("z"))
    finally:
        await client.aclose()


async def test_a_follower_waiting_on_the_relay_gets_what_another_replica_ended_the_task_with(
    backends: tuple[Backend, Backend],
) -> None:
    a, b = backends[0].events, backends[1].events
    reader = asyncio.ensure_future(follow_all(a, "ignored"))
    await asyncio.sleep(0.05)
    await a.publish("ignored", status_event("ignored", 1))
    await a.publish("ignored", status_event("ignored", 2))
    # A's run ignores a cancel: after 10 s the requester on B ends the task itself, and A's run
    # publishes nothing more. A's reader, waiting on A's relay, still gets it.
    await b.publish("ignored", status_event("ignored", 3, TaskState.CANCELED))
    async with asyncio.timeout(10):
        assert await reader == [1, 2, 3]
