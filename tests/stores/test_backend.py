"""Choosing a backend by URL: each scheme opens its task store, event bus, push store (beside the
tasks: same SQLite file, same Redis) and coordination; a bad URL is one line; durable tasks never
get a push store that forgets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from a2a import A2AServer, Agent, RequestContext
from a2a.server.backends import base as backend_module
from a2a.server.backends.base import Backend, BackendError, BackendURL, open_backend, register_backend
from a2a.server.backends.redis.bus import RedisEventBus
from a2a.server.backends.redis.coordination import RedisCoordination
from a2a.server.backends.redis.push import RedisPushStore
from a2a.server.backends.redis.tasks import RedisTaskStore
from a2a.server.backends.sqlite.push import SQLitePushStore
from a2a.server.backends.sqlite.tasks import SQLiteTaskStore
from a2a.server.backends.store import InMemoryTaskStore, TaskRecord
from a2a.server.engine.bus import InMemoryEventBus
from a2a.server.engine.coordination import SingleProcessCoordination
from a2a.server.engine.serving import open_handler
from a2a.server.push import InMemoryPushStore, PushConfigRecord, PushNotifier
from a2a.types import Task, TaskPushNotificationConfig, TaskState, TaskStatus


def _config(task_id: str, config_id: str) -> PushConfigRecord:
    return PushConfigRecord(TaskPushNotificationConfig(url="https://h.example/", id=config_id, task_id=task_id))


async def close(backend: Backend) -> None:
    if backend.push is not None:
        await backend.push.close()
    await backend.events.close()
    await backend.coordination.close()
    await backend.tasks.close()


async def test_memory() -> None:
    backend = open_backend("memory:")
    assert isinstance(backend.tasks, InMemoryTaskStore)
    assert isinstance(backend.events, InMemoryEventBus)
    assert isinstance(backend.push, InMemoryPushStore)
    assert isinstance(backend.coordination, SingleProcessCoordination)


async def test_sqlite_relative_and_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    relative = open_backend("sqlite:///data/tasks.db?durability=full")
    assert isinstance(relative.tasks, SQLiteTaskStore) and relative.tasks.path == Path("data/tasks.db")
    assert relative.tasks.durability == "full"
    assert isinstance(relative.push, SQLitePushStore) and relative.push.path == relative.tasks.path
    assert isinstance(relative.events, InMemoryEventBus)
    assert isinstance(relative.coordination, SingleProcessCoordination)
    absolute = open_backend(f"SQLITE:///{tmp_path}/abs.db")  # the scheme in any case
    assert isinstance(absolute.tasks, SQLiteTaskStore) and absolute.tasks.path == tmp_path / "abs.db"
    for backend in (relative, absolute):
        await close(backend)


async def test_redis_shares_one_client_and_namespace() -> None:
    backend = open_backend("redis://127.0.0.1:1/0?namespace=agent7", namespace="ignored")
    assert isinstance(backend.tasks, RedisTaskStore) and backend.tasks.ns == "agent7"
    assert isinstance(backend.events, RedisEventBus) and backend.events.redis is backend.tasks.redis
    assert isinstance(backend.push, RedisPushStore) and backend.push.redis is backend.tasks.redis
    assert isinstance(backend.coordination, RedisCoordination) and backend.coordination.redis is backend.tasks.redis
    assert {backend.events.ns, backend.push.ns, backend.coordination.ns} == {"agent7"}
    default = open_backend("rediss://127.0.0.1:1/0", namespace="a2a:files")
    assert isinstance(default.tasks, RedisTaskStore) and default.tasks.ns == "a2a:files"
    for opened in (backend, default):
        await close(opened)  # nothing was connected: closing needs no server


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgres://db/tasks", "unknown store 'postgres://db/tasks': use memory:, sqlite:///"),
        ("tasks.db", "unknown store 'tasks.db'"),
        ("sqlite://host/x.db", "write sqlite:///relative/path.db or sqlite:////absolute/path.db"),
        ("sqlite:///x.db?durability=maybe", "durability must be normal or full, got 'maybe'"),
    ],
)
def test_a_bad_url_is_one_line(url: str, says: str) -> None:
    with pytest.raises(BackendError) as raised:
        open_backend(url)
    message = str(raised.value)
    assert says in message
    assert "\n" not in message
    assert isinstance(raised.value, ValueError)  # the CLI prints it as one line and exits 1


def test_a_registered_scheme_opens_through_its_opener(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend_module, "_OPENERS", dict(backend_module._OPENERS))  # this test's only
    seen: list[BackendURL] = []

    def open_fake(url: BackendURL) -> Backend:
        seen.append(url)
        return Backend.in_memory()

    register_backend("fake-test", open_fake)
    open_backend("fake-test://somewhere/db?x=1", namespace="ns", exclusive=True)
    assert [(u.netloc, u.path, u.option("x", ""), u.namespace, u.exclusive) for u in seen] == [
        ("somewhere", "/db", "1", "ns", True)
    ]
    with pytest.raises(BackendError, match=r"or a URL starting .*fake-test:"):
        open_backend("nope://x")


async def test_push_configs_live_in_the_task_stores_sqlite_file(tmp_path: Path) -> None:
    """Own tables and connection in the task store's file; both write at once without errors."""
    backend = open_backend(f"sqlite:///{tmp_path}/tasks.db")
    tasks, push = backend.tasks, backend.push
    assert push is not None
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
        await close(backend)


