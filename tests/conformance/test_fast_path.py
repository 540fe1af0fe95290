"""The connections' fast path (``a2a.server.connections``): a unary JSON-RPC call (or a REST
``message:send``) read whole is answered by the connection itself, without aiohttp's request
machinery; everything else is served by aiohttp's path, as before. Read byte by byte off a
socket: what a client sees must be the same either way (the head, the order of answers,
credentials, a client that leaves, a fault), and which path served a request is counted by
spies on both."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from a2a import A2AServer, Agent, RequestContext, ServerConfig
from a2a.server.app import JSONRPC_PATH, REST_PATH
from a2a.server.auth import BearerAuth
from a2a.server.connections import _GuardedConnection
from a2a.server.http_jsonrpc import JsonRpcBinding
from a2a.server.http_rest import RestBinding

from .conftest import StartServer
from .helpers import WAIT, load_module, send_params, wait_until
from .test_json_answer import Answer, assert_fixed_head, connect, jsonrpc_request, rest_request

__all__ = ["connect"]  # the fixture, shared with test_json_answer


@dataclass
class Paths:
    """How many requests each path served."""

    fast: int = 0
    aiohttp: int = 0
    #: Fast answers cancelled (their client left).
    cancelled: int = 0


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[Paths]:
    """Counts the requests of the JSON-RPC and REST endpoints per path (set before a server
    starts: the routes keep the bindings' bound methods)."""
    counted = Paths()
    answer_fast = _GuardedConnection._answer_fast
    handle = JsonRpcBinding.handle
    rest_handle = RestBinding.handle

    async def fast(self: _GuardedConnection, *args: Any) -> None:
        counted.fast += 1
        try:
            await answer_fast(self, *args)
        except asyncio.CancelledError:
            counted.cancelled += 1
            raise

    async def general(self: JsonRpcBinding, request: Any) -> Any:
        counted.aiohttp += 1
        return await handle(self, request)

    async def rest_general(self: RestBinding, request: Any) -> Any:
        counted.aiohttp += 1
        return await rest_handle(self, request)

    monkeypatch.setattr(_GuardedConnection, "_answer_fast", fast)
    monkeypatch.setattr(JsonRpcBinding, "handle", general)
    monkeypatch.setattr(RestBinding, "handle", rest_general)
    yield counted


@dataclass
class Held:
    """An agent that replies at once, except to ``hold``, which waits for ``release``."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    entered: asyncio.Event = field(default_factory=asyncio.Event)

    def agent(self) -> Agent:
        async def handler(ctx: RequestContext) -> None:
            if ctx.text == "hold":
                self.entered.set()
                await self.release.wait()
            await ctx.reply(f"reply to {ctx.text}")

        return Agent("Held", description="Replies, or waits to", handler=handler, replies=True)


async def holding(serve: StartServer, connect: Any, held: Held, **kwargs: Any) -> tuple[A2AServer, Any]:
    """A server of ``held``'s agent and a connection whose first call it holds."""
    server = await serve(held.agent(), **kwargs)
    conn = await connect(server.url)
    conn.writer.write(jsonrpc_request("hold"))
    await asyncio.wait_for(held.entered.wait(), WAIT)
    return server, conn


async def started_echo(serve: StartServer, **kwargs: Any) -> A2AServer:
    return await serve(load_module("echo_agent.py").agent, **kwargs)


def reply_text(answer: Answer) -> str:
    result = json.loads(answer.body)["result"]
    return str(result["message"]["parts"][0]["text"])


def raw_post(body: bytes, *, path: str = JSONRPC_PATH, extra: str = "", version: str = "1.0") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    if version:
        head += f"A2A-Version: {version}\r\n"
    if "Transfer-Encoding" not in extra:
        head += f"Content-Length: {len(body)}\r\n"
    return (head + extra + "\r\n").encode() + body


def call_body(text: str, *, method: str = "SendMessage", request_id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": send_params(text)}).encode()


@pytest.mark.parametrize("path", [JSONRPC_PATH, JSONRPC_PATH + "/"])
async def test_a_unary_call_is_answered_by_the_connection(
    serve: StartServer, connect: Any, paths: Paths, path: str
) -> None:
    server = await started_echo(serve)
    conn = await connect(server.url)
    for text in ("one", "two"):  # kept alive: the second one too
        answer = await conn.ask(raw_post(call_body(text), path=path))
        assert_fixed_head(answer, "application/json")
        assert reply_text(answer) == text
    assert (paths.fast, paths.aiohttp) == (2, 0)


@pytest.mark.parametrize("slash", ["", "/"])
async def test_a_rest_message_send_is_answered_by_the_connection(
    serve: StartServer, connect: Any, paths: Paths, slash: str
) -> None:
    server = await started_echo(serve)
    conn = await connect(server.url)
    answer = await conn.ask(rest_request("rest").replace(b"message:send ", b"message:send" + slash.encode() + b" "))
    assert_fixed_head(answer, "application/a2a+json")
    assert json.loads(answer.body)["message"]["parts"][0]["text"] == "rest"
    assert (paths.fast, paths.aiohttp) == (1, 0)


async def test_rest_refusals_are_framed_as_rest(serve: StartServer, connect: Any, paths: Paths) -> None:
    server = await started_echo(serve, auth=[BearerAuth(credentials={"tok-a": "alice"})])
    conn = await connect(server.url)
    refused = await conn.ask(rest_request("no token"))
    assert refused.status_line == "HTTP/1.1 401 Unauthorized"
    assert refused.header("WWW-Authenticate").startswith("Bearer")
    assert refused.header("Content-Type") == "application/a2a+json"
    assert json.loads(refused.body)["error"]["code"] == 401
    path = f"{REST_PATH}/message:send"
    bad = b"{not json"
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nAuthorization: Bearer tok-a\r\n"
    answer = await conn.ask((head + f"Content-Length: {len(bad)}\r\n\r\n").encode() + bad)
    assert answer.status_line == "HTTP/1.1 400 Bad Request", answer.status_line
    assert json.loads(answer.body)["error"]["status"] == "INVALID_ARGUMENT"
    assert (paths.fast, paths.aiohttp) == (2, 0)


def _chunked(body: bytes) -> bytes:
    return b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"


# What the fast path leaves to aiohttp's path: each is answered as before.
_GENERAL = {
    "a stream": (raw_post(call_body("s", method="SendStreamingMessage")), "text/event-stream"),
    "0.3 (no A2A-Version)": (jsonrpc_request("x", v03=True), "application/json"),
    "a query": (raw_post(call_body("q"), path=JSONRPC_PATH + "?a=1"), "application/json"),
    "Expect": (raw_post(call_body("e"), extra="Expect: 100-continue\r\n"), "application/json"),
    "gzip": (raw_post(gzip.compress(call_body("g")), extra="Content-Encoding: gzip\r\n"), "application/json"),
    "a REST stream": (rest_request("rs").replace(b"message:send", b"message:stream"), "text/event-stream"),
    "a REST tenant": (rest_request("rt").replace(b"/message:send", b"/acme/message:send"), "application/a2a+json"),
    "chunked": (
        raw_post(b"", extra="Transfer-Encoding: chunked\r\n") + _chunked(call_body("c")),
        "application/json",
    ),
}


@pytest.mark.parametrize("case", sorted(_GENERAL))
async def test_what_the_fast_path_leaves_is_served_as_before(
    serve: StartServer, connect: Any, paths: Paths, case: str
) -> None:
    request, content_type = _GENERAL[case]
    server = await started_echo(serve)
    conn = await connect(server.url)
    conn.writer.write(request)
    head = await asyncio.wait_for(conn.reader.readuntil(b"\r\n\r\n"), WAIT)
    if case == "Expect":
        assert head == b"HTTP/1.1 100 Continue\r\n\r\n"
        head = await asyncio.wait_for(conn.reader.readuntil(b"\r\n\r\n"), WAIT)
    if content_type == "text/event-stream":
        assert b"content-type: text/event-stream" in head.lower()
    else:
        assert head.startswith(b"HTTP/1.1 200 OK"), head
        length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))[15:])
        body = json.loads(await asyncio.wait_for(conn.reader.readexactly(length), WAIT))
        assert ("message" if content_type == "application/a2a+json" else "result") in body, body
    assert (paths.fast, paths.aiohttp) == (0, 1)


