"""One connection's flood of calls does not fill the event loop, and does not starve itself.

A connection takes one message per turn of the event loop. A WebSocket or stdio peer may have
``max_in_flight`` calls unanswered, but only ``max_executing`` of them run at once; the rest
wait in arrival order (``call_slots``). A call
that waits (a blocking send, a cancellation, a stream) gives its slot up after a short hold, so
that the same connection's ``GetTask`` and ``CancelTask`` are never stuck behind it. The shared
core is tested in memory, then each binding with a real server.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from a2a import A2AServer, Agent, ServerConfig
from a2a.protocol.connection import WEBSOCKET_BINDING
from a2a.server.channels.rpc_connection import ConnectionLimits, ConnectionViolation, RpcConnection
from a2a.server.channels.stdio import StdioConfig, serve_stdio
from a2a.server.channels.ws import WebSocketConfig
from a2a.server.engine.handler import CallContext, RequestHandler

V1 = {"A2A-Version": "1.0"}
#: Hang guard for one answer (never a performance figure).
BOUND = 10.0

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


def _get(request_id: Any, task_id: str = "no-such-task") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "GetTask", "params": {"id": task_id}}


def _send(request_id: Any, text: str) -> dict[str, Any]:
    message = {"messageId": f"m-{request_id}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage", "params": {"message": message}}


class Gate:
    """Stands in for ``RequestHandler.call``: records when each call starts, holds it until opened."""

    def __init__(self, real: Callable[[str, Any, CallContext], Awaitable[Any]]) -> None:
        self.real = real
        self.open = asyncio.Event()
        self._arrival = asyncio.Event()
        self.started: list[tuple[float, Any]] = []
        self.running = 0
        self.most_running = 0

    async def call(self, method: str, params: Any, ctx: CallContext) -> Any:
        self.started.append((asyncio.get_running_loop().time(), params.id))
        self._arrival.set()
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await self.open.wait()
            return await self.real(method, params, ctx)
        finally:
            self.running -= 1

    async def all_started(self, count: int) -> None:
        async with asyncio.timeout(BOUND):
            while len(self.started) < count:
                self._arrival.clear()
                await self._arrival.wait()

    def started_within(self, seconds: float) -> int:
        """Calls begun less than ``seconds`` after the first one: no slot was given back yet."""
        first = self.started[0][0]
        return sum(1 for at, _ in self.started if at - first < seconds)


# ---- the shared core, in memory -----------------------------------------------------------------


class Peer:
    """An ``RpcConnection`` whose peer is the test: frames out land in a queue."""

    def __init__(self, agent: Agent, limits: ConnectionLimits) -> None:
        self.out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.handler = RequestHandler(agent)
        card = agent.build_card([])
        self.conn = RpcConnection(
            self.handler, self._out, card=lambda: card, binding=WEBSOCKET_BINDING, limits=limits, ctx=CallContext()
        )

    async def _out(self, data: bytes) -> None:
        self.out.put_nowait(json.loads(data))

    async def send(self, message: dict[str, Any]) -> None:
        await self.conn.receive(json.dumps(message).encode())

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.out.get(), BOUND)


@asynccontextmanager
async def _peer(agent: Agent, **limits: Any) -> AsyncIterator[Peer]:
    peer = Peer(agent, ConnectionLimits(**limits))
    try:
        yield peer
    finally:
        await peer.conn.close()
        await peer.handler.shutdown()


async def test_at_most_max_executing_run_and_the_rest_start_in_arrival_order(echo_agent: Agent) -> None:
    # A hold longer than the test: only an answer frees a slot.
    async with _peer(echo_agent, max_executing=3, call_slot_hold=3600.0) as peer:
        gate = Gate(peer.handler.call)
        peer.handler.call = gate.call  # type: ignore[method-assign]
        for n in range(20):
            await peer.send(_get(n, f"t{n}"))
        await gate.all_started(3)
        for _ in range(20):
            await asyncio.sleep(0)  # every queued call had its chance to start
        assert (len(gate.started), peer.conn.in_flight) == (3, 20)
        gate.open.set()
        answers = [await peer.next() for _ in range(20)]
        assert sorted(a["id"] for a in answers) == list(range(20))
        assert all(a["error"]["code"] == -32001 for a in answers)  # each call really ran
        assert gate.most_running == 3
        assert [task_id for _, task_id in gate.started] == [f"t{n}" for n in range(20)]


@pytest.mark.parametrize(
    "message",
    [_get(1), _send(2, "hello"), {"jsonrpc": "2.0", "id": 3, "method": "NoSuchMethod"}, "not json", {"id": None}],
    ids=["call", "send", "unknown method", "not json", "null id"],
)
async def test_each_message_takes_one_turn_of_the_loop(echo_agent: Agent, message: Any) -> None:
    """``receive`` lets the loop run before the binding reads the next message: a burst of frames
    read at once is taken between other clients' work, whatever the frames are."""
    async with _peer(echo_agent) as peer:
        others: list[int] = []
        asyncio.get_running_loop().call_soon(others.append, 1)
        await peer.conn.receive(message.encode() if isinstance(message, str) else json.dumps(message).encode())
        assert others == [1], "another client's work ran before the next message"


