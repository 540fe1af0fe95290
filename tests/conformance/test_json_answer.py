"""The unary answers of the JSON-RPC and REST bindings (``JsonAnswer``): read byte by byte off a
socket. On a kept-alive HTTP/1.1 connection of the started server the head is written whole by
``JsonAnswer`` itself; anywhere else (HTTP/1.0, ``Connection: close``, an embedded server whose
application has ``on_response_prepare`` signals, a middleware that changes the answer) it must be
exactly aiohttp's answer."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler

import a2a
from a2a import A2AServer, ServerConfig
from a2a.server.app import JSONRPC_PATH, REST_PATH
from a2a.server.json_answer import JsonAnswer, http_date
from tests.conftest import embedded

from .conftest import StartServer
from .helpers import WAIT, load_module, send_params

IMF_FIXDATE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT"
)


@dataclass
class Answer:
    status_line: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str:
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        assert len(values) == 1, (name, self.headers)
        return values[0]

    @property
    def names(self) -> list[str]:
        return [key for key, _ in self.headers]


def jsonrpc_request(text: str, *, version: str = "1.1", extra: str = "", v03: bool = False, mount: str = "") -> bytes:
    if v03:
        message = {
            "kind": "message",
            "messageId": f"m-{text}",
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
        }
        call: dict[str, Any] = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": message}}
        headers = ""
    else:
        call = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params(text)}
        headers = "A2A-Version: 1.0\r\n"
    body = json.dumps(call).encode()
    return (
        f"POST {mount}{JSONRPC_PATH} HTTP/{version}\r\nHost: 127.0.0.1\r\n{headers}Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n{extra}\r\n"
    ).encode() + body


def rest_request(text: str, mount: str = "") -> bytes:
    body = json.dumps(send_params(text)).encode()
    return (
        f"POST {mount}{REST_PATH}/message:send HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


class Connection:
    """One client connection, read by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def ask(self, request: bytes) -> Answer:
        self.writer.write(request)
        await self.writer.drain()
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), WAIT)
        status_line, *lines = head[:-4].decode("latin-1").split("\r\n")
        headers = [(key, value.strip()) for key, value in (line.split(":", 1) for line in lines)]
        answer = Answer(status_line, headers, b"")
        answer.body = await asyncio.wait_for(self.reader.readexactly(int(answer.header("Content-Length"))), WAIT)
        return answer

    async def closed(self) -> bool:
        """Whether the server closed the connection after its answer (nothing more arrives)."""
        return await asyncio.wait_for(self.reader.read(1), WAIT) == b""


@pytest.fixture
async def connect() -> AsyncIterator[Any]:
    opened: list[asyncio.StreamWriter] = []

    async def open_to(url: str) -> Connection:
        port = int(url.rstrip("/").rsplit(":", 1)[1].split("/")[0])
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), WAIT)
        opened.append(writer)
        return Connection(reader, writer)

    yield open_to
    for writer in opened:
        writer.close()


@pytest.fixture
def slow_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[JsonAnswer]]:
    """The answers that left the fast path (became an ordinary ``web.Response``)."""
    left: list[JsonAnswer] = []
    become = JsonAnswer._become_response

    def counting(self: JsonAnswer) -> None:
        left.append(self)
        become(self)

    monkeypatch.setattr(JsonAnswer, "_become_response", counting)
    yield left


@pytest.fixture
async def started(serve: StartServer) -> str:
    server = await serve(load_module("echo_agent.py").agent)
    assert server.url is not None
    return server.url


def assert_fixed_head(answer: Answer, content_type: str) -> None:
    assert answer.status_line == "HTTP/1.1 200 OK"
    assert answer.names == ["Content-Type", "Content-Length", "Date", "Server"]
    assert answer.header("Content-Type") == content_type
    assert int(answer.header("Content-Length")) == len(answer.body)
    assert IMF_FIXDATE.fullmatch(answer.header("Date")), answer.header("Date")
    sent = email.utils.parsedate_to_datetime(answer.header("Date")).timestamp()
    assert abs(sent - time.time()) < 120  # today's date, not a fixed or stale one
    assert answer.header("Server") == f"a2a-net/{a2a.__version__}"


