"""The SQLite checkpointer, its statements run on the event loop's own thread.

LangGraph's ``AsyncSqliteSaver`` runs every statement on aiosqlite's thread: several hand-overs
of the interpreter lock per checkpoint (a query, a commit, each awaited), which made a run's
SQLite checkpoints cost about 5 ms more than memory ones (about 0.4 ms each). Here the saver
is LangGraph's synchronous ``SqliteSaver`` (the same tables, the same file: either saver reads
what the other wrote) and its async methods call the synchronous ones in place. A checkpoint is
small (the state is saved as deltas) and a commit in WAL mode with ``synchronous=NORMAL``
writes the log without an fsync, so a statement blocks the loop for tens of microseconds,
less than the hand-overs it replaces.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

__all__ = ["InlineSqliteSaver", "open_sqlite_saver"]


class InlineSqliteSaver(SqliteSaver):
    """``SqliteSaver`` whose async methods run in place (see the module's docstring)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangGraph's own parameter name
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for found in self.list(config, filter=filter, before=before, limit=limit):
            yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Mapping[str, Any]:
        return self.get_delta_channel_history(config=config, channels=channels)


@contextlib.contextmanager
def open_sqlite_saver(path: str) -> Iterator[InlineSqliteSaver]:
    """The saver on the file at ``path`` (its tables made, WAL, ``synchronous=NORMAL``); closed after.

    In WAL mode, NORMAL syncs the log to disk at its checkpoints rather than at every commit: a
    commit survives the process dying (the SQLite file is consistent and holds it), and only a
    power loss may take back the last commits. A resume then finds an older checkpoint and
    resends what followed with the same message ids, which the agents answer with the tasks
    they already have.
    """
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = InlineSqliteSaver(conn)
        saver.setup()  # the tables, and the WAL journal
        conn.execute("PRAGMA synchronous=NORMAL")
        yield saver
    finally:
        conn.close()
