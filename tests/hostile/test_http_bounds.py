"""The HTTP server under hostile peers: compression bombs, undecodable bodies, slow or idle
connections, connection floods, oversized request lines and duplicated credentials.

Every case runs on each HTTP binding it applies to (JSON-RPC, REST, the WebSocket upgrade),
over raw sockets: what is checked is what a peer sees on the wire. Timeouts are set small
(fractions of a second) so that the whole file runs in seconds; bounds on time here are hang
guards, not performance assertions.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import os
import time
import types
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import pytest

import a2a
from a2a import A2AServer, Agent, ApiKeyAuth, BearerAuth, ServerConfig
from a2a.server.engine.limits import HttpLimits
from tests.asgi_serving import HOSTS, AsgiServed

from ..conftest import load_example

#: A hang guard: any answer this test waits for comes much sooner.
GUARD = 10.0
#: The test server's small time limits (seconds).
SHORT = 0.4
LIMIT = 64 * 1024


@dataclass(frozen=True)
class Binding:
    name: str
    method: str
    path: str
    #: A valid request body (None: the binding reads none, the WebSocket upgrade).
    body: bytes | None

    def request(self, *, headers: dict[str, str] | None = None, body: bytes | None = None, target: str = "") -> bytes:
        payload = self.body if body is None else body
        lines = [f"{self.method} {target or self.path} HTTP/1.1", "Host: test", "A2A-Version: 1.0"]
        if self.name == "WS":
            key = base64.b64encode(b"0123456789abcdef").decode()
            lines += [
                "Upgrade: websocket",
                "Connection: Upgrade",
                f"Sec-WebSocket-Key: {key}",
                "Sec-WebSocket-Version: 13",
            ]
        for name, value in (headers or {}).items():
            lines += [f"{n}: {value}" for n in name.split("|")]  # "A|A": the header twice
        if payload is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
        return "\r\n".join(lines).encode() + b"\r\n\r\n" + (payload or b"")


def _message(text: str) -> dict[str, object]:
    return {"messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": text}]}


def _jsonrpc(text: str = "hello") -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": _message(text)}}
    ).encode()


def _rest(text: str = "hello") -> bytes:
    return json.dumps({"message": _message(text)}).encode()


JSONRPC = Binding("JSONRPC", "POST", "/a2a/jsonrpc", _jsonrpc())
REST = Binding("REST", "POST", "/a2a/rest/message:send", _rest())
WS = Binding("WS", "GET", "/a2a/ws", None)
BODY_BINDINGS = [JSONRPC, REST]
ALL_BINDINGS = [JSONRPC, REST, WS]
ids = [b.name for b in ALL_BINDINGS]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        value = json.loads(self.body)
        assert isinstance(value, dict)
        return value


async def _read_reply(reader: asyncio.StreamReader) -> Reply:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GUARD)
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await asyncio.wait_for(reader.readexactly(length), GUARD) if length else b""
    return Reply(int(status_line.split()[1]), headers, body)


async def _closed(reader: asyncio.StreamReader, within: float = GUARD) -> bool:
    """Whether the server closes the connection (EOF or reset) within ``within`` seconds."""
    try:
        while await asyncio.wait_for(reader.read(65536), within):
            pass
    except ConnectionError:
        return True
    except TimeoutError:
        return False
    return True


@pytest.fixture
async def serve(request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Awaitable[tuple[A2AServer, int]]]]:
    """``await serve(limits, agent, max_body)``: a server on the aiohttp host, or on the ASGI host
    under uvicorn for the tests parametrized ``serve`` over ``HOSTS`` (the bounds a2a-net
    enforces inside the application: docs/deployment.md)."""
    host = getattr(request, "param", "aiohttp")
    servers: list[A2AServer | AsgiServed] = []

    async def start(
        limits: HttpLimits | None = None, agent: Agent | None = None, max_body: int = LIMIT, **kwargs: object
    ) -> tuple[A2AServer, int]:
        limits = limits or HttpLimits(header_timeout=SHORT, body_timeout=SHORT, idle_timeout=SHORT, drain_timeout=SHORT)
        config = ServerConfig(port=0, max_body_bytes=max_body, limits=limits)
        server = A2AServer(agent or load_example("echo_agent.py"), config=config, **kwargs)  # type: ignore[arg-type]
        if host == "asgi":
            served = AsgiServed(server)
            await served.start()
            servers.append(served)
        else:
            await server.start()
            servers.append(server)
        assert server.url is not None
        return server, int(server.url.rsplit(":", 1)[1])

    yield start
    for server in servers:
        await server.stop()


async def _drip_until_closed(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes, *, give_up: float
) -> bool:
    """Send ``data`` one byte every 50 ms (a slowloris); whether the server closed the
    connection meanwhile. Stops after ``give_up`` seconds (a hang guard)."""
    started = time.monotonic()
    for byte in data:
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            return True
        if reader.at_eof():
            return True
        await asyncio.sleep(0.05)
        if time.monotonic() - started > give_up:
            break
    return False


async def _exchange(port: int, data: bytes) -> Reply:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return await _read_reply(reader)
    finally:
        writer.close()


def _bomb(decoded_mib: int) -> bytes:
    """A gzip body that inflates to ``decoded_mib`` MiB of zeros, made in milliseconds: after a
    full flush, every further MiB of zeros compresses to the same bytes (its trailer is wrong:
    no server should read that far)."""
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(b'{"jsonrpc":"2.0","id":1,"x":"' + zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    return first + block * (decoded_mib - 1) + compressor.flush()


def _assert_binding_error(binding: Binding, reply: Reply, status: int, code: int | None = None) -> dict[str, object]:
    assert reply.status == status, reply
    body = reply.json()
    if binding is REST:
        error = body["error"]
        assert isinstance(error, dict) and error["code"] == status
    else:
        assert body["jsonrpc"] == "2.0"
        error = body["error"]
        assert isinstance(error, dict)
        if code is not None:
            assert error["code"] == code, error
    return error


# ---- compression ---------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
@pytest.mark.parametrize("serve", HOSTS, indirect=True)
async def test_gzip_bomb_is_refused_at_once_and_leaves_the_server_responsive(
    serve, binding: Binding, request: pytest.FixtureRequest
) -> None:
    _server, port = await serve()
    # What happens to a connection after the refusal is the host's: aiohttp's closes it once
    # the rest is drained; an ASGI server reads the rest away and keeps it (docs/deployment.md).
    closes = request.node.callspec.params["serve"] == "aiohttp"
    bomb = _bomb(1024)  # 1 GiB inflated, about 1 MB on the wire
    cpu = time.process_time()

    async def attack() -> None:
        for _ in range(5):  # each bomb sent whole, the connection held until the server ends it
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(binding.request(headers={"Content-Encoding": "gzip"}, body=bomb))
            _assert_binding_error(binding, await _read_reply(reader), 413, -32600)
            await writer.drain()
            if closes:
                assert await _closed(reader)
            writer.close()

    attacker = asyncio.create_task(attack())
    for _ in range(5):  # the event loop is never stalled for long while bombs arrive
        probe = await asyncio.wait_for(_exchange(port, binding.request(body=binding.body and _body_for(binding))), 5)
        assert probe.status == 200, probe
    await asyncio.wait_for(attacker, GUARD)
    # Inflating one of these bombs to its end costs a third of a second of CPU or more (here, in
    # this process); refusing it, a few milliseconds.
    assert time.process_time() - cpu < 0.6


def _body_for(binding: Binding) -> bytes:
    return _jsonrpc() if binding is JSONRPC else _rest()


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
@pytest.mark.parametrize("serve", HOSTS, indirect=True)
async def test_a_gzip_body_within_the_limits_is_served(serve, binding: Binding) -> None:
    _server, port = await serve()
    reply = await _exchange(port, binding.request(headers={"Content-Encoding": "gzip"}, body=_gzip(_body_for(binding))))
    assert reply.status == 200, reply


def _gzip(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
@pytest.mark.parametrize("serve", HOSTS, indirect=True)
async def test_a_body_that_is_not_gzip_is_400_in_one_log_line(
    serve, binding: Binding, caplog: pytest.LogCaptureFixture
) -> None:
    _server, port = await serve()
    caplog.set_level(logging.WARNING, "a2a")
    for garbage in (b"this is not gzip", _gzip(_body_for(binding))[:-12]):  # not gzip; truncated
        caplog.clear()
        reply = await _exchange(port, binding.request(headers={"Content-Encoding": "gzip"}, body=garbage))
        error = _assert_binding_error(binding, reply, 400, -32700)
        assert "gzip" in str(error["message"])
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1 and warnings[0].exc_info is None, warnings


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
@pytest.mark.parametrize("serve", HOSTS, indirect=True)
async def test_an_encoding_not_accepted_is_415(serve, binding: Binding) -> None:
    _server, port = await serve()
    reply = await _exchange(port, binding.request(headers={"Content-Encoding": "br"}, body=b"\x00\x01"))
    _assert_binding_error(binding, reply, 415, -32600)
    _server, port = await serve(HttpLimits(request_encodings=()))
    reply = await _exchange(port, binding.request(headers={"Content-Encoding": "gzip"}, body=_gzip(_body_for(binding))))
    _assert_binding_error(binding, reply, 415, -32600)


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
@pytest.mark.parametrize("serve", HOSTS, indirect=True)
async def test_a_body_that_inflates_too_far_is_413_even_under_the_limit(serve, binding: Binding) -> None:
    # 1 MiB of zeros gzips to about 1 KB: over the ratio cap, though under a 4 MiB limit.
    _server, port = await serve(max_body=4 << 20)
    body = _gzip(b'{"x":"' + bytes(1 << 20) + b'"}')
    reply = await _exchange(port, binding.request(headers={"Content-Encoding": "gzip"}, body=body))
    _assert_binding_error(binding, reply, 413, -32600)


# ---- slow and idle peers -------------------------------------------------------------------


@pytest.mark.parametrize("binding", ALL_BINDINGS, ids=ids)
async def test_slowloris_headers_are_cut_after_the_header_timeout(serve, binding: Binding) -> None:
    _server, port = await serve()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = binding.request()
    started = time.monotonic()
    closed = await _drip_until_closed(reader, writer, request[: request.index(b"\r\n\r\n")], give_up=3)
    closed = closed or await _closed(reader, 1)
    writer.close()
    assert closed, "a connection that never completes its headers must be closed"
    assert time.monotonic() - started < 3


async def test_a_kept_alive_connections_next_request_is_held_to_the_header_timeout(serve) -> None:
    """The next request on a kept-alive connection gets its headers' deadline when its first
    bytes arrive (not the idle one, here far longer), also when they arrive in pieces."""
    limits = HttpLimits(header_timeout=SHORT, body_timeout=SHORT, idle_timeout=30, drain_timeout=SHORT)
    _server, port = await serve(limits)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = JSONRPC.request()
    writer.write(request)
    assert (await _read_reply(reader)).status == 200
    started = time.monotonic()
    closed = await _drip_until_closed(reader, writer, request[:40], give_up=3)  # never the headers' end
    closed = closed or await _closed(reader, 3)
    writer.close()
    assert closed, "a kept-alive connection whose next headers never end must be closed"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
async def test_a_chunked_body_that_never_ends_is_408_and_closed(serve, binding: Binding) -> None:
    _server, port = await serve()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = binding.request(body=b"").split(b"Content-Length")[0] + b"Transfer-Encoding: chunked\r\n\r\n"
    writer.write(head + b"1\r\n{\r\n")

    async def drip() -> None:
        while True:
            await asyncio.sleep(0.1)
            writer.write(b"1\r\n \r\n")

    dripping = asyncio.create_task(drip())
    try:
        reply = await _read_reply(reader)
        _assert_binding_error(binding, reply, 408)
        assert await _closed(reader, 2)
    finally:
        dripping.cancel()
        writer.close()


@pytest.mark.parametrize("binding", ALL_BINDINGS, ids=ids)
async def test_idle_connections_are_closed(serve, binding: Binding) -> None:
    _server, port = await serve()
    # One that never sends a byte.
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await _closed(reader, 3)
    writer.close()
    # One kept alive after a request (one without an upgrade, for the WebSocket endpoint).
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    plain = b"GET /a2a/ws HTTP/1.1\r\nHost: test\r\nA2A-Version: 1.0\r\n\r\n"  # no upgrade: 426
    writer.write(plain if binding is WS else binding.request())
    reply = await _read_reply(reader)
    assert reply.status in (200, 426), reply
    assert await _closed(reader, 3)
    writer.close()


async def test_each_connection_is_held_to_its_own_deadline(serve) -> None:
    """One timer checks every connection's deadline: a connection idle since later is not
    closed with an earlier one, and none is closed before its own time."""
    _server, port = await serve()
    early_reader, early_writer = await asyncio.open_connection("127.0.0.1", port)
    await asyncio.sleep(SHORT * 0.6)
    late_reader, late_writer = await asyncio.open_connection("127.0.0.1", port)
    late_opened = time.monotonic()
    assert await _closed(early_reader, 3)
    assert await _closed(late_reader, 3)
    assert time.monotonic() - late_opened >= SHORT * 0.95, "closed before its own header timeout"
    early_writer.close()
    late_writer.close()


async def test_a_kept_alive_connection_serves_request_after_request(serve) -> None:
    """Between requests within the idle timeout the connection stays open (aiohttp's own
    keep-alive timer is off: the deadline sweep is the only one), and it is closed once idle
    for longer."""
    _server, port = await serve()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for pause in (0.0, SHORT / 4, SHORT / 2, SHORT / 4):
            await asyncio.sleep(pause)
            writer.write(JSONRPC.request(body=_jsonrpc()))
            assert (await _read_reply(reader)).status == 200
        assert await _closed(reader, 3)
    finally:
        writer.close()


async def test_a_connection_serving_a_stream_has_no_deadline_to_check(serve) -> None:
    """A long stream leaves nothing for the deadline sweep (no entry, no timer of its own) and
    holds no async generator;
    the connection is watched again once it waits for its next request."""
    server, port = await serve()
    guarded = server._host.connections  # type: ignore[union-attr]
    body = JSONRPC.request(
        body=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": _message("hold:1")}}
        ).encode()
    )
    streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
    for reader, writer in streams:
        writer.write(body)
        assert b"TASK_STATE_WORKING" in await asyncio.wait_for(reader.readuntil(b"TASK_STATE_WORKING"), GUARD)
    assert len(guarded.sweep) == 0
    # Nor does the stream hold an async generator of the server's (a frame each, and an
    # entry in the loop's set): its run's events come through objects.
    loop = asyncio.get_running_loop()
    package = os.path.join(os.path.dirname(a2a.__file__), "server")
    held = [g for g in list(loop._asyncgens) if g.ag_code.co_filename.startswith(package)]  # type: ignore[attr-defined]
    assert held == []
    # And while it waits, no frame of the request handler's: only the binding's writer.
    waiting = [codes for codes in map(_awaiting, asyncio.all_tasks()) if any(c.co_name == "produce" for c in codes)]
    assert len(waiting) == 3
    assert not [c for codes in waiting for c in codes if c.co_filename.endswith(os.path.join("server", "handler.py"))]
    for reader, _ in streams:
        await asyncio.wait_for(reader.readuntil(b"0\r\n\r\n"), GUARD)  # the stream's end
    # Kept alive: each waits for a request, within its idle timeout, once its answer is done.
    for _ in range(200):
        if len(guarded.sweep) == 3:
            break
        await asyncio.sleep(0.005)
    assert len(guarded.sweep) == 3
    for reader, writer in streams:
        assert await _closed(reader, 3)
        writer.close()


def _awaiting(task: asyncio.Task[object]) -> list[types.CodeType]:
    """The code of each coroutine in ``task``'s chain of awaits, outermost first."""
    codes = []
    awaited: object = task.get_coro()
    while isinstance(awaited, types.CoroutineType):
        codes.append(awaited.cr_code)
        awaited = awaited.cr_await
    return codes


