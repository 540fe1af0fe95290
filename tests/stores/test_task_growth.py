"""A task saved again and again as the handler grows it (parts appended in place, history
replaced by a longer list, an artifact replaced, the task ended) reads back equal on every
store; the SQLite store writes only what was added (its own test below)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import msgspec

from a2a.server.backends.sqlite.tasks import INLINE_ITEMS, SQLiteTaskStore
from a2a.server.backends.store import TaskRecord, TaskStore
from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus


def _message(i: int) -> Message:
    return Message(message_id=f"m{i}", role=Role.AGENT if i else Role.USER, parts=[Part(text=f"say {i}")])


def _grown_copy(task: Task) -> Task:
    """A deep copy to compare with (the store must not hand back the same objects)."""
    return msgspec.json.decode(msgspec.json.encode(task), type=Task)


async def _check(store: TaskStore, record: TaskRecord) -> None:
    await store.save(record)
    got = await store.get(record.task.id)
    assert got is not None
    assert got.task == _grown_copy(record.task)
    assert got.last_seq == record.last_seq


async def test_a_growing_task_reads_back_equal_after_every_save(store: TaskStore) -> None:
    task = Task(id="g1", context_id="c", status=TaskStatus(state=TaskState.SUBMITTED, timestamp="t0"))
    task.history = [_message(0)]
    record = TaskRecord(task, owner="o")
    await _check(store, record)
    stream = Artifact(artifact_id="stream", parts=[Part(text="chunk 0")])
    task.artifacts = [stream]
    task.status = TaskStatus(state=TaskState.WORKING, timestamp="t1")
    for i in range(1, 30):  # past the SQLite store's INLINE_ITEMS: written whole, then appended
        stream.parts.extend([Part(text=f"chunk {i}a"), Part(text=f"chunk {i}b")])  # in place, as the handler does
        task.history = [*task.history, _message(i)]  # a new, longer list, as the handler does
        record.last_seq = i
        await _check(store, record)
    # A second artifact, then the first replaced by a new one with the same id.
    task.artifacts = [stream, Artifact(artifact_id="other", parts=[Part(data={"k": 1})])]
    await _check(store, record)
    task.artifacts = [Artifact(artifact_id="stream", parts=[Part(text="replaced")]), task.artifacts[1]]
    await _check(store, record)
    task.artifacts[0].parts.append(Part(text="after the replacement"))
    await _check(store, record)
    # Ended, then read as a list would.
    task.status = TaskStatus(state=TaskState.COMPLETED, timestamp="t9")
    await _check(store, record)
    assert (await store.unfinished()) == []


async def test_sqlite_appends_what_was_added_and_compacts_a_finished_task(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path)
    task = Task(id="g2", context_id="c", status=TaskStatus(state=TaskState.WORKING, timestamp="t0"))
    stream = Artifact(artifact_id="s", parts=[])
    task.artifacts = [stream]
    record = TaskRecord(task)
    sizes = []
    try:
        for i in range(200):
            stream.parts.append(Part(text=f"chunk {i} " + "x" * 100))
            await store.save(record)
            if i <= INLINE_ITEMS:
                continue  # a small task is written whole in its row
            with closing(sqlite3.connect(path)) as conn, conn:
                sizes.append(conn.execute("SELECT length(body) FROM tasks WHERE id = 'g2'").fetchone()[0])
                newest = conn.execute("SELECT length(parts) FROM task_parts ORDER BY seq DESC LIMIT 1").fetchone()[0]
            assert newest < 200, "a save writes the new chunk, not every chunk so far"
        assert sizes and max(sizes) == min(sizes), "the task's row does not grow with its parts"
        task.status = TaskStatus(state=TaskState.COMPLETED, timestamp="t1")
        await store.save(record)
        with closing(sqlite3.connect(path)) as conn, conn:
            assert conn.execute("SELECT COUNT(*) FROM task_parts WHERE task_id = 'g2'").fetchone()[0] == 1
    finally:
        await store.close()
    reopened = SQLiteTaskStore(path)
    try:
        got = await reopened.get("g2")
        assert got is not None and got.task == _grown_copy(task)
    finally:
        await reopened.close()
