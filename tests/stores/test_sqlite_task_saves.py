"""The SQLite store's task saves under the handler: a quick task's first save is queued and
merged into its last (one write), and a task whose first save is queued is found by nobody
before that save is committed (a GetTask racing the commit, the writer delayed by the test hook)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from a2a.errors import TaskNotFoundError
from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.server.backends.sqlite.tasks import SQLiteTaskStore
from a2a.server.backends.sqlite.worker import COMMIT_DELAY_ENV
from a2a.server.engine.ids import new_id
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
    TaskState,
)
from tests.conftest import load_example
from tests.fakes.held_agent import held_agent

NOBODY = CallContext()
pytestmark = pytest.mark.timeout(30)


def send(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id=new_id(), role=Role.USER, parts=[Part(text=text)]))


def _on_disk(path: Path, task_id: str) -> str | None:
    """The task's state as another connection reads the file (committed data only)."""
    with closing(sqlite3.connect(path)) as conn, conn:
        row = conn.execute("SELECT state FROM tasks WHERE id = ?", (task_id,)).fetchone()
    return None if row is None else str(row[0])


async def test_a_quick_task_is_one_task_write(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)  # what `a2a serve` opens
    handler = RequestHandler(load_example("echo_agent.py"), store)
    await handler.start()
    try:
        await handler.send_message(send("stream:1"), NOBODY)  # the file and its statements warm
        statements: list[str] = []
        assert store._db._inline_conn is not None
        store._db._inline_conn.set_trace_callback(statements.append)
        answer = await handler.send_message(send("stream:1"), NOBODY)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        task_writes = [s for s in statements if s.startswith("INSERT INTO tasks")]
        assert len(task_writes) == 1, f"the first save merges into the last: {statements}"
        assert not [s for s in statements if s.startswith("DELETE")], "a fresh task has no part rows to clear"
    finally:
        await handler.shutdown()
    # What was written is the whole task, as a new store reads it.
    again = SQLiteTaskStore(path)
    try:
        record = await again.get(answer.task.id)
        assert record is not None and record.task == answer.task and record.last_seq == 3
    finally:
        await again.close()


def _enqueued_keys(store: SQLiteTaskStore, keep: Callable[[object], bool] = lambda key: True) -> list[object]:
    """The key of every write ``store`` queues from now on (of those ``keep`` accepts)."""
    keys: list[object] = []
    real = store._db._enqueue

    def counting(op: Any) -> None:
        if keep(op.key):
            keys.append(op.key)
        real(op)

    store._db._enqueue = counting  # type: ignore[method-assign]
    return keys


async def test_a_quick_tasks_last_save_is_its_queued_first_save(tmp_path: Path) -> None:
    """Inline writer: the last save of a task whose queued first save has not run yet is that
    write (prepared when its batch runs), not a second one merged into it."""
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    handler = RequestHandler(load_example("echo_agent.py"), store)
    await handler.start()
    task_ops = _enqueued_keys(store, lambda key: isinstance(key, tuple) and key[0] == "task")
    try:
        answer = await handler.send_message(send("stream:1"), NOBODY)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        assert task_ops == [("task", answer.task.id)], "one write of the task, queued once"
        assert _on_disk(store.path, answer.task.id) == TaskState.COMPLETED.value
        assert not store._queued, "nothing left queued once its batch ran"
    finally:
        await handler.shutdown()


async def test_a_quick_task_and_its_claim_are_one_write(tmp_path: Path) -> None:
    """Inline writer: the message's idempotency claim is a row of its task's queued first save
    (no write of its own), committed with it: the retry of the message finds the task."""
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    handler = RequestHandler(load_example("echo_agent.py"), store)
    await handler.start()
    ops = _enqueued_keys(store)
    try:
        request = send("stream:1")
        answer = await handler.send_message(request, NOBODY)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        assert ops == [("task", answer.task.id)], "the claim is written by the task's write"
        assert not store._pending_claims and not store._unwritten, "nothing kept once committed"
        with closing(sqlite3.connect(store.path)) as conn, conn:
            rows = conn.execute("SELECT task_id FROM message_log").fetchall()
        assert rows == [(answer.task.id,)]
        retried = await handler.send_message(request, NOBODY)
        assert isinstance(retried.task, Task) and retried.task.id == answer.task.id
    finally:
        await handler.shutdown()


