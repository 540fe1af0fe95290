"""SQLite push store: configs and pending deliveries on disk, next to (or inside) the task database.

Like ``SQLiteTaskStore``: one writer with group commit (every write queued since the last
commit in one transaction, each caller answered once it is committed), WAL mode,
``synchronous=NORMAL`` by default (a committed enqueue survives the process being killed;
``durability="full"`` survives power loss too). The tables (``push_configs``,
``push_deliveries``, ``push_leases``) are this store's own, so it may share the task store's
file: each store has its own connection, and SQLite serialises their writes
(``busy_timeout`` 5 s).

**No store write, no thread hop, per event of a task without a webhook** (most tasks):
``enqueue`` first asks which tasks have a live config. With ``exclusive=True`` (what ``a2a
serve`` opens: no other process writes this file) that is an in-memory set of task ids, loaded
from the file on first use (so it holds across restarts) and kept by this store's own config
writes. Otherwise (several processes may register configs in the file) it is a primary-key
lookup of committed configs, made on the calling thread: it sees every config any process has
committed, and costs less than a thread hop.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from ....protocol.codec import decoder_for, encode
from ....types import TaskPushNotificationConfig
from ...push.store import Enqueued, PendingDelivery, PushConfigRecord, PushStore, QueueKey
from .worker import SQLiteWorker

__all__ = ["SQLitePushStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS push_configs (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    body BLOB NOT NULL,
    dialect TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, config_id)
);
CREATE TABLE IF NOT EXISTS push_deliveries (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (task_id, config_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS push_leases (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    holder TEXT NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (task_id, config_id)
);
"""

_CONFIG_COLUMNS = "owner, tenant, failures, failed, body, dialect"


def _migrate(conn: sqlite3.Connection) -> None:
    """A file written before ``push_configs.dialect`` existed gets the column: its configs were
    all registered in 1.0 (``''``)."""
    columns = [row[1] for row in conn.execute("PRAGMA table_info(push_configs)")]
    if columns and "dialect" not in columns:
        conn.execute("ALTER TABLE push_configs ADD COLUMN dialect TEXT NOT NULL DEFAULT ''")


