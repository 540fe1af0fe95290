"""SQLite task store: the embedded durable default for ``a2a serve``.

WAL mode, written by one writer thread with *group commit* (``SQLiteWorker``): every write
queued since the last commit goes into one transaction, and each caller is answered once that
transaction is committed. With ``synchronous=NORMAL`` (the default here) a committed write
survives the server process being killed (SIGKILL, crash) but a power loss may lose the last
transactions; ``durability="full"`` (``synchronous=FULL``) survives power loss too, at the cost
of one fsync per batch. ``save`` returns once its batch is committed, and the handler tells
nobody about a change before that, so an accepted task (its id returned to a caller) is on disk.
Saves of one task in one batch are merged (the last carries the whole state). A new task's
first save may be queued (``queue_save``): the handler holds the task's events until it is
committed, and a quick task's last save, made before that batch runs, is that very write (with
the loop's own writer, which prepares it when the batch runs; else it replaces it): one write.

**The idempotency claim** (``exclusive=True``, what ``a2a serve`` opens: this process is the
only one writing the file) is decided at once, in memory (the claims not yet committed) and by a
lookup of the committed ones, skipped when the key filter (``key_filter``: built from the
records on the reader thread at start, fed by every write) shows the key was never written,
which is the case for almost every new messageId. Records are appended to a log and indexed
later, in the background, in the index's order (``idempotency``). Its row is kept in
memory until the first write that depends on it, the task's first save (queued just before it,
into the same batch) or the reply's record (the same row: one write), which the handler always
awaits before it answers; a claim lost with the process was never accepted, so a retry runs it anew.
Without ``exclusive`` several processes may claim, so the claim waits for its own commit.

**Retention** (``task_retention``, ``idempotency_retention``, seconds; 0 keeps forever): a
background sweep deletes tasks that ended (COMPLETED, FAILED, CANCELED, REJECTED) longer ago
than ``task_retention`` and idempotency records older than ``idempotency_retention``, a few
hundred rows per write so that requests are never stalled behind it. The idempotency retention
may not exceed the task retention: a record must not outlive its task (a retry would find the
record, not the task, and run the message again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from ....errors import A2AError
from ....protocol.codec import decoder_for, encode
from ....types import Message, Part, Task, TaskState
from ..base import Backend, BackendURL
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
from .idempotency import MERGE_AT, MERGE_EVERY, MERGE_SLICE, MessageRecords, recover
from .idempotency import SCHEMA as MESSAGES_SCHEMA
from .idempotency import migrate as migrate_messages
from .key_filter import KeyFilter
from .push import SQLitePushStore
from .worker import Executes, SQLiteWorker

__all__ = ["SQLiteTaskStore", "StoreInUseError", "open_sqlite_backend"]


log = logging.getLogger("a2a.server.sqlite")

#: Default retention of finished tasks: 7 days (documented in protocol.md).
DEFAULT_TASK_RETENTION = 7 * 24 * 3600.0
#: Default retention of idempotency records (a retried messageId finds its outcome): 1 day.
DEFAULT_IDEMPOTENCY_RETENTION = 24 * 3600.0
#: A task with at most this many history messages and artifact parts is written whole in its
#: row; past it, what it gains is appended as rows of its own (see ``SQLiteTaskStore._split``).
INLINE_ITEMS = 32
#: Rows deleted per sweep write: small, so the writes queued behind it wait little.
SWEEP_CHUNK = 500
#: Idempotency claims kept in memory until their task's first save or their reply (``exclusive``).
MAX_UNWRITTEN_CLAIMS = 10_000

_TERMINAL = tuple(sorted(s.value for s in TaskState if s.is_terminal))
#: A state's column text (a dict lookup: ``.value`` is two Python calls, and every save asks).
_STATE_TEXT = {state: state.value for state in TaskState}
_ENDED = tuple(s for s in TaskState if s.is_terminal)
#: Written out (not bound): SQLite uses a partial index only for the very same condition.
_ACTIVE_SQL = ", ".join(sorted(f"'{s.value}'" for s in ACTIVE_STATES))
#: The condition of ``tasks_ended``, written out as the sweep's query repeats it (in
#: parentheses, the very same term: else SQLite does not use the partial index). Comparisons,
#: not ``state IN (...)``: SQLite evaluates an IN list of more than two values through a
#: temporary table built anew for every row written, which made the index a third of the
#: cost of writing a task.
_ENDED_SQL = "(" + " OR ".join(f"state = '{state}'" for state in _TERMINAL) + ")"


class StoreInUseError(A2AError):
    """Another running server holds this SQLite file."""


T = TypeVar("T")

_SCHEMA = (
    f"""
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
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks (owner, tenant, ts, id);
CREATE INDEX IF NOT EXISTS tasks_active ON tasks (state) WHERE state IN ({_ACTIVE_SQL});
CREATE INDEX IF NOT EXISTS tasks_ended ON tasks (ts) WHERE {_ENDED_SQL};
CREATE TABLE IF NOT EXISTS task_parts (
    seq INTEGER PRIMARY KEY,
    task_id TEXT NOT NULL,
    artifact_id TEXT,
    parts BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS task_parts_by_task ON task_parts (task_id, seq);
"""
    + MESSAGES_SCHEMA  # the idempotency records: ``idempotency``
)


def _migrate(conn: sqlite3.Connection) -> None:
    """A file written before ``messages.at`` existed gets the column (its old records count as
    old: the first sweep removes them)."""
    columns = [row[1] for row in conn.execute("PRAGMA table_info(messages)")]
    if columns and "at" not in columns:
        conn.execute("ALTER TABLE messages ADD COLUMN at REAL NOT NULL DEFAULT 0")
    # Replaced by the partial index ``tasks_active`` (kept up only while a task runs).
    conn.execute("DROP INDEX IF EXISTS tasks_by_state")
    # Replaced by ``tasks_ended`` (see ``_ENDED_SQL``): its condition cost every write, and the
    # sweep's query (with bound states) never used it.
    conn.execute("DROP INDEX IF EXISTS tasks_ended_by_ts")
    # ``tasks_by_owner`` was (owner, tenant, ts DESC, id DESC): a new task's entry went to the
    # left-hand edge of the index, where SQLite splits pages the slow way and leaves them half
    # full. Ascending, it is appended at the right-hand edge (ListTasks reads it backwards, with
    # no sort): about 6k fewer instructions per task written. Rebuilt once, here.
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'tasks_by_owner'").fetchone()
    if row is not None and "DESC" in row[0]:
        # Built again by the schema right after: once, and as long as the table is big.
        log.info("rebuilding the index tasks_by_owner of this store (once, after an upgrade)")
        conn.execute("DROP INDEX tasks_by_owner")
    # Idempotency records: from ``messages`` to their log and index (once), and the log's rows
    # that a server which then stopped had not indexed yet (``idempotency``).
    migrate_messages(conn)
    recover(conn)


#: The ended tasks past a cutoff, oldest first, a chunk at a time (by ``tasks_ended``).
SWEEP_TASKS_SQL = f"SELECT id FROM tasks WHERE {_ENDED_SQL} AND ts < ? ORDER BY ts LIMIT ?"  # constants only

_UPSERT_TASK = (
    "INSERT INTO tasks (id, owner, tenant, context_id, state, ts, last_seq, body) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
    "context_id=excluded.context_id, state=excluded.state, ts=excluded.ts, "
    "last_seq=excluded.last_seq, body=excluded.body"
)


@dataclass(slots=True)
class _Shape:
    """A task's lists as last saved: per list (``None``: the history; else an artifact id) its
    last item saved and how many items are on disk; and how many appended rows the task has."""

    lists: dict[str | None, tuple[Any, int]]
    rows: int
    #: Its lists are in rows of their own (else the whole task is in its row).
    split: bool


#: The shape of every task written whole in its row (shared: a shape is never changed, only
#: replaced, and a running task holds one for its whole life).
_INLINE = _Shape({}, 0, split=False)


#: Appended rows by task id: (``None`` for history or an artifact id, encoded list), in order.
_PartRows = dict[str, list[tuple[str | None, bytes]]]


def _items(task: Task) -> int:
    """How many history messages and artifact parts the task has (a loop, not ``sum`` over a
    generator: asked at every save)."""
    count = len(task.history) if task.history else 0
    for artifact in task.artifacts or ():
        count += len(artifact.parts)
    return count


def _parts_of(conn: sqlite3.Connection, task_ids: Sequence[str]) -> _PartRows:
    """The appended part rows of these tasks, in order, by task id."""
    found: _PartRows = {}
    for start in range(0, len(task_ids), 500):
        chunk = task_ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT task_id, artifact_id, parts FROM task_parts WHERE task_id IN ({marks}) ORDER BY seq"  # marks
        for task_id, artifact_id, blob in conn.execute(sql, chunk):
            found.setdefault(task_id, []).append((artifact_id, blob))
    return found


class SQLiteTaskStore(TaskStore):
    def __init__(
        self,
        path: str | Path,
        *,
        durability: Literal["normal", "full"] = "normal",
        exclusive: bool = False,
        task_retention: float = DEFAULT_TASK_RETENTION,
        idempotency_retention: float = DEFAULT_IDEMPOTENCY_RETENTION,
        sweep_interval: float | None = None,
    ) -> None:
        if task_retention < 0 or idempotency_retention < 0:
            raise ValueError("retention must be >= 0 seconds (0 keeps forever)")
        if task_retention and (not idempotency_retention or idempotency_retention > task_retention):
            raise ValueError(
                "idempotency_retention must be at most task_retention: an idempotency record must not "
                "outlive its task (a retry would run the message again)"
            )
        self.path = Path(path)
        self._lock_file: Any = None
        self.exclusive = exclusive
        if exclusive:
            self._lock_exclusively()
        self.durability = durability
        self.task_retention = task_retention
        self.idempotency_retention = idempotency_retention
        shortest = min(r for r in (task_retention, idempotency_retention, 3600.0) if r)
        #: How often the sweep looks for expired rows: a tenth of the shorter retention, but
        #: at least every 6 minutes and at most every second.
        self.sweep_interval = sweep_interval if sweep_interval is not None else max(1.0, shortest / 10)
        self._db = SQLiteWorker(
            self.path,
            durability=durability,
            schema=_SCHEMA,
            thread_name="a2a-sqlite",
            # Alone on the file, without fsync: batches commit on the loop's thread (SQLiteWorker).
            inline=exclusive and durability == "normal",
            migrate=_migrate,
        )
        self._task_decoder = decoder_for(Task)
        self._message_decoder = decoder_for(Message)
        #: Claims decided here whose rows are not committed yet (``exclusive`` only).
        self._pending_claims: dict[tuple[str, str, str], IdempotencyRecord] = {}
        #: Of those, the ones not even queued (and their task): a claim is written with the
        #: first write that depends on it (the task's first save, or the reply's record).
        self._unwritten: dict[tuple[str, str, str], str] = {}
        self._unwritten_of_task: dict[str, list[tuple[str, str, str]]] = {}
        #: ``exclusive`` only (no other process writes keys): the idempotency keys on disk, so
        #: that a new messageId is known new without a read (``key_filter``). ``None`` until
        #: the first build is done: every lookup reads meanwhile.
        self._keys: KeyFilter | None = None
        #: Keys written while a filter is being built from the table (``None``: no build runs).
        self._keys_written: list[tuple[str, str, str]] | None = None
        self._keys_build: asyncio.Future[KeyFilter] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        #: The idempotency records' statements and, ``exclusive`` only, the keys appended and not
        #: yet indexed (``idempotency``); the keys claimed here as new whose first write is
        #: not committed yet (appended without a look at the index); the merge's task and wake-up.
        self._message_records = MessageRecords()
        if exclusive:
            # What it keeps of each append in memory (to be indexed later) follows the batches.
            self._db.watch_transactions(self._message_records)
        self._fresh: set[tuple[str, str, str]] = set()
        self._merger: asyncio.Task[None] | None = None
        self._merge_due: asyncio.Event | None = None
        self._parts_decoder = decoder_for(list[Part])
        self._history_decoder = decoder_for(list[Message])
        #: Per task saved here and not ended: what its part rows hold (see ``_split``).
        self._shapes: dict[str, _Shape] = {}
        #: Inline writer only: the saves queued (``queue_save``) whose batch has not run yet.
        self._queued: dict[str, asyncio.Future[None]] = {}
        #: Inline writer only: the cursor of its queued writes (see ``queue_save``).
        self._cursor: sqlite3.Cursor | None = None

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

    def _record(self, row: tuple[Any, ...], parts: Sequence[tuple[str | None, bytes]] = ()) -> TaskRecord:
        """A task from its row and its appended rows (``task_parts``, in order)."""
        _task_id, owner, tenant, last_seq, body = row
        task = self._task_decoder.decode(body)
        if parts:
            by_id = {artifact.artifact_id: artifact for artifact in task.artifacts or []}
            for artifact_id, blob in parts:
                if artifact_id is None:
                    task.history = [*(task.history or []), *self._history_decoder.decode(blob)]
                elif (artifact := by_id.get(artifact_id)) is not None:
                    artifact.parts.extend(self._parts_decoder.decode(blob))
        return TaskRecord(task, owner=owner, tenant=tenant, last_seq=last_seq)

    def _records(self, rows: Sequence[tuple[Any, ...]], parts: _PartRows) -> list[TaskRecord]:
        return [self._record(row, parts.get(row[0], ())) for row in rows]

    def _started(self) -> None:
        """First write on a running loop: start the retention sweep, and the key filter's build."""
        if self._sweeper is None and (self.task_retention or self.idempotency_retention):
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_forever(), name="a2a-sqlite-sweep")
        if self.exclusive and self._merger is None:
            self._merge_due = asyncio.Event()
            self._merger = asyncio.get_running_loop().create_task(self._merge_forever(), name="a2a-sqlite-merge")
        if self.exclusive and self._keys is None and self._keys_written is None:
            self._build_keys()

    def _build_keys(self) -> None:
        """Build a key filter from the table on the reader thread; the loop goes on meanwhile.

        The scan sees the rows committed when it starts; every key written from now on is
        kept aside and added when it is done, so no key on disk is missing from it. A filter
        in use (a rebuild) keeps answering meanwhile, and is fed as before. The keys queued and
        not yet committed may miss the scan's snapshot: they count as written."""
        self._keys_written = list(self._pending_claims)

        def scan(conn: sqlite3.Connection) -> KeyFilter:
            keys = KeyFilter()
            cursor = conn.execute("SELECT owner, tenant, message_id FROM message_log")
            while rows := cursor.fetchmany(4096):
                keys.update(rows)  # a row is the key's tuple: equal tuples hash alike
            return keys

        build = self._keys_build = asyncio.ensure_future(self._db.read(scan))

        def done(_: object) -> None:
            written, self._keys_written = self._keys_written, None
            if build.cancelled():
                return
            if build.exception() is not None:
                # Lookups read, as without a filter; the next sweep tries again.
                log.warning("could not build the idempotency key filter of %s: %r", self.path, build)
                return
            keys = build.result()
            keys.update(written or ())
            self._keys = keys

        build.add_done_callback(done)

    def _may_be_on_disk(self, key: tuple[str, str, str]) -> bool:
        return self._keys is None or self._keys.may_contain(key)

    # ---- TaskStore ---------------------------------------------------------------------

    async def get(self, task_id: str) -> TaskRecord | None:
        def query(conn: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], _PartRows]:
            sql = "SELECT id, owner, tenant, last_seq, body FROM tasks WHERE id = ?"
            rows: list[tuple[Any, ...]] = conn.execute(sql, (task_id,)).fetchall()
            return rows, _parts_of(conn, [task_id] if rows else [])

        rows, parts = self._db.read_now(query)
        return self._records(rows, parts)[0] if rows else None

    def save(self, record: TaskRecord) -> Awaitable[None]:
        """The write's future (no coroutine of its own: every change of a task is saved)."""
        task_id = record.task.id
        if task_id in self._unwritten_of_task:
            self._write_claims_of(task_id)  # queued first: committed in the same batch
        queued = self._queued.get(task_id)
        if queued is not None:
            # A save of the task queued (``queue_save``) and not run yet: it is prepared when its
            # batch runs, so it writes the task as it is then, this change included. That write
            # is this save (a quick task's first and last save: one write, prepared once).
            return queued

        def saved(error: BaseException | None) -> None:
            if error is not None:
                self._shapes.pop(task_id, None)  # what is on disk is unknown: the next save rewrites it

        write, key = self._prepare(record)
        return self._db.submit(write, key=key, on_commit=saved)

    def queue_save(self, record: TaskRecord) -> asyncio.Future[None] | None:
        """Queued (``SQLiteWorker.defer``) under the task's key, so that a save of the task
        awaited in the same batch replaces it: one write. Only a save that is its row alone
        (a small task, nothing to delete) is queued; any other is awaited (``None``)."""
        if not self._row_only(record):
            return None
        task_id = record.task.id
        claims: list[tuple[tuple[str, str, str], tuple[Any, ...], IdempotencyRecord, bool]] | None = None
        write: Callable[[sqlite3.Connection], None]
        if self._db.inline:
            # The task's claims are rows of this very write (no write of their own): with the
            # loop's writer a queued save is never merged away (a save of the task meanwhile is
            # this write, see ``save``), so they are committed with the task, or not at all.
            if task_id in self._unwritten_of_task:
                claims = [
                    self._message_queued(key, self._pending_claims[key]) for key in self._unwritten_of_task[task_id][:]
                ]

            # Prepared when its batch runs (on this thread, between two steps of the loop, with
            # the task as it is then: still its whole state in one write); until then a save of
            # the task is this write (see ``save``), so a quick task is encoded once.
            def write(conn: sqlite3.Connection) -> None:
                if self._queued.get(task_id) is commit:
                    del self._queued[task_id]  # running: a later save is a write of its own
                # One cursor kept for these statements (every task): ``conn.execute`` makes one each.
                cursor = self._cursor
                if cursor is None or cursor.connection is not conn:
                    cursor = self._cursor = conn.cursor()
                if claims is not None:
                    for _key, values, _pending, fresh in claims:
                        self._message_records.write(cursor, values, fresh=fresh)
                row = self._row_alone(record)
                if row is not None:
                    cursor.execute(_UPSERT_TASK, row)  # the row alone: no closure made for it
                else:
                    self._prepare(record)[0](cursor)

        else:
            if task_id in self._unwritten_of_task:
                # Writes of their own: a save of the task in this batch replaces this one.
                self._write_claims_of(task_id)  # queued first: committed in the same batch
            # The batch runs on the writer thread: encoded now, on the loop (see ``_prepare``).
            write = self._prepare(record)[0]

        def committed(error: BaseException | None) -> None:
            if self._queued.get(task_id) is commit:
                del self._queued[task_id]  # merged into a later save, or failed
            if error is not None:
                self._shapes.pop(task_id, None)  # as in ``save``
            if claims is not None:
                for key, _values, pending, _fresh in claims:
                    self._message_written(key, pending)

        commit: asyncio.Future[None] = self._db.defer(write, key=("task", task_id), on_commit=committed)
        if self._db.inline:
            self._queued[task_id] = commit
        return commit

    def _row_only(self, record: TaskRecord) -> bool:
        """Whether ``_split`` would write the task's row alone (see it)."""
        task = record.task
        if _items(task) > INLINE_ITEMS:
            return False
        shape = self._shapes.get(task.id)
        return record.fresh if shape is None else not shape.split

    def _row_alone(self, record: TaskRecord) -> tuple[Any, ...] | None:
        """The ``tasks`` row of a save that is that row alone (what ``_prepare`` would write
        with no part rows and nothing to delete), or ``None`` (``_prepare`` it then). A queued
        save is prepared when its batch runs, and is almost always such a save."""
        task = record.task
        shape = self._shapes.get(task.id)
        if _items(task) > INLINE_ITEMS or not (record.fresh if shape is None else not shape.split):
            return None
        if self._sweeper is None or self._keys is None:  # as in ``_prepare``
            self._started()
        if task.status.state in _ENDED:
            self._shapes.pop(task.id, None)
        else:
            self._shapes[task.id] = _INLINE
        record.fresh = False  # a write of it is queued now
        return _task_row(record, encode(task))

    def _prepare(self, record: TaskRecord) -> tuple[Callable[[Executes], None], tuple[str, str] | None]:
        """The write of a save (encoded now, on the loop, so later changes to the task cannot
        race it) and its merge key (``None``: never merged away)."""
        if self._sweeper is None or self._keys is None:  # (a call less for every save once warm)
            self._started()
        task = record.task
        skeleton, parts, replace_parts = self._split(task, fresh=record.fresh)
        record.fresh = False  # a write of it is queued now
        values = _task_row(record, encode(skeleton))

        def write_task(conn: Executes) -> None:
            conn.execute(_UPSERT_TASK, values)

        if not (parts or replace_parts):
            # Saves of one task in one batch: the last one (the task as it is now) is written.
            return write_task, ("task", task.id)
        task_id = task.id

        def write_all(conn: Executes) -> None:
            if replace_parts:
                conn.execute("DELETE FROM task_parts WHERE task_id = ?", (task_id,))
            conn.executemany(
                "INSERT INTO task_parts (task_id, artifact_id, parts) VALUES (?, ?, ?)",
                [(task_id, artifact_id, blob) for artifact_id, blob in parts],
            )
            write_task(conn)

        # Appended parts are rows of their own, in order: this write is never merged away.
        return write_all, None

    def _split(self, task: Task, *, fresh: bool = False) -> tuple[Task, list[tuple[str | None, bytes]], bool]:
        """The task's row (the task without its history and its artifacts' parts), the rows to
        append (``None`` for history messages or an artifact id for its parts, with the encoded
        list) and whether they replace every appended row of the task.

        Only what was added since this store's last save of the task is encoded and written,
        when each list (the history, an artifact's parts) still holds, at the position last
        saved, the very object saved last (the handler only appends to them): the cost of a save
        does not grow with the task. Otherwise (the first save here, an artifact replaced or
        removed) everything is written again, one row per list; so is a task that ends, once,
        so that reading a finished task joins one row per list.

        A small task (at most ``INLINE_ITEMS`` messages and parts) is written whole in its row:
        rewriting it costs less than rows of its own. Rows an earlier save (or run) may have
        left are then deleted, unless this store knows there are none (it saved the task whole
        before, or the task is ``fresh``: never saved anywhere)."""
        shape = self._shapes.get(task.id)
        ended = task.status.state in _ENDED  # identity hits: cheaper than the enum's hash
        if _items(task) <= INLINE_ITEMS:
            if ended:
                self._shapes.pop(task.id, None)
            else:
                self._shapes[task.id] = _INLINE
            return task, [], (shape is None and not fresh) or (shape is not None and shape.split)
        lists: list[tuple[str | None, list[Any]]] = [(None, task.history or [])]
        lists += [(a.artifact_id, a.parts) for a in task.artifacts or []]
        appended: list[tuple[str | None, bytes]] = []
        # First save here, a task written whole so far, or a list removed: every row anew.
        full = shape is None or not shape.split or len(shape.lists) > len(lists)
        if shape is not None and not full:
            for key, items in lists:
                last, count = shape.lists.get(key, (None, 0))
                if count > len(items) or (count and items[count - 1] is not last):
                    full = True  # replaced, or shrunk
                    break
                if len(items) > count:
                    appended.append((key, encode(items[count:])))
            # A task that ends is compacted once: one row per list for every later read.
            full = full or (ended and shape.rows + len(appended) > sum(1 for _, items in lists if items))
        if full:
            appended = [(key, encode(items)) for key, items in lists if items]
        rows = len(appended) if full or shape is None else shape.rows + len(appended)
        if ended:
            self._shapes.pop(task.id, None)
        else:
            marks = {key: (items[-1] if items else None, len(items)) for key, items in lists}
            self._shapes[task.id] = _Shape(marks, rows, split=True)
        skeleton = msgspec.structs.replace(
            task,
            history=[] if task.history is not None else None,
            artifacts=[msgspec.structs.replace(a, parts=[]) for a in task.artifacts] if task.artifacts else None,
        )
        return skeleton, appended, full

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

        def run(conn: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], _PartRows, int]:
            rows = conn.execute(
                f"SELECT id, owner, tenant, last_seq, body FROM tasks WHERE {page_where} "  # fixed fragments only
                "ORDER BY ts DESC, id DESC LIMIT ?",
                (*page_args, query.page_size + 1),
            ).fetchall()
            rows = rows[: query.page_size + 1]
            total = conn.execute(f"SELECT COUNT(*) FROM tasks WHERE {filters}", args).fetchone()[0]
            return rows, _parts_of(conn, [row[0] for row in rows[: query.page_size]]), int(total)

        rows, parts, total = await self._db.read(run)
        records = self._records(rows[: query.page_size], parts)
        more = len(rows) > query.page_size
        return TaskPage(records, encode_cursor(records[-1].task) if more and records else "", total)

    async def unfinished(self) -> Sequence[TaskRecord]:
        def query(conn: sqlite3.Connection) -> tuple[list[tuple[Any, ...]], _PartRows]:
            sql = f"SELECT id, owner, tenant, last_seq, body FROM tasks WHERE state IN ({_ACTIVE_SQL})"  # constants
            rows: list[tuple[Any, ...]] = conn.execute(sql).fetchall()
            return rows, _parts_of(conn, [row[0] for row in rows])

        rows, parts = await self._db.read(query)
        return self._records(rows, parts)

    async def claim_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        if self._sweeper is None or self._keys is None:  # as in ``_prepare``
            self._started()
        if not self.exclusive:
            return await self._claim_and_wait(key, record)
        existing = self._pending_claims.get(key)
        # ``_may_be_on_disk`` written out: every message passes here.
        if existing is None and ((keys := self._keys) is None or keys.may_contain(key)):
            existing = self._committed_message(key)
        if existing is not None:
            return existing
        self._fresh.add(key)  # nothing of it is on disk: its first write need not look
        if record.task_id is None:
            # Ours: queued, not awaited; it commits with (or before) the next write anybody awaits.
            self._write_message(key, record, wait=False)
            return None
        # Ours, and kept here until the first write that depends on it: the task's first save
        # (``save`` queues the claim before it, into the same batch) or the reply's record (the
        # same row, so one write). Nobody learns of the message before one of those is
        # committed, so a claim lost with the process was never accepted: a retry runs it anew.
        self._pending_claims[key] = IdempotencyRecord(record.fingerprint, record.task_id, record.message)
        self._unwritten[key] = record.task_id
        self._unwritten_of_task.setdefault(record.task_id, []).append(key)
        if len(self._unwritten) > MAX_UNWRITTEN_CLAIMS:
            # Bounded memory (a claim whose run failed before it wrote anything stays here):
            # the oldest is written now, which is always correct, only not merged.
            oldest = next(iter(self._unwritten))
            self._write_message(oldest, self._pending_claims[oldest], wait=False)
        return None

    def _write_claims_of(self, task_id: str) -> None:
        for key in self._unwritten_of_task.get(task_id, ())[:]:
            self._write_message(key, self._pending_claims[key], wait=False)

    async def _claim_and_wait(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        values = _message_row(key, record)
        row = await self._db.write(lambda conn: self._message_records.claim(conn, values))
        return None if row is None else self._idempotency(row)

    def _idempotency(self, row: tuple[Any, ...]) -> IdempotencyRecord:
        fingerprint, task_id, message = row
        return IdempotencyRecord(
            fingerprint, task_id, None if message is None else self._message_decoder.decode(message)
        )

    def _committed_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        row = self._db.read_now(lambda conn: self._message_records.find(conn, key))
        return None if row is None else self._idempotency(row)

    def _write_message(self, key: tuple[str, str, str], record: IdempotencyRecord, *, wait: bool) -> Any:
        if not self.exclusive:
            values = _message_row(key, record)
            return self._db.write(lambda conn: self._message_records.upsert(conn, values), key=("message", key))
        key, values, pending, fresh = self._message_queued(key, record)

        def write(conn: sqlite3.Connection) -> None:
            self._message_records.write(conn, values, fresh=fresh)

        def committed(_error: BaseException | None) -> None:
            self._message_written(key, pending)

        if not wait:
            self._db.post(write, key=("message", key), on_commit=committed)
            return None
        return self._db.defer(write, key=("message", key), on_commit=committed)

    def _message_queued(
        self, key: tuple[str, str, str], record: IdempotencyRecord
    ) -> tuple[tuple[str, str, str], tuple[Any, ...], IdempotencyRecord, bool]:
        """``exclusive``: the bookkeeping of a record whose row is queued now (in a write of its
        own or in its task's): the key, the row, the record pending until it is committed, and
        whether no row of the key was committed yet (``fresh``: see ``MessageRecords.write``)."""
        values = _message_row(key, record)
        claimed_for = self._unwritten.pop(key, None)
        if claimed_for is not None:  # queued now
            of_task = self._unwritten_of_task[claimed_for]
            of_task.remove(key)
            if not of_task:
                del self._unwritten_of_task[claimed_for]
        if self._keys is not None:
            self._keys.add(key)
        if self._keys_written is not None:
            self._keys_written.append(key)
        # Seen by later claims until it is committed (then the lookup finds it on disk): the
        # store's own copy (a claim written with its task's first save is that copy already).
        pending = record
        if claimed_for is None or self._pending_claims.get(key) is not record:
            pending = IdempotencyRecord(record.fingerprint, record.task_id, record.message)
        self._pending_claims[key] = pending
        if len(self._message_records.rows) >= MERGE_AT and self._merge_due is not None:
            self._merge_due.set()
        return key, values, pending, key in self._fresh

    def _message_written(self, key: tuple[str, str, str], pending: IdempotencyRecord) -> None:
        """Its write is done (committed: the lookup finds it on disk; or failed: never accepted)."""
        if self._pending_claims.get(key) is pending:
            del self._pending_claims[key]
        # Committed (its row is where ``MessageRecords`` finds it), or failed (then a later
        # write looks in the index first, in vain, and appends).
        self._fresh.discard(key)

    async def get_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        pending = self._pending_claims.get(key)
        if pending is not None:
            return IdempotencyRecord(pending.fingerprint, pending.task_id, pending.message)
        return self._committed_message(key) if self._may_be_on_disk(key) else None

    async def update_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> None:
        self._started()
        # One row per messageId: a claim still queued and this update merge into one write.
        await self._write_message(key, record, wait=True)

    def record_reply(self, key: tuple[str, str, str], record: IdempotencyRecord) -> Awaitable[object]:
        self._started()
        written = self._write_message(key, record, wait=True)  # queued now: the batch's future
        return written if isinstance(written, asyncio.Future) else asyncio.ensure_future(written)

    # ---- retention ------------------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a sweep that failed is tried again at the next interval
                log.warning("retention sweep of %s failed; trying again in %.0f s", self.path, self.sweep_interval)

    async def sweep(self, now: float | None = None) -> int:
        """Delete what is past its retention, a chunk per write; returns the rows deleted."""
        now = time.time() if now is None else now
        deleted = 0
        if self.idempotency_retention:
            cutoff = now - self.idempotency_retention

            def messages(conn: sqlite3.Connection) -> int:
                return self._message_records.expire(conn, cutoff, SWEEP_CHUNK)

            while (n := await self._db.write(messages)) > 0:
                deleted += n
                if n < SWEEP_CHUNK:
                    break
        if self.task_retention:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - self.task_retention))

            def tasks(conn: sqlite3.Connection) -> int:
                ids = [
                    (row[0],)
                    # By the partial index ``tasks_ended`` (its very condition: see ``_ENDED_SQL``),
                    # so a sweep reads only ended tasks past the cutoff, never the whole table.
                    for row in conn.execute(SWEEP_TASKS_SQL, (stamp, SWEEP_CHUNK))
                ]
                conn.executemany("DELETE FROM tasks WHERE id = ?", ids)
                conn.executemany("DELETE FROM task_parts WHERE task_id = ?", ids)
                # The push store's rows of these tasks, when it shares this file.
                tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                for table in ("push_configs", "push_deliveries", "push_leases"):
                    if table in tables:
                        conn.executemany(f"DELETE FROM {table} WHERE task_id = ?", ids)  # fixed names only
                return len(ids)

            while (n := await self._db.write(tasks)) > 0:
                deleted += n
                if n < SWEEP_CHUNK:
                    break
        if self.exclusive and self._keys_written is None and (self._keys is None or self._keys.crowded):
            # Deleted keys stay in the filter: built anew from what is left (or tried again).
            self._build_keys()
        return deleted

    # ---- indexing new idempotency records (``idempotency``) ---------------------------

    async def _merge_forever(self) -> None:
        due = self._merge_due
        assert due is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(due.wait(), MERGE_EVERY)
            if self._message_records.rows:
                try:
                    await self.index_new_records()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - lookups find the rows by their seq meanwhile
                    log.warning(
                        "could not index the new idempotency records of %s (next try in %.0f s): %r",
                        self.path,
                        MERGE_EVERY,
                        exc,
                    )
            due.clear()  # (set again meanwhile by the writes of a merge this one left behind)

    async def index_new_records(self, *, slice_size: int = MERGE_SLICE) -> int:
        """Index the log's committed rows that are not indexed yet, in the index's order, a
        slice per write; returns how many. What they are is known in memory (``rows``'s appends,
        taken in a write so as to take only committed ones), not read back from the log."""
        items = await self._db.write(self._message_records.committed)
        for start in range(0, len(items), slice_size):
            await self._db.write(self._message_records.indexer(items[start : start + slice_size]))
        if items:
            await self._db.write(self._message_records.finisher(items))
        return len(items)

    async def close(self) -> None:
        for task in (self._sweeper, self._merger):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._sweeper = self._merger = None
        if self._message_records.rows:
            try:  # one transaction: the file is left with every record indexed
                await self.index_new_records(slice_size=1 << 62)
            except Exception as exc:  # noqa: BLE001 - indexed when the file is opened next
                log.warning("could not index the new idempotency records of %s at close: %r", self.path, exc)
        if self._keys_build is not None:
            self._keys_build.cancel()  # a scan still running ends with the reader, below
        await self._db.close()
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def _task_row(record: TaskRecord, body: bytes) -> tuple[Any, ...]:
    """The ``tasks`` row of a save (``_UPSERT_TASK``'s values), ``body`` its encoded task."""
    task = record.task
    return (
        task.id,
        record.owner,
        record.tenant,
        task.context_id,
        _STATE_TEXT[task.status.state],
        task.status.timestamp or "",
        record.last_seq,
        body,
    )


