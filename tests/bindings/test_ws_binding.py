"""The WebSocket binding: multiplexing, stream cancel, limits, handshake, keepalive, reconnection."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from a2a import A2AClient, A2AServer, Agent, BearerAuth, BearerToken, RetryPolicy, ServerConfig
from a2a import types as t
from a2a.errors import AuthenticationRequiredError, TransportError, VersionNotSupportedError
from a2a.protocol.connection import MAX_IN_FLIGHT_HEADER, WEBSOCKET_BINDING
from a2a.server.channels.ws import WebSocketConfig

from ._bindings_support import BOUND, CuttableProxy

V1 = {"A2A-Version": "1.0"}


def _send(message_id: str, text: str, method: str = "SendMessage", request_id: int | str = 1) -> str:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}})


async def _recv(ws: ClientConnection) -> dict[str, Any]:
    frame = json.loads(await asyncio.wait_for(ws.recv(), BOUND))
    assert isinstance(frame, dict)
    return frame


@asynccontextmanager
async def _server(agent: Agent, **kwargs: Any) -> AsyncIterator[tuple[A2AServer, str]]:
    ws_config = WebSocketConfig(**kwargs.pop("ws", {}))
    async with A2AServer(agent, config=ServerConfig(port=0, websocket=ws_config), **kwargs) as server:
        assert server.url is not None
        yield server, server.url.replace("http://", "ws://") + "/a2a/ws"


# ---- multiplexing ----------------------------------------------------------------------------


async def test_200_concurrent_requests_on_one_connection(ws_client: A2AClient) -> None:
    transport = await ws_client.connect()
    await ws_client.send("warm up")
    connection = transport._conn  # type: ignore[attr-defined]
    async with asyncio.timeout(BOUND * 3):
        replies = await asyncio.gather(*(ws_client.send(f"message {i}") for i in range(200)))
    assert [r.text for r in replies if isinstance(r, t.Message)] == [f"message {i}" for i in range(200)]
    assert transport._conn is connection  # type: ignore[attr-defined]


async def test_50_concurrent_streams_on_one_connection(ws_client: A2AClient) -> None:
    async def collect() -> list[Any]:
        return [e.payload async for e in ws_client.stream("stream:5")]

    async with asyncio.timeout(BOUND * 3):
        streams = await asyncio.gather(*(collect() for _ in range(50)))
    task_ids = set()
    for events in streams:
        assert isinstance(events[0], t.Task)
        task_ids.add(events[0].id)
        chunks = [e.artifact.parts[0].text for e in events if isinstance(e, t.TaskArtifactUpdateEvent)]
        assert chunks == [f"chunk {i}" for i in range(5)]
        assert events[-1].status.state == t.TaskState.COMPLETED
    assert len(task_ids) == 50


async def test_answers_come_as_they_are_ready_not_in_order(ws_url: str, ws_client: A2AClient) -> None:
    async with connect(ws_url, additional_headers=V1) as ws:
        await ws.send(_send("slow", "hold:30", request_id="slow"))
        await ws.send(_send("fast", "quick", request_id="fast"))
        first = await _recv(ws)
        assert first["id"] == "fast"
        working = (await ws_client.list_tasks(status=t.TaskState.WORKING)).tasks
        assert len(working) == 1
        await ws_client.cancel_task(working[0].id)
        second = await _recv(ws)
    assert second["id"] == "slow"
    assert second["result"]["task"]["status"]["state"] == "TASK_STATE_CANCELED"


# ---- streams: end and cancel -----------------------------------------------------------------


async def test_stream_frames_carry_seq_and_end_with_stream_end(ws_url: str) -> None:
    async with connect(ws_url, additional_headers=V1) as ws:
        await ws.send(_send("s1", "stream:2", method="SendStreamingMessage", request_id=7))
        frames = [await _recv(ws) for _ in range(5)]
    assert all(f["id"] == 7 for f in frames)
    assert [f.get("seq") for f in frames[:4]] == [1, 2, 3, 4]
    assert frames[-1] == {"jsonrpc": "2.0", "id": 7, "streamEnd": {"reason": "complete"}}


async def test_cancel_one_stream_leaves_others_and_the_task(ws_url: str, ws_client: A2AClient) -> None:
    task = await ws_client.send("hold:30", return_immediately=True)
    assert isinstance(task, t.Task)
    subscribe = json.dumps({"jsonrpc": "2.0", "id": "a", "method": "SubscribeToTask", "params": {"id": task.id}})
    async with connect(ws_url, additional_headers=V1) as ws:
        await ws.send(subscribe)
        await ws.send(subscribe.replace('"id": "a"', '"id": "b"'))
        firsts = {(await _recv(ws))["id"] for _ in range(2)}
        assert firsts == {"a", "b"}
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": "a"}}))
        assert await _recv(ws) == {"jsonrpc": "2.0", "id": "a", "streamEnd": {"reason": "canceled"}}
        # The connection, the other stream and the task all go on.
        assert (await ws_client.get_task(task.id)).status.state == t.TaskState.WORKING
        await ws.send(_send("other", "still here", request_id="c"))
        assert (await _recv(ws))["result"]["message"]["parts"][0]["text"] == "still here"
        await ws_client.cancel_task(task.id)
        ending = await _recv(ws)
        assert ending["id"] == "b"
        assert ending["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
        assert await _recv(ws) == {"jsonrpc": "2.0", "id": "b", "streamEnd": {"reason": "complete"}}


async def test_client_abandoning_a_stream_cancels_only_that_stream(ws_client: A2AClient) -> None:
    task = await ws_client.send("hold:30", return_immediately=True)
    assert isinstance(task, t.Task)
    async with asyncio.timeout(BOUND):
        abandoned = ws_client.subscribe(task.id)
        assert isinstance((await abandoned.__anext__()).payload, t.Task)
        await abandoned.aclose()  # type: ignore[attr-defined]
        kept = ws_client.subscribe(task.id)
        assert isinstance((await kept.__anext__()).payload, t.Task)
        assert (await ws_client.get_task(task.id)).status.state == t.TaskState.WORKING
        await ws_client.cancel_task(task.id)
        rest = [e.payload async for e in kept]
    assert isinstance(rest[-1], t.TaskStatusUpdateEvent)
    assert rest[-1].status.state == t.TaskState.CANCELED


async def test_disconnect_stops_streams_but_not_tasks(ws_url: str, ws_client: A2AClient) -> None:
    async with connect(ws_url, additional_headers=V1) as ws:
        await ws.send(_send("d1", "hold:30", method="SendStreamingMessage"))
        first = await _recv(ws)
        task_id = first["result"]["task"]["id"]
    assert (await ws_client.get_task(task_id)).status.state == t.TaskState.WORKING
    await ws_client.cancel_task(task_id)


# ---- bad frames and limits ---------------------------------------------------------------------


async def test_a_last_event_id_that_is_no_whole_number_is_invalid_params(ws_url: str) -> None:
    """protocol.md §5: a resume point that is not a whole number is -32602 on every binding (as
    the SSE ``Last-Event-ID`` header), with the request's id; the connection keeps serving."""
    async with connect(ws_url, additional_headers=V1) as ws:
        for request_id, bad in enumerate(["12", -1, 1.5, True, {"seq": 1}], start=1):
            subscribe = {"jsonrpc": "2.0", "id": request_id, "method": "SubscribeToTask", "params": {"id": "x"}}
            await ws.send(json.dumps(subscribe | {"lastEventId": bad}))
            answer = await _recv(ws)
            assert (answer["id"], answer["error"]["code"]) == (request_id, -32602), bad
        await ws.send(_send("ok", "still serving", request_id=9))
        assert (await _recv(ws))["result"]["message"]["parts"][0]["text"] == "still serving"


