"""Fuzz every binding of a real server with hostile request bodies, and count what must never happen.

    python benchmarks/fuzz_bindings.py [--count 20000] [--seed 1] [--bindings jsonrpc,rest,ws,stdio]

Starts ``a2a serve examples/echo_agent.py:agent`` (as configured by default: a SQLite store, in
a temporary directory, and push notifications on) and a stdio child (``--stdio``), then sends
``--count`` bodies per binding: valid requests of every operation mutated field by field (wrong
types, missing and unknown fields, huge numbers, NUL characters, invalid UTF-8, lone
surrogates, duplicate keys, deep nesting, out-of-range timestamps, oneof violations, enum
numbers, proto field names) and whole-body malformations (batches, notifications, truncated,
random bytes, envelope mistakes).

Counted per binding (each must be 0): server deaths, HTTP 5xx, -32603 answers, dropped
connections, hangs (no answer within ``--wait`` seconds), and tracebacks in the server's log.
Over WebSocket and stdio every body is followed by a probe request on the same connection: the
probe's answer proves the connection survived and bounds the wait for the body's own answers.
Seeded: the same seed sends the same bodies. Exit status 1 when any count is not 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

REPO = Path(__file__).resolve().parents[1]
AGENT = f"{REPO / 'examples' / 'echo_agent.py'}:agent"
VERSION = {"A2A-Version": "1.0"}
BINDINGS = ("jsonrpc", "rest", "ws", "stdio")
#: A longer request line is refused before any binding sees it (414 with the binding's error).
MAX_URL = 8000
#: The server's default message limit: a longer WebSocket message or stdio line ends the
#: connection by design (close 1009 / exit 1, protocol.md §6), so none is sent there; over HTTP
#: it is answered 413 like any request.
MAX_MESSAGE = 4 * 1024 * 1024

# ---- the bodies ------------------------------------------------------------------------------

#: A value that stands for raw JSON text (spliced in after ``json.dumps``): how invalid UTF-8,
#: huge numbers and duplicate keys get into a body.
_RAW = "\x01raw{}\x01"
_RAW_FIND = re.compile(rb'"\\u0001raw(\d+)\\u0001"')


class Body:
    """Builds one body: plain JSON values with raw fragments spliced in."""

    def __init__(self) -> None:
        self.raw: list[bytes] = []

    def raw_value(self, text: bytes) -> str:
        self.raw.append(text)
        return _RAW.format(len(self.raw) - 1)

    def dumps(self, value: Any) -> bytes:
        text = json.dumps(value, separators=(",", ":")).encode()
        return _RAW_FIND.sub(lambda m: self.raw[int(m.group(1))], text)


def _deep(n: int, kind: str = "[") -> bytes:
    if kind == "[":
        return b"[" * n + b"]" * n
    return b'{"a":' * n + b"1" + b"}" * n


RAW_VALUES: list[bytes] = [
    b"9" * 5000,  # past int()'s digit limit
    b"123456789012345678901234567890",
    b"-9223372036854775809",
    b"18446744073709551616",
    b"1e999",
    b"-1e999",
    b"1.5",
    b"-0",
    b'"\xff\xfe"',  # invalid UTF-8
    b'"\xed\xa0\x80"',  # a surrogate encoded in UTF-8 (invalid)
    b'"\\ud800"',  # a lone surrogate escape
    b'"\\udc00x"',
    b'"a\x00b"',  # a raw NUL (a control character JSON forbids)
    b'"a\\u0000b"',
    b'"\\u0000"',
    _deep(40),  # within the limit wherever it lands: kept in the store, encoded in answers
    _deep(58),
    _deep(63),
    _deep(64),
    _deep(65),
    _deep(1000),
    _deep(20000),
    _deep(1000, "{"),
    b"[" * 5000,  # never closed
    b"NaN",
    b"Infinity",
    b"tru",
    b'"' + b"x" * 70000 + b'"',
]

PLAIN_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**31,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    1.5,
    "",
    " ",
    "x" * 5000,
    "\u0000",
    "a\u0000b",
    "\n\r\t",
    "\u202e\ufeff",
    "😀",
    [],
    {},
    [1, "a", None],
    {"a": {"b": [1]}},
    "ROLE_USER",
    "ROLE_AGENT",
    "ROLE_UNSPECIFIED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_WORKING",
    1,
    2,
    99,
    "1",
    "99",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "9999-12-31T23:59:59.999999+00:00",
    "2024-02-30T00:00:00Z",
    "2024-01-01T00:00:00",
    "not a time",
    "http://127.0.0.1:1/hook",
    "file:///etc/passwd",
    "../../etc/passwd",
    "%00",
]

TIMESTAMPS = ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59", "2024-13-45T99:00:00Z", "x\u0000"]


def _message(text: str = "hello") -> dict[str, Any]:
    return {"messageId": "m-fuzz", "role": "ROLE_USER", "parts": [{"text": text}], "metadata": {"k": "v"}}


def templates(task_id: str) -> list[tuple[str, dict[str, Any]]]:
    """A valid request of every operation (with a task that exists)."""
    config = {"url": "http://127.0.0.1:9/hook", "id": "cfg-1", "token": "t"}
    return [
        ("SendMessage", {"message": _message(), "configuration": {"historyLength": 2, "returnImmediately": False}}),
        ("SendMessage", {"message": {**_message("stream:2"), "taskId": task_id}}),
        (
            "SendMessage",
            {
                "message": {
                    "messageId": "m-parts",
                    "role": "ROLE_USER",
                    "parts": [
                        {"text": "a", "mediaType": "text/plain"},
                        {"data": {"x": [1, 2]}, "metadata": {"m": 1}},
                        {"raw": "aGk=", "filename": "a.txt", "mediaType": "text/plain"},
                        {"url": "https://example.com/a", "filename": "a"},
                    ],
                    "contextId": "ctx-1",
                    "extensions": ["urn:x"],
                    "referenceTaskIds": [task_id],
                },
                "metadata": {"a": 1},
            },
        ),
        ("SendStreamingMessage", {"message": _message("stream:2")}),
        ("SendStreamingMessage", {"message": _message()}),
        ("GetTask", {"id": task_id, "historyLength": 1}),
        (
            "ListTasks",
            {
                "contextId": "ctx-1",
                "status": "TASK_STATE_COMPLETED",
                "pageSize": 5,
                "pageToken": "",
                "historyLength": 1,
                "statusTimestampAfter": "2024-01-01T00:00:00Z",
                "includeArtifacts": True,
            },
        ),
        ("CancelTask", {"id": task_id, "metadata": {"why": "fuzz"}}),
        ("SubscribeToTask", {"id": task_id}),
        ("CreateTaskPushNotificationConfig", {"taskId": task_id, **config}),
        ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "cfg-1"}),
        ("ListTaskPushNotificationConfigs", {"taskId": task_id, "pageSize": 2, "pageToken": ""}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "cfg-1"}),
        ("GetExtendedAgentCard", {}),
    ]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value (objects' keys and arrays' indexes), the root first."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _set(value[head], rest, new)}
    copy = list(value)
    copy[head] = _set(copy[head], rest, new)
    return copy


_DELETE = object()


def _edit_parent(value: Any, path: tuple[Any, ...], edit: Callable[[dict[str, Any], Any], dict[str, Any]]) -> Any:
    """Apply ``edit(parent, key)`` to the object holding ``path`` (when its parent is an object)."""
    if not path:
        return value
    parent_path, key = path[:-1], path[-1]
    parent = value
    for step in parent_path:
        parent = parent[step]
    if not isinstance(parent, dict):
        return _set(value, path, None)
    return _set(value, parent_path, edit(parent, key))


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def mutate(rng: random.Random, params: Any, body: Body) -> Any:
    """``params`` with one place changed (or one of a few structural changes)."""
    path = rng.choice(list(_paths(params)))
    choice = rng.random()
    if choice < 0.35:
        return _set(params, path, rng.choice(PLAIN_VALUES))
    if choice < 0.6:
        return _set(params, path, body.raw_value(rng.choice(RAW_VALUES)))
    if choice < 0.68:
        return _edit_parent(params, path, lambda p, k: {x: y for x, y in p.items() if x != k})
    if choice < 0.74:
        return _edit_parent(params, path, lambda p, k: {**p, _snake(str(k)): p[k]})  # both names
    if choice < 0.8:
        # A duplicate key: the same member twice, the second time with another value.
        def twice(p: dict[str, Any], k: Any) -> dict[str, Any]:
            other = json.dumps(rng.choice(PLAIN_VALUES)).encode()
            again = json.dumps(p[k]).encode() + b"," + json.dumps(str(k)).encode() + b":" + other
            return {**p, k: body.raw_value(again)}

        return _edit_parent(params, path, twice)
    if choice < 0.86:
        return _set(params, path, [_set(params, path, rng.choice(PLAIN_VALUES))] * rng.randint(2, 50))
    if choice < 0.92:
        # Oneof violations and odd parts.
        parts = [
            {"text": "a", "data": {"x": 1}},
            {"raw": "aGk=", "url": "https://example.com"},
            {},
            {"text": None},
            {"raw": "not base64!"},
            {"data": "not an object"},
            {"text": "a", "metadata": {"m": body.raw_value(_deep(70))}},
        ]
        return _set(params, path, {"messageId": "m-x", "role": "ROLE_USER", "parts": [rng.choice(parts)]})
    if choice < 0.96:
        return _set(params, path, rng.choice(TIMESTAMPS))
    return _set(params, path, {"unknownField": 1, "tenant": rng.choice(["", "t", "a/b", "\u0000"])})


@dataclass
class Case:
    """One fuzzed request: the operation, its params as JSON text, and the JSON-RPC envelope."""

    method: str
    params: bytes
    #: The whole JSON-RPC body (``{id}`` is replaced by the id the sender picks, as JSON).
    envelope: bytes
    what: str


def _envelope(method: Any, params: bytes, *, ident: bytes = b"{id}", extra: bytes = b"") -> bytes:
    head = b'{"jsonrpc":"2.0",' + (b'"id":' + ident + b"," if ident else b"")
    return head + b'"method":' + json.dumps(method).encode() + b',"params":' + params + extra + b"}"


ENVELOPE_MUTATIONS: list[Callable[[str, bytes], bytes]] = [
    lambda m, p: _envelope(m, p, ident=b""),  # a notification
    lambda m, p: _envelope(m, p, ident=b"null"),
    lambda m, p: _envelope(m, p, ident=b"1.5"),
    lambda m, p: _envelope(m, p, ident=b"true"),
    lambda m, p: _envelope(m, p, ident=b"{}"),
    lambda m, p: _envelope(m, p, ident=b"[1]"),
    lambda m, p: _envelope(m, p, ident=b"9" * 5000),
    lambda m, p: _envelope(m, p, ident=b"1e999"),
    lambda m, p: _envelope(m, p, ident=b'"\xff"'),
    lambda m, p: _envelope(m, p, ident=b'"\\ud800"'),
    lambda m, p: _envelope(m, p, ident=b'{id},"id":"dup"'),
    lambda m, p: b'{"jsonrpc":"1.0","id":{id},"method":' + json.dumps(m).encode() + b',"params":' + p + b"}",
    lambda m, p: b'{"id":{id},"method":' + json.dumps(m).encode() + b',"params":' + p + b"}",
    lambda m, p: b'{"jsonrpc":2.0,"id":{id},"method":' + json.dumps(m).encode() + b',"params":' + p + b"}",
    lambda m, p: _envelope(123, p),
    lambda m, p: _envelope("NoSuchMethod", p),
    lambda m, p: _envelope("message/send", p),
    lambda m, p: _envelope("$/cancel", p),
    lambda m, p: _envelope("initialize", p),
    lambda m, p: _envelope("GetAgentCard", p),
    lambda m, p: _envelope(m, b"[1,2]"),
    lambda m, p: _envelope(m, b'"params"'),
    lambda m, p: _envelope(m, b"null"),
    lambda m, p: _envelope(m, p, extra=b',"lastEventId":-1'),
    lambda m, p: _envelope(m, p, extra=b',"lastEventId":"abc"'),
    lambda m, p: _envelope(m, p, extra=b',"lastEventId":' + b"9" * 30),
    lambda m, p: _envelope(m, p, extra=b',"extra":' + _deep(2000)),
    lambda m, p: b"[" + _envelope(m, p) + b"," + _envelope(m, p) + b"]",  # a batch
    lambda m, p: b"[]",
    lambda m, p: b"[" + _envelope(m, p, ident=b"") + b"]",
    lambda m, p: _envelope(m, p)[: len(_envelope(m, p)) // 2],  # truncated
    lambda m, p: b"\xef\xbb\xbf" + _envelope(m, p),  # a byte order mark
    lambda m, p: _envelope(m, p) + b"garbage",
    lambda m, p: _envelope(m, p).replace(b'"', b"'"),
]

WHOLE_BODIES: list[bytes] = [
    b"",
    b" ",
    b"null",
    b"42",
    b'"text"',
    b"\x00",
    b"\xff\xfe\xfd",
    _deep(100000),
    _deep(3000, "{"),
    b"{" * 100000,
    b'{"jsonrpc":"2.0","id":{id},"method":"GetTask","params":{"id":"' + b"\\" * 1001 + b'"}}',
]


def cases(rng: random.Random, task_id: str) -> Iterator[Case]:
    """An endless, seeded stream of fuzzed requests."""
    ops = templates(task_id)
    while True:
        method, params = rng.choice(ops)
        body = Body()
        roll = rng.random()
        if roll < 0.06:
            whole = rng.choice(WHOLE_BODIES) if rng.random() < 0.5 else bytes(rng.getrandbits(8) for _ in range(40))
            yield Case(method, whole, whole, "whole")
            continue
        mutated = params if roll < 0.1 else mutate(rng, params, body)
        if rng.random() < 0.3:
            mutated = mutate(rng, mutated, body)
        encoded = body.dumps(mutated)
        if roll < 0.25:
            yield Case(method, encoded, rng.choice(ENVELOPE_MUTATIONS)(method, encoded), "envelope")
        else:
            yield Case(method, encoded, _envelope(method, encoded), "field" if roll >= 0.1 else "valid")


# ---- the tallies -----------------------------------------------------------------------------


@dataclass
class Tally:
    binding: str
    sent: int = 0
    deaths: int = 0
    status_5xx: int = 0
    internal_errors: int = 0
    dropped: int = 0
    hangs: int = 0
    #: Streams ended (or failed) by another request's body on the same connection.
    streams_cut: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def bad(self, kind: str, case: Case, detail: str) -> None:
        if len(self.examples) < 8:
            self.examples.append(f"{kind} [{case.what} {case.method}]: {case.envelope[:160]!r} -> {detail[:200]}")

    @property
    def failures(self) -> int:
        return self.deaths + self.status_5xx + self.internal_errors + self.dropped + self.hangs + self.streams_cut

    def line(self) -> str:
        return (
            f"{self.binding:8} bodies {self.sent:6}  deaths {self.deaths}  5xx {self.status_5xx}  "
            f"-32603 {self.internal_errors}  dropped {self.dropped}  hangs {self.hangs}"
            + (f"  streams cut {self.streams_cut}" if self.binding in ("ws", "stdio") else "")
        )


def _codes_in(data: bytes) -> list[int]:
    return [int(c) for c in re.findall(rb'"code":(-?\d+)', data)]


def _count_answer(tally: Tally, case: Case, data: bytes) -> None:
    codes = _codes_in(data)
    for code in codes:
        tally.codes[str(code)] += 1
    if -32603 in codes:
        tally.internal_errors += 1
        tally.bad("-32603", case, data.decode("utf-8", "replace"))
    if not codes:
        tally.codes["ok"] += 1


# ---- HTTP bindings ---------------------------------------------------------------------------


def _rest_request(case: Case) -> tuple[str, str, bytes | None]:
    """(HTTP method, path and query, body) of a case over REST."""
    from a2a.protocol.methods import METHODS
    from a2a.protocol.rest import WHOLE_REQUEST

    spec = METHODS[case.method]
    route = spec.rest
    try:
        params = json.loads(case.params)
    except (ValueError, RecursionError):
        params = None
    if case.what == "whole" or not isinstance(params, dict):
        # Bytes that are no object: as the body of the operations that take one.
        path = route.path.replace("{id}", "t").replace("{task_id}", "t")
        return "POST", path, case.params
    names = {f: re.sub(r"_([a-z])", lambda m: m.group(1).upper(), f) for f in ("id", "task_id", *route.query)}

    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    def fill(match: re.Match[str]) -> str:
        value = text(params.get(names.get(match.group(1), match.group(1)), "missing"))
        return quote(value, safe="", errors="surrogatepass")

    path = re.sub(r"\{(\w+)\}", fill, route.path)
    query = {names[f]: text(params[names[f]]) for f in route.query if names[f] in params}
    target = path + ("?" + urlencode(query, errors="surrogatepass") if query else "")
    body: bytes | None = None
    if route.body == WHOLE_REQUEST:
        body = case.params
    elif route.body:
        body = json.dumps({k: params[k] for k in route.body if k in params}).encode()
    return route.http_method, target, body


async def _read_bounded(response: aiohttp.ClientResponse, wait: float) -> bytes:
    """The body, or as much of a stream as arrives (a stream of a held task may go on)."""
    if response.content_type == "text/event-stream":
        chunks: list[bytes] = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(min(wait, 3.0)):
                async for chunk in response.content.iter_any():
                    chunks.append(chunk)
        return b"".join(chunks)
    async with asyncio.timeout(wait):
        return await response.read()


async def fuzz_http(binding: str, base: str, bodies: list[Case], wait: float, alive: Callable[[], bool]) -> Tally:
    tally = Tally(binding)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for n, case in enumerate(bodies):
            if not alive():
                tally.deaths += 1
                tally.bad("death", case, "the server is gone")
                break
            tally.sent += 1
            if binding == "jsonrpc":
                method, url, data = "POST", base + "/a2a/jsonrpc", case.envelope.replace(b"{id}", str(n).encode())
            else:
                method, target, data = _rest_request(case)
                url = base + "/a2a/rest/" + target
                if len(url) > MAX_URL:
                    # Refused by the server before any binding (414, the REST error body): counted
                    # as sent, and its answer is checked like every other.
                    tally.codes["URL over 8 KB"] += 1
            try:
                async with asyncio.timeout(wait):
                    async with session.request(
                        method, url, data=data, headers={**VERSION, "Content-Type": "application/json"}
                    ) as response:
                        payload = await _read_bounded(response, wait)
                        if response.status >= 500:
                            tally.status_5xx += 1
                            tally.bad(f"HTTP {response.status}", case, payload.decode("utf-8", "replace"))
                        _count_answer(tally, case, payload)
            except TimeoutError:
                tally.hangs += 1
                tally.bad("hang", case, "")
            except (aiohttp.ClientError, ConnectionError) as exc:
                tally.dropped += 1
                tally.bad("dropped", case, repr(exc))
    return tally


# ---- connection bindings: WebSocket and stdio -----------------------------------------------


class Channel:
    """One connection: send a message, receive the next (``None``: the connection ended)."""

    async def send(self, data: bytes) -> None:
        raise NotImplementedError

    async def receive(self) -> bytes | None:
        raise NotImplementedError


class WsChannel(Channel):
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws

    async def send(self, data: bytes) -> None:
        # Text frames carry str: a body that is not UTF-8 goes as the text the bytes decode to
        # with surrogates escaped, which the server receives as invalid UTF-8 (close 1007) --
        # so it is sent with its bad bytes replaced instead, to keep the connection.
        await self.ws.send_str(data.decode("utf-8", "replace"))

    async def receive(self) -> bytes | None:
        msg = await self.ws.receive()
        if msg.type is aiohttp.WSMsgType.TEXT:
            return str(msg.data).encode()
        return None


class LineChannel(Channel):
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def send(self, data: bytes) -> None:
        # One message per line: a raw newline inside a body would make two messages.
        self.writer.write(data.replace(b"\n", b" ") + b"\n")
        await self.writer.drain()

    async def receive(self) -> bytes | None:
        line = await self.reader.readline()
        return line or None


#: The id of a stream kept open on the connection for the whole run: no body may cut it.
SENTINEL = "sentinel"


async def fuzz_connection(binding: str, channel: Channel, bodies: list[Case], wait: float) -> Tally:
    """Each body, then a probe on the same connection; everything before the probe's answer
    answers the body (a stream's later frames are read as they come). Meanwhile a stream of a
    working task stays open on the connection; at the end it must still be open, and end with
    its end frame when canceled."""
    tally = Tally(binding)
    message = {"messageId": f"m-{SENTINEL}-{uuid.uuid4().hex}", "role": "ROLE_USER", "parts": [{"text": "hold:3600"}]}
    sentinel = {"jsonrpc": "2.0", "id": SENTINEL, "method": "SendStreamingMessage", "params": {"message": message}}
    await channel.send(json.dumps(sentinel).encode())
    sentinel_frame = f'"id":"{SENTINEL}"'.encode()
    for n, case in enumerate(bodies):
        tally.sent += 1
        if len(case.envelope) > MAX_MESSAGE:
            tally.codes["not sent: over the message limit"] += 1
            continue
        probe = f"probe-{n}"
        try:
            await channel.send(case.envelope.replace(b"{id}", f'"f-{n}"'.encode()))
            await channel.send(
                b'{"jsonrpc":"2.0","id":"' + probe.encode() + b'","method":"GetTask","params":{"id":"no-such-task"}}'
            )
            async with asyncio.timeout(wait):
                while True:
                    frame = await channel.receive()
                    if frame is None:
                        tally.dropped += 1
                        tally.bad("dropped", case, "the connection ended")
                        return tally
                    if f'"id":"{probe}"'.encode() in frame:
                        if b"-32001" not in frame:
                            tally.bad("probe", case, frame.decode("utf-8", "replace"))
                        break
                    if sentinel_frame in frame:
                        if b'"streamEnd"' in frame or b'"error"' in frame:
                            tally.streams_cut += 1
                            tally.bad("stream cut", case, frame.decode("utf-8", "replace"))
                        continue
                    _count_answer(tally, case, frame)
        except TimeoutError:
            tally.hangs += 1
            tally.bad("hang", case, "no answer to the probe")
            return tally
        except (ConnectionError, aiohttp.ClientError) as exc:
            tally.dropped += 1
            tally.bad("dropped", case, repr(exc))
            return tally
    await _end_sentinel(channel, tally, wait)
    return tally


async def _end_sentinel(channel: Channel, tally: Tally, wait: float) -> None:
    """Cancel the sentinel stream: it must end with ``streamEnd`` ``canceled``."""
    await channel.send(json.dumps({"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": SENTINEL}}).encode())
    ended = Case("$/cancel", b"", b"", "sentinel")
    try:
        async with asyncio.timeout(wait):
            while (frame := await channel.receive()) is not None:
                if f'"id":"{SENTINEL}"'.encode() in frame and b'"streamEnd"' in frame:
                    if b'"canceled"' not in frame:
                        tally.streams_cut += 1
                        tally.bad("stream cut", ended, frame.decode("utf-8", "replace"))
                    return
            tally.dropped += 1
            tally.bad("dropped", ended, "the connection ended")
    except TimeoutError:
        tally.hangs += 1
        tally.bad("hang", ended, "the sentinel stream did not end when canceled")


# ---- the servers -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited while starting")
        with contextlib.suppress(OSError):
            urllib.request.urlopen(url + "/.well-known/agent-card.json", timeout=1).read()
            return
        time.sleep(0.1)
    raise RuntimeError("the server did not start")


async def _make_task(base: str) -> str:
    """A task that exists (and has ended), for the operations that name one."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-setup", "role": "ROLE_USER", "parts": [{"text": "stream:1"}]}},
    }
    async with aiohttp.ClientSession() as session, session.post(base + "/a2a/jsonrpc", json=body, headers=VERSION) as r:
        return str((await r.json())["result"]["task"]["id"])


