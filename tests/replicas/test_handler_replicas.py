"""Two RequestHandlers on one Redis behave as one service (the replica mechanics, no HTTP)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.server.backends.base import open_backend
from a2a.server.engine.serving import open_handler
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)


def counting_agent(started: asyncio.Event, release: asyncio.Event, runs: list[str]) -> Agent:
    agent = Agent("Counter", "counts")

    @agent.skill(tags=["test"])
    async def count(ctx: RequestContext) -> None:
        runs.append(ctx.task_id)
        await ctx.working("starting")
        started.set()
        for i in range(3):
            await ctx.artifact(f"chunk {i}", artifact_id="out", append=i > 0)
        await release.wait()  # cancellation lands here
        await ctx.artifact("last", artifact_id="out", append=True, last_chunk=True)

    return agent


def send(text: str, message_id: str, *, immediately: bool = True) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=message_id, role=Role.USER, parts=[Part(text=text)]),
        configuration=SendMessageConfiguration(return_immediately=immediately),
    )


@pytest.fixture
async def replicas(redis_url: str, namespace: str) -> AsyncIterator[tuple[RequestHandler, RequestHandler, dict]]:
    started, release, runs = asyncio.Event(), asyncio.Event(), []
    made = []
    for _ in range(2):
        handler = open_handler(counting_agent(started, release, runs), open_backend(redis_url, namespace=namespace))
        await handler.start()
        made.append(handler)
    yield made[0], made[1], {"started": started, "release": release, "runs": runs}
    for handler in made:
        await handler.shutdown()


async def test_a_task_started_on_a_is_read_listed_and_followed_on_b(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b, gates = replicas
    ctx = CallContext()
    task = (await a.send_message(send("go", "m1"), ctx)).task
    async with asyncio.timeout(10):
        await gates["started"].wait()
        events = b.subscribe(SubscribeToTaskRequest(id=task.id), ctx)
        first = await events.__anext__()
        assert first.event.task.id == task.id  # the task as it stands, read through B
        seen = [first]
        gates["release"].set()
        async for logged in events:
            seen.append(logged)
    seqs = [e.seq for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "B saw A's events in order, once each"
    final = seen[-1].event.status_update
    assert isinstance(final, TaskStatusUpdateEvent) and final.status.state == TaskState.COMPLETED
    chunks = [e.event.artifact_update for e in seen if isinstance(e.event.artifact_update, TaskArtifactUpdateEvent)]
    assert chunks[-1].artifact.parts[0].text == "last"
    got = await b.get_task(GetTaskRequest(id=task.id), ctx)
    assert got.status.state == TaskState.COMPLETED
    assert [p.text for p in got.artifacts[0].parts] == ["chunk 0", "chunk 1", "chunk 2", "last"]
    listed = await b.list_tasks(ListTasksRequest(), ctx)
    assert [t.id for t in listed.tasks] == [task.id]


async def test_cancel_through_b_stops_the_work_running_on_a(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b, gates = replicas
    ctx = CallContext()
    task = (await a.send_message(send("go", "m2"), ctx)).task
    async with asyncio.timeout(15):
        await gates["started"].wait()
        canceled = await b.cancel_task(CancelTaskRequest(id=task.id), ctx)
    assert canceled.status.state == TaskState.CANCELED
    run = a._runs.get(task.id)
    if run is not None:
        async with asyncio.timeout(5):
            await run.wait_done()
    assert not gates["release"].is_set(), "the agent was stopped by the cancel, not released"
    got = await a.get_task(GetTaskRequest(id=task.id), ctx)
    assert got.status.state == TaskState.CANCELED


async def test_ownership_holds_across_replicas(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b, gates = replicas
    task = (await a.send_message(send("go", "m3"), CallContext("alice"))).task
    gates["release"].set()
    from a2a.errors import TaskNotFoundError

    with pytest.raises(TaskNotFoundError):
        await b.get_task(GetTaskRequest(id=task.id), CallContext("bob"))
    assert (await b.list_tasks(ListTasksRequest(), CallContext("bob"))).tasks == []


async def test_a_retry_through_b_finds_the_task_started_on_a(replicas) -> None:  # type: ignore[no-untyped-def]
    a, b, gates = replicas
    ctx = CallContext()
    first = (await a.send_message(send("go", "m4"), ctx)).task
    gates["release"].set()
    again = await b.send_message(send("go", "m4", immediately=False), ctx)
    assert again.task.id == first.id
    assert again.task.status.state == TaskState.COMPLETED
    assert gates["runs"] == [first.id], "the agent ran once, on A"