async def test_long_lived_streams_and_websockets_outlive_the_idle_timeouts(serve) -> None:
    server, port = await serve()
    async with aiohttp.ClientSession() as session:
        # An SSE stream silent for longer than every connection timeout.
        body = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": _message("hold:1.5")}}
        )
        async with session.post(f"{server.url}/a2a/jsonrpc", data=body, headers={"A2A-Version": "1.0"}) as response:
            text = await asyncio.wait_for(response.text(), GUARD)
        assert "TASK_STATE_COMPLETED" in text
        # A WebSocket quiet for longer than them, then used.
        async with session.ws_connect(f"ws://127.0.0.1:{port}/a2a/ws", headers={"A2A-Version": "1.0"}) as ws:
            await asyncio.sleep(4 * SHORT)
            await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}))
            answer = await asyncio.wait_for(ws.receive_json(), GUARD)
            assert answer["id"] == 2 and "result" in answer


# ---- connection caps -----------------------------------------------------------------------


async def test_connections_over_the_cap_are_503_with_retry_after(serve) -> None:
    limits = HttpLimits(max_connections=3, max_connections_per_client=2, body_timeout=GUARD, retry_after=7)
    _server, port = await serve(limits)
    busy = []
    for _ in range(2):  # two requests whose bodies are still arriving: not idle
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            JSONRPC.request(body=b"").split(b"Content-Length")[0] + b"Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"
        )
        busy.append((reader, writer))
    await asyncio.sleep(0.1)
    for binding in ALL_BINDINGS:
        reply = await _exchange(port, binding.request())
        assert reply.status == 503 and reply.headers["retry-after"] == "7", reply
        assert reply.json()["error"]["status"] == "UNAVAILABLE"  # type: ignore[index]
    for _, writer in busy:
        writer.close()
    await asyncio.sleep(0.1)
    assert (await _exchange(port, JSONRPC.request())).status == 200


