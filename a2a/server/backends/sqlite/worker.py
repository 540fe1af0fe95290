"""SQLite connections for one store file, each used by one thread, in WAL mode.

- **Writes: group commit.** One writer thread owns the write connection. Coroutines queue
  writes with ``write``; the writer drains everything queued since its last commit into *one*
  transaction, commits it (with ``durability="full"``: one fsync for the whole batch), and only
  then answers each caller. A caller is thus never told anything before its write is durable,
  and a busy server pays one commit (one fsync) per batch instead of one per write. Writes with
  the same ``key`` in one batch are merged: only the last runs (each carries the whole new
  state, e.g. a task save), and all their callers are answered by its commit.
- Writes queued during one iteration of the event loop reach the writer together, and so do
  those of the next ``FLUSH_AFTER_TURNS`` iterations: the requests that reach a busy server
  together get to their writes a turn or two apart, and one transaction is cheaper than three
  (see ``FLUSH_AFTER_TURNS``). Where the writer is: with ``inline=True``
  (``durability="normal"`` on a file no other process writes: what ``a2a serve`` runs) the
  batch is committed on the event loop's own thread at the end of its last turn, before the
  loop goes on: the commit is a ``write()`` of the new pages to the WAL (no fsync, no lock held
  by anybody else to wait for), cheaper than two thread hand-overs, and the loop cannot answer
  anybody in between. Checkpoints (copying the WAL into the file, with an fsync) then run on the
  reader thread, every ``CHECKPOINT_EVERY`` batches (or ``CHECKPOINT_EVERY_WRITES`` writes),
  never in a commit on the loop. Otherwise (``durability="full"``: an fsync per batch; or a file other
  processes write: a busy wait for their lock) the writer is a thread of its own: one wake-up
  of it per batch, one wake-up of the loop to answer the batch.
- ``defer`` queues a write nobody waits for: it is committed with (or before) the next write
  that anybody awaits, since the queue is committed in order. For a row whose commit only
  matters together with a later one (the idempotency claim, before the task's first save).
  ``post`` is ``defer`` without even a future; ``submit`` is ``write`` without a coroutine (the
  caller awaits the future). Any write may carry ``on_commit``, called on the loop's thread
  when its batch is done, before its future is answered: bookkeeping (a claim no longer
  pending, say) costs no callback of its own through the event loop.
- **Reads** see only committed data: ``read`` runs on a reader thread with its own connection
  (queries that may scan), ``read_now`` runs on the calling (event loop) thread with a third
  connection, for point lookups by primary key that cost less than a thread hop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

__all__ = ["Executes", "SQLiteWorker", "TransactionWatcher"]

T = TypeVar("T")

log = logging.getLogger("a2a.server.sqlite")

#: Environment hook for the durability tests only: seconds the writer sleeps after running a
#: batch and before committing it (so that a test can kill the server in between).
COMMIT_DELAY_ENV = "A2A_TEST_SQLITE_COMMIT_DELAY"


@dataclass(slots=True)
class _Op:
    fn: Callable[[sqlite3.Connection], Any]
    key: Hashable | None
    future: asyncio.Future[Any] | None
    loop: asyncio.AbstractEventLoop | None
    #: Nobody need wait for it (``defer``): a failure is logged.
    deferred: bool = False
    result: Any = None
    error: BaseException | None = None
    #: Merged into a later op with the same key: answered by that op's commit.
    merged: bool = False
    #: Called with the op's error (``None``: committed) on the loop's thread (``on_commit``).
    hook: Callable[[BaseException | None], None] | None = None


@dataclass(slots=True)
class _Outbox:
    """Writes queued on one event loop since its batch's first (its flush waits
    ``FLUSH_AFTER_TURNS`` turns for more)."""

    ops: list[_Op] = field(default_factory=list)
    #: Turns of the loop its flush has waited so far (see ``FLUSH_AFTER_TURNS``).
    turns: int = 0


_STOP = object()
#: The flush of a batch waits this many more turns of the event loop before it commits. A
#: request reaches its write a turn or two after its bytes arrived (its handler's task, then its
#: agent's), and the requests a busy server reads in neighbouring turns are staggered by just
#: that much: flushed at the end of the first turn, 8 connections waiting for their answers gave
#: batches of 3.3 writes; two turns later, 7.9 (64 connections: 23, then 62). A commit costs
#: far more than a row (its pages written to the WAL whole, the file's locks, a checkpoint every
#: ``CHECKPOINT_EVERY`` of them), so that cut the server's CPU per SendMessage by a fifth at 8
#: connections (131 -> 105 us; a task: 224 -> 150 us) and by a tenth at 64, to what the
#: memory store costs. An idle server pays two empty turns (about 10 us) per write.
FLUSH_AFTER_TURNS = 2
#: ... unless this many writes are waiting already: a bigger transaction would hold the loop
#: (an inline commit runs on it) for longer than it saves.
FLUSH_AT_OPS = 512
#: Inline writer: a checkpoint after this many batches (WAL pages pile up until then) ...
CHECKPOINT_EVERY = 200
#: ... or after this many writes, whichever comes first. A busy server's batch carries dozens
#: (``FLUSH_AFTER_TURNS``), and a new row keyed by a client's random id (a messageId, a UUID)
#: lands at a random page of its index: a page of WAL each. 200 such batches were 50-90 MB of
#: WAL, copied back by a checkpoint slow enough for the WAL to pass ``WAL_LIMIT`` and hold the
#: writes for 15-60 ms (p99 at 64 connections 40 ms); a checkpoint per 3,000 writes: 17 ms.
CHECKPOINT_EVERY_WRITES = 3000
#: Inline writer: past this much WAL (frames written since it last started again) the writes are
#: held for a short checkpoint that lets it start again from its beginning.
WAL_LIMIT = 32 * 1024 * 1024
#: Past ``WAL_LIMIT``, passive checkpoints follow one another (each copies what came during the
#: one before, the writes going on) until one copies fewer frames than this, or ``MAX_CHASES``
#: of them ran; only then are the writes held, for what came during that last, short one.
CHASE_UNTIL_FRAMES = 256
MAX_CHASES = 3
#: Each WAL frame is a page and this header.
_FRAME_HEADER = 24
#: The writer's page cache, in KiB (SQLite's default is 2,000). What a write touches again soon
#: is the right-hand edge of each B-tree (new rows, new index entries by time) and the interior
#: pages above it: a few dozen pages. The rest of a bigger cache holds pages written once (every
#: task row a burst of streams saved), up to 2 MB of memory that a server with open streams
#: kept for nothing; a page not cached is read back from the OS's cache of the file. Measured:
#: no more instructions per request (message and task cases), 1.5 KiB less RSS per open stream
#: at 500 and at 1,000 open (benchmarks/README.md).
WRITER_CACHE_KIB = 256


class Executes(Protocol):
    """What a write needs of a connection: a connection, or a cursor kept on one."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor: ...


