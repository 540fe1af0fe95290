"""What the SQLite store does beyond the shared contract: group commit (one transaction per
batch, merged saves, a failing write alone), the in-memory idempotency claim of an exclusive
file, no push work for tasks without configs, and retention."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Literal

import pytest

from a2a.server.backends.sqlite.push import SQLitePushStore
from a2a.server.backends.sqlite.tasks import SWEEP_TASKS_SQL, SQLiteTaskStore
from a2a.server.backends.sqlite.worker import FLUSH_AFTER_TURNS, FLUSH_AT_OPS, SQLiteWorker
from a2a.server.backends.store import IdempotencyRecord, TaskQuery, TaskRecord
from a2a.server.push.store import PushConfigRecord
from a2a.types import Message, Part, Role, Task, TaskPushNotificationConfig, TaskState, TaskStatus

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER);"


def _task(task_id: str, state: TaskState, stamp: str) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state, timestamp=stamp))


def _counting_transactions(worker: SQLiteWorker) -> list[int]:
    """The size of every transaction ``worker`` commits from now on."""
    transactions: list[int] = []
    real_commit = worker._commit_group

    def counting(conn: sqlite3.Connection, group: list[object]) -> None:
        if group:
            transactions.append(len(group))
        real_commit(conn, group)  # type: ignore[arg-type]

    worker._commit_group = counting  # type: ignore[assignment,method-assign]
    return transactions


def _insert(key: str) -> Callable[[sqlite3.Connection], str]:
    def fn(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO t VALUES (?, 0)", (key,))
        return key

    return fn


async def test_writes_of_one_loop_iteration_commit_in_one_transaction(tmp_path: Path) -> None:
    worker = SQLiteWorker(tmp_path / "w.db", durability="full", schema=SCHEMA, thread_name="t")
    transactions = _counting_transactions(worker)

    def insert(i: int) -> object:
        def fn(conn: sqlite3.Connection) -> int:
            assert conn.in_transaction
            conn.execute("INSERT INTO t VALUES (?, ?)", (f"k{i}", i))
            return i

        return fn

    try:
        results = await asyncio.gather(*(worker.write(insert(i)) for i in range(50)))  # type: ignore[arg-type]
        assert results == list(range(50))
        assert transactions == [50], "one transaction (one fsync) for the 50 writes queued together"
        assert worker.read_now(lambda c: c.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 50
    finally:
        await worker.close()


@pytest.mark.parametrize("inline", [True, False])
async def test_writes_of_neighbouring_turns_of_the_loop_commit_together(tmp_path: Path, inline: bool) -> None:
    """Requests read a turn or two apart reach their writes a turn or two apart: the flush
    waits ``FLUSH_AFTER_TURNS`` turns so that they share one commit; what comes later goes to
    the next one."""
    durability: Literal["normal", "full"] = "normal" if inline else "full"
    worker = SQLiteWorker(tmp_path / "w.db", durability=durability, schema=SCHEMA, thread_name="t", inline=inline)
    transactions = _counting_transactions(worker)
    try:
        writes = []
        for turn in range(FLUSH_AFTER_TURNS + 2):
            writes.append(worker.submit(_insert(f"a{turn}")))
            writes.append(worker.submit(_insert(f"b{turn}")))
            await asyncio.sleep(0)  # one turn of the loop
        assert await asyncio.gather(*writes) == [f"{x}{turn}" for turn in range(FLUSH_AFTER_TURNS + 2) for x in "ab"]
        first = 2 * (FLUSH_AFTER_TURNS + 1)
        # (The writer thread may also take the next batch with it, if it wakes up late.)
        assert first > 2 and (transactions[0] == first if inline else transactions[0] >= first), (
            "the writes of the first turns wait for each other"
        )
        assert sum(transactions) == len(writes)
        assert worker.read_now(lambda c: c.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == len(writes)
    finally:
        await worker.close()


async def test_a_full_batch_commits_without_waiting_more_turns(tmp_path: Path) -> None:
    worker = SQLiteWorker(tmp_path / "w.db", durability="normal", schema=SCHEMA, thread_name="t", inline=True)
    transactions = _counting_transactions(worker)
    try:
        first = [worker.submit(_insert(f"k{i}")) for i in range(FLUSH_AT_OPS)]
        await asyncio.sleep(0)  # the flush's first turn: full, so it commits
        assert transactions == [FLUSH_AT_OPS]
        assert all(write.done() for write in first)
        late = worker.submit(_insert("late"))
        assert await late == "late"
        assert transactions == [FLUSH_AT_OPS, 1]
    finally:
        await worker.close()


async def test_closing_commits_what_is_still_waiting_for_its_turns(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    worker = SQLiteWorker(path, durability="normal", schema=SCHEMA, thread_name="t", inline=True)
    write = worker.submit(_insert("k"))
    await worker.close()
    assert write.done() and write.result() == "k"
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute("SELECT k FROM t").fetchall() == [("k",)]


async def test_saves_of_one_key_in_a_batch_run_once_and_answer_all(tmp_path: Path) -> None:
    worker = SQLiteWorker(tmp_path / "w.db", durability="full", schema=SCHEMA, thread_name="t")
    ran: list[int] = []

    def put(i: int) -> object:
        def fn(conn: sqlite3.Connection) -> None:
            ran.append(i)
            conn.execute("INSERT OR REPLACE INTO t VALUES ('task', ?)", (i,))

        return fn

    try:
        await asyncio.gather(*(worker.write(put(i), key="task") for i in range(10)))  # type: ignore[arg-type]
        assert ran == [9], "merged: only the last save of the key runs"
        assert worker.read_now(lambda c: c.execute("SELECT v FROM t").fetchall()) == [(9,)]
    finally:
        await worker.close()


async def test_a_failing_write_fails_alone(tmp_path: Path) -> None:
    worker = SQLiteWorker(tmp_path / "w.db", durability="normal", schema=SCHEMA, thread_name="t")

    def good(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO t VALUES ('good', 1)")
        return "ok"

    def bad(conn: sqlite3.Connection) -> str:
        conn.execute("INSERT INTO nowhere VALUES (1)")
        return "never"

    try:
        outcome = await asyncio.gather(worker.write(good), worker.write(bad), return_exceptions=True)
        assert outcome[0] == "ok"
        assert isinstance(outcome[1], sqlite3.OperationalError)
        assert worker.read_now(lambda c: c.execute("SELECT k FROM t").fetchall()) == [("good",)]
    finally:
        await worker.close()


async def test_exclusive_claims_are_decided_once_and_land_with_the_next_awaited_write(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    key = ("alice", "", "m1#f")
    try:
        outcomes = await asyncio.gather(
            *(store.claim_message(key, IdempotencyRecord("f", task_id=f"t{i}")) for i in range(5))
        )
        assert sum(o is None for o in outcomes) == 1
        assert {o.task_id for o in outcomes if o is not None} == {"t0"}
        await store.save(TaskRecord(_task("t0", TaskState.SUBMITTED, "2026-01-01T00:00:00.000000Z")))
    finally:
        await store.close()
    reopened = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        found = await reopened.get_message(key)
        assert found is not None and found.task_id == "t0"
    finally:
        await reopened.close()


async def test_a_reply_recorded_over_a_queued_claim_is_one_row(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    key = ("", "", "m2#f")
    reply = Message(message_id="r1", role=Role.AGENT, parts=[Part(text="hi")])
    try:
        assert await store.claim_message(key, IdempotencyRecord("f", task_id="t9")) is None
        await store.update_message(key, IdempotencyRecord("f", task_id="t9", message=reply))
        found = await store.get_message(key)
        assert found is not None and found.message == reply
    finally:
        await store.close()
    with closing(sqlite3.connect(tmp_path / "tasks.db")) as conn, conn:
        assert conn.execute("SELECT COUNT(*) FROM message_log").fetchone()[0] == 1


@pytest.mark.parametrize("exclusive", [True, False])
async def test_push_enqueue_without_configs_makes_no_write(tmp_path: Path, exclusive: bool) -> None:
    store = SQLitePushStore(tmp_path / "tasks.db", exclusive=exclusive)
    calls = 0
    real_write = store._db.write

    async def counting(fn, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return await real_write(fn, **kwargs)

    store._db.write = counting  # type: ignore[method-assign]
    try:
        for seq in range(1, 20):
            assert await store.enqueue("no-webhook", seq, b"{}", max_pending=10) == []
        assert calls == 0
        config = TaskPushNotificationConfig(id="c1", task_id="hooked", url="https://example.com/h")
        assert await store.put_config(PushConfigRecord(config), max_configs=4)
        queued = await store.enqueue("hooked", 1, b"{}", max_pending=10)
        assert [q.config_id for q in queued] == ["c1"]
        assert await store.enqueue("no-webhook", 20, b"{}", max_pending=10) == []
        assert await store.delete_config("hooked", "c1")
        writes = calls
        assert await store.enqueue("hooked", 2, b"{}", max_pending=10) == []
        assert calls == writes
    finally:
        await store.close()
    # Across a restart the index is read back from the file.
    again = SQLitePushStore(tmp_path / "tasks.db", exclusive=exclusive)
    try:
        config = TaskPushNotificationConfig(id="c2", task_id="later", url="https://example.com/h")
        assert await again.put_config(PushConfigRecord(config), max_configs=4)
    finally:
        await again.close()
    third = SQLitePushStore(tmp_path / "tasks.db", exclusive=exclusive)
    try:
        assert [q.config_id for q in await third.enqueue("later", 1, b"{}", max_pending=10)] == ["c2"]
    finally:
        await third.close()


async def test_retention_sweeps_ended_tasks_and_old_records_only(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", task_retention=100.0, idempotency_retention=50.0)
    now = time.time()
    old = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(now - 200))
    fresh = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime(now - 10))
    push = SQLitePushStore(tmp_path / "tasks.db")
    try:
        await store.save(TaskRecord(_task("old-done", TaskState.COMPLETED, old)))
        await store.save(TaskRecord(_task("old-failed", TaskState.FAILED, old)))
        await store.save(TaskRecord(_task("old-working", TaskState.WORKING, old)))
        await store.save(TaskRecord(_task("old-asking", TaskState.INPUT_REQUIRED, old)))
        await store.save(TaskRecord(_task("new-done", TaskState.COMPLETED, fresh)))
        config = TaskPushNotificationConfig(id="c", task_id="old-done", url="https://example.com/h")
        assert await push.put_config(PushConfigRecord(config), max_configs=4)
        assert await store.claim_message(("", "", "m"), IdempotencyRecord("f", task_id="new-done")) is None
        assert await store.sweep(now=now) == 2  # the record is fresh
        assert await store.get("old-done") is None and await store.get("old-failed") is None
        for kept in ("old-working", "old-asking", "new-done"):
            assert await store.get(kept) is not None, kept
        assert await push.get_config("old-done", "c") is None
        assert await store.sweep(now=now + 60) == 1  # now the record is past 50 s
        assert await store.get_message(("", "", "m")) is None
    finally:
        await push.close()
        await store.close()


def _old_tasks_file(tmp_path: Path, index_sql: str) -> Path:
    """A store file as an earlier version wrote it: the tasks table and one index of its own."""
    path = tmp_path / "tasks.db"
    with closing(sqlite3.connect(path)) as old, old:
        old.execute(
            "CREATE TABLE tasks (id TEXT PRIMARY KEY, owner TEXT NOT NULL, tenant TEXT NOT NULL, "
            "context_id TEXT, state TEXT NOT NULL, ts TEXT NOT NULL, last_seq INTEGER NOT NULL, body BLOB NOT NULL)"
        )
        old.execute(index_sql)
    old.close()
    return path


async def test_the_sweep_reads_ended_tasks_by_their_index_on_a_new_and_an_old_file(tmp_path: Path) -> None:
    # A file written before ``tasks_ended`` had ``tasks_ended_by_ts`` (state IN (...)), which
    # the sweep's query did not use: it read the whole table at every sweep.
    path = _old_tasks_file(
        tmp_path,
        "CREATE INDEX tasks_ended_by_ts ON tasks (ts) WHERE state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED')",
    )
    store = SQLiteTaskStore(path, task_retention=100.0, idempotency_retention=50.0)
    try:
        await store.save(TaskRecord(_task("t", TaskState.COMPLETED, "2026-01-01T00:00:00.000000Z")))

        def look(conn: sqlite3.Connection) -> tuple[list[str], str]:
            names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")]
            plan = conn.execute("EXPLAIN QUERY PLAN " + SWEEP_TASKS_SQL, ("9999", 10)).fetchall()
            return names, " ".join(str(row[-1]) for row in plan)

        names, plan = store._db.read_now(look)
        assert "tasks_ended_by_ts" not in names and "tasks_ended" in names
        assert "USING INDEX tasks_ended" in plan, plan
        assert await store.sweep(now=time.time()) == 1
    finally:
        await store.close()


async def test_list_tasks_reads_the_owner_index_backwards_on_a_new_and_an_old_file(tmp_path: Path) -> None:
    # ``tasks_by_owner`` was (owner, tenant, ts DESC, id DESC): every new task went to the
    # index's left-hand edge. It is ascending now (appended at its end); an old file's index is
    # rebuilt, and ListTasks still reads it without a sort, newest first.
    path = _old_tasks_file(tmp_path, "CREATE INDEX tasks_by_owner ON tasks (owner, tenant, ts DESC, id DESC)")
    store = SQLiteTaskStore(path)
    try:
        for i in range(5):
            await store.save(TaskRecord(_task(f"t{i}", TaskState.COMPLETED, f"2026-01-01T00:00:0{i}.000000Z")))
        statements: list[str] = []

        def trace(conn: sqlite3.Connection) -> None:
            conn.set_trace_callback(statements.append)

        await store._db.read(trace)
        first = await store.list(TaskQuery(owner="", tenant="", page_size=2))
        second = await store.list(TaskQuery(owner="", tenant="", page_size=2, page_token=first.next_page_token))
        await store._db.read(lambda conn: conn.set_trace_callback(None))
        assert [r.task.id for r in first.records + second.records] == ["t4", "t3", "t2", "t1"]

        def look(conn: sqlite3.Connection) -> tuple[str, list[str]]:
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'tasks_by_owner'").fetchone()[0]
            pages = [s for s in statements if s.startswith("SELECT id, owner")]
            plans = [" ".join(str(row[-1]) for row in conn.execute("EXPLAIN QUERY PLAN " + s)) for s in pages]
            return sql, plans

        sql, plans = store._db.read_now(look)
        assert "DESC" not in sql
        assert len(plans) == 2
        for plan in plans:
            assert "USING INDEX tasks_by_owner" in plan and "TEMP B-TREE" not in plan, plan
    finally:
        await store.close()


def test_retention_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="at most task_retention"):
        SQLiteTaskStore("unused.db", task_retention=10.0, idempotency_retention=20.0)
    with pytest.raises(ValueError, match=">= 0"):
        SQLiteTaskStore("unused.db", task_retention=-1.0)


def _wal_size(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_inline_writer_keeps_the_wal_bounded_under_steady_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from a2a.server.backends.sqlite import worker as sqlite_worker

    monkeypatch.setattr(sqlite_worker, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(sqlite_worker, "WAL_LIMIT", 256 * 1024)
    path = tmp_path / "w.db"
    worker = SQLiteWorker(path, durability="normal", schema=SCHEMA, thread_name="t", inline=True)
    blob = b"x" * 2000
    largest = 0
    try:
        for batch in range(400):  # steady writes: never a pause for a passive checkpoint to catch up
            await asyncio.gather(
                *(
                    worker.write(lambda c, k=f"{batch}-{i}": c.execute("INSERT INTO t VALUES (?, ?)", (k, len(blob))))
                    for i in range(10)
                )
            )
            largest = max(largest, _wal_size(path))
        assert worker.read_now(lambda c: c.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 4000
    finally:
        await worker.close()
    assert largest < 4 * 256 * 1024, f"the WAL grew to {largest} bytes"


class _RecordingConnection:
    """The reader thread's connection, noting each checkpoint it runs, whether the writes were
    held when it began (``seen``), and how many frames it found in the WAL (``found``)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        worker: SQLiteWorker,
        seen: list[tuple[str, bool, int]],
        found: list[int] | None = None,
    ) -> None:
        self._conn = conn
        self._worker = worker
        self._seen = seen
        self._found = found

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.startswith("PRAGMA wal_checkpoint("):
            mode = sql[len("PRAGMA wal_checkpoint(") : -1]
            self._seen.append((mode, self._worker._held is not None, _wal_size(self._worker.path)))
            cursor = self._conn.execute(sql, *args)
            row = cursor.fetchone()
            if self._found is not None:
                self._found.append(row[1] if row is not None else 0)
            return _Fetched(row)  # type: ignore[return-value]
        return self._conn.execute(sql, *args)