async def test_bad_frames_get_errors_and_the_connection_keeps_serving(ws_url: str) -> None:
    async with connect(ws_url, additional_headers=V1) as ws:
        await ws.send("not json")
        assert (await _recv(ws))["error"]["code"] == -32700
        await ws.send("[]")
        assert (await _recv(ws))["error"]["code"] == -32600
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "Nope"}))
        assert (await _recv(ws)) | {"error": None} == {"jsonrpc": "2.0", "id": 5, "error": None}
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "GetTask", "params": {"id": 7}}))
        answer = await _recv(ws)
        assert (answer["id"], answer["error"]["code"]) == (6, -32602)
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": None, "method": "GetTask", "params": {"id": "x"}}))
        assert (await _recv(ws))["error"]["code"] == -32600
        await ws.send(b'{"jsonrpc":"2.0"}')  # a binary frame
        assert (await _recv(ws))["error"]["code"] == -32600
        await ws.send(_send("ok", "still serving", request_id=8))
        assert (await _recv(ws))["result"]["message"]["parts"][0]["text"] == "still serving"


async def test_oversized_message_closes_with_1009(echo_agent: Agent) -> None:
    limits = {"max_message_bytes": 64 * 1024}
    async with _server(echo_agent, ws=limits) as (_, url), connect(url, additional_headers=V1) as ws:
        await ws.send(_send("big", "x" * 100_000))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), BOUND)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1009
    assert "65536" in closed.value.rcvd.reason