class SQLitePushStore(PushStore):
    def __init__(
        self, path: str | Path, *, durability: Literal["normal", "full"] = "normal", exclusive: bool = False
    ) -> None:
        self.path = Path(path)
        self.exclusive = exclusive
        #: Tasks with at least one config that is not failed (``exclusive`` only; loaded lazily).
        self._live: set[str] | None = None
        self._db = SQLiteWorker(
            self.path,
            durability=durability,
            schema=_SCHEMA,
            migrate=_migrate,
            thread_name="a2a-sqlite-push",
            # Alone on the file, without fsync: batches commit on the loop's thread (SQLiteWorker).
            inline=exclusive and durability == "normal",
        )
        self._config_decoder = decoder_for(TaskPushNotificationConfig)

    # ---- plumbing ----------------------------------------------------------------------

    async def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn`` inside the writer's next batch (one transaction, group commit); its result
        once committed."""
        return await self._db.write(fn)

    def _record(self, row: tuple[Any, ...]) -> PushConfigRecord:
        owner, tenant, failures, failed, body, dialect = row
        return PushConfigRecord(
            self._config_decoder.decode(body),
            owner=owner,
            tenant=tenant,
            failures=failures,
            failed=bool(failed),
            dialect=dialect,
        )

    def may_have_configs(self, task_id: str) -> bool:
        # Alone on the file, the index of tasks with configs answers without I/O; otherwise
        # ``enqueue`` asks the file. Asked for every event of every task: the loaded index is
        # looked at here, without a call.
        live = self._live  # loaded only when ``exclusive``
        if live is not None:
            return task_id in live
        return not self.exclusive or self._may_have_configs(task_id)

    def _may_have_configs(self, task_id: str) -> bool:
        """Whether ``task_id`` may have a live config (``False`` is certain)."""
        if self.exclusive:
            if self._live is None:

                def load(conn: sqlite3.Connection) -> set[str]:
                    sql = "SELECT DISTINCT task_id FROM push_configs WHERE failed = 0"
                    return {row[0] for row in conn.execute(sql)}

                self._live = self._db.read_now(load)
            return task_id in self._live

        def probe(conn: sqlite3.Connection) -> bool:
            sql = "SELECT 1 FROM push_configs WHERE task_id = ? AND failed = 0 LIMIT 1"
            return bool(conn.execute(sql, (task_id,)).fetchall())

        return self._db.read_now(probe)

    def _index(self, task_id: str, live: bool) -> None:
        """Keep the in-memory index in step with a config write this store committed."""
        if self._live is None:
            return  # loaded from the file (with this write) on first use
        if live:
            self._live.add(task_id)
        else:
            self._live.discard(task_id)

    def _live_configs(self, conn: sqlite3.Connection, task_id: str) -> bool:
        sql = "SELECT 1 FROM push_configs WHERE task_id = ? AND failed = 0 LIMIT 1"
        return conn.execute(sql, (task_id,)).fetchone() is not None

    # ---- configs ----------------------------------------------------------------------

    async def put_config(self, record: PushConfigRecord, *, max_configs: int) -> bool:
        values = (record.task_id, record.config_id, record.owner, record.tenant, encode(record.config), record.dialect)

        def write(conn: sqlite3.Connection) -> bool:
            others = conn.execute(
                "SELECT COUNT(*) FROM push_configs WHERE task_id = ? AND config_id != ?", values[:2]
            ).fetchone()[0]
            if others >= max_configs:
                return False
            conn.execute(
                "INSERT INTO push_configs (task_id, config_id, owner, tenant, body, dialect) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(task_id, config_id) DO UPDATE SET owner=excluded.owner, tenant=excluded.tenant, "
                "body=excluded.body, dialect=excluded.dialect, failures=0, failed=0",
                values,
            )
            return True

        stored = await self._transaction(write)
        if stored:
            self._index(record.task_id, True)
        return stored

    async def get_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        def read(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            row: tuple[Any, ...] | None = conn.execute(
                f"SELECT {_CONFIG_COLUMNS} FROM push_configs WHERE task_id = ? AND config_id = ?",
                (task_id, config_id),
            ).fetchone()
            return row

        row = self._db.read_now(read)  # a primary-key lookup
        return None if row is None else self._record(row)

    async def list_configs(self, task_id: str) -> list[PushConfigRecord]:
        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            rows: list[tuple[Any, ...]] = conn.execute(
                f"SELECT {_CONFIG_COLUMNS} FROM push_configs WHERE task_id = ? ORDER BY config_id", (task_id,)
            ).fetchall()
            return rows

        return [self._record(row) for row in self._db.read_now(read)]  # by primary-key prefix

    async def delete_config(self, task_id: str, config_id: str) -> bool:
        key = (task_id, config_id)

        def delete(conn: sqlite3.Connection) -> tuple[bool, bool]:
            gone = conn.execute("DELETE FROM push_configs WHERE task_id = ? AND config_id = ?", key).rowcount
            conn.execute("DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ?", key)
            return gone > 0, self._live_configs(conn, task_id)

        deleted, live = await self._transaction(delete)
        self._index(task_id, live)
        return deleted

    # ---- deliveries ---------------------------------------------------------------------

    async def enqueue(self, task_id: str, seq: int, body: bytes, *, max_pending: int) -> list[Enqueued]:
        def queue_all(conn: sqlite3.Connection) -> list[Enqueued]:
            config_ids = [
                row[0]
                for row in conn.execute(
                    "SELECT config_id FROM push_configs WHERE task_id = ? AND failed = 0 ORDER BY config_id",
                    (task_id,),
                )
            ]
            queued: list[Enqueued] = []
            for config_id in config_ids:
                key = (task_id, config_id)
                conn.execute(
                    "INSERT OR IGNORE INTO push_deliveries (task_id, config_id, seq, body) VALUES (?, ?, ?, ?)",
                    (*key, seq, body),
                )
                count = conn.execute(
                    "SELECT COUNT(*) FROM push_deliveries WHERE task_id = ? AND config_id = ?", key
                ).fetchone()[0]
                dropped = max(0, count - max_pending)
                if dropped:
                    conn.execute(
                        "DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ? AND seq IN "
                        "(SELECT seq FROM push_deliveries WHERE task_id = ? AND config_id = ? ORDER BY seq LIMIT ?)",
                        (*key, *key, dropped),
                    )
                queued.append(Enqueued(config_id, dropped))
            return queued

        # Most tasks have no webhook: they cost no write and no thread hop per event.
        if not self._may_have_configs(task_id):
            return []
        return await self._transaction(queue_all)

    async def next_delivery(self, task_id: str, config_id: str) -> PendingDelivery | None:
        key = (task_id, config_id)

        def read(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            row: tuple[Any, ...] | None = conn.execute(
                "SELECT d.seq, d.body, c.owner, c.tenant, c.failures, c.failed, c.body, c.dialect "
                "FROM push_deliveries d "
                "LEFT JOIN push_configs c ON c.task_id = d.task_id AND c.config_id = d.config_id "
                "WHERE d.task_id = ? AND d.config_id = ? ORDER BY d.seq LIMIT 1",
                key,
            ).fetchone()
            return row

        def clear_orphans(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ? AND NOT EXISTS "
                "(SELECT 1 FROM push_configs c WHERE c.task_id = ? AND c.config_id = ? AND c.failed = 0)",
                (*key, *key),
            )

        row = self._db.read_now(read)  # by primary-key prefix
        if row is None:
            return None
        if row[6] is None or row[5]:  # the config is gone or failed: its queue goes too
            await self._transaction(clear_orphans)
            return None
        seq, body, *config = row
        return PendingDelivery(self._record(tuple(config)), seq, body)

    async def ack(self, task_id: str, config_id: str, seq: int) -> None:
        key = (task_id, config_id)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ? AND seq = ?", (*key, seq))
            conn.execute(
                "UPDATE push_configs SET failures = 0 WHERE task_id = ? AND config_id = ? AND failures != 0", key
            )

        await self._transaction(write)

    async def record_failure(self, task_id: str, config_id: str) -> int:
        key = (task_id, config_id)

        def write(conn: sqlite3.Connection) -> int:
            conn.execute("UPDATE push_configs SET failures = failures + 1 WHERE task_id = ? AND config_id = ?", key)
            row = conn.execute("SELECT failures FROM push_configs WHERE task_id = ? AND config_id = ?", key).fetchone()
            return 0 if row is None else int(row[0])

        return await self._transaction(write)

    async def fail_config(self, task_id: str, config_id: str) -> int:
        key = (task_id, config_id)

        def write(conn: sqlite3.Connection) -> tuple[int, bool]:
            conn.execute("UPDATE push_configs SET failed = 1 WHERE task_id = ? AND config_id = ?", key)
            dropped = conn.execute("DELETE FROM push_deliveries WHERE task_id = ? AND config_id = ?", key).rowcount
            return int(dropped), self._live_configs(conn, task_id)

        dropped, live = await self._transaction(write)
        self._index(task_id, live)
        return dropped

    async def pending(self) -> list[QueueKey]:
        def read(conn: sqlite3.Connection) -> list[QueueKey]:
            rows = conn.execute("SELECT DISTINCT task_id, config_id FROM push_deliveries ORDER BY task_id, config_id")
            return [(str(task_id), str(config_id)) for task_id, config_id in rows]

        return await self._db.read(read)

    # ---- leases -------------------------------------------------------------------------

    async def acquire_lease(self, task_id: str, config_id: str, holder: str, ttl: float) -> bool:
        key = (task_id, config_id)

        def write(conn: sqlite3.Connection) -> bool:
            now = time.time()  # wall clock: several processes may share the file
            row = conn.execute(
                "SELECT holder, expires FROM push_leases WHERE task_id = ? AND config_id = ?", key
            ).fetchone()
            if row is not None and row[0] != holder and row[1] > now:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO push_leases (task_id, config_id, holder, expires) VALUES (?, ?, ?, ?)",
                (*key, holder, now + ttl),
            )
            return True

        return await self._transaction(write)

    async def release_lease(self, task_id: str, config_id: str, holder: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            sql = "DELETE FROM push_leases WHERE task_id = ? AND config_id = ? AND holder = ?"
            conn.execute(sql, (task_id, config_id, holder))

        await self._db.write(write)

    async def close(self) -> None:
        await self._db.close()