async def test_queued_calls_count_in_flight_and_the_limit_still_closes(echo_agent: Agent) -> None:
    async with _peer(echo_agent, max_in_flight=5, max_executing=2, call_slot_hold=3600.0) as peer:
        gate = Gate(peer.handler.call)
        peer.handler.call = gate.call  # type: ignore[method-assign]
        for n in range(5):
            await peer.send(_get(n))
        await gate.all_started(2)
        with pytest.raises(ConnectionViolation):
            await peer.send(_get(5))
        assert len(gate.started) == 2


async def test_a_call_that_waits_gives_its_slot_to_the_next(echo_agent: Agent) -> None:
    """Every slot held by a call that never ends: a later GetTask is answered anyway."""
    async with _peer(echo_agent, max_executing=2, call_slot_hold=0.05) as peer:
        gate = Gate(peer.handler.call)
        real = gate.real

        async def held_unless_quick(method: str, params: Any, ctx: CallContext) -> Any:
            if params.id == "quick":
                return await real(method, params, ctx)
            return await gate.call(method, params, ctx)

        peer.handler.call = held_unless_quick  # type: ignore[method-assign]
        for n in range(4):
            await peer.send(_get(n, f"held-{n}"))
        await peer.send(_get("q", "quick"))
        answer = await peer.next()  # the hang guard: the held calls are still running
        assert answer["id"] == "q"
        assert not gate.open.is_set() and gate.running == 4


# ---- WebSocket ---------------------------------------------------------------------------------


@asynccontextmanager
async def _ws(server: A2AServer) -> AsyncIterator[tuple[Send, Receive]]:
    assert server.url is not None
    url = server.url.replace("http://", "ws://") + "/a2a/ws"
    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=V1) as ws:

        async def send(message: dict[str, Any]) -> None:
            await ws.send_str(json.dumps(message))

        async def receive() -> dict[str, Any]:
            async with asyncio.timeout(BOUND):
                frame: dict[str, Any] = json.loads(await ws.receive_str())
            return frame

        yield send, receive


