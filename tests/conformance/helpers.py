"""What the conformance tests share: raw wire access per binding, bounded waits, test agents.

``Raw`` speaks each HTTP binding by hand (httpx, no a2a client code), for the cases the client
cannot express (malformed input, missing headers) and to check the wire form itself.
``open_stdio_twin`` serves a server's agent over the stdio binding in this process. The expected error
table below is written out from the specification, not imported from ``a2a.errors``, so that a
wrong entry there shows up here.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import json
import os
import sys
import time
import uuid
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from a2a import A2AServer, Agent, RequestContext
from a2a import types as t
from a2a.protocol.sse import SSEDecoder
from a2a.server.backends.base import Backend
from a2a.server.channels.stdio import StdioConfig, serve_stdio
from a2a.transport.stdio_pipes import PipeTransport

T = TypeVar("T")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
JSONRPC_PATH = "/a2a/jsonrpc"
REST_PATH = "/a2a/rest"
VERSION = {"A2A-Version": "1.0"}
#: Default bound for any single wait in this suite (seconds). Generous: CI machines are slow.
WAIT = 10.0

#: code -> (HTTP status on the REST binding, ErrorInfo reason), from the A2A 1.0 error table.
EXPECTED_ERRORS: dict[int, tuple[int, str]] = {
    -32700: (400, "PARSE_ERROR"),
    -32600: (400, "INVALID_REQUEST"),
    -32601: (404, "METHOD_NOT_FOUND"),
    -32602: (400, "INVALID_PARAMS"),
    -32603: (500, "INTERNAL_ERROR"),
    -32000: (401, "UNAUTHENTICATED"),
    -32001: (404, "TASK_NOT_FOUND"),
    -32002: (400, "TASK_NOT_CANCELABLE"),
    -32003: (400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    -32004: (400, "UNSUPPORTED_OPERATION"),
    -32005: (400, "CONTENT_TYPE_NOT_SUPPORTED"),
    -32006: (500, "INVALID_AGENT_RESPONSE"),
    -32007: (400, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    -32008: (400, "EXTENSION_SUPPORT_REQUIRED"),
    -32009: (400, "VERSION_NOT_SUPPORTED"),
}
#: Other reasons a peer may use: "INTERNAL" is the literal rule (name without "Error");
#: "INTERNAL_ERROR" is what the reference SDK sends, and what we send for interop.
REASON_ALIASES = {"INTERNAL": -32603, "PAYLOAD_TOO_LARGE": -32600}
_CODE_BY_REASON = {reason: code for code, (_status, reason) in EXPECTED_ERRORS.items()} | REASON_ALIASES
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"

#: Text that must never reach a caller: the signs of a Python traceback.
TRACEBACK_MARKERS = ("Traceback (most recent call last)", 'File "', "line ")


# ---- bounded waits -------------------------------------------------------------------------


async def bounded(awaitable: Awaitable[T], timeout: float = WAIT) -> T:
    """Await with a time limit (the suite never waits without one)."""
    async with asyncio.timeout(timeout):
        return await awaitable


async def wait_until(check: Callable[[], Awaitable[bool]], *, timeout: float = WAIT, what: str = "condition") -> None:
    """Poll ``check`` until it is true; fail after ``timeout`` seconds. For state we cannot await."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


async def collect(events: AsyncIterator[T], timeout: float = WAIT) -> list[T]:
    """Every item of a stream that must end by itself within ``timeout``."""
    async with asyncio.timeout(timeout):
        return [item async for item in events]


# ---- messages ------------------------------------------------------------------------------


def new_id() -> str:
    return uuid.uuid4().hex


def user_message(text: str, **fields: Any) -> dict[str, Any]:
    """A ROLE_USER message in wire form (camelCase keys may be passed in ``fields``)."""
    return {"messageId": new_id(), "role": "ROLE_USER", "parts": [{"text": text}], **fields}