def _delayed_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SQLiteTaskStore:
    """durability=full: the writer is a thread of its own, so the loop goes on (and GetTask is
    served) while a batch waits 0.3 s before its COMMIT."""
    monkeypatch.setenv(COMMIT_DELAY_ENV, "0.3")
    return SQLiteTaskStore(tmp_path / "tasks.db", durability="full", exclusive=True)


# replies: the task is made at the agent's first event; else before the agent runs (both queue
# the new task's save).
@pytest.mark.parametrize("replies", [True, False])
async def test_get_task_never_answers_before_the_first_save_is_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: bool
) -> None:
    store = _delayed_store(tmp_path, monkeypatch)
    path = store.path
    agent = Agent("Held", "publishes a chunk, then waits")
    go = asyncio.Event()
    entered = asyncio.Event()

    @agent.skill(tags=["test"], replies=replies)
    async def act(ctx: RequestContext) -> None:
        entered.set()
        await ctx.artifact("chunk", artifact_id="a")
        await go.wait()
        await ctx.complete()

    handler = RequestHandler(agent, store)
    await handler.start()
    try:
        sending = asyncio.ensure_future(handler.send_message(send("go"), NOBODY))
        await asyncio.wait_for(entered.wait(), 10)
        (task_id,) = handler._runs
        refused_while_uncommitted = 0
        for _ in range(400):
            try:
                await handler.get_task(GetTaskRequest(id=task_id), NOBODY)
            except TaskNotFoundError:
                if _on_disk(path, task_id) is None:
                    refused_while_uncommitted += 1
                await asyncio.sleep(0.01)
                continue
            assert _on_disk(path, task_id) is not None, "GetTask answered with a task that is not on disk"
            break
        else:
            pytest.fail("the task never became visible")
        assert refused_while_uncommitted, "no GetTask came before the commit: the test proves nothing"
        go.set()
        answer = await asyncio.wait_for(sending, 10)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        assert _on_disk(path, task_id) == TaskState.COMPLETED.value
    finally:
        go.set()
        await handler.shutdown()


async def test_return_immediately_answers_once_the_task_is_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _delayed_store(tmp_path, monkeypatch)
    agent = Agent("Slow", "works a while")
    go = asyncio.Event()

    @agent.skill(tags=["test"])
    async def act(ctx: RequestContext) -> None:
        await go.wait()
        await ctx.complete("done")

    handler = RequestHandler(agent, store)
    await handler.start()
    try:
        request = send("go")
        request.configuration = SendMessageConfiguration(return_immediately=True)
        answer = await handler.send_message(request, NOBODY)
        assert isinstance(answer.task, Task)
        assert _on_disk(store.path, answer.task.id) == TaskState.SUBMITTED.value, "answered before its commit"
    finally:
        go.set()
        await handler.shutdown()


async def test_a_queued_save_committed_alone_writes_the_whole_task(tmp_path: Path) -> None:
    """On the loop's own writer (``a2a serve``) a queued first save is prepared when its batch
    runs; an agent that then waits leaves it alone in its batch: it writes the task as it is."""
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    assert store._db.inline
    agent, published, go = held_agent()
    handler = RequestHandler(agent, store)
    await handler.start()
    try:
        sending = asyncio.ensure_future(handler.send_message(send("go"), NOBODY))
        await asyncio.wait_for(published.wait(), 10)
        (task_id,) = handler._runs
        run = handler._runs[task_id]
        for _ in range(100):
            if run.visible:
                break
            await asyncio.sleep(0.01)
        assert run.visible, "the queued save was committed and its events released"
        assert _on_disk(store.path, task_id) == TaskState.SUBMITTED.value
        fetched = await handler.get_task(GetTaskRequest(id=task_id), NOBODY)
        assert fetched.artifacts and fetched.artifacts[0].parts[0].text == "chunk"
        reader = SQLiteTaskStore(store.path)
        try:
            on_disk = await reader.get(task_id)
            assert on_disk is not None and on_disk.last_seq == 2, "the task as it was when its batch ran"
            assert on_disk.task.artifacts and on_disk.task.artifacts[0].parts[0].text == "chunk"
        finally:
            await reader.close()
        go.set()
        answer = await asyncio.wait_for(sending, 10)
        assert isinstance(answer.task, Task) and answer.task.status.state == TaskState.COMPLETED
        assert _on_disk(store.path, task_id) == TaskState.COMPLETED.value
    finally:
        go.set()
        await handler.shutdown()