def _tracebacks(log: Path) -> int:
    return log.read_text(errors="replace").count("Traceback (most recent call last)")


async def run(count: int, seed: int, bindings: list[str], wait: float) -> list[Tally]:
    tallies: list[Tally] = []
    with tempfile.TemporaryDirectory(prefix="a2a-fuzz-") as tmp:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        log_path = Path(tmp) / "server.log"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "a2a.cli.main", "serve", AGENT, "--port", str(port)]
        argv += ["--store", f"sqlite:///{tmp}/tasks.db"]
        with open(log_path, "wb") as log:  # noqa: ASYNC230 - once, before anything runs
            # Started once, before anything runs; its readiness is polled below.
            server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=tmp, env=env)  # noqa: ASYNC220
        try:
            _wait_ready(base, server)
            task_id = await _make_task(base)
            for binding in bindings:
                rng = random.Random(f"{seed}-{binding}")
                stream = cases(rng, task_id)
                bodies = [next(stream) for _ in range(count)]
                started = time.monotonic()
                if binding in ("jsonrpc", "rest"):
                    tally = await fuzz_http(binding, base, bodies, wait, lambda: server.poll() is None)
                elif binding == "ws":
                    tally = await _fuzz_ws(base, bodies, wait)
                else:
                    tally = await _fuzz_stdio(tmp, env, bodies, wait, task_id)
                if server.poll() is not None and binding != "stdio":
                    tally.deaths += 1
                tally.codes["seconds"] = round(time.monotonic() - started)
                tallies.append(tally)
                print(tally.line(), f"({tally.codes['seconds']} s)", flush=True)
        finally:
            if server.poll() is None:
                server.terminate()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
        traces = _tracebacks(log_path)
        if traces:
            print(f"tracebacks in the server's log: {traces}")
            print(log_path.read_text(errors="replace")[-3000:])
            tallies[0].examples.append(f"{traces} traceback(s) in the server's log")
            tallies[0].internal_errors += 0
        tallies.append(Tally("log", deaths=0, codes=Counter({"tracebacks": traces})))
    return tallies