async def test_a_jsonrpc_answer_has_exactly_its_head(started: str, connect: Any, slow_paths: list[JsonAnswer]) -> None:
    conn = await connect(started)
    answer = await conn.ask(jsonrpc_request("fixed head"))
    assert_fixed_head(answer, "application/json")
    assert json.loads(answer.body)["result"]["message"]["parts"][0]["text"] == "fixed head"
    assert slow_paths == [], "a kept-alive HTTP/1.1 answer of the started server is written in one piece"


async def test_a_rest_answer_has_exactly_its_head(started: str, connect: Any, slow_paths: list[JsonAnswer]) -> None:
    conn = await connect(started)
    answer = await conn.ask(rest_request("rest head"))
    assert_fixed_head(answer, "application/a2a+json")
    assert json.loads(answer.body)["message"]["parts"][0]["text"] == "rest head"
    assert slow_paths == []


async def test_answers_follow_each_other_on_one_kept_alive_connection(
    started: str, connect: Any, slow_paths: list[JsonAnswer]
) -> None:
    conn = await connect(started)
    first = await conn.ask(jsonrpc_request("one"))
    second = await conn.ask(jsonrpc_request("two"))
    legacy = await conn.ask(jsonrpc_request("three", v03=True))  # 0.3, translated at the edge
    rest = await conn.ask(rest_request("four"))
    for answer in (first, second, legacy):
        assert_fixed_head(answer, "application/json")
    assert_fixed_head(rest, "application/a2a+json")
    assert json.loads(second.body)["result"]["message"]["parts"][0]["text"] == "two"
    assert json.loads(legacy.body)["result"]["parts"][0]["text"] == "three"
    assert json.loads(rest.body)["message"]["parts"][0]["text"] == "four"
    assert slow_paths == []