def send_params(text: str, *, configuration: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": user_message(text, **fields)}
    if configuration is not None:
        params["configuration"] = configuration
    return params


def text_of(message: dict[str, Any] | t.Message | None) -> str:
    if message is None:
        return ""
    if isinstance(message, t.Message):
        return message.text
    return "\n".join(p["text"] for p in message.get("parts", []) if "text" in p)


# ---- the raw wire --------------------------------------------------------------------------


@dataclass
class Outcome:
    """One HTTP answer, read the way its binding frames it."""

    binding: str
    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def is_error(self) -> bool:
        if self.binding == "JSONRPC":
            return self.status != 200 or "error" in self.json
        return self.status >= 400

    @property
    def result(self) -> Any:
        assert not self.is_error, f"expected a result, got HTTP {self.status}: {self.body[:500]!r}"
        if self.binding == "JSONRPC":
            body = self.json
            assert body.get("jsonrpc") == "2.0", body
            return body["result"]
        return self.json

    @property
    def error_code(self) -> int | None:
        """The A2A error code (REST: derived from the ErrorInfo reason), ``None`` for a success."""
        if not self.is_error:
            return None
        error = self.json["error"]
        if self.binding == "JSONRPC":
            return int(error["code"])
        reasons = [d.get("reason") for d in error.get("details", []) if isinstance(d, dict)]
        return _CODE_BY_REASON.get(str(reasons[0])) if reasons else None

    @property
    def error_message(self) -> str:
        return str(self.json["error"]["message"])


def expect_error(outcome: Outcome, code: int, *, http_status: int | None = None) -> str:
    """Check the whole wire form of an A2A error on either binding; returns its message.

    JSON-RPC: HTTP 200 (``http_status`` overrides it for 401 and 413), a 2.0 envelope, the code
    and an ErrorInfo in ``data``. REST: the status from the error table and
    ``{"error": {"code", "status", "message", "details": [ErrorInfo]}}``.
    """
    rest_status, reason = EXPECTED_ERRORS[code]
    try:
        body = outcome.json
    except ValueError as exc:
        raise AssertionError(f"error body is not JSON: HTTP {outcome.status} {outcome.body[:300]!r}") from exc
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
    error = body["error"]
    assert isinstance(error.get("message"), str) and error["message"], error
    if outcome.binding == "JSONRPC":
        assert outcome.status == (http_status or 200), (outcome.status, body)
        assert body.get("jsonrpc") == "2.0" and "id" in body, body
        assert error["code"] == code, (code, error)
        details = error.get("data")
    else:
        expected_status = http_status or rest_status
        assert outcome.status == expected_status, (expected_status, outcome.status, body)
        assert error.get("code") == expected_status, error
        assert isinstance(error.get("status"), str) and error["status"], error
        details = error.get("details")
    assert isinstance(details, list) and details, f"no ErrorInfo in {error}"
    info = details[0]
    assert info.get("@type") == ERROR_INFO_TYPE, info
    assert info.get("domain") == "a2a-protocol.org", info
    if http_status != 413:  # a 413 carries its own, more precise, reason
        assert _CODE_BY_REASON.get(info.get("reason", "")) == code, (reason, info)
    return str(error["message"])


def rest_route(method: str, params: dict[str, Any]) -> tuple[str, str, dict[str, str], Any]:
    """HTTP verb, path (under the REST base), query and JSON body of an operation."""
    p = dict(params)
    tenant = p.pop("tenant", None)
    prefix = f"{quote(tenant, safe='')}/" if tenant else ""
    query: dict[str, str] = {}
    body: Any = None
    if method in ("SendMessage", "SendStreamingMessage"):
        verb, path, body = "POST", "message:send" if method == "SendMessage" else "message:stream", p
    elif method == "GetTask":
        verb, path = "GET", f"tasks/{quote(p.pop('id'), safe='')}"
        query = {k: str(v) for k, v in p.items()}
    elif method == "ListTasks":
        verb, path = "GET", "tasks"
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in p.items()}
    elif method == "CancelTask":
        verb, path, body = "POST", f"tasks/{quote(p.pop('id'), safe='')}:cancel", p
    elif method == "SubscribeToTask":
        verb, path = "GET", f"tasks/{quote(p.pop('id'), safe='')}:subscribe"
    elif method == "GetExtendedAgentCard":
        verb, path = "GET", "extendedAgentCard"
    else:
        configs = f"tasks/{quote(p.pop('taskId'), safe='')}/pushNotificationConfigs"
        if method == "CreateTaskPushNotificationConfig":
            verb, path, body = "POST", configs, p
        elif method == "ListTaskPushNotificationConfigs":
            verb, path = "GET", configs
            query = {k: str(v) for k, v in p.items()}
        else:
            one = f"{configs}/{quote(p.pop('id'), safe='')}"
            verb, path = ("DELETE" if method == "DeleteTaskPushNotificationConfig" else "GET"), one
    return verb, prefix + path, query, body