async def test_push_configs_live_in_the_task_stores_redis(redis_url: str) -> None:
    backend = open_backend(redis_url, namespace="beside")
    assert backend.push is not None
    await backend.push.put_config(_config("t1", "c"), max_configs=16)
    await backend.push.close()  # the shared client stays open ...
    assert await backend.tasks.get("t1") is None  # ... for the task store
    assert isinstance(backend.tasks, RedisTaskStore)
    keys = [k.decode() async for k in backend.tasks.redis.scan_iter(match="beside:*")]
    assert keys and all(k.startswith("beside:push:") for k in keys)
    await backend.tasks.close()


# ---- push notifications never forget what the tasks remember --------------------------------


def _agent() -> Agent:
    agent = Agent("Echo", "echoes")

    @agent.skill()
    async def echo(ctx: RequestContext) -> None:
        await ctx.reply(ctx.text)

    return agent


async def test_a_durable_task_store_made_in_code_gets_no_memory_push_store(tmp_path: Path) -> None:
    """Push configs of durable tasks kept in memory would be lost at a restart while the tasks
    stay: refused at start, with what to do instead."""
    tasks = SQLiteTaskStore(tmp_path / "tasks.db")
    assert Backend.around(tasks).push is None
    with pytest.raises(BackendError, match=r"SQLiteTaskStore comes without one: open the store by URL") as raised:
        A2AServer(_agent(), store=tasks, push=True)
    assert "\n" not in str(raised.value)
    A2AServer(_agent(), store=tasks)  # without push notifications it is fine
    await tasks.close()


async def test_a_backend_without_a_push_store_cannot_offer_push(tmp_path: Path) -> None:
    backend = Backend(SQLiteTaskStore(tmp_path / "tasks.db"))
    with pytest.raises(BackendError):
        open_handler(_agent(), backend, push=True)
    notifier = PushNotifier(InMemoryPushStore())  # given explicitly: the caller chose
    assert open_handler(_agent(), backend, push=notifier).push is notifier
    await backend.tasks.close()


@pytest.mark.parametrize("url", ["memory:", "sqlite:///{tmp}/tasks.db"])
async def test_push_is_kept_in_the_backends_own_push_store(url: str, tmp_path: Path) -> None:
    backend = open_backend(url.format(tmp=tmp_path))
    handler = open_handler(_agent(), backend, push=True)
    assert handler.push is not None and handler.push.store is backend.push
    await handler.shutdown()


def test_a_memory_task_store_made_in_code_keeps_push_configs_in_memory() -> None:
    server = A2AServer(_agent(), store=InMemoryTaskStore(), push=True)
    assert server.handler.push is not None and isinstance(server.handler.push.store, InMemoryPushStore)


# ---- coordination ---------------------------------------------------------------------------


async def test_a_one_process_server_coordinates_with_the_null_object() -> None:
    server = A2AServer(_agent())
    coordination = server.handler.coordination
    assert isinstance(coordination, SingleProcessCoordination)
    assert not await coordination.request_cancel("t")  # nobody else to ask: cancel here
    assert not await coordination.is_running_elsewhere("t")
    coordination.run_started("t")  # nothing to tell, nothing scheduled
    coordination.run_finished("t")
    await server.start(port=0)
    await server.stop()
