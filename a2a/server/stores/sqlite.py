"""SQLite task store: the embedded durable default for ``a2a serve``.

One connection, used only from one dedicated thread (SQLite connections are not shared across
threads), in WAL mode. With ``synchronous=NORMAL`` (the default here) a committed write
survives the server process being killed (SIGKILL, crash) but a power loss may lose the last
transactions; ``durability="full"`` (``synchronous=FULL``) survives power loss too, at the cost
of an fsync per write. Every ``save`` is one transaction, committed before the handler tells
anyone about the change, so an accepted task (its id returned to a caller) is on disk.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from ...errors import A2AError
from ...protocol.codec import decoder_for, encode
from ...types import Message, Task
from ..backend import Backend, BackendURL
from ..push.sqlite import SQLitePushStore
from ..store import (
    ACTIVE_STATES,
    IdempotencyRecord,
    TaskPage,
    TaskQuery,
    TaskRecord,
    TaskStore,
    decode_cursor,
    encode_cursor,
)
from .sqlite_worker import SQLiteWorker

__all__ = ["SQLiteTaskStore", "StoreInUseError", "open_sqlite_backend"]


class StoreInUseError(A2AError):
    """Another running server holds this SQLite file."""


T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    context_id TEXT,
    state TEXT NOT NULL,
    ts TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, tenant, ts DESC, id DESC);
CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state);
CREATE TABLE IF NOT EXISTS messages (
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    message_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id TEXT,
    message BLOB,
    PRIMARY KEY (owner, tenant, message_id)
);
"""


class SQLiteTaskStore(TaskStore):
    def __init__(
        self, path: str | Path, *, durability: Literal["normal", "full"] = "normal", exclusive: bool = False
    ) -> None:
        self.path = Path(path)
        self._lock_file: Any = None
        if exclusive:
            self._lock_exclusively()
        self.durability = durability
        self._db = SQLiteWorker(self.path, durability=durability, schema=_SCHEMA, thread_name="a2a-sqlite")
        self._task_decoder = decoder_for(Task)
        self._message_decoder = decoder_for(Message)

    def _lock_exclusively(self) -> None:
        """One server per file: at start a server marks the tasks it finds running as FAILED,
        which would be wrong for the tasks of a second live server on the same file."""
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(f"{self.path}.lock", "a+")  # noqa: SIM115 - held open for the store's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise StoreInUseError(
                f"{self.path} is used by another running server: give this one its own file with "
                "--store sqlite:///other.db, or share tasks between servers with --store redis://..."
            ) from None
        self._lock_file = handle

    # ---- plumbing ----------------------------------------------------------------------

    def _record(self, row: tuple[Any, ...]) -> TaskRecord:
        owner, tenant, last_seq, body = row
        return TaskRecord(self._task_decoder.decode(body), owner=owner, tenant=tenant, last_seq=last_seq)

    # ---- TaskStore ---------------------------------------------------------------------

    async def get(self, task_id: str) -> TaskRecord | None:
        def query(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            sql = "SELECT owner, tenant, last_seq, body FROM tasks WHERE id = ?"
            row: tuple[Any, ...] | None = conn.execute(sql, (task_id,)).fetchone()
            return row

        row = await self._db.run(query)
        return None if row is None else self._record(row)

    async def save(self, record: TaskRecord) -> None:
        task = record.task
        values = (
            task.id,
            record.owner,
            record.tenant,
            task.context_id,
            task.status.state.value,
            task.status.timestamp or "",
            record.last_seq,
            encode(task),  # encoded here, on the loop, so later changes to ``task`` cannot race it
        )

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO tasks (id, owner, tenant, context_id, state, ts, last_seq, body) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
                "context_id=excluded.context_id, state=excluded.state, ts=excluded.ts, "
                "last_seq=excluded.last_seq, body=excluded.body",
                values,
            )

        await self._db.run(write)

    async def list(self, query: TaskQuery) -> TaskPage:
        where = ["owner = ?", "tenant = ?"]
        args: list[Any] = [query.owner, query.tenant]
        if query.context_id:
            where.append("context_id = ?")
            args.append(query.context_id)
        if query.state:
            where.append("state = ?")
            args.append(query.state.value)
        if query.status_timestamp_after:
            where.append("ts >= ?")
            args.append(query.status_timestamp_after)
        filters = " AND ".join(where)
        page_where, page_args = filters, list(args)
        if query.page_token:
            stamp, task_id = decode_cursor(query.page_token)
            page_where += " AND (ts, id) < (?, ?)"
            page_args += [stamp, task_id]

        def run(conn: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], int]:
            rows = conn.execute(
                f"SELECT owner, tenant, last_seq, body FROM tasks WHERE {page_where} "  # fixed fragments only
                "ORDER BY ts DESC, id DESC LIMIT ?",
                (*page_args, query.page_size + 1),
            ).fetchall()
            total = conn.execute(f"SELECT COUNT(*) FROM tasks WHERE {filters}", args).fetchone()[0]
            return rows, int(total)

        rows, total = await self._db.run(run)
        records = [self._record(row) for row in rows[: query.page_size]]
        more = len(rows) > query.page_size
        return TaskPage(records, encode_cursor(records[-1].task) if more and records else "", total)

    async def unfinished(self) -> Sequence[TaskRecord]:
        states = tuple(state.value for state in ACTIVE_STATES)

        def query(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            sql = "SELECT owner, tenant, last_seq, body FROM tasks WHERE state IN (?, ?)"
            rows: list[tuple[Any, ...]] = conn.execute(sql, states).fetchall()
            return rows

        return [self._record(row) for row in await self._db.run(query)]

    async def claim_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        def claim(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO messages (owner, tenant, message_id, fingerprint, task_id) "
                "VALUES (?, ?, ?, ?, ?)",
                (*key, record.fingerprint, record.task_id),
            )
            return cursor.rowcount == 1

        if await self._db.run(claim):
            return None
        return await self.get_message(key)

    async def get_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        def read(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            row: tuple[Any, ...] | None = conn.execute(
                "SELECT fingerprint, task_id, message FROM messages WHERE owner = ? AND tenant = ? AND message_id = ?",
                key,
            ).fetchone()
            return row

        row = await self._db.run(read)
        if row is None:
            return None
        fingerprint, task_id, message = row
        return IdempotencyRecord(
            fingerprint, task_id, None if message is None else self._message_decoder.decode(message)
        )

    async def update_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> None:
        message = None if record.message is None else encode(record.message)
        values = (record.fingerprint, record.task_id, message, *key)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE messages SET fingerprint = ?, task_id = ?, message = ? "
                "WHERE owner = ? AND tenant = ? AND message_id = ?",
                values,
            )

        await self._db.run(write)

    async def close(self) -> None:
        await self._db.close()
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def open_sqlite_backend(url: BackendURL) -> Backend:
    """``sqlite:///relative/tasks.db`` or ``sqlite:////absolute/tasks.db`` (SQLAlchemy's
    convention: exactly one slash is dropped), ``?durability=full``: tasks and push configs in
    that file (own tables, own connections); events in memory (one process serves the file)."""
    if url.netloc or len(url.path) < 2:
        raise url.error("write sqlite:///relative/path.db or sqlite:////absolute/path.db")
    durability = url.option("durability", "normal")
    if durability not in ("normal", "full"):
        raise url.error(f"durability must be normal or full, got {durability!r}")
    level: Literal["normal", "full"] = "full" if durability == "full" else "normal"
    tasks = SQLiteTaskStore(url.path[1:], durability=level, exclusive=url.exclusive)
    return Backend(tasks, push=SQLitePushStore(tasks.path, durability=level))
