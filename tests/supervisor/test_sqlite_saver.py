"""The SQLite checkpointer that runs its statements in place: the same file as LangGraph's
``AsyncSqliteSaver`` (a checkpoint file written before this change still resumes), and every
async method a graph uses answers as the async saver does."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from supervisor import Supervisor
from supervisor.sqlite_saver import InlineSqliteSaver, open_sqlite_saver
from tests.supervisor.agents import WAIT, worker


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


async def _write(saver: Any, thread: str) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"objective": f"from {thread}"}
    saved = await saver.aput(_config(thread), checkpoint, {"source": "input", "step": -1}, {})
    await saver.aput_writes(saved, [("objective", "next")], "task-1")
    return saved


async def test_a_file_of_the_async_saver_is_read_and_the_other_way_round(tmp_path: Path) -> None:
    path = str(tmp_path / "checkpoints.sqlite")
    async with AsyncSqliteSaver.from_conn_string(path) as old:
        await old.setup()
        await _write(old, "before")
    with open_sqlite_saver(path) as saver:
        assert isinstance(saver, InlineSqliteSaver)
        found = await saver.aget_tuple(_config("before"))
        assert found is not None and found.checkpoint["channel_values"] == {"objective": "from before"}
        assert [w[1:] for w in found.pending_writes or []] == [("objective", "next")]
        await _write(saver, "after")
        assert [t.config["configurable"]["thread_id"] async for t in saver.alist(None)] == ["after", "before"]
    async with AsyncSqliteSaver.from_conn_string(path) as old:
        again = await old.aget_tuple(_config("after"))
        assert again is not None and again.checkpoint["channel_values"] == {"objective": "from after"}
    with open_sqlite_saver(path) as saver:
        await saver.adelete_thread("before")
        assert await saver.aget_tuple(_config("before")) is None


async def test_statements_run_on_the_loops_thread(tmp_path: Path) -> None:
    """No hand-over to another thread per statement (what made SQLite checkpoints slow)."""
    threads: set[int] = set()
    with open_sqlite_saver(str(tmp_path / "c.sqlite")) as saver:
        original = saver.cursor

        def recording(*args: Any, **kwargs: Any) -> Any:
            threads.add(threading.get_ident())
            return original(*args, **kwargs)

        saver.cursor = recording  # type: ignore[method-assign]
        await _write(saver, "t")
        await saver.aget_tuple(_config("t"))
    assert threads == {threading.get_ident()}


async def test_a_supervisor_run_with_sqlite_checkpoints_resumes_from_them(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    checkpoint = {"backend": "sqlite", "path": str(path)}
    async with Supervisor([worker("A")], checkpoint=checkpoint) as sup:
        result = await asyncio.wait_for(sup.run("work on apples", run_id="run-1"), WAIT)
    assert result.status == "completed"
    with open_sqlite_saver(str(path)) as saver:
        saved = await saver.aget_tuple(_config("run-1"))
    assert saved is not None and saved.checkpoint["channel_values"]
