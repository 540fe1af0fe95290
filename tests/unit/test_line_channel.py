"""The stdio client's line channel: what the agent writes, fed whole and byte by byte, and back-pressure.

The agent here is the test: requests land in an in-memory write transport, answers are fed to
the channel as the pipe would hand them over, in one piece or one byte at a time.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from a2a import A2AClient, RetryPolicy
from a2a import types as t
from a2a.errors import InvalidResponseError, TransportError
from a2a.protocol.connection import STDIO_BINDING
from a2a.transport.lines import LineChannel, LineTransport

BOUND = 10.0
LIMIT = 4096

Feed = Callable[[LineChannel, bytes], None]


def feed_whole(channel: LineChannel, data: bytes) -> None:
    channel.feed(data)


def feed_bytewise(channel: LineChannel, data: bytes) -> None:
    for i in range(len(data)):
        channel.feed(data[i : i + 1])


FEEDS = [pytest.param(feed_whole, id="whole"), pytest.param(feed_bytewise, id="byte-by-byte")]


class Sink(asyncio.WriteTransport):
    """The agent's input, in memory: each request line, decoded."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._buffer = b""
        self.closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        *lines, self._buffer = (self._buffer + bytes(data)).split(b"\n")
        for line in lines:
            self.requests.put_nowait(json.loads(line))

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    async def request(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.requests.get(), BOUND)


def frames(*messages: dict[str, Any]) -> bytes:
    """Lines as an agent may write them: CRLF endings and a blank line too."""
    return b"\n".join(json.dumps({"jsonrpc": "2.0", **m}).encode() + b"\r" for m in messages) + b"\n\n"


