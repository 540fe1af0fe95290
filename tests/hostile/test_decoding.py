"""Hostile request bodies on every binding: the exact error and id, and nothing else breaks.

Deep nesting, huge numbers, invalid UTF-8, NUL bytes, duplicate keys, batches, notifications and
out-of-range timestamps over JSON-RPC (HTTP), REST, WebSocket and stdio. After each one the
connection (or the stdio server) still serves, a stream open on the same WebSocket connection
goes on, and the log holds no traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from a2a import A2AServer, Agent, ServerConfig
from a2a.protocol.nesting import DEFAULT_MAX_JSON_DEPTH, check_depth, json_depth, too_deep_id
from a2a.server.backends.base import Backend
from a2a.server.channels.stdio import StdioConfig, serve_stdio
from tests.asgi_serving import HOSTS, hosted

V1 = {"A2A-Version": "1.0"}
BOUND = 10.0
LIMIT = DEFAULT_MAX_JSON_DEPTH

#: ``{id}`` stands for the request's id, as JSON.
DEEP = b"[" * 1000 + b"]" * 1000


def _envelope(method: str, params: bytes, ident: bytes = b"{id}") -> bytes:
    return b'{"jsonrpc":"2.0","id":' + ident + b',"method":"' + method.encode() + b'","params":' + params + b"}"


def _nested_metadata(levels: int) -> bytes:
    """A SendMessage whose body nests exactly ``levels`` deep (envelope 1, params 2, message 3,
    metadata 4, then lists); with a proto (snake_case) field name, so that the codec's
    normalising walker runs over it as well as msgspec, and a task made of it (kept in the
    store, encoded again in the answer's history)."""
    inner = b"[" * (levels - 4) + b"1" + b"]" * (levels - 4)
    message = b'{"message_id":"m-deep-' + str(levels).encode() + b'","role":"ROLE_USER","parts":[{"text":"stream:1"}],'
    return _envelope("SendMessage", b'{"message":' + message + b'"metadata":{"k":' + inner + b"}}}")


#: (name, body, JSON-RPC code, whether the answer carries the request's id)
CASES: list[tuple[str, bytes, int, bool]] = [
    ("deep params", _envelope("GetTask", DEEP), -32600, True),
    ("deep params, id last", b'{"jsonrpc":"2.0","method":"GetTask","params":' + DEEP + b',"id":{id}}', -32600, True),
    ("deep object", _envelope("GetTask", b'{"a":' * 1000 + b"1" + b"}" * 1000), -32600, True),
    ("deep, never closed", _envelope("GetTask", b"[" * 50000), -32600, True),
    ("deep body", b"[" * 2000 + b"]" * 2000, -32600, False),
    ("one level over the limit", _nested_metadata(LIMIT + 1), -32600, True),
    ("huge integer id", _envelope("GetTask", b'{"id":"x"}', b"9" * 5000), -32600, False),
    ("huge integer param", _envelope("ListTasks", b'{"pageSize":' + b"9" * 5000 + b"}"), -32602, True),
    ("huge float param", _envelope("ListTasks", b'{"pageSize":1e999}'), -32602, True),
    (
        "huge number in metadata",
        _envelope("CancelTask", b'{"id":"t","metadata":{"n":' + b"9" * 5000 + b"}}"),
        -32602,
        True,
    ),
    ("invalid UTF-8", _envelope("GetTask", b'{"id":"\xff\xfe"}'), -32700, True),
    ("lone surrogate", _envelope("GetTask", b'{"id":"\\ud800"}'), -32700, False),
    ("raw NUL", _envelope("GetTask", b'{"id":"a\x00b"}'), -32700, False),
    ("escaped NUL in the method", _envelope("GetTask\\u0000", b'{"id":"x"}'), -32601, True),
    ("escaped NUL in a task id", _envelope("GetTask", b'{"id":"a\\u0000b"}'), -32001, True),
    (
        "duplicate id (the last counts)",
        b'{"jsonrpc":"2.0","id":"first","id":{id},"method":"GetTask","params":{"id":"x"}}',
        -32001,
        True,
    ),
    ("duplicate param", _envelope("GetTask", b'{"id":"x","id":"y"}'), -32001, True),
    ("batch", b"[" + _envelope("GetTask", b'{"id":"x"}') + b"]", -32600, False),
    ("empty batch", b"[]", -32600, False),
    (
        "timestamp out of range",
        _envelope("ListTasks", b'{"statusTimestampAfter":"9999-12-31T23:59:59-23:59"}'),
        -32602,
        True,
    ),
    (
        "timestamp before year 1",
        _envelope("ListTasks", b'{"statusTimestampAfter":"0001-01-01T00:00:00+23:59"}'),
        -32602,
        True,
    ),
]
CASE_IDS = [case[0] for case in CASES]

NOTIFICATIONS = [
    b'{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}',
    b'{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{"messageId":"m-n","role":"ROLE_USER","parts":[{"text":"hi"}]}}}',
    b'{"jsonrpc":"2.0","method":"NoSuchMethod","params":{}}',
    b'{"jsonrpc":"2.0","method":"GetTask","params":' + b"[" * 30 + b"]" * 30 + b"}",
    b'{"jsonrpc":"1.0","method":"GetTask"}',
]


def _no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Bad input costs at most a line at WARNING: no traceback, nothing at ERROR."""
    for record in caplog.records:
        assert record.exc_info is None, f"a traceback in the log: {record.getMessage()}"
        assert record.levelno < logging.ERROR, f"logged at {record.levelname}: {record.getMessage()}"


@pytest.fixture(params=HOSTS)
async def server(echo_agent: Agent, request: pytest.FixtureRequest) -> AsyncIterator[A2AServer]:
    """The echo agent served by each host: aiohttp (``start``) and ASGI (uvicorn)."""
    async with hosted(A2AServer(echo_agent, config=ServerConfig(port=0)), request.param) as running:
        yield running


# ---- the measure itself ----------------------------------------------------------------------


def _reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_reference_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_reference_depth(v) for v in value), default=0)
    return 0


def test_depth_is_exact_for_random_json() -> None:
    rng = random.Random(16)
    alphabet = 'ab"\\[]{}:,\u00e9\n '

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))

    def value(level: int) -> Any:
        roll = rng.random()
        if level > 10 or roll < 0.3:
            return rng.choice([1, None, True, text()])
        if roll < 0.65:
            return [value(level + 1) for _ in range(rng.randint(0, 4))]
        return {text(): value(level + 1) for _ in range(rng.randint(0, 4))}

    for _ in range(3000):
        doc = value(0)
        body = json.dumps(doc, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode()
        assert json_depth(body) == _reference_depth(doc), body


def test_depth_limit_boundary_and_id() -> None:
    check_depth(b"[" * LIMIT + b"]" * LIMIT, LIMIT)
    with pytest.raises(Exception, match="65 levels deep"):
        check_depth(b"[" * (LIMIT + 1) + b"]" * (LIMIT + 1), LIMIT)
    # Brackets inside strings do not count, escaped quotes do not end a string.
    check_depth(b'{"a":"' + b"[" * 500 + b'\\"' + b"{" * 500 + b'"}', LIMIT)
    assert too_deep_id(_envelope("GetTask", DEEP).replace(b"{id}", b'"abc"')) == "abc"
    assert too_deep_id(b'{"params":' + DEEP + b',"id":42}') == 42
    assert too_deep_id(b'{"params":' + DEEP + b',"id":true}') is None
    assert too_deep_id(b'{"a":{"id":3},"p":' + DEEP + b"}") is None  # a nested "id" is no request id


# ---- JSON-RPC over HTTP ----------------------------------------------------------------------


async def _post(session: aiohttp.ClientSession, url: str, body: bytes) -> tuple[int, dict[str, Any]]:
    async with asyncio.timeout(BOUND):
        async with session.post(url, data=body, headers={**V1, "Content-Type": "application/json"}) as response:
            return response.status, json.loads(await response.read())


@pytest.mark.parametrize(("name", "body", "code", "with_id"), CASES, ids=CASE_IDS)
async def test_jsonrpc_http(
    server: A2AServer, caplog: pytest.LogCaptureFixture, name: str, body: bytes, code: int, with_id: bool
) -> None:
    assert server.url is not None
    url = server.url + "/a2a/jsonrpc"
    async with aiohttp.ClientSession() as session:
        status, answer = await _post(session, url, body.replace(b"{id}", b'"req-7"'))
        assert status == 200, answer
        assert answer["error"]["code"] == code, answer
        assert answer["id"] == ("req-7" if with_id else None), answer
        status, answer = await _post(session, url, _envelope("GetTask", b'{"id":"x"}').replace(b"{id}", b"8"))
        assert answer["error"]["code"] == -32001 and answer["id"] == 8, "the server goes on serving"
    _no_traceback(caplog)


async def test_jsonrpc_http_depth_at_the_limit_is_served(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    """Data that passes the depth check goes through every walker (proto names, metadata,
    encoding the answer) without a RecursionError."""
    assert server.url is not None
    async with aiohttp.ClientSession() as session:
        _, answer = await _post(session, server.url + "/a2a/jsonrpc", _nested_metadata(LIMIT).replace(b"{id}", b"1"))
    history = answer["result"]["task"]["history"]
    assert history[0]["metadata"]["k"] == json.loads(b"[" * (LIMIT - 4) + b"1" + b"]" * (LIMIT - 4))
    _no_traceback(caplog)


async def test_jsonrpc_http_notification_is_refused(server: A2AServer) -> None:
    """Over HTTP every request has an answer: a notification is -32600 (protocol.md §3)."""
    assert server.url is not None
    async with aiohttp.ClientSession() as session:
        _, answer = await _post(session, server.url + "/a2a/jsonrpc", NOTIFICATIONS[0])
    assert answer["error"]["code"] == -32600 and answer["id"] is None


# ---- REST ------------------------------------------------------------------------------------


REST_CASES = [
    ("POST", "message:send", DEEP, 400, "INVALID_REQUEST"),
    ("POST", "message:send", b'{"message":' + b'{"a":' * 999 + b"1" + b"}" * 1000, 400, "INVALID_REQUEST"),
    ("POST", "tasks/t:cancel", b'{"metadata":' + b"[" * 5000 + b"}", 400, "INVALID_REQUEST"),
    ("POST", "message:send", b'{"message":{"messageId":"\xff"}}', 400, "PARSE_ERROR"),
    ("POST", "message:send", b"[" + b'{"message":{}}' + b"]", 400, None),
    ("GET", "tasks?statusTimestampAfter=9999-12-31T23:59:59-23:59", None, 400, "INVALID_PARAMS"),
    ("GET", "tasks?pageSize=" + "9" * 5000, None, 400, "INVALID_PARAMS"),
    ("GET", "tasks/a%00b", None, 404, "TASK_NOT_FOUND"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "reason"), REST_CASES)
async def test_rest(
    server: A2AServer,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    reason: str | None,
) -> None:
    assert server.url is not None
    base = server.url + "/a2a/rest/"
    headers = {**V1, "Content-Type": "application/json"}
    async with aiohttp.ClientSession() as session:
        async with asyncio.timeout(BOUND), session.request(method, base + path, data=body, headers=headers) as response:
            answer = json.loads(await response.read())
        assert response.status == status, answer
        assert answer["error"]["status"] in ("INVALID_ARGUMENT", "NOT_FOUND"), answer
        if reason is not None:
            assert answer["error"]["details"][0]["reason"] == reason, answer
        async with asyncio.timeout(BOUND), session.get(base + "tasks/x", headers=V1) as response:
            assert response.status == 404, "the server goes on serving"
    _no_traceback(caplog)


# ---- the connections: WebSocket and stdio ----------------------------------------------------

Send = Callable[[bytes], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


async def _answers_until_probe(send: Send, receive: Receive, probe: str) -> list[dict[str, Any]]:
    """Every frame that arrives before the answer to a probe sent now (which proves the
    connection still serves), the probe's answer excluded; frames of other streams are dropped."""
    await send(_envelope("GetTask", b'{"id":"no-such-task"}').replace(b"{id}", json.dumps(probe).encode()))
    frames: list[dict[str, Any]] = []
    async with asyncio.timeout(BOUND):
        while True:
            frame = await receive()
            if frame.get("id") == probe:
                assert frame["error"]["code"] == -32001, frame
                return frames
            if frame.get("id") != "stream":
                frames.append(frame)


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


async def _check_connection(send: Send, receive: Receive, *, text_only: bool = False) -> None:
    """``text_only``: WebSocket text frames are UTF-8 by the protocol's rule (the WebSocket
    layer closes with 1007 on anything else), so bodies that are not are left out."""
    for n, (name, body, code, with_id) in enumerate(CASES):
        if text_only and not _is_utf8(body):
            continue
        await send(body.replace(b"{id}", f'"c-{n}"'.encode()))
        answers = await _answers_until_probe(send, receive, f"probe-{n}")
        assert len(answers) == 1, (name, answers)
        assert answers[0]["error"]["code"] == code, (name, answers[0])
        assert answers[0]["id"] == (f"c-{n}" if with_id else None), (name, answers[0])
    for n, body in enumerate(NOTIFICATIONS):
        await send(body)
        answers = await _answers_until_probe(send, receive, f"after-notification-{n}")
        assert answers == [], f"a notification was answered: {body[:80]!r} -> {answers}"
    # Served in its own time (answers come out of order): wait for this one.
    await send(_nested_metadata(LIMIT).replace(b"{id}", b'"at-limit"'))
    async with asyncio.timeout(BOUND):
        while (frame := await receive()).get("id") != "at-limit":
            pass
    assert "result" in frame, frame


async def test_websocket(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    """Every malformation on one connection, while a stream on it goes on to its normal end."""
    assert server.url is not None
    url = server.url.replace("http://", "ws://") + "/a2a/ws"
    stream_frames: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=V1) as ws:

        async def send(data: bytes) -> None:
            await ws.send_str(data.decode())

        async def receive() -> dict[str, Any]:
            frame: dict[str, Any] = json.loads(await ws.receive_str())
            if frame.get("id") == "stream":
                stream_frames.append(frame)
            return frame

        hold = b'{"message":{"messageId":"m-hold","role":"ROLE_USER","parts":[{"text":"hold:30"}]}}'
        await send(_envelope("SendStreamingMessage", hold).replace(b"{id}", b'"stream"'))
        await _check_connection(send, receive, text_only=True)
        assert stream_frames and "result" in stream_frames[0], "the stream started"
        assert not any("streamEnd" in f or "error" in f for f in stream_frames), "the stream was not cut"
        await send(b'{"jsonrpc":"2.0","method":"$/cancel","params":{"id":"stream"}}')
        async with asyncio.timeout(BOUND):
            while "streamEnd" not in stream_frames[-1]:
                await receive()
        assert stream_frames[-1]["streamEnd"]["reason"] == "canceled", "the stream ended with its end frame"
    _no_traceback(caplog)


@asynccontextmanager
async def _stdio_server(server: A2AServer) -> AsyncIterator[tuple[Send, Receive, asyncio.Task[int]]]:
    """``serve_stdio`` over a pair of pipes, in this process (as ``a2a serve --stdio`` runs it)."""
    to_agent_read, to_agent_write = os.pipe()
    from_agent_read, from_agent_write = os.pipe()
    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(
        serve_stdio(
            server.agent,
            backend=Backend(server.handler.store, server.handler.bus),
            config=StdioConfig(),
            stdin_fd=to_agent_read,
            stdout_fd=from_agent_write,
            stop=stop,
        )
    )
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_agent_read, "rb", 0))
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(to_agent_write, "wb", 0))

    async def send(data: bytes) -> None:
        transport.write(data + b"\n")

    async def receive() -> dict[str, Any]:
        line = await reader.readline()
        assert line, "the stdio server ended its output"
        frame: dict[str, Any] = json.loads(line)
        return frame

    try:
        yield send, receive, serving
    finally:
        stop.set()
        transport.close()
        await asyncio.wait_for(serving, BOUND)
        os.close(to_agent_read)
        os.close(from_agent_write)


async def test_stdio(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    async with _stdio_server(server) as (send, receive, serving):
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"serviceParameters": V1}}
        await send(json.dumps(init).encode())
        async with asyncio.timeout(BOUND):
            assert "result" in await receive()
        await _check_connection(send, receive)
        assert not serving.done(), "the stdio server goes on"
    _no_traceback(caplog)
