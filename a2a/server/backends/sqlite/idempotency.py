"""Idempotency records in SQLite: appended to a log, indexed later, in the index's order.

Every ``SendMessage`` writes an idempotency record keyed by its ``messageId``, and clients draw
those at random (``uuid4()``, ``crypto.randomUUID()``). Kept in a table keyed by them, each new
record lands on a random page of the key's index: a page more in the WAL per record (a frame
written by the commit, copied again by the next checkpoint), measured at 1.7 frames and about
19 us of writer time per record, against 0.4 frames and 7 us for a record appended at the end
of a table: a fifth of a SendMessage on the default ``a2a serve``, and the WAL resets behind
its light-load tail.

So a record is appended to ``message_log`` (keyed by ``seq``, a counter: always at the end of
its B-tree) and never moves; ``message_keys`` indexes it by a 32-bit hash of its key (``h``,
``key_hash``) and its ``seq``: an entry a fifth the size of one holding the key itself, so an
index of a fifth as many pages. A store alone on its file (``exclusive``) indexes a new record
later, in the background: meanwhile it keeps the ``seq`` of every key appended since in memory
(``MessageRecords.rows``), and once ``MERGE_AT`` keys wait or ``MERGE_EVERY`` seconds have passed
it indexes them in the index's order, ``MERGE_SLICE`` per transaction, so that a page of the
index takes all the entries that fall into it at once. ``message_keys_upto`` says up to which
``seq`` the log is indexed. Measured (a microbenchmark: 8,192 keys at a time into an index of
230,000, its pages' checkpoint counted): 3.5 us per key with the hash, 10.2 keyed by the key.

What a merge indexes is taken from memory too (each append's hash and ``seq``, kept in the order
they were appended), not read back from the log: reading a merge's 8,192 rows back (their
pages, written by the commits since, each read from the WAL) cost 2.3 us of CPU per record, two
thirds of the merge. So memory must hold only committed appends: the writer tells
``MessageRecords`` when a transaction begins, ends and is rolled back (``began``, ``ended``,
``rolled_back``), and what a rolled-back one appended is dropped.

- **Lookups** try the ``seq`` in memory, then the index (the latest of the hash's entries whose
  log row has the key: keys may share a hash); each checks the log row's key (a ``seq`` whose
  append was rolled back may be reused by another key's).
- **Writes** of a known key update its log row where it is; a key the store knows to be new
  (``fresh``) is appended without a look at the index.
- **Recovery**: the map in memory dies with the process, so opening the file indexes whatever
  the log holds past ``message_keys_upto`` before anything is read (``recover``).
- **Several processes** (a store that is not ``exclusive``): each record is indexed in the
  transaction that appends it (``claim``, ``upsert``); a claim looks for the key and appends in
  one write transaction, which SQLite runs one at a time across processes.
- **Retention**: the sweep deletes the oldest records, indexed or not; the ones not indexed yet
  are dropped from memory with them (``expire``), so a merge never indexes a row that is gone.
- **Threads**: ``rows`` and the appends kept are changed only by writes and the writer's
  transaction hooks (on the writer's thread); ``rows`` is read anywhere.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import zlib
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from .worker import Executes

__all__ = [
    "MERGE_AT",
    "MERGE_AT_ENV",
    "MERGE_EVERY",
    "MERGE_SLICE",
    "SCHEMA",
    "MessageRecords",
    "key_hash",
    "migrate",
    "recover",
]

log = logging.getLogger("a2a.server.sqlite")

Key = tuple[str, str, str]

#: Environment hook for the durability tests only: ``MERGE_AT`` (so that a test killing the
#: server meets merges under way).
MERGE_AT_ENV = "A2A_TEST_SQLITE_MERGE_AT"
#: Keys appended before a merge starts. The gain is in the keys that share an index page in one
#: merge: with ``K`` keys merged into an index of ``N`` leaf pages, about ``N * (1 - exp(-K/N))``
#: pages are written, instead of ``K`` (one per key). Each key costs about 150 bytes of memory.
MERGE_AT = 8192


def _merge_at_from_env() -> int:
    raw = os.environ.get(MERGE_AT_ENV, "")
    return int(raw) if raw.isdecimal() and int(raw) > 0 else MERGE_AT  # (a bad value: the default)


MERGE_AT = _merge_at_from_env()
#: ... or after this many seconds with any key waiting, so that a quiet server's keys are
#: indexed soon too.
MERGE_EVERY = 30.0
#: Keys indexed per transaction (adjacent in the index's order): a slice touches at most this many index
#: pages, a few milliseconds of the writer, so requests never wait long behind a merge.
MERGE_SLICE = 512

SCHEMA = """
CREATE TABLE IF NOT EXISTS message_log (
    seq INTEGER PRIMARY KEY,
    owner TEXT NOT NULL,
    tenant TEXT NOT NULL,
    message_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    task_id TEXT,
    message BLOB,
    at REAL NOT NULL,
    h INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS message_keys (
    h INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (h, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS message_keys_upto (seq INTEGER NOT NULL);
"""

_COLUMNS = "owner, tenant, message_id, fingerprint, task_id, message, at, h"
_APPEND = f"INSERT INTO message_log ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"  # constants only
_INDEX = "INSERT OR IGNORE INTO message_keys (h, seq) VALUES (?, ?)"
_UPDATE = (
    "UPDATE message_log SET fingerprint = ?, task_id = ?, message = ? "
    "WHERE seq = ? AND owner = ? AND tenant = ? AND message_id = ?"
)
_FIND_AT = (
    "SELECT fingerprint, task_id, message FROM message_log "
    "WHERE seq = ? AND owner = ? AND tenant = ? AND message_id = ?"
)
#: The latest indexed row of a key: its hash's entries, each checked against the log's key.
_FOUND = (
    "FROM message_keys k JOIN message_log l ON l.seq = k.seq "
    "WHERE k.h = ? AND l.owner = ? AND l.tenant = ? AND l.message_id = ? ORDER BY k.seq DESC LIMIT 1"
)
_SEQ_OF = "SELECT l.seq " + _FOUND
_FIND = "SELECT l.fingerprint, l.task_id, l.message " + _FOUND
_PAST = "SELECT h, seq FROM message_log WHERE seq > ?"


def key_hash(owner: str, tenant: str, message_id: str) -> int:
    """The index's key for a record: 32 bits of CRC of the three, stable across processes
    (unlike ``hash``). Keys that share one are told apart by the log's row."""
    return zlib.crc32(f"{owner}\0{tenant}\0{message_id}".encode("utf-8", "surrogatepass"))


class MessageRecords:
    """The records' statements, and where each key appended since the last merge is."""

    def __init__(self) -> None:
        #: Key -> ``seq`` of the keys appended and not yet indexed (``exclusive`` only) ...
        self.rows: dict[Key, int] = {}
        #: ... and the same, (``seq``, key, hash), in the order they were appended: by ``seq``
        #: (a new row's is past every other's; a rolled-back append is dropped here).
        self._appended: deque[tuple[int, Key, int]] = deque()
        #: The ``seq`` of the last append kept (0: none yet) ...
        self._last = 0
        #: ... when the writer's transaction began (``None``: none open). The appends up to it
        #: are committed; those past it, the open transaction's.
        self._mark: int | None = None
        #: Every record up to this ``seq`` was deleted by the sweep (or emptied: see ``_expire``).
        self._expired_upto = 0

    # ---- the writer's transactions (``SQLiteWorker.watch_transactions``) ------------------

    def began(self) -> None:
        self._mark = self._last

    def ended(self) -> None:
        """Committed: its appends stay."""
        self._mark = None

    def rolled_back(self) -> None:
        """Forget what the transaction appended: its ``seq``s may be used again by other keys.
        (A transaction whose BEGIN failed has no mark: nothing to forget.)"""
        mark = self._mark
        if mark is None:
            return
        rows, appended = self.rows, self._appended
        while appended and appended[-1][0] > mark:
            seq, key, _h = appended.pop()
            if rows.get(key) == seq:
                del rows[key]
        self._last, self._mark = mark, None

    # ---- a store alone on its file --------------------------------------------------------

    def write(self, conn: Executes, values: Sequence[Any], *, fresh: bool) -> None:
        """Write a record (``values``: ``_message_row``), inside a batch; its key is indexed by
        a later merge.

        ``fresh``: no row of this key was committed when the write was queued (a new claim),
        so it is not looked for in the index."""
        key: Key = (values[0], values[1], values[2])
        seq = self.rows.get(key)
        if seq is None and not fresh:
            seq = _seq_of(conn, key)
        if seq is not None and conn.execute(_UPDATE, (values[3], values[4], values[5], seq, *key)).rowcount:
            return
        h = key_hash(*key)
        appended = conn.execute(_APPEND, (*values, h)).lastrowid
        assert appended is not None
        self.rows[key] = appended
        self._appended.append((appended, key, h))
        self._last = appended

    def find(self, conn: sqlite3.Connection, key: Key) -> tuple[Any, ...] | None:
        """The committed record of ``key`` (fingerprint, task id, message), or ``None``."""
        seq = self.rows.get(key)
        if seq is not None:
            row: tuple[Any, ...] | None = conn.execute(_FIND_AT, (seq, *key)).fetchone()
            if row is not None:
                return row
        found: tuple[Any, ...] | None = conn.execute(_FIND, (key_hash(*key), *key)).fetchone()
        return found

    def committed(self, conn: sqlite3.Connection) -> list[tuple[int, int]]:
        """A write (for its place among the writer's transactions): the (hash, ``seq``) of
        every append kept and committed, in the index's order. The appends of the transaction
        it runs in are not committed yet; those before it are (or were dropped)."""
        mark = self._last if self._mark is None else self._mark
        items = [(h, seq) for seq, _key, h in self._appended if seq <= mark]
        items.sort()
        return items

    def indexer(self, items: Sequence[tuple[int, int]]) -> Callable[[sqlite3.Connection], None]:
        """A write that indexes these (hash, seq) entries, adjacent in the index's order (but
        those that expired meanwhile: see ``expire``)."""

        def index(conn: sqlite3.Connection) -> None:
            gone = self._expired_upto
            conn.executemany(_INDEX, items if not gone else [item for item in items if item[1] > gone])

        return index

    def finisher(self, items: Sequence[tuple[int, int]]) -> Callable[[sqlite3.Connection], None]:
        """The write that ends a merge that indexed ``items`` (every committed row of the log up
        to the greatest ``seq`` among them): says so in the file, and forgets their keys here.
        Rows appended since have a greater ``seq``: the table's greatest row is never deleted
        (``_expire``)."""
        last = max(item[1] for item in items)

        def finish(conn: sqlite3.Connection) -> None:
            _indexed_upto(conn, last)
            self._forget_upto(last)

        return finish

    def _forget_upto(self, last: int) -> None:
        """Drop the appends kept up to ``seq`` ``last`` (indexed, or gone)."""
        rows, appended = self.rows, self._appended
        while appended and appended[0][0] <= last:
            seq, key, _h = appended.popleft()
            if rows.get(key) == seq:  # (else appended again since)
                del rows[key]

    def expire(self, conn: sqlite3.Connection, cutoff: float, limit: int) -> int:
        """``_expire``, and the records it removed dropped from memory: a merge under way skips
        them (they are the oldest, so a ``seq`` up to which everything is gone says which). (Were
        the sweep's transaction rolled back, they would stay on disk, unindexed and not looked
        for: records past their retention either way.)"""
        removed, last = _expire(conn, cutoff, limit)
        if last:
            self._expired_upto = max(self._expired_upto, last)
            self._forget_upto(last)
        return removed

    # ---- several processes on the file (each indexes at once) ---------------------------

    def claim(self, conn: sqlite3.Connection, values: Sequence[Any]) -> tuple[Any, ...] | None:
        """Append and index a new record, unless its key has one: then that record."""
        key: Key = (values[0], values[1], values[2])
        existing = self.find(conn, key)
        if existing is None:
            _append_indexed(conn, values)
        return existing

    def upsert(self, conn: sqlite3.Connection, values: Sequence[Any]) -> None:
        """Write a record, indexed at once."""
        key: Key = (values[0], values[1], values[2])
        seq = self.rows.get(key)
        if seq is None:
            seq = _seq_of(conn, key)
        if seq is None or not conn.execute(_UPDATE, (values[3], values[4], values[5], seq, *key)).rowcount:
            _append_indexed(conn, values)


def _seq_of(conn: Executes, key: Key) -> int | None:
    row = conn.execute(_SEQ_OF, (key_hash(*key), *key)).fetchone()
    return None if row is None else int(row[0])


def _append_indexed(conn: sqlite3.Connection, values: Sequence[Any]) -> None:
    h = key_hash(values[0], values[1], values[2])
    seq = conn.execute(_APPEND, (*values, h)).lastrowid
    conn.execute(_INDEX, (h, seq))


def indexed_upto(conn: sqlite3.Connection) -> int:
    """The ``seq`` up to which every row of the log is indexed."""
    row = conn.execute("SELECT seq FROM message_keys_upto").fetchone()
    return 0 if row is None else int(row[0])


def _indexed_upto(conn: sqlite3.Connection, seq: int) -> None:
    if conn.execute("UPDATE message_keys_upto SET seq = ? WHERE seq < ?", (seq, seq)).rowcount == 0:
        conn.execute(
            "INSERT INTO message_keys_upto (seq) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM message_keys_upto)", (seq,)
        )


def _unindexed(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """The log's rows past ``indexed_upto`` as (hash, seq), in the index's order (a read:
    committed rows only). Sorted here: with SQLite's sorter the read took longer."""
    items: list[tuple[int, int]] = conn.execute(_PAST, (indexed_upto(conn),)).fetchall()
    items.sort()
    return items


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def migrate(conn: sqlite3.Connection) -> None:
    """Earlier layouts, moved over once, in one transaction: records kept in ``messages`` keyed
    by their key (moved to the log, in their order), or a log without ``h`` (whose index was
    keyed by the whole key: built anew)."""
    conn.execute("BEGIN IMMEDIATE")  # before the look: another process may open the file too
    try:
        tables = _tables(conn)
        old_log = "message_log" in tables and "h" not in {
            row[1] for row in conn.execute("PRAGMA table_info(message_log)")
        }
        if "messages" not in tables and not old_log:
            conn.execute("COMMIT")
            return
        conn.create_function("a2a_key_hash", 3, key_hash, deterministic=True)
        if old_log:
            conn.execute("ALTER TABLE message_log ADD COLUMN h INTEGER NOT NULL DEFAULT 0")
            conn.execute("UPDATE message_log SET h = a2a_key_hash(owner, tenant, message_id)")
            conn.execute("DROP TABLE IF EXISTS message_keys")
        for statement in SCHEMA.split(";"):  # (``executescript`` would commit first)
            if statement.strip():
                conn.execute(statement)
        if "messages" in tables:
            columns = "owner, tenant, message_id, fingerprint, task_id, message, at"
            conn.execute(
                f"INSERT INTO message_log ({columns}, h) "  # constants only
                f"SELECT {columns}, a2a_key_hash(owner, tenant, message_id) FROM messages ORDER BY rowid"
            )
            conn.execute("DROP TABLE messages")
        conn.execute("DELETE FROM message_keys")
        conn.execute("INSERT INTO message_keys (h, seq) SELECT h, seq FROM message_log ORDER BY h, seq")
        moved = _last_seq(conn)
        _indexed_upto(conn, moved)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    log.info("moved the idempotency records of this store to its log (once, after an upgrade)")


def _expire(conn: sqlite3.Connection, cutoff: float, limit: int) -> tuple[int, int]:
    """Delete up to ``limit`` records made before ``cutoff`` (the oldest first: the log is in
    time order, so this stops at the first one kept, with no index on ``at`` to keep up).
    Returns how many, and the ``seq`` up to which no record is left (0: none removed).

    The table's newest row is emptied instead of deleted (no key, no content: nothing of the
    record is left), and deleted once a newer one is there: a new row's ``seq`` is one past
    the greatest in the table, and must stay past every ``seq`` used before (``finisher``,
    ``indexed_upto``). ``AUTOINCREMENT`` would keep that promise on its own, at 1-2 us more per
    record (a second B-tree written with each; measured, batches of 8)."""
    rows = conn.execute("SELECT seq, h, at, message_id FROM message_log ORDER BY seq LIMIT ?", (limit,)).fetchall()
    expired = []
    for seq, h, at, message_id in rows:
        if at >= cutoff:
            break
        expired.append((h, seq, message_id))
    emptied = 0
    last = expired[-1][1] if expired else 0
    if expired and last == _last_seq(conn):
        h, newest, message_id = expired.pop()
        if message_id:  # (else emptied by an earlier sweep)
            conn.execute(_EMPTY, (newest,))
            conn.execute("DELETE FROM message_keys WHERE h = ? AND seq = ?", (h, newest))
            emptied = 1
    conn.executemany("DELETE FROM message_log WHERE seq = ?", [(seq,) for _h, seq, _m in expired])
    conn.executemany("DELETE FROM message_keys WHERE h = ? AND seq = ?", [(h, seq) for h, seq, _m in expired])
    return len(expired) + emptied, last


#: What is left of the newest record once it expires: its ``seq`` (see ``_expire``).
_EMPTY = (
    "UPDATE message_log SET owner = '', tenant = '', message_id = '', fingerprint = '', task_id = NULL, "
    "message = NULL, h = 0 WHERE seq = ?"
)


def _last_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(seq) FROM message_log").fetchone()
    return 0 if row is None or row[0] is None else int(row[0])


def recover(conn: sqlite3.Connection) -> int:
    """At open, before anything is read: index every row of the log past ``indexed_upto`` (the
    map in memory died with the process). Returns how many."""
    if "message_log" not in _tables(conn):
        return 0  # a new file: the schema follows
    conn.execute("BEGIN IMMEDIATE")  # before the read: another process may open the file too
    try:
        items = _unindexed(conn)
        if items:
            conn.executemany(_INDEX, items)
            _indexed_upto(conn, max(item[1] for item in items))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return len(items)
