"""The two sans-IO cores in memory: the server's ``RpcConnection`` and the client's ``Multiplexer``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from multidict import CIMultiDict

from a2a import Agent
from a2a import types as t
from a2a.errors import InvalidResponseError, TaskNotFoundError, TransportError
from a2a.protocol.connection import STDIO_BINDING, WEBSOCKET_BINDING
from a2a.server.channels.rpc_connection import ConnectionLimits, ConnectionViolation, RpcConnection
from a2a.server.engine.admission import admit
from a2a.server.engine.auth import Authenticator, BearerAuth
from a2a.server.engine.handler import CallContext, RequestHandler
from a2a.transport.multiplex import Multiplexer

from ._bindings_support import BOUND


class Twin:
    """A connection whose peer is this test: frames out land in a queue."""

    def __init__(self, agent: Agent, **kwargs: Any) -> None:
        self.out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.handler = RequestHandler(agent)
        card = agent.build_card([])
        self.conn = RpcConnection(
            self.handler, self._send, card=lambda: card, binding=WEBSOCKET_BINDING, ctx=CallContext(), **kwargs
        )

    async def _send(self, data: bytes) -> None:
        self.out.put_nowait(json.loads(data))

    async def send(self, message: dict[str, Any] | str) -> None:
        await self.conn.receive((message if isinstance(message, str) else json.dumps(message)).encode())

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.out.get(), BOUND)


def _msg(request_id: Any, text: str, method: str = "SendMessage") -> dict[str, Any]:
    message = {"messageId": f"m-{request_id}-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}


@pytest.fixture
async def twin(echo_agent: Agent) -> AsyncIterator[Twin]:
    pair = Twin(echo_agent)
    yield pair
    await pair.conn.close()
    await pair.handler.shutdown()


async def test_duplicate_id_in_flight_is_refused_and_the_first_goes_on(twin: Twin) -> None:
    await twin.send(_msg(1, "hold:30", "SendStreamingMessage"))
    assert "task" in (await twin.next())["result"]
    await twin.send(_msg(1, "again"))
    frames = [await twin.next(), await twin.next()]
    refusal = next(f for f in frames if "error" in f)
    assert (refusal["id"], refusal["error"]["code"]) == (1, -32600)
    assert twin.conn.in_flight == 1


async def test_connection_methods(twin: Twin) -> None:
    await twin.send({"jsonrpc": "2.0", "id": "c", "method": "GetAgentCard"})
    assert (await twin.next())["result"]["name"] == "Echo"
    await twin.send({"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": 404}})
    await twin.send({"jsonrpc": "2.0", "method": "$/cancel", "params": {"wrong": True}})
    await twin.send({"jsonrpc": "2.0", "method": "GetAgentCard"})
    assert twin.out.empty()  # notifications are never answered, not even when wrong
    await twin.send({"jsonrpc": "2.0", "id": 2, "method": "$/cancel", "params": {"id": 404}})
    assert await twin.next() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    await twin.send({"jsonrpc": "2.0", "id": 3, "method": "$/cancel", "params": {}})
    assert (await twin.next())["error"]["code"] == -32602
    await twin.send({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}})
    assert (await twin.next())["error"]["code"] == -32600  # only stdio offers initialize


class Admitted(Twin):
    """A connection admitted by ``initialize`` (as stdio's), with the HTTP gate: a version and a
    bearer token."""

    def __init__(self, agent: Agent) -> None:
        self.out = asyncio.Queue()
        self.handler = RequestHandler(agent)
        card = agent.build_card([])
        authenticator = Authenticator([BearerAuth(credentials={"tok-a": "alice"})])
        self.conn = RpcConnection(
            self.handler,
            self._send,
            card=lambda: card,
            binding=STDIO_BINDING,
            admit=lambda params: admit(CIMultiDict(params), {}, authenticator),
        )


def _initialize(request_id: Any, **parameters: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {"serviceParameters": parameters}}


async def test_early_refusals_carry_the_request_id(echo_agent: Agent) -> None:
    """JSON-RPC 2.0 section 5: the answer's id "MUST be the same as the value of the id member in
    the Request Object" (null only when it cannot be detected). Over a connection the early
    refusals are ``initialize``'s (version, credentials) and calls before it: each readable id
    comes back."""
    peer = Admitted(echo_agent)
    try:
        await peer.send(_msg("early", "too soon"))
        assert ((await peer.next())["id"], "error") == ("early", "error")
        await peer.send(_initialize("i-1", Authorization="Bearer tok-a"))  # no version
        refused = await peer.next()
        assert (refused["id"], refused["error"]["code"]) == ("i-1", -32009)
        await peer.send(_initialize(2, **{"A2A-Version": "0.3", "Authorization": "Bearer tok-a"}))
        refused = await peer.next()
        assert (refused["id"], refused["error"]["code"]) == (2, -32009)
        await peer.send(_initialize("i-3", **{"A2A-Version": "1.0", "Authorization": "Bearer nope"}))
        refused = await peer.next()
        assert (refused["id"], refused["error"]["code"]) == ("i-3", -32000)
        await peer.send(_initialize(4, **{"A2A-Version": "1.0", "Authorization": "Bearer tok-a"}))
        assert (await peer.next())["id"] == 4
        await peer.send({"jsonrpc": "2.0", "id": "u", "method": "NoSuchMethod", "params": {}})
        refused = await peer.next()
        assert (refused["id"], refused["error"]["code"]) == ("u", -32601)
        await peer.send('{"jsonrpc": "2.0", "id": "broken", ')
        refused = await peer.next()
        assert (refused["id"], refused["error"]["code"]) == (None, -32700)  # unreadable: null
    finally:
        await peer.conn.close()
        await peer.handler.shutdown()


async def test_unexpected_failures_become_a_generic_internal_error(twin: Twin, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fault inside the handler (here its store): the handler's boundary makes it -32603.
    async def broken(*_: Any) -> Any:
        raise RuntimeError("secret detail from deep inside")

    monkeypatch.setattr(twin.handler.store, "get", broken)
    await twin.send({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
    await twin.send({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": "x"}})
    answers = sorted([await twin.next(), await twin.next()], key=lambda a: int(a["id"]))
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(1, -32603), (2, -32603)]
    assert "secret" not in json.dumps(answers)


async def test_a_stream_that_fails_midway_ends_with_its_error(twin: Twin, monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing(*_: Any) -> AsyncIterator[Any]:
        first = await twin.handler.get_task(t.GetTaskRequest(id="nope"), CallContext())
        yield first

    monkeypatch.setattr(twin.handler, "stream", failing)
    await twin.send({"jsonrpc": "2.0", "id": 9, "method": "SubscribeToTask", "params": {"id": "nope"}})
    answer = await twin.next()
    assert (answer["id"], answer["error"]["code"]) == (9, -32001)


async def test_over_the_in_flight_limit_is_a_violation(echo_agent: Agent) -> None:
    pair = Twin(echo_agent, limits=ConnectionLimits(max_in_flight=2))
    try:
        await pair.send(_msg(1, "hold:30"))
        await pair.send(_msg(2, "hold:30"))
        with pytest.raises(ConnectionViolation) as violation:
            await pair.send(_msg(3, "hold:30"))
        assert violation.value.code == 1008
    finally:
        await pair.conn.close()
        await pair.handler.shutdown()


async def test_close_stops_streams_but_not_tasks(twin: Twin) -> None:
    await twin.send(_msg("s", "hold:30", "SendStreamingMessage"))
    task_id = (await twin.next())["result"]["task"]["id"]
    await twin.conn.close()
    assert twin.conn.in_flight == 0
    task = await twin.handler.get_task(t.GetTaskRequest(id=task_id), CallContext())
    assert task.status.state == t.TaskState.WORKING


# ---- the client's multiplexer ----------------------------------------------------------------


class Peer:
    """The server side of a Multiplexer under test: what it sent, and a way to answer."""

    def __init__(self, max_in_flight: int = 8) -> None:
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.mux = Multiplexer(self._send, max_in_flight=max_in_flight)

    async def _send(self, data: bytes) -> None:
        self.sent.put_nowait(json.loads(data))

    async def request(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.sent.get(), BOUND)

    def answer(self, frame: dict[str, Any]) -> None:
        self.mux.feed(json.dumps({"jsonrpc": "2.0", **frame}).encode())


async def test_mux_matches_answers_by_id_in_any_order() -> None:
    peer = Peer()
    first = asyncio.ensure_future(peer.mux.call("GetTask", {"id": "a"}, None, timeout=BOUND))
    second = asyncio.ensure_future(peer.mux.call("GetTask", {"id": "b"}, None, timeout=BOUND))
    one, two = await peer.request(), await peer.request()
    peer.answer({"id": two["id"], "result": "B"})
    peer.answer({"id": one["id"], "error": {"code": -32001, "message": "gone", "data": [{"reason": "TASK_NOT_FOUND"}]}})
    assert await second == "B"
    with pytest.raises(TaskNotFoundError):
        await first
    peer.answer({"id": 999, "result": "late"})  # an answer nobody waits for is dropped


async def test_mux_keeps_to_the_limit_and_abandoned_streams_are_canceled() -> None:
    peer = Peer(max_in_flight=1)
    stream = peer.mux.stream("SubscribeToTask", {"id": "t"})
    opened = asyncio.ensure_future(stream.__anext__())
    request = await peer.request()
    waiting = asyncio.ensure_future(peer.mux.call("GetTask", {"id": "t"}, None, timeout=BOUND))
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    peer.answer({"id": request["id"], "seq": 5, "result": {"task": task}})
    event = await asyncio.wait_for(opened, BOUND)
    assert event.seq == 5
    assert peer.sent.empty()  # the call waits for a free slot
    await stream.aclose()  # type: ignore[attr-defined]
    assert (await peer.request())["method"] == "$/cancel"
    peer.answer({"id": request["id"], "streamEnd": {"reason": "canceled"}})
    call = await peer.request()  # the end frame freed the slot
    peer.answer({"id": call["id"], "result": {}})
    assert await waiting == {}


async def test_mux_garbage_is_an_error_and_fail_reaches_everyone() -> None:
    peer = Peer()
    with pytest.raises(InvalidResponseError):
        peer.mux.feed(b"Loading weights...")
    with pytest.raises(InvalidResponseError):
        peer.mux.feed(b'{"jsonrpc":"2.0","id":1,"result":"\xff"}')
    pending = asyncio.ensure_future(peer.mux.call("GetTask", {"id": "a"}, None, timeout=BOUND))
    stream = peer.mux.stream("SubscribeToTask", {"id": "t"})
    opened = asyncio.ensure_future(stream.__anext__())
    await peer.request()
    await peer.request()
    peer.mux.fail(TransportError("gone"))
    for waiter in (pending, opened):
        with pytest.raises(TransportError, match="gone"):
            await asyncio.wait_for(waiter, BOUND)
    with pytest.raises(TransportError, match="gone"):
        await peer.mux.call("GetTask", {"id": "b"}, None, timeout=BOUND)