class TransactionWatcher(Protocol):
    """Told of the writer's transactions (``SQLiteWorker.watch_transactions``)."""

    def began(self) -> None: ...

    def ended(self) -> None:
        """Committed."""

    def rolled_back(self) -> None:
        """Rolled back (or never begun: then nothing to undo since ``ended``)."""


Migration = Callable[[sqlite3.Connection], None]
#: Told how a write went (``None``: committed; else its error), on the loop's thread.
OnCommit = Callable[[BaseException | None], None]


def _open(
    path: Path, durability: str, schema: str | None, migrate: Migration | None = None, *, cache_kib: int | None = None
) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={'FULL' if durability == 'full' else 'NORMAL'}")
    conn.execute("PRAGMA busy_timeout=5000")
    if cache_kib is not None:
        conn.execute(f"PRAGMA cache_size=-{int(cache_kib)}")  # negative: KiB, not pages
    if migrate is not None:
        migrate(conn)
    if schema is not None:
        conn.executescript(schema)
    return conn


class SQLiteWorker:
    def __init__(
        self,
        path: Path,
        *,
        durability: Literal["normal", "full"],
        schema: str,
        thread_name: str,
        migrate: Migration | None = None,
        inline: bool = False,
    ) -> None:
        if inline and durability == "full":
            raise ValueError("an fsync must not block the event loop: inline needs durability='normal'")
        self.path = path
        self.inline = inline
        self._inline_conn: sqlite3.Connection | None = None
        #: Inline only: batches (and the writes in them) committed since the last checkpoint,
        #: and the checkpoint running.
        self._since_checkpoint = 0
        self._written_since_checkpoint = 0
        self._checkpointing = False
        #: Writes held while a checkpoint that must reach the WAL's end runs (``None``: none).
        self._held: list[_Op] | None = None
        self._checkpoint_run: asyncio.Future[None] | None = None
        #: The file's page size (read once, for the WAL's length in bytes).
        self._page_bytes: int | None = None
        self._migrate = migrate
        self.durability = durability
        self._schema = schema
        self._thread_name = thread_name
        self._queue: queue.SimpleQueue[list[_Op] | object] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._ready = threading.Event()
        self._open_error: BaseException | None = None
        self._outboxes: dict[asyncio.AbstractEventLoop, _Outbox] = {}
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{thread_name}-read")
        self._read_conn: sqlite3.Connection | None = None
        self._now_conn: sqlite3.Connection | None = None
        self._commit_delay = float(os.environ.get(COMMIT_DELAY_ENV, "0") or 0)
        #: The cursor ``_commit_group`` begins and commits with (on the writing connection).
        self._tx_cursor: sqlite3.Cursor | None = None
        #: Told of each write transaction (``watch_transactions``), on the writer's thread.
        self._watcher: TransactionWatcher | None = None

    def watch_transactions(self, watcher: TransactionWatcher) -> None:
        """Tell ``watcher`` when each batch's transaction begins, is committed (``ended``) or
        is rolled back, on the writer's thread: bookkeeping in memory about what a batch wrote
        (``idempotency``) can then drop what a rollback took back."""
        self._watcher = watcher

    # ---- writes -------------------------------------------------------------------------

    def _start(self) -> None:
        """The writer opens the file (creating the schema) on first use."""
        if self.inline:
            if self._inline_conn is None:
                conn = _open(self.path, self.durability, self._schema, self._migrate, cache_kib=WRITER_CACHE_KIB)
                # Checkpoints (which copy the WAL into the file, and fsync it) run on the
                # reader thread, never inside a commit on the loop.
                conn.execute("PRAGMA wal_autocheckpoint=0")
                self._inline_conn = conn
            return
        if self._writer is None:
            with self._start_lock:
                if self._writer is None:
                    thread = threading.Thread(target=self._write_loop, name=self._thread_name, daemon=True)
                    thread.start()
                    self._writer = thread
                    self._ready.wait()
        if self._open_error is not None:
            raise self._open_error

    def _enqueue(self, op: _Op) -> None:
        if self._inline_conn is None:  # (a call less for every write once the inline one is open)
            self._start()
        loop = op.loop
        if loop is None:
            self._queue.put([op])
            return
        outbox = self._outboxes.get(loop)
        if outbox is None:
            outbox = self._outboxes[loop] = _Outbox()
            # Everything queued in this iteration of the loop goes to the writer at once.
            loop.call_soon(self._flush, loop)
        outbox.ops.append(op)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """The batch's flush at the end of a turn of ``loop``: it waits for more writes (see
        ``FLUSH_AFTER_TURNS``), then commits them."""
        outbox = self._outboxes.get(loop)
        if outbox is not None and outbox.turns < FLUSH_AFTER_TURNS and len(outbox.ops) < FLUSH_AT_OPS:
            outbox.turns += 1
            loop.call_soon(self._flush, loop)
            return
        self._flush_now(loop)

    def _flush_now(self, loop: asyncio.AbstractEventLoop) -> None:
        outbox = self._outboxes.pop(loop, None)
        if outbox is not None and outbox.ops:
            if self._held is not None:
                self._held.extend(outbox.ops)  # committed once the checkpoint is done
            elif self._inline_conn is not None:
                self._run_batch(self._inline_conn, outbox.ops)
                self._since_checkpoint += 1
                self._written_since_checkpoint += len(outbox.ops)
                if (
                    self._since_checkpoint >= CHECKPOINT_EVERY
                    or self._written_since_checkpoint >= CHECKPOINT_EVERY_WRITES
                ):
                    if not self._checkpointing:
                        self._checkpoint(loop)
                    elif self._wal_file_over(2 * WAL_LIMIT):
                        # The running checkpoint is slow (a slow disk) and the WAL has run
                        # far past its limit: hold the writes now; a resetting one follows it.
                        self._held = []
            else:
                self._queue.put(outbox.ops)

    async def write(self, fn: Callable[[sqlite3.Connection], T], *, key: Hashable | None = None) -> T:
        """Run ``fn`` in the next batch; returns its result once the batch is committed."""
        return await self.submit(fn, key=key)

    def submit(
        self, fn: Callable[[sqlite3.Connection], T], *, key: Hashable | None = None, on_commit: OnCommit | None = None
    ) -> asyncio.Future[T]:
        """``write``, as the future to await (one coroutine fewer for a caller on a hot path)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._enqueue(_Op(fn, key, future, loop, hook=on_commit))
        return future

    def defer(
        self,
        fn: Callable[[sqlite3.Connection], object],
        *,
        key: Hashable | None = None,
        on_commit: OnCommit | None = None,
    ) -> asyncio.Future[Any]:
        """Queue ``fn`` for the next batch without waiting for it (see the module docstring).

        The returned future is done once the batch is committed; a failure is logged here,
        since nobody may be waiting for it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._enqueue(_Op(fn, key, future, loop, deferred=True, hook=on_commit))
        return future

    def post(
        self,
        fn: Callable[[sqlite3.Connection], object],
        *,
        key: Hashable | None = None,
        on_commit: OnCommit | None = None,
    ) -> None:
        """``defer`` without a future: nobody waits for this write at all (``on_commit`` is
        told how it went)."""
        self._enqueue(_Op(fn, key, None, asyncio.get_running_loop(), deferred=True, hook=on_commit))

    def _write_loop(self) -> None:
        try:
            conn = _open(self.path, self.durability, self._schema, self._migrate, cache_kib=WRITER_CACHE_KIB)
        except BaseException as exc:  # noqa: BLE001 - reported to every caller of _start
            self._open_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while True:
                item = self._queue.get()
                batch: list[_Op] = []
                stop = False
                while True:
                    if item is _STOP:
                        stop = True
                    else:
                        assert isinstance(item, list)
                        batch.extend(item)
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                self._run_batch(conn, batch)
                if stop:
                    return
        finally:
            conn.close()

    def _run_batch(self, conn: sqlite3.Connection, batch: list[_Op]) -> None:
        self._commit_group(conn, batch)
        self._answer(batch)

    def _commit_group(self, conn: sqlite3.Connection, group: list[_Op]) -> None:
        if not group:
            return
        last: dict[Hashable, _Op] = {}
        merges = False
        for op in group:
            key = op.key
            if key is not None:
                if key in last:
                    merges = True
                last[key] = op
        live = group
        if merges:  # (most batches merge nothing: no second list, no second pass for them)
            live = []
            for op in group:
                if op.key is not None and last[op.key] is not op:
                    op.merged = True
                else:
                    live.append(op)
        # BEGIN and COMMIT on one cursor kept for them (``Connection.execute`` makes one each).
        cursor = self._tx_cursor
        if cursor is None or cursor.connection is not conn:
            cursor = self._tx_cursor = conn.cursor()
        failed = False
        watcher = self._watcher
        try:
            cursor.execute("BEGIN IMMEDIATE")
            if watcher is not None:
                watcher.began()
            for op in live:
                op.result = op.fn(conn)
            if self._commit_delay:
                time.sleep(self._commit_delay)
            cursor.execute("COMMIT")
            if watcher is not None:
                watcher.ended()
        except BaseException as exc:  # noqa: BLE001 - handed to the callers
            failed = True
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if watcher is not None:
                # Nothing of the batch is on disk (a failed COMMIT is rolled back too). A
                # BEGIN that failed began nothing: ``began`` was not called, so the watcher has
                # no open transaction to undo.
                watcher.rolled_back()
            if len(live) == 1:
                live[0].error = exc
            else:
                # One write failed (or the commit did): each runs again in its own
                # transaction, so that one bad write does not fail the others.
                for op in live:
                    self._commit_group(conn, [op])
        if merges:
            for op in group:
                if op.merged:
                    carrier = last[op.key]
                    op.error = carrier.error
        if failed:
            for op in live:
                if op.error is not None and op.deferred:
                    log.error("a deferred SQLite write to %s failed: %r", self.path, op.error)

    def _wal_file_over(self, size: int) -> bool:
        wal = Path(f"{self.path}-wal")
        return wal.exists() and wal.stat().st_size > size

    def _checkpoint(
        self, loop: asyncio.AbstractEventLoop, *, reset: bool = False, chase: int = 0, copied_before: int = 0
    ) -> None:
        """A checkpoint on the reader thread, passive: the writer goes on meanwhile.

        Under steady writes a passive checkpoint never reaches the WAL's end (frames keep
        arriving while it copies), and only a WAL copied to its end starts again from its
        beginning. So once the passive one finds more than ``WAL_LIMIT`` bytes of frames, the
        writes are held (queued, not committed: the loop goes on) for a last one (``reset``)
        that copies the few frames written meanwhile and makes the next commit start the WAL
        again from its beginning (``RESTART``: the file is reused, not truncated). Before the
        hold, passive ones ``chase`` the WAL's end (see ``CHASE_UNTIL_FRAMES``): a passive one
        that copied a limit's worth took 25-40 ms, and with random messageIds (a page of WAL
        each) the frames written meanwhile held the writes 16-22 ms, the slowest 1% of requests
        at 8 connections (p99 18-20 ms; 3.8 ms with no reset at all). Holding them for the whole
        copy and truncating the file, as an earlier version did, held them 16-19 ms a time even
        with ids in order. A file that still ran past twice the limit (a checkpoint slower than
        a limit's worth of writes) is truncated by the reset, so that it stays bounded on disk.
        """
        self._since_checkpoint = 0
        self._written_since_checkpoint = 0
        self._checkpointing = True
        mode = "PASSIVE"
        if reset:
            mode = "TRUNCATE" if self._wal_file_over(2 * WAL_LIMIT) else "RESTART"
        frames = copied = 0

        def run() -> None:
            nonlocal frames, copied
            try:
                conn = self._reader_conn()
                # (busy, frames in the WAL, frames copied so far): the WAL's length, without a stat.
                row = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
                if row is not None:
                    frames, copied = max(row[1], 0), max(row[2], 0)
            except sqlite3.Error as exc:  # the next one tries again
                log.warning("checkpoint of %s failed: %r", self.path, exc)

        def done(_: object) -> None:
            self._checkpointing = False
            if not reset and (self._held is not None or frames * (self._page_size() + _FRAME_HEADER) > WAL_LIMIT):
                came = chase == 0 or copied - copied_before > CHASE_UNTIL_FRAMES
                if self._held is None and chase < MAX_CHASES and came:
                    # Frames came while this one copied: another copies them, the writes going on.
                    self._checkpoint(loop, chase=chase + 1, copied_before=copied)
                    return
                if self._held is None:
                    self._held = []  # until the resetting one is done
                self._checkpoint(loop, reset=True)
                return
            held, self._held = self._held, None
            if held and self._inline_conn is not None:
                self._run_batch(self._inline_conn, held)

        self._checkpoint_run = loop.run_in_executor(self._reader, run)
        self._checkpoint_run.add_done_callback(done)

    def _page_size(self) -> int:
        if self._page_bytes is None:
            assert self._inline_conn is not None
            self._page_bytes = int(self._inline_conn.execute("PRAGMA page_size").fetchone()[0])
        return self._page_bytes

    def _answer(self, batch: list[_Op]) -> None:
        if self.inline:
            _resolve(batch)  # on the loop's thread already
            return
        by_loop: dict[asyncio.AbstractEventLoop, list[_Op]] = {}
        for op in batch:
            if op.loop is not None and (op.future is not None or op.hook is not None):
                by_loop.setdefault(op.loop, []).append(op)
        for loop, ops in by_loop.items():
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits any more
                loop.call_soon_threadsafe(_resolve, ops)

    # ---- reads --------------------------------------------------------------------------

    def _reader_conn(self) -> sqlite3.Connection:
        """Used only on the reader thread."""
        if self._read_conn is None:
            self._start()  # the schema exists before anyone reads
            self._read_conn = _open(self.path, self.durability, None)
        return self._read_conn

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` on the reader thread (committed data only)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader, lambda: fn(self._reader_conn()))

    def read_now(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` here, at once (committed data only): for point lookups by primary key."""
        if self.inline:
            self._start()
            assert self._inline_conn is not None
            return fn(self._inline_conn)  # between batches: no transaction is open on it
        if self._now_conn is None:
            self._start()
            self._now_conn = _open(self.path, self.durability, None)
        return fn(self._now_conn)

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        for outbox_loop in list(self._outboxes):
            self._flush_now(outbox_loop)
        while self._checkpoint_run is not None and not self._checkpoint_run.done():
            await asyncio.wait([self._checkpoint_run])  # its held writes are committed when it ends
        if self._inline_conn is not None:
            self._inline_conn.close()
            self._inline_conn = None
            self._tx_cursor = None
        if self._writer is not None:
            self._queue.put(_STOP)
            await loop.run_in_executor(None, self._writer.join)
            self._writer = None
        # The reads already handed to the reader thread finish first: one of them may be the
        # one that opens its connection, which is then closed here too.
        await loop.run_in_executor(None, self._reader.shutdown)
        if self._read_conn is not None:
            self._read_conn.close()
            self._read_conn = None
        if self._now_conn is not None:
            self._now_conn.close()
            self._now_conn = None


def _resolve(ops: list[_Op]) -> None:
    for op in ops:
        hook = op.hook
        if hook is not None:
            try:
                hook(op.error)
            except Exception:  # bookkeeping that failed must not keep the others from their answers
                log.exception("after a SQLite write: its on_commit failed")
        future = op.future
        if future is None or future.done():  # a caller that was cancelled meanwhile
            continue
        if op.error is not None:
            future.set_exception(op.error)
            if op.deferred:
                future.exception()  # logged by ``_commit_group`` already: not again when nobody waits
        else:
            future.set_result(op.result)