def _message_row(key: tuple[str, str, str], record: IdempotencyRecord) -> tuple[Any, ...]:
    """The ``message_log`` row of an idempotency record (its columns in order)."""
    message = None if record.message is None else encode(record.message)
    return (*key, record.fingerprint, record.task_id, message, time.time())


def _seconds(url: BackendURL, name: str, default: float) -> float:
    raw = url.option(name, "")
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise url.error(f"{name} must be a number of seconds >= 0 (0 keeps forever), got {raw!r}")
    return value


def open_sqlite_backend(url: BackendURL) -> Backend:
    """``sqlite:///relative/tasks.db`` or ``sqlite:////absolute/tasks.db`` (SQLAlchemy's
    convention: exactly one slash is dropped), ``?durability=full``, ``?task_retention=SECONDS``,
    ``?idempotency_retention=SECONDS`` (0 keeps forever; see the module docstring): tasks and push configs in
    that file (own tables, own connections); events in memory (one process serves the file)."""
    if url.netloc or len(url.path) < 2:
        raise url.error("write sqlite:///relative/path.db or sqlite:////absolute/path.db")
    durability = url.option("durability", "normal")
    if durability not in ("normal", "full"):
        raise url.error(f"durability must be normal or full, got {durability!r}")
    level: Literal["normal", "full"] = "full" if durability == "full" else "normal"
    task_retention = _seconds(url, "task_retention", DEFAULT_TASK_RETENTION)
    idempotency_retention = _seconds(url, "idempotency_retention", DEFAULT_IDEMPOTENCY_RETENTION)
    try:
        tasks = SQLiteTaskStore(
            url.path[1:],
            durability=level,
            exclusive=url.exclusive,
            task_retention=task_retention,
            idempotency_retention=idempotency_retention,
        )
    except ValueError as exc:
        raise url.error(str(exc)) from None
    return Backend(tasks, push=SQLitePushStore(tasks.path, durability=level, exclusive=url.exclusive))