class _Fetched:
    """A cursor whose one row was read already."""

    def __init__(self, row: tuple[int, int, int] | None) -> None:
        self._row = row

    def fetchone(self) -> tuple[int, int, int] | None:
        return self._row


@pytest.mark.parametrize("every_writes", [50, 10**6])
async def test_a_checkpoint_follows_many_writes_in_few_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_writes: int
) -> None:
    """Big batches (a busy server's) bring a checkpoint after ``CHECKPOINT_EVERY_WRITES`` writes,
    long before ``CHECKPOINT_EVERY`` batches."""
    from a2a.server.backends.sqlite import worker as sqlite_worker

    monkeypatch.setattr(sqlite_worker, "CHECKPOINT_EVERY", 10**6)
    monkeypatch.setattr(sqlite_worker, "CHECKPOINT_EVERY_WRITES", every_writes)
    worker = SQLiteWorker(tmp_path / "w.db", durability="normal", schema=SCHEMA, thread_name="t", inline=True)
    seen: list[tuple[str, bool, int]] = []
    reader_conn = worker._reader_conn
    monkeypatch.setattr(worker, "_reader_conn", lambda: _RecordingConnection(reader_conn(), worker, seen))
    try:
        for batch in range(3):
            await asyncio.gather(*(worker.submit(_insert(f"{batch}-{i}")) for i in range(30)))
        if worker._checkpoint_run is not None:
            await worker._checkpoint_run
        assert [mode for mode, _held, _size in seen] == (["PASSIVE"] if every_writes == 50 else [])
    finally:
        await worker.close()