@dataclass
class RawEvent:
    """One SSE event: its ``id:``, its ``event:`` name, and the StreamResponse (or error) JSON."""

    id: str | None
    kind: str
    data: dict[str, Any]

    @property
    def payload(self) -> dict[str, Any]:
        """The StreamResponse object, unwrapped from the JSON-RPC envelope when there is one."""
        if "jsonrpc" in self.data:
            return dict(self.data["result"])
        return self.data

    @property
    def typed(self) -> t.StreamResponse:
        return msgspec.convert(self.payload, t.StreamResponse)

    @property
    def state(self) -> str | None:
        """The task state this event announces, if any."""
        payload = self.payload
        if "task" in payload:
            return str(payload["task"]["status"]["state"])
        if "statusUpdate" in payload:
            return str(payload["statusUpdate"]["status"]["state"])
        return None


class RawStream:
    def __init__(self, binding: str, response: httpx.Response) -> None:
        self.binding = binding
        self.response = response
        self._events = self._read()

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def is_sse(self) -> bool:
        return str(self.response.headers.get("content-type", "")).startswith("text/event-stream")

    async def outcome(self) -> Outcome:
        """The answer as a plain (non-stream) response: for errors before the first event."""
        body = await self.response.aread()
        return Outcome(self.binding, self.status, self.response.headers, body)

    async def _read(self) -> AsyncGenerator[RawEvent, None]:
        decoder = SSEDecoder()
        async for chunk in self.response.aiter_raw():
            for event in decoder.feed(chunk):
                yield RawEvent(event.id, event.event, json.loads(event.data))

    async def next(self, timeout: float = WAIT) -> RawEvent:
        async with asyncio.timeout(timeout):
            return await anext(self._events)

    async def rest(self, timeout: float = WAIT) -> list[RawEvent]:
        """Every remaining event; the server must end the stream within ``timeout``."""
        return await collect(self._events, timeout)

    async def close(self) -> None:
        await self._events.aclose()
        await self.response.aclose()


