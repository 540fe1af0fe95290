"""Every TaskStore implementation, as one parametrized fixture: the suite runs over each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a.server.store import InMemoryTaskStore, TaskStore
from a2a.server.stores.sqlite import SQLiteTaskStore

STORES = ["memory", "sqlite"]


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    kind = request.param
    made: TaskStore = InMemoryTaskStore() if kind == "memory" else SQLiteTaskStore(tmp_path / "tasks.db")
    yield made
    await made.close()
