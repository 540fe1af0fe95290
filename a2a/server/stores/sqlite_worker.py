"""One SQLite connection, used only from its own thread (SQLite connections are not shared
across threads), in WAL mode; coroutines hand it work with ``run``."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TypeVar

__all__ = ["SQLiteWorker"]

T = TypeVar("T")


class SQLiteWorker:
    def __init__(self, path: Path, *, durability: Literal["normal", "full"], schema: str, thread_name: str) -> None:
        self.path = path
        self.durability = durability
        self._schema = schema
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
        self._conn: sqlite3.Connection | None = None
        self._open_lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        """Opened on first use, in the worker thread."""
        if self._conn is None:
            with self._open_lock:
                if self._conn is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=True)
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute(f"PRAGMA synchronous={'FULL' if self.durability == 'full' else 'NORMAL'}")
                    conn.execute("PRAGMA busy_timeout=5000")
                    conn.executescript(self._schema)
                    self._conn = conn
        return self._conn

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(self._connection()))

    async def close(self) -> None:
        def shut(conn: sqlite3.Connection) -> None:
            conn.close()

        if self._conn is not None:
            await self.run(shut)
            self._conn = None
        self._executor.shutdown(wait=True)
