"""Health, readiness, the root page and the ``Server`` header, against running servers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import httpx
import pytest

from a2a import A2AClient, A2AServer, Agent, BearerAuth, ServerConfig
from a2a.server.backends.base import Backend, open_backend
from a2a.server.backends.store import InMemoryTaskStore
from a2a.server.operations import health as health_module
from tests.conftest import embedded
from tests.redis_server import redis_server

WAIT = 20.0


class _CountingAgent(Agent):
    """An agent that counts how often it is asked anything (its card is built by the server)."""

    def __init__(self) -> None:
        super().__init__("Counter", "counts its calls")
        self.calls = 0

        @self.skill()
        async def count(text: str) -> str:
            self.calls += 1
            return text


@pytest.fixture
async def server() -> AsyncIterator[A2AServer]:
    auth = BearerAuth(credentials={"s3cret-token": "alice"})
    async with A2AServer(_CountingAgent(), auth=[auth], config=ServerConfig(port=0)) as running:
        yield running


def _http(server: A2AServer) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=server.url or "")


def _version() -> str:
    import a2a

    return f"a2a-net/{a2a.__version__}"


async def test_liveness_and_readiness_need_no_credentials_and_never_touch_the_agent(server: A2AServer) -> None:
    async with httpx.AsyncClient(base_url=server.url or "") as http:
        live = await http.get("/healthz")
        ready = await http.get("/readyz")
        refused = await http.post(
            "/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"}, headers={"A2A-Version": "1.0"}
        )
        head = await http.head("/healthz")
    assert (live.status_code, live.json()) == (200, {"status": "ok"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    assert head.status_code == 200
    assert refused.status_code == 401  # the same server does check credentials elsewhere
    assert live.headers["Cache-Control"] == "no-store"
    assert isinstance(server.agent, _CountingAgent) and server.agent.calls == 0


class _BrokenStore(InMemoryTaskStore):
    def __init__(self, failure: BaseException | None = None, hang: bool = False) -> None:
        super().__init__()
        self.failure = failure
        self.hang = hang

    async def ping(self) -> None:
        if self.hang:
            await asyncio.sleep(60)
        if self.failure is not None:
            raise self.failure


async def test_readiness_is_503_with_a_reason_when_the_store_fails() -> None:
    store = _BrokenStore(ConnectionRefusedError("Connection refused by 10.0.0.7:6379"))
    config = ServerConfig(port=0)
    async with A2AServer(_CountingAgent(), store=store, config=config) as server, _http(server) as http:
        ready = await http.get("/readyz")
        live = await http.get("/healthz")
        store.failure = None
        recovered = await http.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {
        "status": "unavailable",
        "reason": "the task store is unreachable: ConnectionRefusedError: Connection refused by 10.0.0.7:6379",
    }
    assert live.status_code == 200  # alive all the same: a restart would not help
    assert recovered.status_code == 200


async def test_readiness_is_503_when_the_store_does_not_answer_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health_module, "READY_TIMEOUT", 0.2)
    store = _BrokenStore(hang=True)
    async with A2AServer(_CountingAgent(), store=store, config=ServerConfig(port=0)) as server, _http(server) as http:
        ready = await asyncio.wait_for(http.get("/readyz"), WAIT)
    assert ready.status_code == 503
    assert ready.json()["reason"] == "the task store did not answer within 0.2s"


async def test_readiness_follows_redis(tmp_path: Path) -> None:
    """With Redis the store and the bus are the Redis server: ready while it runs, 503 once it is gone."""
    with redis_server(tmp_path) as url:
        backend = open_backend(url, namespace="health-test")
        server = A2AServer(_CountingAgent(), backend=backend, config=ServerConfig(port=0))
        await server.start()
        async with httpx.AsyncClient(base_url=server.url or "") as http:
            ready = await http.get("/readyz")
    try:  # Redis is gone now (killed by the context manager)
        async with httpx.AsyncClient(base_url=server.url or "") as http:
            gone = await asyncio.wait_for(http.get("/readyz"), WAIT)
            live = await http.get("/healthz")
    finally:
        await asyncio.wait_for(server.stop(), WAIT)
    assert ready.status_code == 200, ready.text
    assert gone.status_code == 503
    assert gone.json()["status"] == "unavailable"
    assert gone.json()["reason"].startswith("the task store ")
    assert live.status_code == 200


async def test_readiness_says_stopping_once_shutdown_began() -> None:
    handler_server = A2AServer(_CountingAgent(), config=ServerConfig(port=0))
    probe = health_module.Health(handler_server.handler, handler_server._request_card, lambda _r: "", {})
    await probe.stop()
    answer = await probe.ready(None)  # type: ignore[arg-type]
    assert answer.status == 503
    assert answer.body == b'{"status":"stopping","reason":"the server is shutting down"}'


async def test_the_root_page_names_the_agent_its_card_and_bindings(server: A2AServer) -> None:
    base = server.url or ""
    async with httpx.AsyncClient(base_url=base) as http:
        as_json = await http.get("/")
        as_html = await http.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert as_json.status_code == 200
    info = as_json.json()
    assert info["name"] == "Counter"
    assert info["card"] == base + "/.well-known/agent-card.json"
    assert {b["binding"] for b in info["bindings"]} >= {"JSONRPC", "HTTP+JSON"}
    assert {"url": base + "/a2a/jsonrpc", "binding": "JSONRPC"} in info["bindings"]
    assert info["health"] == "/healthz" and info["ready"] == "/readyz"
    assert info["server"] == _version()
    assert as_html.headers["Content-Type"].startswith("text/html")
    assert "<h1>Counter</h1>" in as_html.text and base + "/.well-known/agent-card.json" in as_html.text


async def test_every_answer_names_the_server_and_its_version(server: A2AServer) -> None:
    base = server.url or ""
    auth = {"Authorization": "Bearer s3cret-token", "A2A-Version": "1.0"}
    async with httpx.AsyncClient(base_url=base, headers=auth) as http:
        answers = [
            await http.get("/.well-known/agent-card.json"),
            await http.get("/nowhere"),
            await http.post("/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}),
            await http.put("/healthz"),
        ]
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "SendStreamingMessage",
            "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
        }
        async with http.stream("POST", "/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}) as sse:
            assert sse.headers["Content-Type"].startswith("text/event-stream")
            answers.append(sse)
    async with aiohttp.ClientSession() as session:
        ws_url = base.replace("http://", "ws://") + "/a2a/ws"
        async with session.ws_connect(ws_url, headers=auth) as ws:
            upgrade = ws._response.headers.get("Server")
    assert [a.status_code for a in answers] == [200, 404, 200, 405, 200]
    assert {a.headers["Server"] for a in answers} == {_version()}
    assert upgrade == _version()


async def test_an_embedded_server_serves_the_same_under_its_mount() -> None:
    server = A2AServer(_CountingAgent(), config=ServerConfig(port=0))
    async with embedded(server.app(), "/agent") as url:
        async with httpx.AsyncClient(base_url=url) as http:
            live = await http.get("/healthz")
            root = await http.get("/")
        async with A2AClient(url) as client:
            card = await client.get_card()
    assert live.status_code == 200 and live.headers["Server"] == _version()
    assert root.json()["health"] == "/agent/healthz"
    assert root.json()["card"] == f"{url}/.well-known/agent-card.json"
    assert card.name == "Counter"


def test_readiness_checks_the_bus_too() -> None:
    """The bus is asked as well as the store (with Redis both are the Redis server)."""
    backend = Backend.in_memory()
    asked: list[str] = []

    async def ping() -> None:
        asked.append("bus")
        raise OSError("bus down")

    backend.events.ping = ping  # type: ignore[method-assign]
    server = A2AServer(_CountingAgent(), backend=backend)
    probe = health_module.Health(server.handler, server._request_card, lambda _r: "", {})
    assert asyncio.run(probe.problem()) == "the event bus is unreachable: OSError: bus down"
    assert asked == ["bus"]