async def test_idle_connections_make_room_for_new_ones(serve) -> None:
    _server, port = await serve(HttpLimits(max_connections=4, max_connections_per_client=4, idle_timeout=GUARD))
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(4)]
    await asyncio.sleep(0.1)
    for binding in BODY_BINDINGS:
        assert (await _exchange(port, binding.request(body=_body_for(binding)))).status == 200
    # The longest idle made room: closed by the server.
    assert await _closed(idle[0][0], 2)
    for _, writer in idle:
        writer.close()


async def test_a_kept_alive_client_is_the_last_to_make_room(serve) -> None:
    _server, port = await serve(HttpLimits(max_connections=3, max_connections_per_client=3, idle_timeout=GUARD))
    kept_reader, kept_writer = await asyncio.open_connection("127.0.0.1", port)
    kept_writer.write(JSONRPC.request(body=_jsonrpc()))
    assert (await _read_reply(kept_reader)).status == 200
    fresh = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]  # newer, never used
    await asyncio.sleep(0.1)
    assert (await _exchange(port, JSONRPC.request(body=_jsonrpc()))).status == 200
    assert await _closed(fresh[0][0], 2), "the longest idle of the connections never used made room"
    kept_writer.write(JSONRPC.request(body=_jsonrpc()))
    assert (await _read_reply(kept_reader)).status == 200, "the kept-alive client's connection is still open"
    kept_writer.close()
    for _, writer in fresh:
        writer.close()


