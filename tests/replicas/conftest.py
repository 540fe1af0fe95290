"""Two replicas of one agent sharing a real redis-server (started by the tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.redis_server import redis_server


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis-replicas")) as url:
        yield url


@pytest.fixture
def namespace(tmp_path: Path) -> str:
    return f"rep-{tmp_path.name}"


@pytest.fixture
async def anyio_backend() -> AsyncIterator[str]:  # pragma: no cover - not used, keeps plugins quiet
    yield "asyncio"