async def test_too_many_in_flight_closes_with_1008(echo_agent: Agent) -> None:
    limits = {"max_in_flight": 2, "unary_grace": 0.0}
    async with _server(echo_agent, ws=limits) as (_, url), connect(url, additional_headers=V1) as ws:
        assert ws.response is not None
        assert ws.response.headers[MAX_IN_FLIGHT_HEADER] == "2"
        for i in range(3):
            await ws.send(_send(f"h{i}", "hold:30", request_id=i))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), BOUND)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1008
    assert "in flight" in closed.value.rcvd.reason


async def test_client_keeps_within_the_announced_limit(echo_agent: Agent) -> None:
    async with (
        _server(echo_agent, ws={"max_in_flight": 4}) as (_, url),
        A2AClient(url, retry=RetryPolicy.none(), timeout=BOUND) as client,
        asyncio.timeout(BOUND * 2),
    ):
        replies = await asyncio.gather(*(client.send(f"m{i}") for i in range(50)))
    assert len(replies) == 50


async def test_keepalive_drops_a_peer_that_does_not_answer_pings(echo_agent: Agent) -> None:
    async with _server(echo_agent, ws={"heartbeat": 0.2}) as (server, _):
        assert server.url is not None
        ends = (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR)
        kinds = []
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(server.url + "/a2a/ws", headers=V1, autoping=False) as ws,
            asyncio.timeout(BOUND),
        ):
            while not kinds or kinds[-1] not in ends:
                kinds.append((await ws.receive()).type)
    assert kinds[0] == aiohttp.WSMsgType.PING


# ---- the handshake ---------------------------------------------------------------------------


async def test_unauthenticated_handshake_gets_401_like_http(echo_agent: Agent) -> None:
    auth = [BearerAuth(credentials={"s3cret": "alice"})]
    async with _server(echo_agent, auth=auth) as (_, url):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=V1):
                pass
        response = refused.value.response
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert json.loads(response.body or b"")["error"]["code"] == -32000
        async with A2AClient(url, retry=RetryPolicy.none()) as anonymous:
            with pytest.raises(AuthenticationRequiredError):
                await anonymous.send("hi")
        async with A2AClient(url, credentials=BearerToken("s3cret"), retry=RetryPolicy.none()) as alice:
            reply = await alice.send("hi")
            assert isinstance(reply, t.Message)


async def test_wrong_version_gets_400_version_not_supported(echo_agent: Agent) -> None:
    async with _server(echo_agent) as (_, url):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers={"A2A-Version": "0.3"}):
                pass
        assert refused.value.response.status_code == 400
        assert json.loads(refused.value.response.body or b"")["error"]["code"] == -32009
        async with A2AClient(url, headers={"A2A-Version": "2.0"}, retry=RetryPolicy.none()) as client:
            with pytest.raises(VersionNotSupportedError):
                await client.send("hi")


async def test_query_parameters_only_when_allowed(echo_agent: Agent) -> None:
    auth = [BearerAuth(credentials={"s3cret": "alice"})]
    query = "?A2A-Version=1.0&access_token=s3cret"
    async with _server(echo_agent, auth=auth) as (_, url):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url + query):
                pass
        assert refused.value.response.status_code == 401
    allowed = {"allow_query_credentials": True}
    async with _server(echo_agent, auth=auth, ws=allowed) as (_, url), connect(url + query) as ws:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        assert (await _recv(ws))["result"]["tasks"] == []


async def test_card_lists_websocket_and_the_client_can_prefer_it(echo_agent: Agent) -> None:
    async with _server(echo_agent, ws={"preferred": True}) as (server, url):
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none()) as client:
            card = await client.get_card()
            assert card.supported_interfaces[0].protocol_binding == WEBSOCKET_BINDING
            # Declared at the card's own origin (ADK refuses other origins); the client upgrades it.
            assert card.supported_interfaces[0].url == server.url + "/a2a/ws"
            assert url == "ws://" + server.url.removeprefix("http://") + "/a2a/ws"
            assert isinstance(await client.send("hi"), t.Message)
            assert client.interface is not None
            assert client.interface.protocol_binding == WEBSOCKET_BINDING
        async with A2AClient(url, retry=RetryPolicy.none()) as direct:
            assert (await direct.get_card()).name == "Echo"


async def test_server_shutdown_closes_connections_with_1001(echo_agent: Agent) -> None:
    async with _server(echo_agent) as (server, url):
        ws = await connect(url, additional_headers=V1)
        await server.stop()
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), BOUND)
        await ws.close()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 1001


# ---- reconnection ----------------------------------------------------------------------------


def _retry() -> RetryPolicy:
    return RetryPolicy(max_attempts=5, initial_backoff=0.01, max_backoff=0.05, budget=None)


