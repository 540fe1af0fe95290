"""The client against hostile peers: every answer bounded in size, time and memory.

A hostile HTTP server in this process serves, by the first segment of the path (the *case*), a
10 GB body (announced, or chunked without length), a 10 GB agent card, a gzip bomb (10 GiB
inflated), a slow drip (headers or body, a byte at a time), a stream that falls silent after its
first event, random bytes as an event stream, and streams with no valid event. Each call must
end with a clear error within its deadline, and the process must not grow by 100 MB while it
does (peak RSS: ``VmHWM``, reset before each case through ``/proc/self/clear_refs``).

Quiet but live streams are not cut (heartbeats count as life), and a stream cut for silence is
resumed from its last event id against a real ``A2AServer``.

``python -m tests.hostile.test_client_bounds`` prints, for each case, the time to the error and
the peak RSS growth with the client's default limits (16 MiB, 60 s idle, 5 s call timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from a2a import A2AClient, A2AServer, Agent, RequestContext, RetryPolicy, ServerConfig
from a2a import types as t
from a2a.errors import InvalidResponseError, RequestTimeoutError, TransportError
from a2a.protocol.codec import encode
from a2a.protocol.methods import METHODS
from a2a.protocol.sse import HEARTBEAT, SSEDecoder
from a2a.transport.body import read_body
from a2a.transport.ws import WebSocketTransport

GB10 = 10 * 1000**3
MB = 1024 * 1024
#: The most the process may grow while it fights one hostile case.
RSS_BUDGET = 100 * MB
#: Hang guard of every case (far beyond the deadlines the cases set).
GUARD = 15.0
#: The tests' call timeout and stream idle timeout (short: every case waits for one of them).
TIMEOUT = 0.5
IDLE = 0.3
BINDINGS = ["JSONRPC", "HTTP+JSON"]
STREAMING_METHODS = {"SendStreamingMessage", "SubscribeToTask"}

TASK = t.Task(id="t-1", context_id="c-1", status=t.TaskStatus(state=t.TaskState.WORKING))
DONE = t.TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=t.TaskStatus(state=t.TaskState.COMPLETED))


# ---- measuring -------------------------------------------------------------------------------


def _status_kb(name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {name} in /proc/self/status")


@dataclass
class Peak:
    """Peak resident memory above the level at the start (bytes)."""

    start: int = field(default_factory=lambda: _status_kb("VmRSS"))
    growth: int = 0


@contextlib.contextmanager
def peak_rss() -> Iterator[Peak]:
    # Writing 5 resets the peak (VmHWM) to the current RSS (Linux 4.0+).
    Path("/proc/self/clear_refs").write_text("5")
    peak = Peak()
    try:
        yield peak
    finally:
        peak.growth = (_status_kb("VmHWM") - peak.start) * 1024


# ---- the hostile peer ------------------------------------------------------------------------


def _bomb_blocks() -> tuple[bytes, bytes]:
    """A gzip head and a block that may be repeated at will: each inflates to 1 MiB of zeros
    (a full flush makes every block after the first identical)."""
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MB)
    head = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    return head, c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)


BOMB_HEAD, BOMB_BLOCK = _bomb_blocks()


def _card(base: str) -> bytes:
    return json.dumps(
        {
            "name": "Hostile",
            "description": "answers badly",
            "version": "1",
            "supportedInterfaces": [
                {"url": f"{base}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": f"{base}/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            ],
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    ).encode()


def _event(payload: t.Task | t.TaskStatusUpdateEvent, rpc: bool, event_id: int) -> bytes:
    key = "task" if isinstance(payload, t.Task) else "statusUpdate"
    body = encode(t.StreamResponse(**{"task" if key == "task" else "status_update": payload}))
    data = b'{"jsonrpc":"2.0","id":1,"result":' + body + b"}" if rpc else body
    return b"id: %d\ndata: %s\n\n" % (event_id, data)


async def _hung_up() -> None:
    """Wait until the client hangs up (the runners cancel a handler then)."""
    await asyncio.Event().wait()


def _closing(request: web.BaseRequest) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


Handler = Callable[["Hostile", web.Request, str, bool], Awaitable[web.StreamResponse]]


class Hostile:
    """The hostile HTTP server: ``/{case}/...`` answers as ``CASES[case]`` says."""

    def __init__(self) -> None:
        self.runner: web.AppRunner | None = None
        self.base = ""
        #: (case, what) of every request: ``what`` is card, call or stream.
        self.seen: list[tuple[str, str]] = []

    async def __aenter__(self) -> Hostile:
        app = web.Application()
        app.router.add_route("*", "/{case}/{tail:.*}", self._handle)
        self.runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.base = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.runner is not None
        await self.runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        case, tail = request.match_info["case"], request.match_info["tail"]
        if tail.endswith("agent-card.json"):
            what = "card"
        elif tail.startswith("rest"):
            what = "stream" if tail.endswith((":stream", ":subscribe")) else "call"
        else:
            method = json.loads(await request.read()).get("method")
            what = "stream" if method in STREAMING_METHODS else "call"
        self.seen.append((case, what))
        rpc = not tail.startswith("rest")
        behaviour = CASES[case].get(what)
        if behaviour is None:  # what the case does not make hostile: the card
            return web.Response(body=_card(f"{self.base}/{case}"), content_type="application/json")
        try:
            return await behaviour(self, request, case, rpc)
        except ConnectionError:
            return web.Response()  # the client hung up: what a hostile peer wants least


async def _prepare(request: web.Request, content_type: str, **headers: str) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": content_type, **headers})
    if "Content-Length" not in headers:
        response.enable_chunked_encoding()
    await response.prepare(request)
    return response


async def _endless(response: web.StreamResponse, request: web.Request, chunk: bytes) -> web.StreamResponse:
    while not _closing(request):
        await response.write(chunk)
    return response


def huge(length: bool, content_type: str = "application/json") -> Handler:
    """10 GB of zeros, written lazily, announced by ``Content-Length`` or chunked."""

    async def serve(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
        headers = {"Content-Length": str(GB10)} if length else {}
        response = await _prepare(request, content_type, **headers)
        return await _endless(response, request, bytes(64 * 1024))

    return serve


def gzip_bomb(content_type: str) -> Handler:
    """gzip of 10 GiB of zeros: about 10 MB on the wire, written lazily."""

    async def serve(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
        response = await _prepare(request, content_type, **{"Content-Encoding": "gzip"})
        await response.write(BOMB_HEAD)
        for _ in range(10 * 1024 // 64):
            if _closing(request):
                break
            await response.write(BOMB_BLOCK * 64)
        return response

    return serve


def drip(content_type: str, body: bytes, interval: float) -> Handler:
    """Headers at once, then the body one byte per ``interval`` seconds."""

    async def serve(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
        response = await _prepare(request, content_type, **{"Content-Length": str(len(body))})
        for i in range(len(body)):
            if _closing(request):
                break
            await response.write(body[i : i + 1])
            await asyncio.sleep(interval)
        return response

    return serve


def sse(body: Callable[[bool], bytes]) -> Handler:
    """An event stream of ``body(rpc)``, then its end."""

    async def serve(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
        response = await _prepare(request, "text/event-stream")
        data = body(rpc)
        if data:
            await response.write(data)
        await response.write_eof()
        return response

    return serve


async def silent(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
    """The task as the first event, then nothing at all (the connection stays open)."""
    response = await _prepare(request, "text/event-stream")
    await response.write(_event(TASK, rpc, 1))
    await _hung_up()
    return response


async def random_endless(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
    response = await _prepare(request, "text/event-stream")
    rng = random.Random(16)
    return await _endless(response, request, rng.randbytes(64 * 1024))


async def heartbeats(hostile: Hostile, request: web.Request, case: str, rpc: bool) -> web.StreamResponse:
    """The task, then only heartbeats for 0.75 s (two and a half idle timeouts of the tests),
    then the end."""
    response = await _prepare(request, "text/event-stream")
    await response.write(_event(TASK, rpc, 1))
    for _ in range(15):
        await asyncio.sleep(0.05)
        await response.write(b": keepalive\n\n")
    await response.write(_event(DONE, rpc, 2))
    await response.write_eof()
    return response


def _ascii_lines(rpc: bool) -> bytes:
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789 "
    return "".join("".join(rng.choices(letters, k=60)) + "\n" for _ in range(2000)).encode()


CASES: dict[str, dict[str, Handler]] = {
    "length": {"call": huge(True), "stream": huge(True, "text/event-stream")},
    "chunked": {"call": huge(False), "stream": huge(False, "text/event-stream")},
    "card-length": {"card": huge(True)},
    "card-chunked": {"card": huge(False)},
    "gzip": {"call": gzip_bomb("application/json"), "stream": gzip_bomb("text/event-stream")},
    "card-gzip": {"card": gzip_bomb("application/json")},
    "drip": {
        "call": drip("application/json", b" " * 1000, 0.25),
        "stream": drip("text/event-stream", b"data: " + b"x" * 1000, 0.05),
    },
    "card-drip": {"card": drip("application/json", b" " * 1000, 0.25)},
    # For the figures: a byte a second, for a day.
    "drip-1s": {
        "call": drip("application/json", b" " * 86400, 1.0),
        "stream": drip("text/event-stream", b"data: " + b"x" * 86400, 1.0),
    },
    "silent": {"stream": silent},
    "random": {"stream": sse(lambda rpc: random.Random(3).randbytes(MB))},
    "random-endless": {"stream": random_endless},
    "no-event": {"stream": sse(_ascii_lines)},
    "empty": {"stream": sse(lambda rpc: b"")},
    "not-a-stream-response": {"stream": sse(lambda rpc: b'data: {"hello": "world"}\n\n')},
    "heartbeats": {"stream": heartbeats},
}


@contextlib.asynccontextmanager
async def header_drip() -> AsyncIterator[str]:
    """A raw TCP server that reads a request, then drips the status line one byte per 0.25 s."""

    tasks: set[asyncio.Task[Any]] = set()
    stop = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await reader.readuntil(b"\r\n\r\n")
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" * 100:
                if stop.is_set():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(0.25)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


# ---- the checks ------------------------------------------------------------------------------


@pytest.fixture
async def hostile() -> AsyncIterator[Hostile]:
    async with Hostile() as server:
        yield server


def _client(url: str, binding: str = "JSONRPC", **kwargs: Any) -> A2AClient:
    limits: dict[str, Any] = {"timeout": TIMEOUT, "idle_timeout": IDLE, "retry": RetryPolicy.none()}
    return A2AClient(url, binding=binding, **{**limits, **kwargs})


async def _drain(client: A2AClient) -> list[t.StreamResponse]:
    return [event async for event in client.stream("hello")]


async def _ends_with(
    what: Callable[[], Awaitable[object]], error: type[Exception], fragment: str, within: float
) -> Exception:
    """``what`` raises ``error`` mentioning ``fragment`` within ``within`` seconds, and the
    process grows by less than the budget meanwhile."""
    started = time.monotonic()
    with peak_rss() as peak:
        async with asyncio.timeout(GUARD):
            with pytest.raises(error) as caught:
                await what()
    took = time.monotonic() - started
    assert fragment in str(caught.value), caught.value
    assert took < within, f"took {took:.1f}s"
    assert peak.growth < RSS_BUDGET, f"grew by {peak.growth / MB:.0f} MB"
    return caught.value


#: case → (the error, a fragment of its message, the longest it may take): calls and streams.
ANSWERS: dict[str, tuple[type[Exception], str, float]] = {
    "length": (InvalidResponseError, f"announced a body of {GB10} bytes", 3.0),
    "chunked": (InvalidResponseError, "over this client's limit", 5.0),
    "gzip": (InvalidResponseError, "over this client's limit", 5.0),
    "drip": (RequestTimeoutError, f"did not answer in full within {TIMEOUT}s", 3.0),
}
STREAM_ANSWERS: dict[str, tuple[type[Exception], str, float]] = {
    "length": (InvalidResponseError, "SSE event larger than", 5.0),  # an event that never ends
    "chunked": (InvalidResponseError, "SSE event larger than", 5.0),
    "gzip": (InvalidResponseError, "SSE event larger than", 5.0),
    "drip": (TransportError, f"no event and no heartbeat for {IDLE}s", 3.0),
    "random": (InvalidResponseError, "not an event stream", 3.0),
    "random-endless": (InvalidResponseError, "not an event stream", 3.0),
    "no-event": (InvalidResponseError, "without any event", 3.0),
    "empty": (InvalidResponseError, "without any event", 3.0),
    "not-a-stream-response": (InvalidResponseError, "Peer sent", 3.0),
}
CARD_ANSWERS: dict[str, tuple[type[Exception], str, float]] = {
    "card-length": (InvalidResponseError, f"announced a body of {GB10} bytes", 3.0),
    "card-chunked": (InvalidResponseError, "over this client's limit", 5.0),
    "card-gzip": (InvalidResponseError, "over this client's limit", 5.0),
    "card-drip": (RequestTimeoutError, f"did not answer in full within {TIMEOUT}s", 3.0),
}


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("case", sorted(ANSWERS))
async def test_a_call_ends_with_a_clear_error(hostile: Hostile, case: str, binding: str) -> None:
    error, fragment, within = ANSWERS[case]
    async with _client(f"{hostile.base}/{case}", binding) as client:
        await client.get_card()
        exc = await _ends_with(lambda: client.get_task("t-1"), error, fragment, within)
    assert f"/{case}/" in str(exc), "the error names the URL"


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("case", sorted(STREAM_ANSWERS))
async def test_a_stream_ends_with_a_clear_error(hostile: Hostile, case: str, binding: str) -> None:
    error, fragment, within = STREAM_ANSWERS[case]
    async with _client(f"{hostile.base}/{case}", binding) as client:
        await client.get_card()
        exc = await _ends_with(lambda: _drain(client), error, fragment, within)
    assert f"/{case}/" in str(exc), "the error names the URL"


@pytest.mark.parametrize("case", sorted(CARD_ANSWERS))
async def test_the_card_is_read_within_bounds(hostile: Hostile, case: str) -> None:
    error, fragment, within = CARD_ANSWERS[case]
    async with _client(f"{hostile.base}/{case}") as client:
        exc = await _ends_with(client.get_card, error, fragment, within)
    assert "agent-card.json" in str(exc)


async def test_the_body_limit_is_configurable(hostile: Hostile) -> None:
    async with _client(f"{hostile.base}/card-chunked", max_response_bytes=1000) as client:
        await _ends_with(client.get_card, InvalidResponseError, "limit of 1000 bytes", 3.0)


async def test_dripped_headers_end_at_the_deadline() -> None:
    """The deadline covers the wait for the headers too (httpx's timeouts are per socket read)."""
    async with header_drip() as base:
        card = t.AgentCard(
            name="Drip",
            description="drips",
            version="1",
            supported_interfaces=[t.AgentInterface(url=f"{base}/rpc", protocol_binding="JSONRPC")],
            capabilities=t.AgentCapabilities(streaming=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            skills=[],
        )
        async with A2AClient(card=card, timeout=TIMEOUT, retry=RetryPolicy.none()) as client:
            await _ends_with(lambda: client.get_task("t-1"), RequestTimeoutError, f"within {TIMEOUT}s", 2.0)
            await _ends_with(lambda: _drain(client), RequestTimeoutError, f"within {TIMEOUT}s", 2.0)
        async with _client(base) as client:
            await _ends_with(client.get_card, RequestTimeoutError, f"within {TIMEOUT}s", 2.0)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_silent_stream_ends_with_where_it_stood(hostile: Hostile, binding: str) -> None:
    """Silent after its first event: cut after the idle timeout, resumed (the resumption falls
    silent too), then given up, with the task and the last event id on the error."""
    async with _client(f"{hostile.base}/silent", binding) as client:
        exc = await _ends_with(lambda: _drain(client), TransportError, "no event and no heartbeat", 2.5)
    assert isinstance(exc, TransportError) and exc.retryable
    assert (exc.task_id, exc.last_event_id) == ("t-1", "1")
    streams = [what for case, what in hostile.seen if case == "silent" and what == "stream"]
    assert len(streams) == 3, "the first stream, then one fruitful and one fruitless resumption"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_heartbeats_keep_a_quiet_stream(hostile: Hostile, binding: str) -> None:
    async with _client(f"{hostile.base}/heartbeats", binding) as client, asyncio.timeout(GUARD):
        events = await _drain(client)
    assert [e.payload.status.state for e in events] == [t.TaskState.WORKING, t.TaskState.COMPLETED]  # type: ignore[union-attr]
    assert hostile.seen.count(("heartbeats", "stream")) == 1, "never cut, never resumed"


# ---- against a real server: heartbeats and resuming ------------------------------------------


def _pausing_agent(pause: float) -> Agent:
    agent = Agent("Pauser", "pauses between events")

    @agent.skill()
    async def pause_between(ctx: RequestContext) -> None:
        await ctx.artifact("one", artifact_id="out")
        await asyncio.sleep(pause)
        await ctx.artifact("two", artifact_id="out", append=True, last_chunk=True)
        await ctx.complete("done")

    return agent


def _texts(events: list[t.StreamResponse]) -> list[str]:
    updates = [e.payload for e in events if isinstance(e.payload, t.TaskArtifactUpdateEvent)]
    return [str(part.text) for update in updates for part in update.artifact.parts]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_server_heartbeats_keep_a_quiet_stream_open(binding: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "a2a.client")
    config = ServerConfig(port=0, sse_heartbeat=0.05)
    async with A2AServer(_pausing_agent(0.8), config=config) as server:
        assert server.url is not None
        async with _client(server.url, binding, timeout=5.0) as client, asyncio.timeout(GUARD):
            events = await _drain(client)
    assert _texts(events) == ["one", "two"]
    assert events[-1].payload.status.state is t.TaskState.COMPLETED  # type: ignore[union-attr]
    assert "resuming" not in caplog.text


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_stream_cut_for_silence_resumes_from_its_last_event(
    binding: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No heartbeats: the stream goes quiet longer than the idle timeout, is cut, and is resumed
    after its last event id: every event once, in order."""
    caplog.set_level(logging.INFO, "a2a.client")
    config = ServerConfig(port=0, sse_heartbeat=None)
    retry = RetryPolicy(max_attempts=10, initial_backoff=0.05, max_backoff=0.1, jitter=False, deadline=20)
    async with A2AServer(_pausing_agent(0.7), config=config) as server:
        assert server.url is not None
        async with _client(server.url, binding, timeout=5.0, idle_timeout=0.25, retry=retry) as client:
            async with asyncio.timeout(GUARD):
                events = await _drain(client)
    assert _texts(events) == ["one", "two"]
    assert events[-1].payload.status.state is t.TaskState.COMPLETED  # type: ignore[union-attr]
    assert "resuming after event" in caplog.text


async def test_websocket_streams_are_bounded_by_the_keepalive() -> None:
    """A WebSocket peer that stops answering pings is dropped within the idle timeout, with a
    retryable error (the client then resumes its streams)."""

    async def mute(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=False)
        await ws.prepare(request)
        await _hung_up()
        return ws

    app = web.Application()
    app.router.add_get("/ws", mute)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        transport = WebSocketTransport(f"ws://127.0.0.1:{runner.addresses[0][1]}/ws", idle_timeout=0.4)
        request = t.SubscribeToTaskRequest(id="t-1")

        async def follow() -> None:
            async for _ in transport.stream(METHODS["SubscribeToTask"], request, timeout=1.0):
                pass

        exc = await _ends_with(follow, TransportError, "WebSocket", 2.0)
        assert isinstance(exc, TransportError) and exc.retryable
        await _ends_with(
            lambda: transport.call(METHODS["GetTask"], t.GetTaskRequest(id="t-1"), timeout=TIMEOUT),
            RequestTimeoutError,
            f"no answer to GetTask within {TIMEOUT}s",
            2.0,
        )
        await transport.close()
    finally:
        await runner.cleanup()


async def test_the_command_line_sets_the_bounds() -> None:
    from a2a.cli.commands import _client
    from a2a.cli.main import _parser

    args = _parser().parse_args(["card", "http://127.0.0.1:1", "--max-response-bytes", "1000", "--idle-timeout", "0"])
    async with _client(args) as client:
        assert (client.max_response_bytes, client.idle_timeout) == (1000, None)
    args = _parser().parse_args(["send", "http://127.0.0.1:1", "hi"])
    async with _client(args) as client:
        assert (client.max_response_bytes, client.idle_timeout) == (16 * MB, 60.0)
    assert _parser().parse_args(["serve", "agent.py:agent"]).sse_heartbeat == 15.0


# ---- decoding, on its own --------------------------------------------------------------------


def _response(body: bytes, **headers: str) -> httpx.Response:
    request = httpx.Request("GET", "http://peer/x")
    return httpx.Response(200, headers=headers, stream=httpx.ByteStream(body), request=request)


async def test_deflate_with_and_without_its_wrapper() -> None:
    data = b"a2a " * 1000
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert await read_body(_response(zlib.compress(data), **{"Content-Encoding": "deflate"}), MB) == data
    body = raw.compress(data) + raw.flush()
    assert await read_body(_response(body, **{"Content-Encoding": "deflate"}), MB) == data


async def test_an_encoding_we_did_not_ask_for_is_refused() -> None:
    with pytest.raises(InvalidResponseError, match="Content-Encoding br"):
        await read_body(_response(b"x", **{"Content-Encoding": "br"}), MB)
    with pytest.raises(InvalidResponseError, match="not valid gzip"):
        await read_body(_response(b"not gzip at all", **{"Content-Encoding": "gzip"}), MB)


async def test_a_bomb_in_one_chunk_is_inflated_a_slice_at_a_time() -> None:
    """64 MiB of zeros in 64 KiB of gzip, arriving as one chunk: httpx would inflate it whole."""
    bomb = BOMB_HEAD + BOMB_BLOCK * 63
    with peak_rss() as peak, pytest.raises(InvalidResponseError, match="over this client's limit"):
        await read_body(_response(bomb, **{"Content-Encoding": "gzip"}), MB)
    assert peak.growth < 16 * MB, f"grew by {peak.growth / MB:.0f} MB"


def test_the_decoder_counts_heartbeats_and_refuses_what_is_not_utf8() -> None:
    decoder = SSEDecoder(strict=True)
    assert decoder.feed(HEARTBEAT + b": keep") == []
    assert decoder.comments == 1
    assert decoder.feed(b"alive\r\ndata: {}\n\n")[0].data == "{}"
    assert decoder.comments == 2
    with pytest.raises(ValueError, match="not UTF-8"):
        decoder.feed(b"data: \xff\xfe\n")
    assert SSEDecoder().feed(b"data: \xff\n\n")[0].data == "\ufffd", "lenient by default, as SSE says"


def test_a_long_line_is_searched_once() -> None:
    """A line that arrives in many small pieces is not searched again from its start at each
    piece (a peer dripping a 16 MiB line would make that quadratic)."""
    decoder = SSEDecoder()
    piece = b"x" * 1024
    decoder.feed(b"data: ")
    for _ in range(4 * 1024):
        assert decoder.feed(piece) == []
    assert decoder._scanned == 4 * MB + 6
    assert len(decoder.feed(b"\n\n")[0].data) == 4 * MB


# ---- figures ---------------------------------------------------------------------------------


async def _figures() -> None:
    """Time to the error and peak RSS growth per case, with the client's default limits (a 5 s
    call timeout, the 60 s idle timeout: the silent stream takes three of them)."""
    rows: list[tuple[str, str, float, float]] = []

    async def measure(name: str, what: Callable[[], Awaitable[object]]) -> None:
        started = time.monotonic()
        with peak_rss() as peak:
            try:
                await what()
                outcome = "no error!"
            except Exception as exc:  # noqa: BLE001 - the figure is what it raised
                outcome = f"{type(exc).__name__}: {str(exc)[:90]}"
        rows.append((name, outcome, time.monotonic() - started, peak.growth / MB))

    async with Hostile() as hostile:
        for case in sorted(CARD_ANSWERS):
            async with A2AClient(f"{hostile.base}/{case}", timeout=5.0, retry=RetryPolicy.none()) as c:
                await measure(f"card {case}", c.get_card)
        for case in [*sorted(ANSWERS), "drip-1s"]:
            async with A2AClient(f"{hostile.base}/{case}", timeout=5.0, retry=RetryPolicy.none()) as c:
                await c.get_card()
                await measure(f"call {case}", lambda c=c: c.get_task("t-1"))  # type: ignore[misc]
        for case in [*sorted(STREAM_ANSWERS), "drip-1s", "silent"]:
            async with A2AClient(f"{hostile.base}/{case}", timeout=5.0, retry=RetryPolicy.none()) as c:
                await c.get_card()
                await measure(f"stream {case}", lambda c=c: _drain(c))  # type: ignore[misc]
    async with header_drip() as base, A2AClient(base, timeout=5.0, retry=RetryPolicy.none()) as c:
        await measure("card header-drip", c.get_card)
    for name, outcome, took, grew in rows:
        print(f"{name:34} {took:7.2f} s {grew:7.1f} MB  {outcome}")


if __name__ == "__main__":
    asyncio.run(_figures())
