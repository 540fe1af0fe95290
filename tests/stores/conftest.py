"""Every TaskStore implementation, as one parametrized fixture: the suite runs over each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from a2a.server.backends.redis.tasks import RedisTaskStore
from a2a.server.backends.sqlite.tasks import SQLiteTaskStore
from a2a.server.backends.store import InMemoryTaskStore, TaskStore
from tests.redis_server import redis_server

# "sqlite-exclusive" is what `a2a serve` opens: the file locked for one process, whose
# idempotency claims are decided in memory and committed with the next awaited write.
STORES = ["memory", "sqlite", "sqlite-exclusive", "redis"]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    kind = request.param
    made: TaskStore
    if kind == "memory":
        made = InMemoryTaskStore()
    elif kind == "sqlite":
        made = SQLiteTaskStore(tmp_path / "tasks.db")
    elif kind == "sqlite-exclusive":
        made = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    else:
        # A fresh namespace per test keeps tests apart on the one shared server.
        made = RedisTaskStore(request.getfixturevalue("redis_url"), namespace=f"t-{tmp_path.name}")
    yield made
    await made.close()
