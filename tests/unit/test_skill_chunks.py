"""A generator skill's chunks go out as they are yielded (issue 32, item 2): none is held back
to flag the last one, and a cancelled task keeps every chunk yielded before the cancel.

The skills wait on events the tests set, so nothing here depends on timing: a chunk that were
held back would never arrive, and the time limit would fail the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from a2a import Agent
from a2a.local import local_client
from a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent

LIMIT = 10.0


class Gates:
    def __init__(self) -> None:
        self.go_on = asyncio.Event()  # set by the test: the skill may yield its second section
        self.yielded = asyncio.Event()  # set by the skill once its first yield has returned


def _agent(gates: Gates) -> Agent:
    agent = Agent("Sections", "writes sections, slowly")

    @agent.skill()
    async def write(text: str) -> AsyncIterator[str]:
        yield "section 1"
        gates.yielded.set()
        await gates.go_on.wait()  # the long work before section 2
        yield "section 2"

    return agent


async def test_each_chunk_reaches_a_stream_before_the_next_is_yielded() -> None:
    gates = Gates()
    async with local_client(_agent(gates)) as client, asyncio.timeout(LIMIT):
        events = client.stream("go")
        seen: list[object] = []
        async for event in events:
            seen.append(event.payload)
            if isinstance(event.payload, TaskArtifactUpdateEvent) and not gates.go_on.is_set():
                # Section 1 has arrived while the skill still waits before section 2.
                assert event.payload.artifact.parts[0].text == "section 1"
                assert not event.payload.append and not event.payload.last_chunk
                gates.go_on.set()
    chunks = [e for e in seen if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.parts[0].text for c in chunks] == ["section 1", "section 2", ""]
    assert [(c.append, c.last_chunk) for c in chunks] == [(False, False), (True, False), (True, True)]
    assert len({c.artifact.artifact_id for c in chunks}) == 1
    final = seen[-1]
    assert isinstance(final, TaskStatusUpdateEvent) and final.status.state == TaskState.COMPLETED


async def test_a_cancelled_task_keeps_the_chunks_yielded_before_the_cancel() -> None:
    gates = Gates()
    async with local_client(_agent(gates)) as client, asyncio.timeout(LIMIT):
        started = await client.send("go", return_immediately=True)
        assert isinstance(started, Task)
        await gates.yielded.wait()
        cancelled = await client.cancel_task(started.id)
        assert cancelled.status.state == TaskState.CANCELED
        task = await client.get_task(started.id)
    assert task.status.state == TaskState.CANCELED
    [artifact] = task.artifacts or []
    assert [p.text for p in artifact.parts] == ["section 1"]


async def test_a_generator_that_yields_nothing_completes_without_an_artifact() -> None:
    agent = Agent("Quiet", "yields nothing")

    @agent.skill()
    async def nothing(text: str) -> AsyncIterator[str]:
        return
        yield ""  # pragma: no cover - makes this an async generator

    async with local_client(agent) as client, asyncio.timeout(LIMIT):
        task = await client.send("go")
    assert isinstance(task, Task) and task.status.state == TaskState.COMPLETED
    assert not task.artifacts