async def _cancel_behind_blocking_sends(send: Send, receive: Receive, count: int) -> None:
    """``count`` blocking sends that never end by themselves hold the connection; on the same
    connection ListTasks finds them and CancelTask ends each, then each send is answered."""
    for n in range(count):
        await send(_send(f"send-{n}", "hold:600"))
    working: list[str] = []
    async with asyncio.timeout(BOUND):
        while len(working) < count:
            await send({"jsonrpc": "2.0", "id": "list", "method": "ListTasks", "params": {}})
            listed = await receive()
            assert listed["id"] == "list", listed
            tasks = listed["result"]["tasks"]
            working = [task["id"] for task in tasks if task["status"]["state"] == "TASK_STATE_WORKING"]
    for task_id in working:
        await send({"jsonrpc": "2.0", "id": f"cancel-{task_id}", "method": "CancelTask", "params": {"id": task_id}})
    answers = {}
    for _ in range(2 * count):
        frame = await receive()
        answers[frame["id"]] = frame
    for task_id in working:
        assert answers[f"cancel-{task_id}"]["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    for n in range(count):
        assert answers[f"send-{n}"]["result"]["task"]["status"]["state"] == "TASK_STATE_CANCELED"


async def test_websocket_cancel_is_not_stuck_behind_blocking_sends(echo_agent: Agent) -> None:
    config = ServerConfig(port=0, websocket=WebSocketConfig(max_executing=2))
    async with A2AServer(echo_agent, config=config) as server, _ws(server) as (send, receive):
        await _cancel_behind_blocking_sends(send, receive, count=5)


async def test_websocket_runs_at_most_max_executing_at_once(echo_agent: Agent) -> None:
    config = ServerConfig(port=0, websocket=WebSocketConfig(max_executing=3))
    async with A2AServer(echo_agent, config=config) as server, _ws(server) as (send, receive):
        gate = Gate(server.handler.call)
        server.handler.call = gate.call  # type: ignore[method-assign]
        for n in range(30):
            await send(_get(n))
        # Held calls give their slots up after the hold: all start in the end, never early.
        await gate.all_started(30)
        assert gate.started_within(ConnectionLimits().call_slot_hold) <= 3
        gate.open.set()
        assert sorted([(await receive())["id"] for _ in range(30)]) == list(range(30))


# ---- stdio -------------------------------------------------------------------------------------


@asynccontextmanager
async def _stdio(server: A2AServer, config: StdioConfig) -> AsyncIterator[tuple[Send, Receive]]:
    """``serve_stdio`` over a pair of pipes, one more connection to ``server``'s handler."""
    to_agent_read, to_agent_write = os.pipe()
    from_agent_read, from_agent_write = os.pipe()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    serving = loop.create_task(
        serve_stdio(
            server.agent,
            handler=server.handler,
            config=config,
            stdin_fd=to_agent_read,
            stdout_fd=from_agent_write,
            stop=stop,
        )
    )
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_agent_read, "rb", 0))
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(to_agent_write, "wb", 0))

    async def send(message: dict[str, Any]) -> None:
        transport.write(json.dumps(message).encode() + b"\n")

    async def receive() -> dict[str, Any]:
        async with asyncio.timeout(BOUND):
            line = await reader.readline()
        assert line, "the stdio server ended its output"
        frame: dict[str, Any] = json.loads(line)
        return frame

    try:
        await send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"serviceParameters": V1}})
        assert "result" in await receive()
        yield send, receive
    finally:
        stop.set()
        transport.close()
        await asyncio.wait_for(serving, BOUND)
        os.close(to_agent_read)
        os.close(from_agent_write)


async def test_stdio_cancel_is_not_stuck_behind_blocking_sends(echo_agent: Agent) -> None:
    server = A2AServer(echo_agent, config=ServerConfig(port=0))
    async with server, _stdio(server, StdioConfig(max_executing=2)) as (send, receive):
        await _cancel_behind_blocking_sends(send, receive, count=5)


async def test_stdio_runs_at_most_max_executing_at_once(echo_agent: Agent) -> None:
    async with A2AServer(echo_agent, config=ServerConfig(port=0)) as server:
        gate = Gate(server.handler.call)
        server.handler.call = gate.call  # type: ignore[method-assign]
        async with _stdio(server, StdioConfig(max_executing=3)) as (send, receive):
            for n in range(30):
                await send(_get(n))
            await gate.all_started(30)
            assert gate.started_within(ConnectionLimits().call_slot_hold) <= 3
            gate.open.set()
            assert sorted([(await receive())["id"] for _ in range(30)]) == list(range(30))