async def test_a_websocket_counts_as_busy_not_idle(serve) -> None:
    _server, port = await serve(HttpLimits(max_connections=10, max_connections_per_client=1, idle_timeout=GUARD))
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(f"ws://127.0.0.1:{port}/a2a/ws", headers={"A2A-Version": "1.0"}) as ws,
    ):
        reply = await _exchange(port, JSONRPC.request())
        assert reply.status == 503, "a WebSocket in use is never closed to make room"
        assert not ws.closed


# ---- what aiohttp's parser refuses ---------------------------------------------------------


@pytest.mark.parametrize("binding", ALL_BINDINGS, ids=ids)
async def test_a_url_over_8_kib_is_414_with_the_bindings_json(serve, binding: Binding, caplog) -> None:
    _server, port = await serve()
    caplog.set_level(logging.WARNING, "a2a")
    reply = await _exchange(port, binding.request(target=binding.path + "?x=" + "a" * 9000))
    if binding is REST:
        _assert_binding_error(binding, reply, 414)
    else:
        _assert_binding_error(binding, reply, 414, -32600)  # the WebSocket endpoint frames as JSON-RPC
    assert [r.exc_info for r in caplog.records if r.levelno >= logging.WARNING] == [None]


@pytest.mark.parametrize("binding", ALL_BINDINGS, ids=ids)
async def test_a_header_too_long_or_a_bad_request_line_is_json(serve, binding: Binding) -> None:
    _server, port = await serve()
    reply = await _exchange(port, binding.request(headers={"X-Long": "b" * 9000}))
    assert reply.status == 431 and reply.headers["content-type"].startswith("application/")
    assert "error" in reply.json()
    reply = await _exchange(port, b"G\x00T " + binding.path.encode() + b" HTTP/1.1\r\n\r\n")
    assert reply.status == 400 and "error" in reply.json()