class Raw:
    """Hand-made requests on one binding of one server."""

    def __init__(self, http: httpx.AsyncClient, base_url: str, binding: str) -> None:
        self.http = http
        self.base_url = base_url.rstrip("/")
        self.binding = binding

    @property
    def endpoint(self) -> str:
        return self.base_url + (JSONRPC_PATH if self.binding == "JSONRPC" else REST_PATH)

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        version: bool = True,
        accept: str = "application/json",
    ) -> httpx.Request:
        all_headers = {**(VERSION if version else {}), "Accept": accept, **(headers or {})}
        if self.binding == "JSONRPC":
            envelope = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
            all_headers.setdefault("Content-Type", "application/json")
            return self.http.build_request("POST", self.endpoint, json=envelope, headers=all_headers)
        verb, path, query, body = rest_route(method, params or {})
        if body is not None:
            all_headers.setdefault("Content-Type", "application/a2a+json")
            content = json.dumps(body).encode()
        else:
            content = None
        return self.http.build_request(
            verb, f"{self.endpoint}/{path}", params=query, content=content, headers=all_headers
        )

    async def send(self, request: httpx.Request) -> Outcome:
        response = await bounded(self.http.send(request))
        return Outcome(self.binding, response.status_code, response.headers, response.content)

    async def call(self, method: str, params: dict[str, Any] | None = None, **kwargs: Any) -> Outcome:
        return await self.send(self.request(method, params, **kwargs))

    async def post(self, path: str, content: bytes, *, headers: dict[str, str] | None = None) -> Outcome:
        """POST raw bytes to a path under this binding's endpoint ("" for the JSON-RPC endpoint)."""
        url = self.endpoint + (f"/{path}" if path else "")
        all_headers = {**VERSION, "Content-Type": "application/json", **(headers or {})}
        response = await bounded(self.http.post(url, content=content, headers=all_headers))
        return Outcome(self.binding, response.status_code, response.headers, response.content)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, params: dict[str, Any], *, headers: dict[str, str] | None = None
    ) -> AsyncIterator[RawStream]:
        request = self.request(method, params, headers=headers, accept="text/event-stream")
        response = await bounded(self.http.send(request, stream=True))
        stream = RawStream(self.binding, response)
        try:
            yield stream
        finally:
            await stream.close()

    async def ok(self) -> None:
        """The server still answers a normal request on this binding (any agent)."""
        assert isinstance((await self.call("ListTasks", {})).result["tasks"], list)

    async def echo_ok(self) -> None:
        """The echo agent still answers a message on this binding."""
        outcome = await self.call("SendMessage", send_params("still there?"))
        assert text_of(outcome.result["message"]) == "still there?", outcome.body


# ---- test agents ---------------------------------------------------------------------------


@dataclass
class Gate:
    """Holds an agent at a known point until the test releases it, and counts executions."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    executions: int = 0
    texts: list[str] = field(default_factory=list)


def gated_agent(gate: Gate, *, chunks: int = 20, name: str = "Gated") -> Agent:
    """WORKING, then waits at the gate, then ``chunks`` artifact chunks, then COMPLETED."""

    async def handler(ctx: RequestContext) -> None:
        gate.executions += 1
        gate.texts.append(ctx.text)
        await ctx.working("waiting at the gate")
        gate.entered.set()
        await gate.release.wait()
        for i in range(chunks):
            await ctx.artifact(f"part {i}", artifact_id="out", append=i > 0, last_chunk=i == chunks - 1)
        await ctx.complete("released")

    return Agent(name, description="Waits for the test, then streams chunks", handler=handler)


def counting_agent(gate: Gate, *, reply: bool = False) -> Agent:
    """Counts executions; answers with a completed task (or, with ``reply``, a plain message)."""

    async def handler(ctx: RequestContext) -> None:
        gate.executions += 1
        gate.texts.append(ctx.text)
        if reply:
            await ctx.reply(f"reply to {ctx.text}")
        else:
            await ctx.complete(f"done: {ctx.text}")

    return Agent("Counter", description="Counts how often it runs", handler=handler, replies=reply)


def load_module(file_name: str) -> ModuleType:
    """A fresh copy of an example module (its own agent object), so a test may patch it."""
    path = EXAMPLES / file_name
    name = f"_conformance_{path.stem}_{new_id()}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def summary(event: t.StreamResponse) -> tuple[str, str]:
    """What a stream event says, in short: an artifact chunk's text, or a status's state."""
    payload = event.payload
    if isinstance(payload, t.TaskArtifactUpdateEvent):
        return "artifactUpdate", payload.artifact.parts[0].text or ""
    if isinstance(payload, t.TaskStatusUpdateEvent):
        return "statusUpdate", payload.status.state.value
    if isinstance(payload, t.Task):
        return "task", payload.status.state.value
    return "message", payload.text


async def task_state(server: A2AServer, task_id: str) -> t.TaskState | None:
    """The state the server's store holds for a task (``None``: no such task)."""
    record = await server.handler.store.get(task_id)
    return None if record is None else record.task.status.state


