"""Client retries against a real server on a loopback port that fails on purpose.

The server is our real ``A2AServer`` app (card, JSON-RPC and REST) with one middleware in front
of the A2A endpoints that follows a script: answer normally, answer with an HTTP error, break
the connection half-way through the answer, or never answer. It records every request it sees.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from a2a import A2AClient, A2AServer, Agent, RetryBudget, RetryPolicy, ServerConfig
from a2a.backoff import parse_retry_after
from a2a.client.retry import is_retryable
from a2a.errors import HTTPStatusError, RequestTimeoutError, TaskNotFoundError, TransportError
from a2a.loader import load_object
from a2a.server import JSONRPC_PATH, REST_PATH
from a2a.types import Message, Task, TaskState

ECHO = Path(__file__).resolve().parents[1] / "examples" / "echo_agent.py"
BINDINGS = ["JSONRPC", "HTTP+JSON"]

#: A policy that retries quickly, so that the tests spend their time on behaviour, not waiting.
FAST = {"initial_backoff": 0.01, "max_backoff": 0.05, "budget": None}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    at: float
    method: str
    message_id: str | None


@dataclass
class Faults:
    """What the next A2A requests get; once the script runs out, every request gets ``default``.

    Actions: ``ok``; ``status:CODE`` or ``status:CODE:RETRY_AFTER``; ``reset`` (the server does
    the work, then the connection breaks half-way through the answer); ``hang`` (no answer).
    """

    script: list[str] = field(default_factory=list)
    default: str = "ok"
    seen: list[Seen] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def count(self) -> int:
        return len(self.seen)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not request.path.startswith((JSONRPC_PATH, REST_PATH)):
            return await handler(request)  # the card is always served
        seen = Seen(time.monotonic(), request.path, None)
        self.seen.append(seen)
        self.arrived.set()
        action = self.script.pop(0) if self.script else self.default
        if action == "ok":
            response = await handler(request)
            await _note(seen, request)
            return response
        if action.startswith("status:"):
            await _note(seen, request)
            _, code, *retry_after = action.split(":")
            headers = {"Retry-After": retry_after[0]} if retry_after else None
            return web.Response(status=int(code), text=f"injected HTTP {code}", headers=headers)
        if action == "reset":
            response = await handler(request)
            await _note(seen, request)
            return await _reset_mid_response(request, response)
        if action == "hang":
            await self.release.wait()
            raise web.HTTPServiceUnavailable()
        raise AssertionError(f"unknown action {action!r}")


async def _note(seen: Seen, request: web.Request) -> None:
    """Record the operation and messageId. Called after the real handler (if any) has read the
    body: aiohttp keeps it for later reads, while reading it first would leave the REST binding
    an empty body (see test_rest_binding_reads_a_body_that_a_middleware_read_first)."""
    seen.method, seen.message_id = _describe(request.path, await request.read())


def _describe(path: str, body: bytes) -> tuple[str, str | None]:
    if path == JSONRPC_PATH:
        call = json.loads(body)
        params = call.get("params") or {}
        return call["method"], (params.get("message") or {}).get("messageId")
    if path.endswith("message:send") or path.endswith("message:stream"):
        return path.rsplit("/", 1)[-1], json.loads(body)["message"]["messageId"]
    return path.removeprefix(REST_PATH), None


async def _reset_mid_response(request: web.Request, real: web.StreamResponse) -> web.StreamResponse:
    assert isinstance(real, web.Response) and isinstance(real.body, bytes), "reset needs a plain response"
    body = real.body
    broken = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    broken.content_length = len(body)
    await broken.prepare(request)
    await broken.write(body[: len(body) // 2])
    assert request.transport is not None
    request.transport.close()
    return broken


@dataclass
class FaultyServer:
    url: str
    faults: Faults


async def _start(faults: Faults, port: int = 0) -> tuple[web.AppRunner, str]:
    agent = load_object(f"{ECHO}:agent")
    assert isinstance(agent, Agent)
    server = A2AServer(agent, config=ServerConfig(port=port, shutdown_timeout=2.0))
    app = server.app()
    app.middlewares.append(faults.middleware)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.fixture
async def faulty() -> AsyncIterator[FaultyServer]:
    faults = Faults()
    runner, url = await _start(faults)
    try:
        yield FaultyServer(url, faults)
    finally:
        faults.release.set()
        await runner.cleanup()


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _client(url: str, binding: str = "JSONRPC", *, timeout: float = 10.0, **policy: Any) -> A2AClient:
    return A2AClient(url, binding=binding, retry=RetryPolicy(**{**FAST, **policy}), timeout=timeout)


# ---- retryable failures are retried -----------------------------------------------------------------


async def test_503_twice_then_ok_succeeds_on_the_third_attempt(faulty: FaultyServer, binding: str) -> None:
    faulty.faults.script = ["status:503", "status:503", "ok"]
    async with _client(faulty.url, binding, max_attempts=4) as client:
        reply = await asyncio.wait_for(client.send("hello"), 10)
    assert isinstance(reply, Message) and reply.text == "hello"
    assert faulty.faults.count == 3
    assert len({s.message_id for s in faulty.faults.seen}) == 1  # every attempt resends the same message


@pytest.mark.parametrize("status", [502, 504])
async def test_other_gateway_errors_are_retried(faulty: FaultyServer, status: int) -> None:
    faulty.faults.script = [f"status:{status}", "ok"]
    async with _client(faulty.url) as client:
        await asyncio.wait_for(client.get_card(), 10)
        with pytest.raises(TaskNotFoundError):
            await asyncio.wait_for(client.get_task("no-such-task"), 10)
    assert faulty.faults.count == 2


async def test_429_with_retry_after_is_honoured(faulty: FaultyServer) -> None:
    faulty.faults.script = ["status:429:1", "ok"]
    async with _client(faulty.url) as client:
        reply = await asyncio.wait_for(client.send("hello"), 10)
    assert isinstance(reply, Message)
    first, second = faulty.faults.seen
    # Behaviour, not speed: the backoff alone is at most 0.05 s here, so a gap of about a second
    # can only come from honouring Retry-After.
    assert second.at - first.at >= 0.95


async def test_retry_after_longer_than_the_client_accepts_ends_the_retries(faulty: FaultyServer) -> None:
    faulty.faults.script = ["status:429:120"]
    started = time.monotonic()
    async with _client(faulty.url, max_retry_after=30.0) as client:
        with pytest.raises(HTTPStatusError) as info:
            await asyncio.wait_for(client.send("hello"), 10)
    assert info.value.status == 429 and info.value.retry_after == 120.0
    assert faulty.faults.count == 1
    assert time.monotonic() - started < 5.0


async def test_connection_refused_then_the_server_appears() -> None:
    # Hold a free port without listening on it: connecting to it is refused until the server starts.
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    first_failure = asyncio.Event()

    class Signalling(RetryPolicy):
        def backoff(self, attempt: int) -> float:
            first_failure.set()
            return super().backoff(attempt)

    faults = Faults()
    runner: web.AppRunner | None = None
    policy = Signalling(max_attempts=100, initial_backoff=0.01, max_backoff=0.05, deadline=20.0, budget=None)
    try:
        async with A2AClient(f"http://127.0.0.1:{port}", retry=policy, timeout=5) as client:
            call = asyncio.create_task(client.send("hello"))
            await asyncio.wait_for(first_failure.wait(), 10)
            assert not call.done()
            holder.close()
            runner, _ = await _start(faults, port)
            reply = await asyncio.wait_for(call, 10)
        assert isinstance(reply, Message) and reply.text == "hello"
        assert faults.count == 1
    finally:
        holder.close()
        if runner is not None:
            await runner.cleanup()


async def test_connection_reset_mid_response_is_retried_with_the_same_message_id(
    faulty: FaultyServer, binding: str
) -> None:
    faulty.faults.script = ["reset", "ok"]
    async with _client(faulty.url, binding) as client:
        reply = await asyncio.wait_for(client.send("hello"), 10)
    assert isinstance(reply, Message) and reply.text == "hello"
    first, second = faulty.faults.seen
    assert first.method == second.method
    assert first.message_id is not None
    assert first.message_id == second.message_id


async def test_retried_send_of_a_task_returns_the_same_task(faulty: FaultyServer) -> None:
    # The first answer is lost after the server started the task: the retry must find that task
    # again (idempotent by messageId), not start a second one.
    faulty.faults.script = ["reset", "ok"]
    async with _client(faulty.url) as client:
        task = await asyncio.wait_for(client.send("stream:2"), 10)
        assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED
        listed = await asyncio.wait_for(client.list_tasks(), 10)
    assert [t.id for t in listed.tasks] == [task.id]


async def test_stream_is_retried_until_the_first_event(faulty: FaultyServer, binding: str) -> None:
    faulty.faults.script = ["status:503", "ok"]
    async with _client(faulty.url, binding) as client:
        events = [e.payload async for e in client.stream("stream:3")]
    assert isinstance(events[0], Task)
    assert events[-1].status.state is TaskState.COMPLETED  # type: ignore[union-attr]
    assert faulty.faults.count == 2


# ---- failures that a retry cannot fix are not retried ------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 500])
async def test_http_errors_that_are_not_transient_are_not_retried(
    faulty: FaultyServer, binding: str, status: int
) -> None:
    faulty.faults.default = f"status:{status}"
    async with _client(faulty.url, binding, max_attempts=5) as client:
        with pytest.raises(HTTPStatusError) as info:
            await asyncio.wait_for(client.send("hello"), 10)
    assert info.value.status == status and not info.value.retryable
    assert faulty.faults.count == 1


async def test_a2a_errors_are_not_retried(faulty: FaultyServer, binding: str) -> None:
    async with _client(faulty.url, binding, max_attempts=5) as client:
        with pytest.raises(TaskNotFoundError):
            await asyncio.wait_for(client.get_task("no-such-task"), 10)
    assert faulty.faults.count == 1


# ---- the policy's limits ----------------------------------------------------------------------------


@pytest.mark.parametrize("max_attempts", [1, 3])
async def test_max_attempts_is_respected(faulty: FaultyServer, max_attempts: int) -> None:
    faulty.faults.default = "status:503"
    async with _client(faulty.url, max_attempts=max_attempts) as client:
        with pytest.raises(HTTPStatusError) as info:
            await asyncio.wait_for(client.send("hello"), 10)
    assert info.value.status == 503
    assert faulty.faults.count == max_attempts


async def test_the_overall_deadline_stops_retries(faulty: FaultyServer) -> None:
    faulty.faults.default = "status:503"
    deadline = 0.6
    started = time.monotonic()
    async with _client(faulty.url, max_attempts=10_000, initial_backoff=0.05, max_backoff=0.1, deadline=deadline) as c:
        with pytest.raises(HTTPStatusError):
            await asyncio.wait_for(c.send("hello"), 10)
    elapsed = time.monotonic() - started
    assert 1 < faulty.faults.count < 10_000
    # No retry is scheduled past the deadline (the slack is for the last attempt and teardown).
    assert faulty.faults.seen[-1].at - faulty.faults.seen[0].at <= deadline
    assert elapsed < deadline + 2.0


async def test_a_retry_cut_by_the_deadline_raises_the_failure_that_led_to_it(faulty: FaultyServer) -> None:
    # The first attempt fails (503), the retry hangs until the overall deadline cuts it: the
    # caller is told of the 503, not only that time ran out.
    faulty.faults.script = ["status:503"]
    faulty.faults.default = "hang"
    async with _client(faulty.url, timeout=4.0, initial_backoff=0.05, deadline=0.5) as client:
        with pytest.raises(HTTPStatusError) as info:
            await asyncio.wait_for(client.send("hello"), 10)
    assert info.value.status == 503
    assert faulty.faults.count == 2


async def test_retry_after_beyond_the_deadline_is_not_waited_for(faulty: FaultyServer) -> None:
    faulty.faults.default = "status:503:5"
    started = time.monotonic()
    async with _client(faulty.url, deadline=1.0) as client:
        with pytest.raises(HTTPStatusError):
            await asyncio.wait_for(client.send("hello"), 10)
    assert faulty.faults.count == 1
    assert time.monotonic() - started < 3.0


async def test_the_overall_deadline_bounds_an_attempt_in_flight(faulty: FaultyServer) -> None:
    # RetryPolicy.deadline: "Longest a call may take, all attempts and waits included". A peer
    # that never answers must not hold the call for the whole per-call timeout.
    faulty.faults.default = "hang"
    started = time.monotonic()
    async with _client(faulty.url, timeout=4.0, deadline=0.5) as client:
        await asyncio.wait_for(client.get_card(), 10)
        with pytest.raises(RequestTimeoutError):
            await asyncio.wait_for(client.send("hello"), 10)
    assert time.monotonic() - started < 2.5


async def test_retry_budget_stops_a_client_from_hammering_a_dead_agent(faulty: FaultyServer) -> None:
    faulty.faults.default = "status:503"
    budget = RetryBudget(ratio=0.1, initial_tokens=2.0, max_tokens=10.0)
    async with _client(faulty.url, max_attempts=5, budget=budget) as client:
        with pytest.raises(HTTPStatusError):
            await asyncio.wait_for(client.send("first"), 10)
        assert faulty.faults.count == 3  # the initial two tokens buy two retries
        for n in range(4):
            with pytest.raises(HTTPStatusError):
                await asyncio.wait_for(client.send(f"call {n}"), 10)
    # Once the tokens are spent, each call makes one attempt only.
    assert faulty.faults.count == 3 + 4
    # Each call deposits 0.1 (the card fetch too): 2 + 0.1 + 0.1 - 2 retries + 4 * 0.1.
    assert budget.tokens == pytest.approx(0.6)


async def test_card_discovery_is_retried_too() -> None:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    try:
        client = A2AClient(f"http://127.0.0.1:{port}", retry=RetryPolicy(max_attempts=3, **FAST), timeout=5)
        async with client:
            with pytest.raises(TransportError) as info:
                await asyncio.wait_for(client.get_card(), 10)
        assert info.value.retryable
        assert "Cannot connect" in str(info.value)
    finally:
        holder.close()


# ---- the harness: our app composed with a middleware ---------------------------------------------


async def test_rest_binding_reads_a_body_that_a_middleware_read_first(binding: str) -> None:
    # aiohttp keeps a body that was read (request.read() returns it again), so a middleware that
    # reads it (logging, signatures, the fault injection above) must not change what a binding sees.
    @web.middleware
    async def reads_first(request: web.Request, handler: Handler) -> web.StreamResponse:
        await request.read()
        return await handler(request)

    agent = load_object(f"{ECHO}:agent")
    server = A2AServer(agent, config=ServerConfig(port=0))
    app = server.app()
    app.middlewares.append(reads_first)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        async with A2AClient(url, binding=binding, retry=RetryPolicy.none(), timeout=10) as client:
            reply = await asyncio.wait_for(client.send("hello"), 10)
        assert isinstance(reply, Message) and reply.text == "hello"
    finally:
        await runner.cleanup()


# ---- the policy on its own --------------------------------------------------------------------------


@pytest.mark.parametrize("attempt", range(1, 12))
def test_full_jitter_backoff_stays_within_zero_and_the_cap(attempt: int) -> None:
    policy = RetryPolicy(initial_backoff=0.2, max_backoff=5.0, multiplier=2.0)
    cap = min(5.0, 0.2 * 2.0 ** (attempt - 1))
    samples = [policy.backoff(attempt) for _ in range(500)]
    assert all(0.0 <= s <= cap for s in samples)
    # Full jitter: spread over the whole range, not clustered at the cap.
    assert min(samples) < cap * 0.2 and max(samples) > cap * 0.8


def test_full_jitter_draws_uniformly_from_zero_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    bounds: list[tuple[float, float]] = []

    def fake_uniform(a: float, b: float) -> float:
        bounds.append((a, b))
        return b

    monkeypatch.setattr(random, "uniform", fake_uniform)
    policy = RetryPolicy(initial_backoff=0.5, max_backoff=3.0, multiplier=3.0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [0.5, 1.5, 3.0, 3.0]
    assert bounds == [(0.0, 0.5), (0.0, 1.5), (0.0, 3.0), (0.0, 3.0)]


class _Flaky:
    def __init__(self, failures: int, exc: Exception | None = None) -> None:
        self.failures = failures
        self.calls = 0
        self.exc = exc or TransportError("refused", retryable=True)

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc
        return "ok"


async def test_budget_refills_with_calls() -> None:
    budget = RetryBudget(ratio=0.5, initial_tokens=0.0, max_tokens=1.0)
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.0, max_backoff=0.0, budget=budget)
    broken = _Flaky(failures=100)
    with pytest.raises(TransportError):
        await policy.run(broken, what="call 1")  # 0.5 tokens: no retry
    assert broken.calls == 1
    with pytest.raises(TransportError):
        await policy.run(broken, what="call 2")  # 1.0 token: one retry
    assert broken.calls == 3
    for _ in range(10):
        await policy.run(_Flaky(failures=0), what="healthy")
    assert budget.tokens == 1.0  # never above max_tokens


async def test_policy_none_never_retries() -> None:
    flaky = _Flaky(failures=1)
    with pytest.raises(TransportError):
        await RetryPolicy.none().run(flaky, what="x")
    assert flaky.calls == 1


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (TransportError("refused", retryable=True), True),
        (TransportError("bad url"), False),
        (HTTPStatusError("busy", status=503), True),
        (HTTPStatusError("nope", status=400), False),
        (RequestTimeoutError("slow"), False),
        (TaskNotFoundError(), False),
        (ValueError("bug"), False),
    ],
)
async def test_only_retryable_failures_are_retried(exc: Exception, retryable: bool) -> None:
    assert is_retryable(exc) is retryable
    flaky = _Flaky(failures=1, exc=exc)
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.0, max_backoff=0.0, budget=None)
    if retryable:
        assert await policy.run(flaky, what="x") == "ok"
        assert flaky.calls == 2
    else:
        with pytest.raises(type(exc)):
            await policy.run(flaky, what="x")
        assert flaky.calls == 1


def test_parse_retry_after() -> None:
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 10 ") == 10.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("-1") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: now
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    delay = parse_retry_after(future)
    assert delay is not None and 25.0 <= delay <= 31.0
