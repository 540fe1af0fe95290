"""Push-store fixtures (memory, SQLite, real Redis), a webhook receiver and a canary listener."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from a2a.server.backends.redis.push import RedisPushStore
from a2a.server.backends.sqlite.push import SQLitePushStore
from a2a.server.push import InMemoryPushStore, PushStore
from tests.redis_server import redis_server

# "sqlite-exclusive": what `a2a serve` opens (one process writes the file; the tasks with
# configs are indexed in memory).
STORES = ["memory", "sqlite", "sqlite-exclusive", "redis"]

#: Bound on every wait in these tests.
WAIT = 30.0


@pytest.fixture(scope="session")
def push_redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("push-redis")) as url:
        yield url


StoreFactory = Callable[[], PushStore]


@pytest.fixture(params=STORES)
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Opens a store on the same backing each call (memory: the same object): a restart."""
    kind = request.param
    opened: list[PushStore] = []
    memory = InMemoryPushStore()

    def make() -> PushStore:
        store: PushStore
        if kind == "memory":
            store = memory
        elif kind == "sqlite":
            store = SQLitePushStore(tmp_path / "tasks.db")
        elif kind == "sqlite-exclusive":
            store = SQLitePushStore(tmp_path / "tasks.db", exclusive=True)
        else:
            store = RedisPushStore(request.getfixturevalue("push_redis_url"), namespace=f"t-{tmp_path.name}")
        opened.append(store)
        return store

    yield make
    for store in opened:
        await store.close()


@pytest.fixture
def push_store(open_store: StoreFactory) -> PushStore:
    return open_store()


# ---- a webhook receiver ---------------------------------------------------------------------


@dataclass
class Hit:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 0
    #: The receiver acted on the event (even if it then answered with an error).
    processed: bool = False

    @property
    def event_id(self) -> str:
        return self.headers["X-A2A-Event-Id"]

    @property
    def seq(self) -> int:
        return int(self.headers["X-A2A-Sequence"])


#: Decides what the receiver answers: (hit) -> (status, processed, extra headers).
Behaviour = Callable[[Hit], Awaitable[tuple[int, bool, dict[str, str]]]]


async def accept(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
    return 200, True, {}


@dataclass
class Receiver:
    behaviour: Behaviour = accept
    hits: list[Hit] = field(default_factory=list)
    base: str = ""
    in_flight: dict[str, int] = field(default_factory=dict)
    max_in_flight: dict[str, int] = field(default_factory=dict)
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base = f"http://{host}:{port}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def url(self, path: str) -> str:
        return f"{self.base}/{path.lstrip('/')}"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        hit = Hit(request.path, dict(request.headers), await request.read())
        self.in_flight[hit.path] = self.in_flight.get(hit.path, 0) + 1
        self.max_in_flight[hit.path] = max(self.max_in_flight.get(hit.path, 0), self.in_flight[hit.path])
        try:
            hit.status, hit.processed, headers = await self.behaviour(hit)
        finally:
            self.in_flight[hit.path] -= 1
        async with self._changed:
            self.hits.append(hit)
            self._changed.notify_all()
        return web.Response(status=hit.status, headers=headers)

    async def wait_for(self, predicate: Callable[[list[Hit]], bool], timeout: float = WAIT) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: predicate(self.hits))

    def on(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == "/" + path.lstrip("/")]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    made = Receiver()
    await made.start()
    yield made
    await made.close()


# ---- a canary: a loopback listener that must never be connected to -------------------------


class Canary:
    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.port = int(self.sock.getsockname()[1])

    def drain(self) -> list[Any]:
        """Connections made so far (a loopback connect completes in the kernel's backlog)."""
        seen: list[Any] = []
        while True:
            try:
                conn, peer = self.sock.accept()
            except BlockingIOError:
                return seen
            conn.close()
            seen.append(peer)


@pytest.fixture
def canary() -> Iterator[Canary]:
    listener = Canary()
    listener.drain()
    yield listener
    listener.sock.close()