async def test_the_wal_starts_again_after_a_short_hold_not_the_whole_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its limit the WAL starts again from its beginning; the writes are held only for a
    resetting checkpoint that follows passive ones (which copied the bulk with the writes going
    on, then what came meanwhile), and that one restarts the WAL rather than truncating the
    file."""
    from a2a.server.backends.sqlite import worker as sqlite_worker

    limit = 1024 * 1024

    monkeypatch.setattr(sqlite_worker, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(sqlite_worker, "WAL_LIMIT", limit)
    path = tmp_path / "w.db"
    worker = SQLiteWorker(path, durability="normal", schema=SCHEMA, thread_name="t", inline=True)
    seen: list[tuple[str, bool, int]] = []
    found: list[int] = []
    reader_conn = worker._reader_conn
    monkeypatch.setattr(worker, "_reader_conn", lambda: _RecordingConnection(reader_conn(), worker, seen, found))
    blob = b"x" * 2000
    try:
        for batch in range(300):
            await asyncio.gather(
                *(
                    worker.write(lambda c, k=f"{batch}-{i}": c.execute("INSERT INTO t VALUES (?, ?)", (k, len(blob))))
                    for i in range(10)
                )
            )
        if worker._checkpoint_run is not None:
            await worker._checkpoint_run
        assert worker.read_now(lambda c: c.execute("SELECT COUNT(*) FROM t").fetchone()[0]) == 3000
    finally:
        await worker.close()
    resets = [i for i, (mode, _, _) in enumerate(seen) if mode != "PASSIVE"]
    assert resets, f"the WAL never started again: {seen}"
    for i in resets:
        mode, held, size = seen[i]
        assert held, seen[i]
        # The file is reused, not truncated (unless it ran past twice the limit).
        assert mode == ("TRUNCATE" if size > 2 * limit else "RESTART"), seen[i]
        assert seen[i - 1][:2] == ("PASSIVE", False), seen[: i + 1]  # the bulk copied with the writes going on
        # ... and a second passive one copied what came during the first, which had found the
        # WAL past its limit (the chase), so that the hold is only for what came meanwhile.
        assert seen[i - 2][:2] == ("PASSIVE", False), seen[: i + 1]
        assert found[i - 2] * (4096 + 24) > limit, (found[: i + 1], seen[: i + 1])
    assert all(not held for mode, held, _ in seen if mode == "PASSIVE")
    assert any(mode == "RESTART" for mode, _, _ in seen), seen