async def _fuzz_ws(base: str, bodies: list[Case], wait: float) -> Tally:
    timeout = aiohttp.ClientTimeout(total=None)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.ws_connect(base.replace("http", "ws") + "/a2a/ws", headers=VERSION, max_msg_size=0) as ws,
    ):
        return await fuzz_connection("ws", WsChannel(ws), bodies, wait)


async def _fuzz_stdio(tmp: str, env: dict[str, str], bodies: list[Case], wait: float, task_id: str) -> Tally:
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", AGENT, "--stdio"]
    stderr_path = Path(tmp) / "stdio.log"
    with open(stderr_path, "wb") as errors:  # noqa: ASYNC230 - once, before the child starts
        child = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, cwd=tmp, env=env, limit=2**25
        )
    assert child.stdin is not None and child.stdout is not None
    channel = LineChannel(child.stdout, child.stdin)
    try:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"serviceParameters": VERSION}}
        await channel.send(json.dumps(init).encode())
        await channel.receive()
        tally = await fuzz_connection("stdio", channel, bodies, wait)
        if child.returncode is not None or (await _exited(child)):
            tally.deaths += 1
    finally:
        if child.returncode is None:
            child.stdin.close()
            try:
                await asyncio.wait_for(child.wait(), 10)
            except TimeoutError:
                child.kill()
                await child.wait()
    traces = _tracebacks(stderr_path)
    if traces:
        tally.examples.append(f"{traces} traceback(s) in the stdio child's log")
        print(stderr_path.read_text(errors="replace")[-3000:])
    tally.codes["tracebacks"] = traces
    return tally


async def _exited(child: asyncio.subprocess.Process) -> bool:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(child.wait(), 0.2)
    return child.returncode is not None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20000, help="bodies per binding (default 20,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bindings", default=",".join(BINDINGS), help="comma-separated: jsonrpc,rest,ws,stdio")
    parser.add_argument("--wait", type=float, default=10.0, help="seconds to wait for an answer before a hang")
    args = parser.parse_args()
    started = time.monotonic()
    tallies = asyncio.run(run(args.count, args.seed, args.bindings.split(","), args.wait))
    failures = 0
    print(f"\nseed {args.seed}, {args.count} bodies per binding, {time.monotonic() - started:.0f} s in all")
    for tally in tallies:
        if tally.binding == "log":
            print(f"tracebacks in the server's log: {tally.codes['tracebacks']}")
            failures += tally.codes["tracebacks"]
            continue
        print(tally.line())
        codes = {k: v for k, v in tally.codes.most_common() if k not in ("seconds", "tracebacks")}
        print(f"         answers: {codes}")
        failures += tally.failures + tally.codes["tracebacks"]
        for example in tally.examples:
            print("         " + example)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