def task(task_id: str) -> dict[str, Any]:
    return {"id": task_id, "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}


class MemoryTransport(LineTransport):
    """The stdio client with the test as its agent."""

    def __init__(self, feed: Feed, tenant: str | None = None) -> None:
        super().__init__(
            "memory agent", headers={"Authorization": "Bearer x"}, tenant=tenant, max_in_flight=8,
            max_line_bytes=LIMIT, start_timeout=BOUND,
        )  # fmt: skip
        self.sink = Sink()
        self.channel: LineChannel | None = None
        self._feed = feed

    async def _connect(self) -> LineChannel:
        self.channel = LineChannel(self.name, max_line_bytes=self.max_line_bytes, max_in_flight=self.max_in_flight)
        self.channel.attach(self.sink)
        return self.channel

    async def _disconnect(self) -> None:
        self.sink.close()

    def answer(self, *messages: dict[str, Any]) -> None:
        assert self.channel is not None
        self._feed(self.channel, frames(*messages))

    async def initialized_over(self) -> None:
        starting = asyncio.ensure_future(self.start())
        init = await self.sink.request()
        assert init["method"] == "initialize"
        assert init["params"]["serviceParameters"] == {"A2A-Version": "1.0", "Authorization": "Bearer x"}
        limits = {"maxMessageBytes": LIMIT, "maxInFlight": 4}
        self.answer(
            {"id": init["id"], "result": {"protocolVersion": "1.0", "binding": STDIO_BINDING, "limits": limits}}
        )
        await asyncio.wait_for(starting, BOUND)


@pytest.mark.parametrize("feed", FEEDS)
async def test_initialize_calls_and_a_stream(feed: Feed) -> None:
    transport = MemoryTransport(feed, tenant="acme")
    await transport.initialized_over()
    assert transport.initialized is not None and transport.initialized.limits.max_in_flight == 4
    assert transport.channel is not None and transport.channel.mux.max_in_flight == 4
    async with A2AClient(transport=transport, retry=RetryPolicy.none(), timeout=BOUND) as client:
        first = asyncio.ensure_future(client.get_task("a"))
        second = asyncio.ensure_future(client.get_task("b"))
        one, two = await transport.sink.request(), await transport.sink.request()
        assert one["params"] == {"id": "a", "tenant": "acme"}
        transport.answer({"id": two["id"], "result": task("b")}, {"id": one["id"], "result": task("a")})
        assert [(await first).id, (await second).id] == ["a", "b"]

        events = transport.channel.mux.stream("SubscribeToTask", {"id": "a"})
        opened = asyncio.ensure_future(events.__anext__())
        request = await transport.sink.request()
        update = {"taskId": "a", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
        transport.answer(
            {"id": request["id"], "seq": 1, "result": {"task": task("a")}},
            {"id": request["id"], "seq": 2, "result": {"statusUpdate": update}},
            {"id": request["id"], "streamEnd": {"reason": "complete"}},
        )
        received = [await asyncio.wait_for(opened, BOUND)]
        received += [event async for event in events]
        assert [event.seq for event in received] == [1, 2]
        assert isinstance(received[1].item.event.payload, t.TaskStatusUpdateEvent)
        unanswered = asyncio.ensure_future(client.get_task("c"))
        await transport.sink.request()
    with pytest.raises(TransportError, match="closed by this client"):
        await asyncio.wait_for(unanswered, BOUND)
    with pytest.raises(TransportError, match="memory agent is closed"):
        await transport.get_card(timeout=BOUND)
    assert transport.sink.closing


@pytest.mark.parametrize("feed", FEEDS)
async def test_garbage_fails_every_pending_call_once(feed: Feed) -> None:
    broken: list[str] = []
    channel = LineChannel(
        "noisy agent", broken=lambda what: broken.append(what) or InvalidResponseError(f"noisy agent {what}")
    )
    channel.attach(Sink())
    pending = asyncio.ensure_future(channel.mux.call("GetTask", {"id": "a"}, None, timeout=BOUND))
    await asyncio.sleep(0)  # the request is written
    feed(channel, b"Loading model... done\n" + frames({"id": 1, "result": {}}))
    with pytest.raises(InvalidResponseError, match="not a JSON-RPC line"):
        await asyncio.wait_for(pending, BOUND)
    assert len(broken) == 1  # the rest of what it wrote is not read any more


@pytest.mark.parametrize("feed", FEEDS)
async def test_a_line_over_the_limit_fails_before_its_end_arrives(feed: Feed) -> None:
    channel = LineChannel("chatty agent", max_line_bytes=LIMIT)
    channel.attach(Sink())
    pending = asyncio.ensure_future(channel.mux.call("GetTask", {"id": "a"}, None, timeout=BOUND))
    await asyncio.sleep(0)
    feed(channel, b"x" * (LIMIT + 1))  # no newline, ever
    with pytest.raises(InvalidResponseError, match=f"over {LIMIT} bytes"):
        await asyncio.wait_for(pending, BOUND)


@pytest.mark.parametrize("feed", FEEDS)
async def test_the_end_delivers_a_last_line_without_newline_then_fails_the_rest(feed: Feed) -> None:
    channel = LineChannel("agent")
    sink = Sink()
    channel.attach(sink)
    answered = asyncio.ensure_future(channel.mux.call("GetTask", {"id": "a"}, None, timeout=BOUND))
    left = asyncio.ensure_future(channel.mux.call("GetTask", {"id": "b"}, None, timeout=BOUND))
    one, _ = await sink.request(), await sink.request()
    feed(channel, frames({"id": one["id"], "result": "A"}).rstrip(b"\r\n"))
    channel.end(TransportError("agent exited with code 3"))
    assert await asyncio.wait_for(answered, BOUND) == "A"
    with pytest.raises(TransportError, match="exited with code 3"):
        await asyncio.wait_for(left, BOUND)
    assert channel.ended.done()


async def test_send_waits_while_the_input_pipe_is_full() -> None:
    channel = LineChannel("slow agent")
    sink = Sink()
    channel.attach(sink)
    channel.pause_writing()
    sending = asyncio.ensure_future(channel.send(b'{"n":1}'))
    assert (await sink.request()) == {"n": 1}  # written, then it waits for the agent to read
    await asyncio.sleep(0)
    assert not sending.done()
    channel.resume_writing()
    await asyncio.wait_for(sending, BOUND)


async def test_send_fails_once_the_input_is_gone() -> None:
    channel = LineChannel("gone agent", input_closed=lambda: TransportError("gone agent exited with code 1"))
    sink = Sink()
    channel.attach(sink)
    channel.pause_writing()
    sending = asyncio.ensure_future(channel.send(b"{}"))
    await sink.request()
    channel.input_lost()  # the agent exited while we waited
    with pytest.raises(TransportError, match="exited with code 1"):
        await asyncio.wait_for(sending, BOUND)
    with pytest.raises(TransportError, match="exited with code 1"):
        await channel.send(b"{}")