# ---- duplicated credentials ----------------------------------------------------------------


@pytest.mark.parametrize("binding", ALL_BINDINGS, ids=ids)
@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization|Authorization": "Bearer tok-a"},
        {"X-API-Key|X-API-Key": "key-c"},
    ],
    ids=["two-authorization", "two-api-keys"],
)
@pytest.mark.parametrize("serve", HOSTS, indirect=True)
async def test_a_credential_header_sent_twice_is_refused(serve, binding: Binding, headers: dict[str, str]) -> None:
    auth = [BearerAuth(credentials={"tok-a": "alice"}), ApiKeyAuth(credentials={"key-c": "carol"})]
    _server, port = await serve(auth=auth)
    reply = await _exchange(port, binding.request(headers=headers))
    error = _assert_binding_error(binding, reply, 401, -32000)
    assert "more than once" in str(error["message"])
    # Once, the same credential is accepted.
    once = {name.split("|")[0]: value for name, value in headers.items()}
    reply = await _exchange(port, binding.request(headers=once))
    assert reply.status == (101 if binding is WS else 200), reply


# ---- configuration and the embedded application --------------------------------------------


def test_the_default_connection_cap_leaves_descriptors_free() -> None:
    import resource

    from a2a.server.engine.limits import default_max_connections

    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = default_max_connections()
    assert 16 <= cap <= 4096
    if soft != resource.RLIM_INFINITY:
        assert cap <= soft - 64
    with pytest.raises(ValueError):
        HttpLimits(header_timeout=0)
    with pytest.raises(ValueError):
        HttpLimits(request_encodings=("br",))