async def test_pipelined_requests_are_answered_in_order(serve: StartServer, connect: Any, paths: Paths) -> None:
    held = Held()
    _, conn = await holding(serve, connect, held)
    # The first is held on the fast path; two more arrive meanwhile, in one write.
    conn.writer.write(jsonrpc_request("second") + jsonrpc_request("third"))
    await asyncio.sleep(0.1)  # read by the server, and queued behind the first
    held.release.set()
    texts = [reply_text(await conn.ask(b"")) for _ in range(3)]
    assert texts == ["reply to hold", "reply to second", "reply to third"]
    # Then one alone: the fast path again.
    assert reply_text(await conn.ask(jsonrpc_request("fourth"))) == "reply to fourth"
    assert paths.fast >= 2 and paths.fast + paths.aiohttp == 4


async def test_one_that_arrives_while_another_is_answered_waits_its_turn(
    serve: StartServer, connect: Any, paths: Paths
) -> None:
    held = Held()
    _, conn = await holding(serve, connect, held)
    conn.writer.write(jsonrpc_request("next"))
    await asyncio.sleep(0.1)
    held.release.set()
    assert reply_text(await conn.ask(b"")) == "reply to hold"
    assert reply_text(await conn.ask(b"")) == "reply to next"
    assert (paths.fast, paths.aiohttp) == (2, 0)


