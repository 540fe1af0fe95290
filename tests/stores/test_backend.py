"""Choosing a push store: by URL, or beside a task store (same SQLite file, same Redis)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from a2a.server.push import InMemoryPushStore, PushConfigRecord, open_push_store, push_store_for
from a2a.server.push.redis import RedisPushStore
from a2a.server.push.sqlite import SQLitePushStore
from a2a.server.store import InMemoryTaskStore, TaskRecord
from a2a.server.stores.redis import RedisTaskStore
from a2a.server.stores.sqlite import SQLiteTaskStore
from a2a.types import Task, TaskPushNotificationConfig, TaskState, TaskStatus


def _config(task_id: str, config_id: str) -> PushConfigRecord:
    return PushConfigRecord(TaskPushNotificationConfig(url="https://h.example/", id=config_id, task_id=task_id))


async def test_open_by_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(open_push_store("memory:"), InMemoryPushStore)
    relative = open_push_store("sqlite:///data/tasks.db?durability=full")
    assert isinstance(relative, SQLitePushStore) and relative.path == Path("data/tasks.db")
    absolute = open_push_store(f"sqlite:///{tmp_path}/abs.db")
    assert isinstance(absolute, SQLitePushStore) and absolute.path == tmp_path / "abs.db"
    redis = open_push_store("redis://127.0.0.1:1/0?namespace=agent7")
    assert isinstance(redis, RedisPushStore) and redis.ns == "agent7"
    for store in (relative, absolute, redis):
        await store.close()
    for bad in ("postgres://x", "sqlite://host/x.db", "sqlite:///x.db?durability=maybe"):
        with pytest.raises(ValueError):
            open_push_store(bad)


async def test_beside_a_sqlite_task_store_in_one_file(tmp_path: Path) -> None:
    """Own tables and connection in the task store's file; both write at once without errors."""
    tasks = SQLiteTaskStore(tmp_path / "tasks.db")
    push = push_store_for(tasks)
    assert isinstance(push, SQLitePushStore) and push.path == tasks.path
    try:
        await push.put_config(_config("t0", "c"), max_configs=16)

        async def save(i: int) -> None:
            status = TaskStatus(state=TaskState.WORKING, timestamp=f"2026-11-22T06:00:{i % 60:02d}.000000Z")
            await tasks.save(TaskRecord(Task(id=f"t{i}", status=status)))

        async def queue(i: int) -> None:
            await push.enqueue("t0", i, b"{}", max_pending=1000)

        await asyncio.gather(*(save(i) for i in range(100)), *(queue(i) for i in range(1, 101)))
        assert await tasks.get("t99") is not None
        item = await push.next_delivery("t0", "c")
        assert item is not None and item.seq == 1
    finally:
        await push.close()
        await tasks.close()


async def test_beside_a_redis_task_store(push_redis_url: str) -> None:
    tasks = RedisTaskStore(push_redis_url, namespace="beside")
    push = push_store_for(tasks)
    assert isinstance(push, RedisPushStore) and push.redis is tasks.redis and push.ns == "beside"
    await push.put_config(_config("t1", "c"), max_configs=16)
    await push.close()  # the shared client stays open ...
    assert await tasks.get("t1") is None  # ... for the task store
    keys = [k.decode() async for k in tasks.redis.scan_iter(match="beside:*")]
    assert keys and all(k.startswith("beside:push:") for k in keys)
    await tasks.close()


def test_beside_a_memory_task_store() -> None:
    assert isinstance(push_store_for(InMemoryTaskStore()), InMemoryPushStore)