def test_the_serve_flags_make_the_limits() -> None:
    import argparse

    from a2a.cli.serve_limits import add_limit_flags, limits_from_flags

    parser = argparse.ArgumentParser()
    add_limit_flags(parser)
    limits = limits_from_flags(parser.parse_args(["--header-timeout", "3", "--request-encodings", "none"]))
    assert limits.header_timeout == 3 and limits.request_encodings == ()
    assert limits_from_flags(parser.parse_args([])) == HttpLimits()


@pytest.mark.parametrize("binding", BODY_BINDINGS, ids=[b.name for b in BODY_BINDINGS])
async def test_the_embedded_application_inflates_under_the_same_limits(binding: Binding) -> None:
    from aiohttp import web

    server = A2AServer(load_example("echo_agent.py"), config=ServerConfig(max_body_bytes=LIMIT))
    runner = web.AppRunner(server.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        gzip = {"Content-Encoding": "gzip"}
        assert (await _exchange(port, binding.request(headers=gzip, body=_gzip(_body_for(binding))))).status == 200
        _assert_binding_error(binding, await _exchange(port, binding.request(headers=gzip, body=_bomb(64))), 413)
        _assert_binding_error(binding, await _exchange(port, binding.request(headers=gzip, body=b"junk")), 400)
        _assert_binding_error(binding, await _exchange(port, binding.request(headers={"Content-Encoding": "br"})), 415)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("drain", [0.0, GUARD], ids=["close-at-once", "drain"])
async def test_a_refused_body_is_never_read_to_its_end(serve, drain: float) -> None:
    _server, port = await serve(HttpLimits(drain_timeout=drain), max_body=1024)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = JSONRPC.request(body=b"").replace(b"Content-Length: 0", b"Content-Length: 100000000")
    writer.write(head + b"x" * 1024)
    reply = await _read_reply(reader)
    _assert_binding_error(JSONRPC, reply, 413, -32600)
    assert reply.headers.get("connection") == "close"
    if drain:
        # What follows is thrown away, up to 1 MiB (the floor), then the connection is closed.
        with contextlib.suppress(ConnectionError):
            for _ in range(64):
                writer.write(b"x" * 65536)
                await writer.drain()
    assert await _closed(reader, 5)
    writer.close()