async def test_credentials_are_checked_with_the_challenge_and_the_id(
    serve: StartServer, connect: Any, paths: Paths
) -> None:
    server = await started_echo(serve, auth=[BearerAuth(credentials={"tok-a": "alice"})])
    conn = await connect(server.url)
    refused = await conn.ask(raw_post(call_body("no token", request_id=7)))
    assert refused.status_line == "HTTP/1.1 401 Unauthorized"
    assert refused.header("WWW-Authenticate").startswith("Bearer")
    error = json.loads(refused.body)
    assert error["id"] == 7 and error["error"]["code"] == -32000
    wrong = await conn.ask(raw_post(call_body("bad"), extra="Authorization: Bearer nope\r\n"))
    assert wrong.status_line == "HTTP/1.1 401 Unauthorized"
    allowed = await conn.ask(raw_post(call_body("ok"), extra="Authorization: Bearer tok-a\r\n"))
    assert_fixed_head(allowed, "application/json")
    assert reply_text(allowed) == "ok"
    assert (paths.fast, paths.aiohttp) == (3, 0)


async def test_bad_json_is_answered_as_jsonrpc_says(serve: StartServer, connect: Any, paths: Paths) -> None:
    server = await started_echo(serve)
    conn = await connect(server.url)
    parse = json.loads((await conn.ask(raw_post(b'{"jsonrpc": "2.0", "id": 1, "meth'))).body)
    assert parse["error"]["code"] == -32700 and parse["id"] is None
    unknown = json.loads((await conn.ask(raw_post(b'{"jsonrpc":"2.0","id":4,"method":"Nope","params":{}}'))).body)
    assert unknown["error"]["code"] == -32601 and unknown["id"] == 4
    assert reply_text(await conn.ask(raw_post(call_body("still here")))) == "still here"
    assert (paths.fast, paths.aiohttp) == (3, 0)


async def test_a_body_over_the_limit_is_refused_413(serve: StartServer, connect: Any, paths: Paths) -> None:
    server = await started_echo(serve, config=ServerConfig(max_body_bytes=2048))
    conn = await connect(server.url)
    answer = await conn.ask(raw_post(call_body("x" * 4000)))
    assert answer.status_line.startswith("HTTP/1.1 413"), answer.status_line
    assert paths.fast == 0


async def test_a_client_that_leaves_cancels_its_answer_and_is_logged_499(
    serve: StartServer, connect: Any, paths: Paths, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    _, conn = await holding(serve, connect, Held(), config=ServerConfig(access_log=True))
    conn.writer.close()

    async def cancelled() -> bool:
        return paths.cancelled == 1

    await wait_until(cancelled, what="the answer cancelled")
    lines = [r.getMessage() for r in caplog.records if r.name == "a2a.access"]
    assert any(f" POST {JSONRPC_PATH} 499 " in line and "SendMessage JSONRPC" in line for line in lines), lines
    assert paths.fast == 1


async def test_the_access_line_names_the_call(
    serve: StartServer, connect: Any, paths: Paths, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="a2a.access")
    server = await started_echo(
        serve, auth=[BearerAuth(credentials={"tok-a": "alice"})], config=ServerConfig(access_log=True)
    )
    conn = await connect(server.url)
    await conn.ask(raw_post(call_body("logged"), extra="Authorization: Bearer tok-a\r\n"))
    lines = [r.getMessage() for r in caplog.records if r.name == "a2a.access"]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"127.0.0.1 POST {JSONRPC_PATH} 200 ")
    assert lines[0].endswith("SendMessage JSONRPC alice"), lines[0]
    assert "tok-a" not in lines[0]
    assert paths.fast == 1


async def test_a_fault_of_ours_is_answered_500_and_the_connection_closed(
    serve: StartServer, connect: Any, paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: JsonRpcBinding, call: Any, ctx: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(JsonRpcBinding, "_answer", broken)
    server = await started_echo(serve)
    conn = await connect(server.url)
    answer = await conn.ask(raw_post(call_body("boom", request_id=9)))
    assert answer.status_line == "HTTP/1.1 500 Internal Server Error"
    assert answer.header("Connection") == "close"
    assert json.loads(answer.body)["error"]["code"] == -32603
    assert await conn.closed()
    assert paths.fast == 1


async def test_a_stop_answers_the_call_in_flight_first(serve: StartServer, connect: Any, paths: Paths) -> None:
    server, conn = await holding(serve, connect, Held())
    stopping = asyncio.create_task(server.stop())
    answer = await conn.ask(b"")
    await asyncio.wait_for(stopping, WAIT)
    body = json.loads(answer.body)
    # Stopped while it ran: answered (its run cancelled), not cut off.
    assert answer.status_line == "HTTP/1.1 200 OK"
    assert "result" in body or "error" in body, body
    assert paths.fast == 1
