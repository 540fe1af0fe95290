"""A task's first save may be queued (``TaskStore.queue_save``) rather than awaited: nothing
about the task leaves its run before that save is committed (no HTTP; a store whose commits
the test releases by hand)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from a2a.errors import TaskNotFoundError
from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.server.backends.store import InMemoryTaskStore, TaskRecord
from a2a.server.engine.events import LoggedEvent
from a2a.server.engine.execution import Run
from a2a.server.engine.ids import new_id
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from tests.fakes.held_agent import held_agent

NOBODY = CallContext()
pytestmark = pytest.mark.timeout(20)


class HeldStore(InMemoryTaskStore):
    """Queued saves wait for ``commit()``; an awaited save commits everything queued before
    it first (as a store that commits in order does)."""

    def __init__(self) -> None:
        super().__init__()
        self.queued: list[tuple[asyncio.Future[None], TaskRecord]] = []
        self.fail_next = False

    def queue_save(self, record: TaskRecord) -> asyncio.Future[None] | None:
        commit: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.queued.append((commit, record))
        return commit

    def commit(self) -> None:
        queued, self.queued = self.queued, []
        for commit, record in queued:
            if self.fail_next:
                commit.set_exception(OSError("disk full"))
                continue
            self._tasks[record.task.id] = record
            commit.set_result(None)
        self.fail_next = False

    async def save(self, record: TaskRecord) -> None:
        self.commit()
        await super().save(record)


def send(text: str = "go") -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id=new_id(), role=Role.USER, parts=[Part(text=text)]))


async def _seen(handler: RequestHandler, task_id: str) -> bool:
    try:
        await handler.get_task(GetTaskRequest(id=task_id), NOBODY)
    except TaskNotFoundError:
        return False
    return True


async def test_a_task_is_invisible_until_its_queued_first_save_commits() -> None:
    agent, published, go = held_agent()
    store = HeldStore()
    handler = RequestHandler(agent, store)
    await handler.start()
    try:
        sending = asyncio.ensure_future(handler.send_message(send(), NOBODY))
        await asyncio.wait_for(published.wait(), 5)
        (task_id,) = handler._runs
        run = handler._runs[task_id]
        assert store.queued, "the first save was queued"
        # Queued, not committed: no caller may learn of the task.
        assert not await _seen(handler, task_id)
        assert (await handler.list_tasks(ListTasksRequest(), NOBODY)).tasks == []
        with pytest.raises(TaskNotFoundError):
            await handler.subscribe(SubscribeToTaskRequest(id=task_id), NOBODY).__anext__()
        assert not run.started.is_set() and not run.visible
        assert await handler.bus.retained_from(task_id) is None, "no event was published"

        store.commit()
        for _ in range(50):  # the held events are released by a step of their own
            if run.visible:
                break
            await asyncio.sleep(0)
        assert run.visible and run.started.is_set()
        assert await _seen(handler, task_id)
        # The held events went out in order once the commit was known.
        events = [logged.event async for logged in _first(handler, task_id, 2)]
        assert isinstance(events[0].task, Task) and events[0].task.id == task_id
        assert isinstance(events[1].artifact_update, TaskArtifactUpdateEvent)

        go.set()
        answer = await asyncio.wait_for(sending, 5)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
    finally:
        go.set()
        await handler.shutdown()


async def _first(handler: RequestHandler, task_id: str, count: int) -> AsyncIterator[LoggedEvent]:
    """The task's first ``count`` events on the bus."""
    got = 0
    async for logged in handler.bus.follow(task_id, 1):
        yield logged
        got += 1
        if got == count:
            return


def _quick_agent() -> Agent:
    """A skill that adds one artifact chunk and completes: a quick task."""
    agent = Agent("Quick", "one chunk, done")

    @agent.skill(tags=["test"], replies=True)
    async def act(ctx: RequestContext) -> None:
        await ctx.artifact("chunk", artifact_id="a")
        await ctx.complete()

    return agent


@contextlib.asynccontextmanager
async def _quick_task() -> AsyncIterator[tuple[RequestHandler, Task]]:
    """A handler of ``_quick_agent`` on a ``HeldStore``, and the task one send completed."""
    handler = RequestHandler(_quick_agent(), HeldStore())
    await handler.start()
    try:
        answer = await handler.send_message(send(), NOBODY)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        yield handler, answer.task
    finally:
        await handler.shutdown()


async def test_a_quick_task_queues_its_first_save_into_its_last() -> None:
    async with _quick_task() as (handler, task):
        # The awaited last save committed the queued first one before it: everything published.
        stream: list[StreamResponse] = [logged.event async for logged in _first(handler, task.id, 3)]
        assert [isinstance(e.task, Task) for e in stream] == [True, False, False]
        assert isinstance(stream[1].artifact_update, TaskArtifactUpdateEvent)
        assert isinstance(stream[2].status_update, TaskStatusUpdateEvent)
        assert stream[2].status_update.status.state == TaskState.COMPLETED


async def test_a_save_awaited_after_a_queued_one_releases_the_held_events_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The queued save's commit callback would find nothing to do (the awaited save publishes
    # the held events): it is taken off, not run through the loop for every quick task.
    calls: list[object] = []
    real = Run._committed

    def counting(self: Run, commit: asyncio.Future[None]) -> None:
        calls.append(commit)
        real(self, commit)

    monkeypatch.setattr(Run, "_committed", counting)
    async with _quick_task() as (handler, task):
        for _ in range(5):
            await asyncio.sleep(0)
        assert calls == []
        assert [logged.seq async for logged in _first(handler, task.id, 3)] == [1, 2, 3]


async def test_a_failed_queued_save_holds_the_events_until_a_save_succeeds() -> None:
    agent, published, go = held_agent()
    store = HeldStore()
    handler = RequestHandler(agent, store)
    await handler.start()
    try:
        sending = asyncio.ensure_future(handler.send_message(send(), NOBODY))
        await asyncio.wait_for(published.wait(), 5)
        (task_id,) = handler._runs
        store.fail_next = True
        store.commit()
        for _ in range(10):
            await asyncio.sleep(0)
        # Not on disk: still nobody may learn of it.
        assert not await _seen(handler, task_id)
        assert await handler.bus.retained_from(task_id) is None
        go.set()  # the agent's next save writes the whole task, and releases the events
        answer = await asyncio.wait_for(sending, 5)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        assert await _seen(handler, task_id)
        assert [logged.seq async for logged in _first(handler, task_id, 3)] == [1, 2, 3]
    finally:
        go.set()
        await handler.shutdown()
