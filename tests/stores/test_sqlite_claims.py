"""An exclusive SQLite store writes an idempotency claim with the first write that depends on
it: the task's first save (in the same batch) or the reply's record (the same row, one write).
Until then the claim lives in memory, where a retry in this process finds it."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from a2a.server.backends.sqlite import tasks as sqlite_store
from a2a.server.backends.sqlite.tasks import SQLiteTaskStore
from a2a.server.backends.store import IdempotencyRecord, TaskRecord
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus


def _rows(path: Path) -> list[tuple[str, str | None, bytes | None]]:
    with closing(sqlite3.connect(path)) as conn, conn:
        return conn.execute("SELECT message_id, task_id, message FROM message_log ORDER BY message_id").fetchall()


def _task(task_id: str) -> TaskRecord:
    return TaskRecord(
        Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.SUBMITTED, timestamp="2026-01-01T00:00:00Z"))
    )


def _count_message_writes(store: SQLiteTaskStore) -> list[int]:
    writes = [0]
    real = store._db._enqueue

    def counting(op: Any) -> None:  # every write (defer, post, submit) is queued here
        if isinstance(op.key, tuple) and op.key[0] == "message":
            writes[0] += 1
        real(op)

    store._db._enqueue = counting  # type: ignore[method-assign]
    return writes


async def test_a_claim_and_its_reply_are_one_write(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    writes = _count_message_writes(store)
    key = ("a", "", "m1#f")
    reply = Message(message_id="r", role=Role.AGENT, parts=[Part(text="hi")])
    try:
        assert await store.claim_message(key, IdempotencyRecord("f", task_id="t1")) is None
        assert writes == [0]
        again = await store.claim_message(key, IdempotencyRecord("f", task_id="t2"))
        assert again is not None and again.task_id == "t1", "a retry in this process finds the claim"
        await store.record_reply(key, IdempotencyRecord("f", task_id="t1", message=reply))
        assert writes == [1]
    finally:
        await store.close()
    assert [(m, t) for m, t, _ in _rows(tmp_path / "tasks.db")] == [("m1#f", "t1")]


async def test_a_claim_is_committed_with_its_tasks_first_save(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        assert await store.claim_message(("a", "", "m1#f"), IdempotencyRecord("f", task_id="t1")) is None
        assert await store.claim_message(("a", "", "m2#f"), IdempotencyRecord("f", task_id="t2")) is None
        assert _rows(tmp_path / "tasks.db") == []
        await store.save(_task("t1"))
        # On disk once the save returns (the task id can reach a caller now); t2's is not.
        assert [(m, t) for m, t, _ in _rows(tmp_path / "tasks.db")] == [("m1#f", "t1")]
    finally:
        await store.close()


async def test_a_claim_is_committed_with_its_tasks_queued_first_save(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        assert await store.claim_message(("a", "", "m1#f"), IdempotencyRecord("f", task_id="t1")) is None
        record = _task("t1")
        record.fresh = True
        commit = store.queue_save(record)
        assert commit is not None
        await commit
        assert [(m, t) for m, t, _ in _rows(tmp_path / "tasks.db")] == [("m1#f", "t1")]
    finally:
        await store.close()


async def test_a_claim_nothing_depended_on_is_not_kept(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        assert await store.claim_message(("a", "", "m1#f"), IdempotencyRecord("f", task_id="t1")) is None
    finally:
        await store.close()
    reopened = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        # Never accepted (no task saved, no reply): a retry after a restart runs it anew.
        assert await reopened.claim_message(("a", "", "m1#f"), IdempotencyRecord("f", task_id="t9")) is None
    finally:
        await reopened.close()


async def test_claims_kept_in_memory_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_store, "MAX_UNWRITTEN_CLAIMS", 3)
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        for i in range(5):
            assert await store.claim_message(("a", "", f"m{i}#f"), IdempotencyRecord("f", task_id=f"t{i}")) is None
        assert len(store._unwritten) == 3
        await store.save(_task("other"))  # commits what is queued
        assert [m for m, _, _ in _rows(tmp_path / "tasks.db")] == ["m0#f", "m1#f"], "the oldest were written"
    finally:
        await store.close()


async def test_an_update_under_another_task_id_leaves_no_claim_behind(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        key = ("a", "", "m1#f")
        assert await store.claim_message(key, IdempotencyRecord("f", task_id="t1")) is None
        await store.update_message(key, IdempotencyRecord("f", task_id="t-earlier"))
        assert store._unwritten == {} and store._unwritten_of_task == {}
        assert store._pending_claims == {}
    finally:
        await store.close()
    assert [(m, t) for m, t, _ in _rows(tmp_path / "tasks.db")] == [("m1#f", "t-earlier")]