async def test_on_an_aiohttp_without_class_defaults_every_answer_takes_its_path(
    started: str, connect: Any, slow_paths: list[JsonAnswer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiohttp 3.9 and 3.10 set the response's defaults in ``__init__``: there an answer is an
    ordinary ``web.Response`` from the start, and the same bytes reach the client."""
    import a2a.server.json_answer as json_answer

    monkeypatch.setattr(json_answer, "LAZY", False)
    conn = await connect(started)
    # 0.3: a 1.0 unary call is answered by the connection itself (``connections``), not here.
    answer = await conn.ask(jsonrpc_request("old aiohttp", v03=True))
    assert_fixed_head(answer, "application/json")
    assert json.loads(answer.body)["result"]["parts"][0]["text"] == "old aiohttp"
    assert len(slow_paths) == 1 and not slow_paths[0]._fast


async def test_an_http10_request_gets_aiohttps_answer_and_the_connection_closes(
    started: str, connect: Any, slow_paths: list[JsonAnswer]
) -> None:
    conn = await connect(started)
    answer = await conn.ask(jsonrpc_request("old client", version="1.0"))
    assert answer.status_line == "HTTP/1.0 200 OK"
    assert answer.names == ["Content-Type", "Content-Length", "Date", "Server"]
    assert answer.header("Server") == f"a2a-net/{a2a.__version__}"
    assert json.loads(answer.body)["result"]["message"]["parts"][0]["text"] == "old client"
    assert await conn.closed()
    assert len(slow_paths) == 1


async def test_an_http10_keep_alive_request_is_told_so_and_kept(
    started: str, connect: Any, slow_paths: list[JsonAnswer]
) -> None:
    conn = await connect(started)
    ask = jsonrpc_request("kept", version="1.0", extra="Connection: keep-alive\r\n")
    first, second = await conn.ask(ask), await conn.ask(ask)
    for answer in (first, second):
        assert answer.status_line == "HTTP/1.0 200 OK"
        assert answer.names == ["Content-Type", "Content-Length", "Date", "Server", "Connection"]
        assert answer.header("Connection") == "keep-alive"
    assert len(slow_paths) == 2


async def test_connection_close_is_answered_with_it_and_honoured(
    started: str, connect: Any, slow_paths: list[JsonAnswer]
) -> None:
    conn = await connect(started)
    answer = await conn.ask(jsonrpc_request("last one", extra="Connection: close\r\n"))
    assert answer.status_line == "HTTP/1.1 200 OK"
    assert answer.names == ["Content-Type", "Content-Length", "Date", "Server", "Connection"]
    assert answer.header("Connection") == "close"
    assert json.loads(answer.body)["result"]["message"]["parts"][0]["text"] == "last one"
    assert await conn.closed()
    assert len(slow_paths) == 1


async def test_an_embedded_servers_answers_pass_its_applications_signals(connect: Any) -> None:
    async def mark(_request: web.Request, response: web.StreamResponse) -> None:
        response.headers["X-Parent"] = "seen"

    parent = web.Application()
    parent.on_response_prepare.append(mark)
    parent.add_subapp("/agent", A2AServer(load_module("echo_agent.py").agent, config=ServerConfig()).app())
    async with embedded(parent) as url:
        conn = await connect(url)
        rpc = await conn.ask(
            jsonrpc_request("embedded").replace(JSONRPC_PATH.encode(), b"/agent" + JSONRPC_PATH.encode())
        )
        rest = await conn.ask(rest_request("embedded rest", mount="/agent"))
    for answer, content_type in ((rpc, "application/json"), (rest, "application/a2a+json")):
        assert answer.status_line == "HTTP/1.1 200 OK"
        assert answer.header("X-Parent") == "seen"
        assert answer.header("Content-Type") == content_type
        assert answer.header("Server") == f"a2a-net/{a2a.__version__}"
    assert json.loads(rest.body)["message"]["parts"][0]["text"] == "embedded rest"


async def _echo_behind(serve: StartServer, connect: Any, middleware: Any) -> Any:
    """A raw connection to the echo agent served behind ``middleware``."""
    server = await serve(load_module("echo_agent.py").agent, middlewares=[middleware])
    assert server.url is not None
    return await connect(server.url)


async def test_a_middleware_may_change_the_answer(serve: StartServer, connect: Any) -> None:
    async def decorate(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        response.headers["X-Decorated"] = "yes"
        response.set_cookie("seen", "1")
        return response

    conn = await _echo_behind(serve, connect, decorate)
    first = await conn.ask(jsonrpc_request("decorated"))
    second = await conn.ask(jsonrpc_request("again"))
    for answer in (first, second):
        assert answer.status_line == "HTTP/1.1 200 OK"
        assert answer.header("X-Decorated") == "yes"
        assert answer.header("Set-Cookie").startswith("seen=1")
        assert answer.header("Content-Type") == "application/json"
        assert int(answer.header("Content-Length")) == len(answer.body)
    assert json.loads(second.body)["result"]["message"]["parts"][0]["text"] == "again"


async def test_an_answer_prepared_by_a_middleware_may_still_be_changed(serve: StartServer, connect: Any) -> None:
    """Prepared on the fast path (nothing written), then its headers reached for: aiohttp
    prepares it again, and the answer on the wire is whole."""

    async def early(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        await response.prepare(request)
        response.headers["X-Late"] = "yes"
        if request.path.endswith("rest/message:send"):
            await response.write(b"")  # the same, by writing
        return response

    conn = await _echo_behind(serve, connect, early)
    rpc = await conn.ask(jsonrpc_request("prepared early"))
    rest = await conn.ask(rest_request("written early"))
    for answer in (rpc, rest):
        assert answer.status_line == "HTTP/1.1 200 OK"
        assert answer.header("Server") == f"a2a-net/{a2a.__version__}"
        assert int(answer.header("Content-Length")) == len(answer.body)
    assert json.loads(rpc.body)["result"]["message"]["parts"][0]["text"] == "prepared early"
    assert json.loads(rest.body)["message"]["parts"][0]["text"] == "written early"


def test_it_is_a_response_like_any_other_when_looked_at() -> None:
    answer = JsonAnswer(b'{"a":1}', "application/a2a+json")
    assert answer.status == 200 and answer.reason == "OK"
    assert answer.body == b'{"a":1}'
    assert answer.content_type == "application/a2a+json"
    assert answer.headers["Content-Type"] == "application/a2a+json"
    assert answer.content_length == 7
    key = web.ResponseKey("key", str)
    answer[key] = "value"
    assert answer[key] == "value"
    with pytest.raises(AttributeError):
        answer.no_such_attribute  # noqa: B018


def test_http_date_is_an_imf_fixdate() -> None:
    assert http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT"  # RFC 9110's example
    rng = random.Random(13)
    for _ in range(200):
        seconds = rng.randrange(0, 4_000_000_000)
        assert http_date(seconds) == email.utils.formatdate(seconds, usegmt=True)
