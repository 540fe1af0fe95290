"""The access log: one line per request, the operation and the caller, never a credential;
JSON lines with ``--log-format json``; nothing at all when it is off."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import httpx
import pytest
from aiohttp import web

from a2a import A2AClient, A2AServer, Agent, BearerAuth, BearerToken, ServerConfig
from a2a.server.operations.json_logs import JsonFormatter
from tests.conftest import EXAMPLES, embedded, load_example

SECRET = "tok-very-secret-123"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _agent() -> Agent:
    agent = Agent("Logged", "is logged")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    return agent


@pytest.fixture
async def server() -> AsyncIterator[A2AServer]:
    auth = [BearerAuth(credentials={SECRET: "alice"})]
    config = ServerConfig(port=0, access_log=True)
    config.websocket.allow_query_credentials = True
    async with A2AServer(_agent(), auth=auth, config=config) as running:
        yield running


def _lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "a2a.access"]


async def test_one_line_per_request_with_operation_status_and_principal(
    server: A2AServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    async with A2AClient(server.url, credentials=BearerToken(SECRET)) as client:
        task = await client.send("hi")
        await client.get_task(task.id)
    async with httpx.AsyncClient(base_url=server.url or "") as http:
        await http.post(
            "/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"}, headers={"A2A-Version": "1.0"}
        )
        await http.get("/missing")
    lines = _lines(caplog)
    shown = [(r.http_method, r.path, r.status, r.operation, r.binding, r.principal) for r in lines]  # type: ignore[attr-defined]
    assert shown == [
        ("GET", "/.well-known/agent-card.json", 200, "-", "-", "-"),
        ("POST", "/a2a/jsonrpc", 200, "SendMessage", "JSONRPC", "alice"),
        ("POST", "/a2a/jsonrpc", 200, "GetTask", "JSONRPC", "alice"),
        ("POST", "/a2a/jsonrpc", 401, "-", "JSONRPC", "-"),
        ("GET", "/missing", 404, "-", "-", "-"),
    ]
    assert all(r.levelno == logging.INFO for r in lines)
    assert all(isinstance(r.duration_ms, float) and r.duration_ms >= 0 for r in lines)  # type: ignore[attr-defined]
    first = lines[1].getMessage()
    assert first.startswith("127.0.0.1 POST /a2a/jsonrpc 200 ") and first.endswith(" SendMessage JSONRPC alice")


async def test_credentials_never_reach_the_log(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with A2AClient(server.url, credentials=BearerToken(SECRET), binding="HTTP+JSON") as client:
        await client.send("hi")
    ws_url = (server.url or "").replace("http://", "ws://") + f"/a2a/ws?access_token={SECRET}&A2A-Version=1.0"
    async with aiohttp.ClientSession() as session, session.ws_connect(ws_url) as ws:
        await ws.close()
    lines = _lines(caplog)
    assert any(r.path == "/a2a/ws" and r.status == 101 and r.principal == "-" for r in lines)  # type: ignore[attr-defined]
    assert any(r.operation == "SendMessage" and r.binding == "HTTP+JSON" for r in lines)  # type: ignore[attr-defined]
    everything = caplog.text + "".join(JsonFormatter().format(r) for r in caplog.records)
    assert SECRET not in everything


async def test_a_path_cannot_forge_a_line(server: A2AServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    async with httpx.AsyncClient(base_url=server.url or "") as http:
        await http.get("/x%0A127.0.0.1%20GET%20/forged%20200")
    [line] = [r.getMessage() for r in _lines(caplog)]
    assert "\n" not in line and "/x%0A127.0.0.1" in line


async def test_off_means_no_line_and_no_access_layer(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    async with A2AServer(_agent(), config=ServerConfig(port=0)) as server:
        assert server._core().exchanges is None  # no access layer: no per-request cost
        assert server.handler.observer is None or server.handler.observer.tracing is not None
        async with A2AClient(server.url) as client:
            await client.send("hi")
    assert _lines(caplog) == []


def test_json_formatter_writes_one_object_with_the_fields() -> None:
    record = logging.LogRecord("a2a.access", logging.INFO, __file__, 1, "%s %d", ("GET", 200), None)
    record.status = 200
    record.path = "/healthz"
    try:
        raise KeyError("zzz")
    except KeyError:
        record.exc_info = sys.exc_info()
    entry = json.loads(JsonFormatter().format(record))
    assert entry["logger"] == "a2a.access" and entry["level"] == "INFO" and entry["message"] == "GET 200"
    assert entry["status"] == 200 and entry["path"] == "/healthz"
    assert entry["exc_type"] == "KeyError" and "zzz" in entry["exc"]
    assert entry["ts"].endswith("Z")


def _serve(*flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", str(EXAMPLES / "echo_agent.py") + ":agent", "--port", "0"]
    return subprocess.Popen([*argv, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _url_of(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return line.rsplit(" at ", 1)[1].strip()


@pytest.mark.slow
@pytest.mark.parametrize("flags", [(), ("--log-format", "json"), ("--no-access-log",)])
def test_a2a_serve_logs_access_by_default(flags: tuple[str, ...]) -> None:
    proc = _serve(*flags)
    try:
        url = _url_of(proc)
        assert httpx.get(url + "/healthz", timeout=10).status_code == 200
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    lines = [line for line in err.splitlines() if "/healthz" in line]
    if "--no-access-log" in flags:
        assert lines == []
    elif "json" in flags:
        assert len(lines) == 1
        entry = json.loads(lines[0])
        assert entry["logger"] == "a2a.access" and entry["status"] == 200 and entry["path"] == "/healthz"
        assert all(json.loads(line) for line in err.splitlines() if line.strip())  # every line is JSON
    else:
        assert len(lines) == 1 and "a2a.access" in lines[0] and " GET /healthz 200 " in lines[0]


async def test_the_serve_handler_batches_lines_as_the_default_format_writes_them() -> None:
    """``a2a serve``'s access handler: the same text as logging's default format, written in
    one batch ``flush_after`` seconds after the first line (or at ``max_lines``), not per line."""
    import asyncio
    import io

    from a2a.server.operations.access_log import AccessLogHandler

    stream = io.StringIO()
    handler = AccessLogHandler(stream, flush_after=0.05, max_lines=3)
    record = logging.LogRecord("a2a.access", logging.INFO, __file__, 0, "GET %s %d", ("/healthz", 200), None)
    handler.handle(record)
    handler.handle(record)
    assert stream.getvalue() == ""  # kept: nothing written yet
    await asyncio.sleep(0.2)
    expected = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s").format(record) + "\n"
    assert stream.getvalue() == expected * 2
    for _ in range(3):
        handler.handle(record)
    assert stream.getvalue() == expected * 5  # max_lines reached: written at once
    handler.handle(record)
    handler.close()
    assert stream.getvalue() == expected * 6


def test_a_line_added_without_a_record_reads_as_the_record_would() -> None:
    """``add_line`` (the serve handler's fast path, with no ``LogRecord``) writes exactly what
    the same line written through a record and logging's default format would."""
    import io

    from a2a.server.operations.access_log import _LINE, AccessLogHandler

    stream = io.StringIO()
    handler = AccessLogHandler(stream, max_lines=1)  # written at once
    fields = ("10.1.2.3", "POST", "/a2a/jsonrpc", 200, 12.345, "SendMessage", "JSONRPC", "alice")
    handler.add_line(*fields)
    written = stream.getvalue()
    tail = " 10.1.2.3 POST /a2a/jsonrpc 200 12.3ms SendMessage JSONRPC alice\n"
    assert written.count("\n") == 1 and written.endswith(tail)
    second, millisecond = written.partition(" INFO ")[0].split(",")
    record = logging.LogRecord("a2a.access", logging.INFO, __file__, 0, _LINE, fields, None, None)
    record.created = time.mktime(time.strptime(second, "%Y-%m-%d %H:%M:%S")) + int(millisecond) / 1000
    record.msecs = int(millisecond)
    expected = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s").format(record) + "\n"
    assert written == expected


def _stream_call(text: str) -> dict[str, object]:
    message = {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}


async def _access_lines(caplog: pytest.LogCaptureFixture, count: int) -> list[logging.LogRecord]:
    """The access lines once there are ``count`` of them (a line is written when its answer
    ends, which for a stream the client left is when the server notices)."""
    for _ in range(500):  # a hang guard, not a timing assertion
        if len(_lines(caplog)) >= count:
            break
        await asyncio.sleep(0.01)
    return _lines(caplog)


@pytest.fixture
async def echo_logged() -> AsyncIterator[A2AServer]:
    config = ServerConfig(port=0, access_log=True, metrics=True)
    async with A2AServer(load_example("echo_agent.py"), config=config) as running:
        yield running


async def test_a_stream_is_one_line_when_it_ends_with_its_status_and_operation(
    echo_logged: A2AServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{echo_logged.url}/a2a/jsonrpc", json=_stream_call("hold:1"), headers=headers) as r:
            assert r.status == 200
            # Not logged before the stream's end: the line's status and duration are the whole answer's.
            await r.content.readuntil(b"\n\n")
            assert _lines(caplog) == []
            body = await r.read()
        assert b"TASK_STATE_COMPLETED" in body
    [line] = await _access_lines(caplog, 1)
    shown = (line.http_method, line.path, line.status, line.operation, line.binding)  # type: ignore[attr-defined]
    assert shown == ("POST", "/a2a/jsonrpc", 200, "SendStreamingMessage", "JSONRPC")
    assert line.duration_ms >= 0  # type: ignore[attr-defined]


async def test_a_stream_the_client_left_is_logged_499_and_counted(
    echo_logged: A2AServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    async with aiohttp.ClientSession() as session:
        response = await session.post(f"{echo_logged.url}/a2a/jsonrpc", json=_stream_call("hold:60"), headers=headers)
        assert response.status == 200
        await response.content.readuntil(b"\n\n")  # the task is working: the stream is open
        assert _lines(caplog) == []
        response.close()  # the client goes away before the answer's end
        [line] = await _access_lines(caplog, 1)
    assert (line.status, line.operation, line.binding) == (499, "SendStreamingMessage", "JSONRPC")  # type: ignore[attr-defined]
    async with httpx.AsyncClient(base_url=echo_logged.url or "") as http:
        exposition = (await http.get("/metrics")).text
    assert re.search(r'^a2a_http_responses_total\{[^}]*"499"[^}]*\} 1(\.0)?$', exposition, re.M), exposition


async def test_a_refusal_before_any_handler_is_one_line_and_the_next_request_has_its_own(
    server: A2AServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A 404 or 405 is refused as the request is routed (nothing awaited yet); the request
    after it on the same connection is a line of its own (the exchange was reset)."""
    caplog.set_level(logging.INFO, logger="a2a.access")
    async with httpx.AsyncClient(base_url=server.url or "") as http:
        await http.get("/missing")
        await http.get("/a2a/jsonrpc")
        await http.get("/.well-known/agent-card.json")
    shown = [(r.path, r.status, r.operation, r.binding) for r in _lines(caplog)]  # type: ignore[attr-defined]
    assert shown == [
        ("/missing", 404, "-", "-"),
        ("/a2a/jsonrpc", 405, "-", "JSONRPC"),
        ("/.well-known/agent-card.json", 200, "-", "-"),
    ]


async def test_what_the_http_parser_refuses_is_one_line_without_a_method_or_path_and_counted(
    echo_logged: A2AServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A request aiohttp's parser refuses (here a URL over 8 KiB, answered 414) is served as a
    placeholder request: its line shows ``-`` for the method and path it never had parsed."""
    caplog.set_level(logging.INFO, logger="a2a.access")
    async with httpx.AsyncClient(base_url=echo_logged.url or "") as http:
        refused = await http.get("/" + "a" * 9000)
        assert refused.status_code == 414
        assert (await http.get("/healthz")).status_code == 200
        exposition = (await http.get("/metrics")).text
    shown = [(r.http_method, r.path, r.status, r.operation, r.binding) for r in _lines(caplog)]  # type: ignore[attr-defined]
    assert shown[:2] == [("-", "-", 414, "-", "-"), ("GET", "/healthz", 200, "-", "-")]
    assert re.search(r'^a2a_http_responses_total\{[^}]*"414"[^}]*\} 1(\.0)?$', exposition, re.M), exposition


async def test_an_embedded_server_logs_the_same_lines_as_a_started_one(caplog: pytest.LogCaptureFixture) -> None:
    """``app()`` has no connections of ours: there the access layer is a middleware. Same
    fields, same 401 for a refused caller, the operation and the caller of an accepted one."""
    caplog.set_level(logging.INFO, logger="a2a.access")
    auth = [BearerAuth(credentials={SECRET: "alice"})]
    server = A2AServer(_agent(), auth=auth, config=ServerConfig(access_log=True))
    call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}
    headers = {"A2A-Version": "1.0"}
    async with embedded(server.app(), "/agent") as url, httpx.AsyncClient(base_url=url) as http:
        await http.post("/a2a/jsonrpc", json=call, headers=headers)
        authorized = {**headers, "Authorization": f"Bearer {SECRET}"}
        await http.post("/a2a/jsonrpc", json=call, headers=authorized)
    shown = [(r.http_method, r.path, r.status, r.operation, r.binding, r.principal) for r in _lines(caplog)]  # type: ignore[attr-defined]
    assert shown == [
        ("POST", "/agent/a2a/jsonrpc", 401, "-", "JSONRPC", "-"),
        ("POST", "/agent/a2a/jsonrpc", 200, "GetTask", "JSONRPC", "alice"),
    ]


async def test_a_failure_after_the_answer_began_is_logged_500_not_as_a_client_that_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once an answer's headers are out, a failure cannot be answered: the connection is closed.
    Its line still says 500 (the server's fault), not 499 (a client that went away)."""

    async def breaks_midway(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != "/boom":
            return await handler(request)
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b"partial")
        raise RuntimeError("broke after the headers")

    caplog.set_level(logging.INFO, logger="a2a.access")
    config = ServerConfig(port=0, access_log=True, metrics=True)
    server = A2AServer(_agent(), config=config, middlewares=[breaks_midway])
    async with server, aiohttp.ClientSession() as session:
        with contextlib.suppress(aiohttp.ClientError):
            async with session.get(f"{server.url}/boom") as response:
                await response.read()
        [line] = await _access_lines(caplog, 1)
        async with session.get(f"{server.url}/metrics") as response:
            exposition = await response.text()
    assert (line.http_method, line.path, line.status) == ("GET", "/boom", 500)  # type: ignore[attr-defined]
    assert re.search(r'^a2a_http_responses_total\{[^}]*"500"[^}]*\} 1(\.0)?$', exposition, re.M), exposition
    assert not re.search(r'"499"', exposition), exposition
