"""0.3 at the edges, in process: what the server answers a 0.3 request that is wrong, the
server's options (0.3 off, bindings), and the client facing 0.3-shaped peers (a 1.0 card whose
stream events are 0.3's, as LangGraph's endpoint sends; a stream it cannot read; a 0.2 card)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from aiohttp import web

from a2a import A2AClient
from a2a import types as t
from a2a.client.retry import RetryPolicy
from a2a.errors import CardResolutionError
from a2a.server import A2AServer, ServerConfig
from tests.conformance.helpers import load_module

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def ours() -> AsyncIterator[Callable[..., Awaitable[str]]]:
    servers: list[A2AServer] = []

    async def start(**config: Any) -> str:
        server = A2AServer(load_module("echo_agent.py").agent, config=ServerConfig(port=0, **config))
        servers.append(server)
        return await server.start()

    yield start
    for server in servers:
        await server.stop()


def rpc(method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


MESSAGE = {"kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}


async def test_a_malformed_0_3_request_names_the_field(ours: Callable[..., Awaitable[str]]) -> None:
    url = await ours()
    async with httpx.AsyncClient(timeout=10) as http:
        bad = {**MESSAGE, "role": "robot"}
        answer = (await http.post(url + "/a2a/jsonrpc", json=rpc("message/send", {"message": bad}, 7))).json()
        assert answer["id"] == 7 and answer["error"]["code"] == -32602
        assert "params.message.role 'robot'" in answer["error"]["message"]
        # A 0.3 stream's errors come as the stream's one event (a 0.3 client reads nothing else).
        response = await http.post(url + "/a2a/jsonrpc", json=rpc("message/stream", {"message": bad}, 8))
        assert response.headers["content-type"].startswith("text/event-stream")
        (data,) = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        assert json.loads(data)["error"]["code"] == -32602
        missing = await http.post(url + "/a2a/jsonrpc", json=rpc("tasks/get", {"id": "nope"}, 9))
        assert missing.json()["error"]["code"] == -32001
        unknown = await http.post(url + "/a2a/jsonrpc", json=rpc("tasks/list", {}, 10))
        assert unknown.json()["error"]["code"] == -32601


async def test_0_3_can_be_turned_off_and_bindings_chosen(ours: Callable[..., Awaitable[str]]) -> None:
    url = await ours(serve_v03=False, bindings=frozenset({"jsonrpc"}))
    async with httpx.AsyncClient(timeout=10) as http:
        card = (await http.get(url + "/.well-known/agent-card.json")).json()
        assert "url" not in card and "protocolVersion" not in card
        assert [i["protocolBinding"] for i in card["supportedInterfaces"]] == ["JSONRPC"]
        answer = (await http.post(url + "/a2a/jsonrpc", json=rpc("message/send", {"message": MESSAGE}))).json()
        assert answer["error"]["code"] == -32009
        rest = await http.get(url + "/a2a/rest/tasks", headers={"A2A-Version": "1.0"})
        assert rest.status_code == 404


async def test_the_default_card_is_same_origin(ours: Callable[..., Awaitable[str]]) -> None:
    url = await ours()
    async with httpx.AsyncClient(timeout=10) as http:
        card = (await http.get(url + "/.well-known/agent-card.json")).json()
    urls = [i["url"] for i in card["supportedInterfaces"]] + [card["url"]]
    assert all(u.startswith(url + "/") for u in urls), urls


# ---- the client against peers that are not quite 1.0 ------------------------------------------

TASK_03 = {"kind": "task", "id": "t-1", "contextId": "c-1", "status": {"state": "submitted"}}
DONE_03 = {**TASK_03, "status": {"state": "completed"}}
TASK_1_0 = {"id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_SUBMITTED"}}


def card_1_0(url: str, streaming: bool = True) -> dict[str, Any]:
    return {
        "name": "Peer",
        "description": "",
        "version": "1",
        "supportedInterfaces": [{"url": url + "/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    }


@pytest.fixture
async def peer() -> AsyncIterator[Callable[[Handler, dict[str, Any] | None], Awaitable[str]]]:
    runners: list[web.AppRunner] = []

    async def start(rpc_handler: Handler, card: dict[str, Any] | None = None) -> str:
        app = web.Application()
        base: dict[str, str] = {}

        async def serve_card(_: web.Request) -> web.Response:
            return web.json_response(card if card is not None else card_1_0(base["url"]))

        app.router.add_get("/.well-known/agent-card.json", serve_card)
        app.router.add_post("/rpc", rpc_handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        base["url"] = f"http://127.0.0.1:{port}"
        return base["url"]

    yield start
    for runner in runners:
        await runner.cleanup()


async def sse(request: web.Request, events: list[dict[str, Any]], request_id: Any) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in events:
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": event})
        await response.write(f"data: {body}\n\n".encode())
    await response.write_eof()
    return response


async def test_0_3_shaped_events_from_a_1_0_peer_are_read(peer: Any) -> None:
    """LangGraph's endpoint: a 1.0 card, 1.0 method names, events tagged the 0.3 way."""

    async def handle(request: web.Request) -> web.StreamResponse:
        call = await request.json()
        assert call["method"] == "SendStreamingMessage"
        update = {"kind": "status-update", "taskId": "t-1", "contextId": "c-1", "status": {"state": "completed"}}
        return await sse(request, [TASK_03, update | {"final": True}], call["id"])

    url = await peer(handle, None)
    async with A2AClient(url, retry=RetryPolicy.none(), timeout=10) as client:
        events = [e.payload async for e in client.stream("hi")]
    assert isinstance(events[0], t.Task) and events[0].status.state is t.TaskState.SUBMITTED
    assert isinstance(events[1], t.TaskStatusUpdateEvent) and events[1].status.state is t.TaskState.COMPLETED