# ---- the stdio binding, in this process -----------------------------------------------------

#: Whether ``serve_stdio`` can serve an existing ``RequestHandler`` (the server's own). Without
#: that, a stdio connection gets its own handler over the server's store and bus (a replica).
STDIO_SERVES_A_HANDLER = "handler" in inspect.signature(serve_stdio).parameters


@dataclass
class StdioTwin:
    """One stdio connection to a server's agent, in this process.

    ``serve_stdio`` runs on one end of two ``os.pipe()`` pairs (as ``a2a serve --stdio`` runs on
    its stdin and stdout) and the client's ``PipeTransport`` on the other, so the real framing,
    ``initialize`` handshake and dispatcher carry every call. It serves the server's agent, task
    store, event bus and authentication, so that a test sees one server whatever the binding.
    """

    transport: PipeTransport
    serving: asyncio.Task[int]
    stop: asyncio.Event

    async def wait_closed(self, timeout: float = WAIT) -> int:
        """The server side's exit status, once its input has ended (bounded)."""
        return await bounded(asyncio.shield(self.serving), timeout)


#: The stdio connections opened to each server, so that stopping the server stops them too.
_TWINS: weakref.WeakKeyDictionary[A2AServer, list[StdioTwin]] = weakref.WeakKeyDictionary()


class TestServer(A2AServer):
    """An ``A2AServer`` whose ``stop`` also stops the stdio servers of its twins, as ``SIGTERM``
    stops ``a2a serve --stdio``: stopping the server means the same on every binding."""

    __test__ = False  # not a test class, whatever its name

    async def stop(self) -> None:
        twins = _TWINS.get(self, [])
        if STDIO_SERVES_A_HANDLER:
            # One handler for all: stopping the server cancels the runs; then the stdio
            # connections, which answered that, end.
            await super().stop()
            await _stop_twins(twins)
        else:
            # Each stdio server runs its own handler, as each ``a2a serve --stdio`` process does.
            await _stop_twins(twins)
            await super().stop()


async def _stop_twins(twins: list[StdioTwin]) -> None:
    for twin in twins:
        twin.stop.set()
    if twins:
        await bounded(asyncio.wait([twin.serving for twin in twins]), WAIT)


def open_stdio_twin(server: A2AServer, headers: dict[str, str] | None = None) -> StdioTwin:
    """A new stdio connection to ``server``'s agent; ``headers`` go in ``initialize``.

    Without ``serve_stdio(handler=...)`` each connection is served by its own handler over the
    server's store and bus, as two ``a2a serve --stdio`` processes sharing a store would be.
    """
    to_agent_read, to_agent_write = os.pipe()
    from_agent_read, from_agent_write = os.pipe()
    stop = asyncio.Event()
    options: dict[str, Any] = {
        "auth": server.authenticator,
        "config": StdioConfig(max_line_bytes=server.config.max_body_bytes),
        "stdin_fd": to_agent_read,
        "stdout_fd": from_agent_write,
        "stop": stop,
    }
    if STDIO_SERVES_A_HANDLER:
        options["handler"] = server.handler
    else:
        options["backend"] = Backend(server.handler.store, server.handler.bus)

    async def serve() -> int:
        try:
            return await serve_stdio(server.agent, **options)
        finally:
            for fd in (to_agent_read, from_agent_write):
                os.close(fd)

    serving = asyncio.get_running_loop().create_task(serve(), name=f"stdio twin of {server.agent.name}")
    transport = PipeTransport(
        from_agent_read, to_agent_write, headers=headers, name=f"in-process stdio agent {server.agent.name!r}"
    )
    twin = StdioTwin(transport, serving, stop)
    _TWINS.setdefault(server, []).append(twin)
    return twin
