"""An exclusive SQLite store appends new idempotency records to a log (``message_log``) and adds
their keys to the index (``message_keys``) later, in key order, in the background: a random
messageId then no longer costs a write to a random page of the index per request. Lookups find a
record indexed or not; a restart after a kill indexes what was left; a file of the earlier
layout (``messages``, keyed) is moved over once."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid
from contextlib import closing
from pathlib import Path

import pytest

from a2a.server.backends.sqlite import idempotency as sqlite_idempotency
from a2a.server.backends.sqlite import tasks as sqlite_store
from a2a.server.backends.sqlite.idempotency import MessageRecords, key_hash
from a2a.server.backends.sqlite.tasks import _SCHEMA, SQLiteTaskStore
from a2a.server.backends.store import IdempotencyRecord, TaskRecord
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus

ROOT = Path(__file__).resolve().parents[2]


def _count(path: Path, table: str) -> int:
    with closing(sqlite3.connect(path)) as conn, conn:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])  # fixed names only


def _dangling(path: Path) -> int:
    """Index entries whose record is not in the log."""
    with closing(sqlite3.connect(path)) as conn, conn:
        sql = "SELECT COUNT(*) FROM message_keys k LEFT JOIN message_log l ON l.seq = k.seq WHERE l.seq IS NULL"
        return int(conn.execute(sql).fetchone()[0])


def _reply(text: str) -> Message:
    return Message(message_id=f"r-{text}", role=Role.AGENT, parts=[Part(text=text)])


async def _answered(store: SQLiteTaskStore, count: int) -> list[tuple[str, str, str]]:
    """``count`` messages with random ids claimed and answered (a reply each), as a server does."""
    keys = [("alice", "", f"{uuid.uuid4()}#f") for _ in range(count)]
    for key in keys:
        assert await store.claim_message(key, IdempotencyRecord("f")) is None
        await store.record_reply(key, IdempotencyRecord("f", message=_reply(key[2])))
    return keys


async def _all_found(store: SQLiteTaskStore, keys: list[tuple[str, str, str]]) -> None:
    for key in keys:
        found = await store.get_message(key)
        assert found is not None and found.message == _reply(key[2]), key
        retried = await store.claim_message(key, IdempotencyRecord("f"))
        assert retried is not None and retried.message == _reply(key[2]), "a retry finds its reply"


async def test_new_records_are_appended_and_not_indexed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        keys = await _answered(store, 20)
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (20, 0)
        await _all_found(store, keys)
    finally:
        await store.close()
    assert (_count(path, "message_log"), _count(path, "message_keys")) == (20, 20), "close indexes them"


async def test_a_merge_indexes_the_records_in_order_and_they_are_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        keys = await _answered(store, 50)
        indexed: list[list[int]] = []
        real = store._message_records.indexer

        def seen(items: list[tuple[int, int]]) -> object:
            indexed.append([h for h, _seq in items])
            return real(items)

        monkeypatch.setattr(store._message_records, "indexer", seen)
        assert await store.index_new_records(slice_size=7) == 50
        assert [len(s) for s in indexed] == [7] * 7 + [1], "a slice per write"
        assert [h for s in indexed for h in s] == sorted(key_hash(*key) for key in keys), "in the index's order"
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (50, 50)
        assert store._message_records.rows == {}, "their places are forgotten once indexed"
        await _all_found(store, keys)
        later = await _answered(store, 5)
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (55, 50)
        assert await store.index_new_records() == 5, "only what came since"
        await _all_found(store, keys + later)
    finally:
        await store.close()


async def test_with_a_writer_thread_a_merge_indexes_what_was_committed(tmp_path: Path) -> None:
    # ``durability=full``: the batches (and the log's bookkeeping) run on the writer's thread.
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True, durability="full")
    try:
        assert not store._db.inline
        keys = await _answered(store, 30)
        assert await store.index_new_records(slice_size=8) == 30
        assert store._message_records.rows == {}
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (30, 30)
        await _all_found(store, keys)
    finally:
        await store.close()


async def test_an_update_after_the_merge_changes_the_indexed_row(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)
    key = ("alice", "", "m1#f")
    try:
        assert await store.claim_message(key, IdempotencyRecord("f", task_id="t1")) is None
        status = TaskStatus(state=TaskState.SUBMITTED, timestamp="2026-01-01T00:00:00Z")
        await store.save(TaskRecord(Task(id="t1", context_id="c", status=status), owner="alice"))
        assert await store.index_new_records() == 1
        await store.update_message(key, IdempotencyRecord("f", task_id="t1", message=_reply("late")))
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (1, 1), "no second row"
        found = await store.get_message(key)
        assert found is not None and found.task_id == "t1" and found.message == _reply("late")
    finally:
        await store.close()


async def test_a_merge_starts_by_itself_once_enough_records_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "MERGE_AT", 10)
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        keys = await _answered(store, 30)
        for _ in range(500):  # 10 s at most
            if _count(path, "message_keys") >= 10:
                break
            await asyncio.sleep(0.02)
        assert _count(path, "message_keys") >= 10, "indexed in the background, without a call"
        await _all_found(store, keys)
    finally:
        await store.close()


_KILLED_CHILD = """
import asyncio, os, signal, sys
from a2a.server.backends.store import IdempotencyRecord
from a2a.server.backends.sqlite.tasks import SQLiteTaskStore
from a2a.types import Message, Part, Role