async def test_an_unreadable_stream_falls_back_to_send_and_poll(peer: Any) -> None:
    calls: list[str] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        call = await request.json()
        calls.append(call["method"])
        if call["method"] == "SendStreamingMessage":
            return await sse(request, [{"kind": "progress", "percent": 5}], call["id"])
        if call["method"] == "SendMessage":
            assert call["params"]["configuration"]["returnImmediately"] is True
            return web.json_response({"jsonrpc": "2.0", "id": call["id"], "result": {"task": TASK_1_0}})
        return web.json_response({"jsonrpc": "2.0", "id": call["id"], "result": DONE_03})

    url = await peer(handle, None)
    async with A2AClient(url, retry=RetryPolicy.none(), timeout=10) as client:
        events = [e.payload async for e in client.stream("hi")]
    assert calls[0] == "SendStreamingMessage" and calls[1] == "SendMessage" and calls[-1] == "GetTask"
    assert [e.status.state for e in events if isinstance(e, t.Task)] == [t.TaskState.SUBMITTED, t.TaskState.COMPLETED]


async def test_an_unknown_event_kind_is_an_error_naming_it(peer: Any) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        call = await request.json()
        return await sse(request, [TASK_03, {"kind": "progress"}], call["id"])

    url = await peer(handle, None)
    async with A2AClient(url, retry=RetryPolicy.none(), timeout=10) as client:
        with pytest.raises(Exception, match=r"result\.kind 'progress'"):
            [e async for e in client.stream("hi")]


async def test_a_0_2_card_is_named_as_such(peer: Any) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        raise AssertionError("never called")

    card = {"name": "Old", "url": "http://127.0.0.1:9/", "protocolVersion": "0.2.5", "capabilities": {}}
    url = await peer(handle, card)
    async with A2AClient(url, retry=RetryPolicy.none(), timeout=10) as client:
        with pytest.raises(CardResolutionError, match=r"this agent speaks A2A 0\.2: not supported"):
            await client.get_card()


def test_serve_bindings_flag() -> None:
    from a2a.cli.main import _bindings
    from a2a.cli.options import UsageError

    assert _bindings("jsonrpc, REST") == frozenset({"jsonrpc", "rest"})
    with pytest.raises(UsageError, match="grpc"):
        _bindings("jsonrpc,grpc")


async def test_the_supervisor_names_a_version_problem_as_such(peer: Any) -> None:
    """A 0.2 agent is not "down": its status line (registry, delegation, live view) says which
    version it speaks and that it is not supported."""
    from rich.console import Console

    from supervisor import events as ev
    from supervisor.config import AgentConfig, SupervisorConfig
    from supervisor.nodes.discover import report_agents
    from supervisor.registry import Registry
    from supervisor.ui import LiveView

    async def handle(request: web.Request) -> web.StreamResponse:
        raise AssertionError("never called")

    old = await peer(handle, {"name": "Old", "url": "http://127.0.0.1:9/", "protocolVersion": "0.2.5"})
    registry = Registry(SupervisorConfig(agents=[AgentConfig(name="old", url=old)]))
    try:
        (entry,) = await registry.discover()
        assert entry.status == "down" and entry.unsupported_version == "0.2"
        assert entry.problem == "agent old speaks A2A 0.2: not supported"
        emitted: list[ev.Event] = []

        class _Rt:
            run_id = "r1"

            def emit(self, event: ev.Event) -> None:
                emitted.append(event)

        report_agents(_Rt(), [entry])  # type: ignore[arg-type]
    finally:
        await registry.close()
    (status,) = emitted
    assert isinstance(status, ev.AgentStatus) and status.unsupported_version == "0.2"
    view = LiveView()
    view.handle(status)
    assert view.agents_down == {"old": "agent old speaks A2A 0.2: not supported"}, (status, view.agents_down)
    console = Console(width=200, record=True)
    console.print(view.render())
    text = console.export_text()
    assert "agent old speaks A2A 0.2: not supported" in text and "is down" not in text