def _state(event: t.StreamResponse) -> t.TaskState | None:
    payload = event.payload
    if isinstance(payload, t.Task | t.TaskStatusUpdateEvent):
        return payload.status.state
    return None


async def test_dropped_connection_reconnects_and_resubscribes(ws_client: A2AClient, echo_server: A2AServer) -> None:
    assert echo_server.url is not None
    proxy = CuttableProxy(int(echo_server.url.rsplit(":", 1)[1]))
    await proxy.start()
    try:
        async with A2AClient(f"ws://127.0.0.1:{proxy.port}/a2a/ws", retry=_retry(), timeout=BOUND) as client:
            task = await client.send("hold:30", return_immediately=True)
            assert isinstance(task, t.Task)
            events = client.subscribe(task.id)
            async with asyncio.timeout(BOUND):
                first = await events.__anext__()
                assert isinstance(first.payload, t.Task)
                proxy.cut()
                # A unary call after the drop reconnects by itself (the retry policy).
                assert (await client.get_task(task.id)).status.state == t.TaskState.WORKING
                await ws_client.cancel_task(task.id)
                rest = [e async for e in events]
        assert _state(rest[-1]) == t.TaskState.CANCELED
        assert proxy.accepted >= 2
    finally:
        await proxy.close()


async def test_task_that_ended_while_disconnected_resumes_with_the_missed_event(
    ws_client: A2AClient, echo_server: A2AServer
) -> None:
    assert echo_server.url is not None
    proxy = CuttableProxy(int(echo_server.url.rsplit(":", 1)[1]))
    await proxy.start()
    try:
        async with A2AClient(f"ws://127.0.0.1:{proxy.port}/a2a/ws", retry=_retry(), timeout=BOUND) as client:
            task = await client.send("hold:30", return_immediately=True)
            assert isinstance(task, t.Task)
            events = client.subscribe(task.id)
            async with asyncio.timeout(BOUND):
                await events.__anext__()
                proxy.open.clear()  # new connections wait until the task has ended
                proxy.cut()
                await ws_client.cancel_task(task.id)
                proxy.open.set()
                rest = [e.payload async for e in events]
        # Resumed after the last event seen: exactly the event missed while away.
        assert len(rest) == 1
        assert isinstance(rest[0], t.TaskStatusUpdateEvent)
        assert rest[0].status.state == t.TaskState.CANCELED
    finally:
        await proxy.close()


async def test_a_client_rule_violation_is_not_retried(echo_agent: Agent) -> None:
    limits = {"max_message_bytes": 1024}
    async with _server(echo_agent, ws=limits) as (_, url), A2AClient(url, retry=_retry(), timeout=BOUND) as client:
        with pytest.raises(TransportError) as failed:
            await client.send("x" * 5000)
    assert "1009" in str(failed.value)
    assert not failed.value.retryable


class _DroppingAgent:
    """A WebSocket peer that answers a task's first stream with one event, then drops every
    connection (close 1011, which a client may retry) as soon as a request arrives."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[tuple[str, int | None]] = []

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        self.connections += 1
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        frame = json.loads((await ws.receive(timeout=BOUND)).data)
        self.requests.append((frame["method"], frame.get("lastEventId")))
        if len(self.requests) == 1:
            task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
            await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": {"task": task}, "seq": 1}))
        await ws.close(code=aiohttp.WSCloseCode.INTERNAL_ERROR)
        return ws


async def test_a_dropped_stream_is_resumed_by_the_client_alone_so_attempts_do_not_multiply() -> None:
    peer = _DroppingAgent()
    app = web.Application()
    app.router.add_get("/a2a/ws", peer.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    attempts = 3
    policy = RetryPolicy(max_attempts=attempts, initial_backoff=0.001, max_backoff=0.01, budget=None)
    try:
        async with A2AClient(f"ws://127.0.0.1:{port}/a2a/ws", retry=policy, timeout=BOUND) as client:
            events = client.subscribe("t1")
            async with asyncio.timeout(BOUND):
                first = await events.__anext__()
                with pytest.raises(TransportError) as dropped:
                    await events.__anext__()
    finally:
        await runner.cleanup()
    assert isinstance(first.payload, t.Task)
    # The first stream, then one resume per attempt of the policy: the transport retries nothing
    # itself (it used to resubscribe with the client's policy too: 16 connections here). Then one
    # GetTask, once, to end the stream with the task had it ended (it had not: the error stands).
    assert peer.connections == 1 + attempts + 1
    assert peer.requests == [("SubscribeToTask", None)] + [("SubscribeToTask", 1)] * attempts + [("GetTask", None)]
    # The error says where the stream stood, to follow the task from there later.
    assert dropped.value.retryable
    assert (dropped.value.task_id, dropped.value.last_event_id) == ("t1", "1")