async def main() -> None:
    store = SQLiteTaskStore(sys.argv[1], exclusive=True)
    for i in range(30):
        key = ("alice", "", f"m{i}#f")
        assert await store.claim_message(key, IdempotencyRecord("f")) is None
        reply = Message(message_id=f"r{i}", role=Role.AGENT, parts=[Part(text=str(i))])
        await store.record_reply(key, IdempotencyRecord("f", message=reply))  # committed
    print("answered", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # no close: nothing indexed

asyncio.run(main())
"""


def test_records_a_killed_server_left_unindexed_are_found_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_CHILD), str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert child.returncode == -9 and "answered" in child.stdout, child.stderr
    assert (_count(path, "message_log"), _count(path, "message_keys")) == (30, 0)

    async def reopened() -> None:
        store = SQLiteTaskStore(path, exclusive=True)
        try:
            for i in range(30):
                retried = await store.claim_message(("alice", "", f"m{i}#f"), IdempotencyRecord("f"))
                assert retried is not None and retried.message is not None, f"m{i} runs again after the restart"
                assert retried.message.parts[0].text == str(i)
            assert _count(path, "message_keys") == 30, "indexed at open"
            assert await store.index_new_records() == 0, "and said so in the file"
        finally:
            await store.close()

    asyncio.run(reopened())


def test_a_row_rolled_back_is_not_taken_for_its_key() -> None:
    # A rolled-back append leaves its place in memory; the next append may reuse its ``seq``.
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.executescript(_SCHEMA)
    recent = MessageRecords()
    gone = ("alice", "", "gone#f")
    kept = ("alice", "", "kept#f")
    conn.execute("BEGIN")
    recent.write(conn, (*gone, "f", None, b"{}", 1.0), fresh=True)
    conn.execute("ROLLBACK")
    conn.execute("BEGIN")
    recent.write(conn, (*kept, "f", "t1", None, 1.0), fresh=True)
    conn.execute("COMMIT")
    assert recent.rows[gone] == recent.rows[kept], "the same seq, as SQLite reuses it"
    assert recent.find(conn, gone) is None
    assert recent.find(conn, kept) == ("f", "t1", None)
    conn.execute("BEGIN")
    recent.write(conn, (*gone, "f", "t2", None, 2.0), fresh=False)  # written again: appended anew
    conn.execute("COMMIT")
    assert recent.find(conn, gone) == ("f", "t2", None) and recent.find(conn, kept) == ("f", "t1", None)
    conn.close()


async def test_the_sweep_deletes_expired_records_indexed_or_not(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True, task_retention=3600, idempotency_retention=60)
    try:
        merged = await _answered(store, 5)
        await store.index_new_records()
        appended = await _answered(store, 5)
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (10, 5)
        assert await store.sweep(now=time.time() + 61) == 10
        with closing(sqlite3.connect(path)) as conn, conn:
            left = conn.execute("SELECT seq, owner, message_id, fingerprint, message FROM message_log").fetchall()
        assert left == [(10, "", "", "", None)], "the newest row emptied (it holds the log's counter)"
        assert _count(path, "message_keys") == 0
        for key in merged + appended:
            assert await store.get_message(key) is None
        assert await store.sweep(now=time.time() + 61) == 0, "emptied once"
        later = await _answered(store, 2)
        with closing(sqlite3.connect(path)) as conn, conn:
            seqs = [row[0] for row in conn.execute("SELECT seq FROM message_log ORDER BY seq")]
        assert seqs == [10, 11, 12], "a new row's seq is past every seq used before"
        assert await store.index_new_records() == 2, "the records swept before a merge are not indexed"
        assert _dangling(path) == 0
        await _all_found(store, later)
        assert await store.sweep(now=time.time() + 61) == 3, "the empty row, then the two, the newest emptied"
        assert _count(path, "message_log") == 1
    finally:
        await store.close()


async def test_a_new_messages_writes_do_not_touch_the_index(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    statements: list[str] = []
    try:
        await _answered(store, 1)  # opens the writer, and starts the key filter's build
        assert store._keys_build is not None
        await store._keys_build  # (until it is done, a claim reads the keyed table)
        conn = store._db._inline_conn
        assert conn is not None
        conn.set_trace_callback(statements.append)
        await _answered(store, 3)
        assert statements, "traced"
        assert not [s for s in statements if "message_keys" in s], statements
    finally:
        await store.close()


_EARLIER_LAYOUT = """
CREATE TABLE messages (
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    message_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id TEXT,
    message BLOB,
    at REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (owner, tenant, message_id)
);
"""


async def test_a_file_of_the_earlier_layout_is_moved_over_once(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(_EARLIER_LAYOUT)
        conn.executemany(
            "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)",
            [("alice", "", f"m{i}#f", "f", f"t{i}", None, time.time()) for i in range(3)],
        )
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        for i in range(3):
            found = await store.claim_message(("alice", "", f"m{i}#f"), IdempotencyRecord("f", task_id="new"))
            assert found is not None and found.task_id == f"t{i}", "a retry after the upgrade finds its task"
        with closing(sqlite3.connect(path)) as conn, conn:
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "messages" not in tables
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (3, 3)
        assert await store.index_new_records() == 0, "indexed by the move"
    finally:
        await store.close()


async def test_a_shared_store_indexes_each_record_as_it_writes_it(tmp_path: Path) -> None:
    # Not ``exclusive``: other processes claim too, so a claim must be in the index at once.
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path)
    other = SQLiteTaskStore(path)
    key = ("alice", "", "m1#f")
    try:
        assert await store.claim_message(key, IdempotencyRecord("f", task_id="t1")) is None
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (1, 1)
        found = await other.claim_message(key, IdempotencyRecord("f", task_id="t2"))
        assert found is not None and found.task_id == "t1", "the other process's claim finds it"
        await store.update_message(key, IdempotencyRecord("f", task_id="t1", message=_reply("done")))
        found = await other.get_message(key)
        assert found is not None and found.message == _reply("done")
        assert (_count(path, "message_log"), _count(path, "message_keys")) == (1, 1)
    finally:
        await store.close()
        await other.close()


async def test_an_append_rolled_back_with_its_batch_is_forgotten(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        first = await _answered(store, 1)  # opens the writer
        stale = ("alice", "", "rolled-back#f")

        def fails(conn: sqlite3.Connection) -> None:
            store._message_records.write(conn, (*stale, "f", None, None, time.time()), fresh=True)
            raise RuntimeError("the batch fails after the append")

        with pytest.raises(RuntimeError):
            await store._db.write(fails)
        rows = store._message_records.rows
        assert stale not in rows, "its place dropped with the rollback (the seq is free again)"
        keys = await _answered(store, 3)
        assert store._committed_message(stale) is None
        assert await store.index_new_records() == 4, "the committed appends only"
        assert rows == {}, "forgotten with the merge"
        assert _dangling(path) == 0
        assert store._committed_message(stale) is None
        await _all_found(store, first + keys)
    finally:
        await store.close()


async def test_a_merge_under_way_skips_what_the_sweep_removed(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True, task_retention=3600, idempotency_retention=60)
    try:
        old = await _answered(store, 6)
        items = await store._db.write(store._message_records.committed)  # a merge's first step
        assert len(items) == 6
        assert await store.sweep(now=time.time() + 61) == 6  # meanwhile, the records expire
        await store._db.write(store._message_records.indexer(items))  # the merge goes on
        assert _count(path, "message_keys") == 0, "no entry for a record that is gone"
        for key in old:
            assert await store.get_message(key) is None
    finally:
        await store.close()


async def test_keys_that_share_a_hash_are_told_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_idempotency, "key_hash", lambda owner, tenant, message_id: 7)
    path = tmp_path / "tasks.db"
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        keys = await _answered(store, 5)
        assert await store.index_new_records() == 5
        with closing(sqlite3.connect(path)) as conn, conn:
            assert {row[0] for row in conn.execute("SELECT h FROM message_keys")} == {7}
        await _all_found(store, keys)
        await store.update_message(keys[2], IdempotencyRecord("f", message=_reply("changed")))
        found = await store.get_message(keys[2])
        assert found is not None and found.message == _reply("changed")
        await _all_found(store, keys[:2] + keys[3:])
        assert _count(path, "message_log") == 5, "updated in place"
    finally:
        await store.close()


_INTERIM_LAYOUT = """
CREATE TABLE message_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    message_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id TEXT,
    message BLOB,
    at REAL NOT NULL
);
CREATE TABLE message_keys (
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    message_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (owner, tenant, message_id)
) WITHOUT ROWID;
CREATE TABLE message_keys_upto (seq INTEGER NOT NULL);
"""


async def test_a_log_of_the_interim_layout_gets_its_hashes_and_a_new_index(tmp_path: Path) -> None:
    # The log's first version (one day on main) indexed records by their whole key.
    path = tmp_path / "tasks.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(_INTERIM_LAYOUT)
        conn.executemany(
            "INSERT INTO message_log (owner, tenant, message_id, fingerprint, task_id, message, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [("alice", "", f"m{i}#f", "f", f"t{i}", None, time.time()) for i in range(3)],
        )
        conn.execute("INSERT INTO message_keys SELECT owner, tenant, message_id, seq FROM message_log")
        conn.execute("INSERT INTO message_keys_upto VALUES (3)")
    store = SQLiteTaskStore(path, exclusive=True)
    try:
        for i in range(3):
            found = await store.claim_message(("alice", "", f"m{i}#f"), IdempotencyRecord("f", task_id="new"))
            assert found is not None and found.task_id == f"t{i}"
        with closing(sqlite3.connect(path)) as conn, conn:
            hashes = sorted(row[0] for row in conn.execute("SELECT h FROM message_keys"))
        assert hashes == sorted(key_hash("alice", "", f"m{i}#f") for i in range(3))
    finally:
        await store.close()
