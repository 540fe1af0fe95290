"""Traces: one trace id from a client through an agent to the agent it calls, over every binding.

The SDK's in-memory exporter collects the spans of this process. The core case: a client (its
call under a root span) asks agent A, whose skill asks agent B through ``A2AClient``; the
A→B hop goes over each binding in turn (JSON-RPC, HTTP+JSON, WebSocket, stdio on pipes), so
the trace context must cross HTTP headers and the JSON-RPC envelope. Then the supervisor hop:
a supervisor run delegating to A, which asks B.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from a2a import A2AClient, A2AServer, Agent, ServerConfig, telemetry
from a2a import types as t
from a2a.errors import InternalError
from a2a.protocol.jsonrpc import decode_call
from a2a.server.backends.store import InMemoryTaskStore, TaskRecord
from a2a.transport.multiplex import Multiplexer
from tests.conformance.helpers import StdioTwin, open_stdio_twin

WAIT = 20.0

_EXPORTER = InMemorySpanExporter()


def _install_provider() -> None:
    """The SDK as the global provider (settable once per process), exporting to memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


_install_provider()
_ROOT_TRACER = trace.get_tracer("tests.operability")


@pytest.fixture
def spans() -> InMemorySpanExporter:
    if telemetry.tracing() is None:
        pytest.skip("tracing is turned off (A2A_TRACING)")
    _EXPORTER.clear()
    return _EXPORTER


def _text(result: t.Task | t.Message) -> str:
    parts = result.parts if isinstance(result, t.Message) else [p for a in result.artifacts or [] for p in a.parts]
    return "".join(p.text for p in parts if isinstance(p.text, str))


def _agent_b() -> Agent:
    agent = Agent("B", "answers")

    @agent.skill()
    async def answer(text: str) -> str:
        return f"B got {text}"

    return agent


def _agent_a(client_for_b: Callable[[], A2AClient], streaming: bool) -> Agent:
    agent = Agent("A", "asks B")

    @agent.skill()
    async def ask(text: str) -> str:
        async with client_for_b() as client:
            if streaming:
                last: t.StreamResponse | None = None
                async for event in client.stream(text):
                    last = event
                assert last is not None
                return "A heard streamed"
            return "A heard " + _text(await client.send(text))

    return agent


async def _hop_client(b: A2AServer, binding: str) -> AsyncIterator[Callable[[], A2AClient]]:
    """How agent A reaches agent B over ``binding``."""
    assert b.url is not None
    if binding == "STDIO":
        twin: StdioTwin = open_stdio_twin(b)
        try:
            yield lambda: _Borrowed(twin)
        finally:
            await twin.transport.close()
            twin.stop.set()
            await twin.wait_closed()
        return
    url = b.url
    yield lambda: A2AClient(url, binding=binding)


class _Borrowed(A2AClient):
    """A client over the stdio twin's transport that leaves the transport open when it closes."""

    def __init__(self, twin: StdioTwin) -> None:
        super().__init__(transport=twin.transport)

    async def close(self) -> None:
        await self._http.aclose()


def _by_name(spans: tuple[ReadableSpan, ...], name: str, kind: trace.SpanKind) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name and s.kind == kind]


def _agent_of(span: ReadableSpan) -> str:
    return str((span.attributes or {}).get("a2a.agent"))


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("hop", ["JSONRPC", "HTTP+JSON", "WEBSOCKET", "STDIO"])
async def test_one_trace_from_the_client_through_a_to_b(spans: InMemorySpanExporter, hop: str, streaming: bool) -> None:
    operation = "a2a/SendStreamingMessage" if streaming else "a2a/SendMessage"
    async with A2AServer(_agent_b(), config=ServerConfig(port=0)) as b:
        hops = _hop_client(b, hop)
        client_for_b = await anext(hops)
        try:
            async with A2AServer(_agent_a(client_for_b, streaming), config=ServerConfig(port=0)) as a:
                assert a.url is not None
                with _ROOT_TRACER.start_as_current_span("user request") as root:
                    async with A2AClient(a.url) as client:
                        if streaming:
                            events = [e async for e in client.stream("hello")]
                            assert events
                        else:
                            reply = await asyncio.wait_for(client.send("hello"), WAIT)
                            assert _text(reply) == "A heard B got hello"
        finally:
            await hops.aclose()
    finished = spans.get_finished_spans()
    trace_id = root.get_span_context().trace_id
    ours = [s for s in finished if s.name.startswith("a2a/") and s.name != "a2a/GetAgentCard"]
    assert ours, "no A2A spans were recorded"
    assert {s.context.trace_id for s in ours} == {trace_id}, "every span of the request is in the caller's trace"

    servers = {_agent_of(s): s for s in _by_name(finished, operation, trace.SpanKind.SERVER)}
    clients = _by_name(finished, operation, trace.SpanKind.CLIENT)
    assert set(servers) == {"A", "B"}
    assert len(clients) == 2
    # The chain: root → client span → A's server span → A's client span → B's server span.
    first = next(c for c in clients if c.parent is not None and c.parent.span_id == root.get_span_context().span_id)
    second = next(c for c in clients if c is not first)
    assert servers["A"].parent is not None and servers["A"].parent.span_id == first.context.span_id
    assert servers["A"].parent.is_remote
    assert second.parent is not None and second.parent.span_id == servers["A"].context.span_id
    assert servers["B"].parent is not None and servers["B"].parent.span_id == second.context.span_id
    assert servers["B"].parent.is_remote, f"the context crossed the {hop} binding"
    assert (servers["B"].attributes or {}).get("rpc.method") == operation.removeprefix("a2a/")


async def test_a_failed_operation_marks_its_span(spans: InMemorySpanExporter) -> None:
    """The client's span fails; the server's records the reason but is no error of the server's
    (OpenTelemetry's RPC conventions): the caller asked for a task that does not exist."""
    async with A2AServer(_agent_b(), config=ServerConfig(port=0)) as b:
        assert b.url is not None
        async with A2AClient(b.url) as client:
            with pytest.raises(Exception, match="not found"):
                await client.get_task("no-such-task")
    failed = {s.kind: s for s in spans.get_finished_spans() if s.name == "a2a/GetTask"}
    assert set(failed) == {trace.SpanKind.SERVER, trace.SpanKind.CLIENT}
    assert failed[trace.SpanKind.CLIENT].status.status_code == trace.StatusCode.ERROR
    assert failed[trace.SpanKind.SERVER].status.status_code == trace.StatusCode.UNSET
    assert all((s.attributes or {}).get("a2a.error") == "TASK_NOT_FOUND" for s in failed.values())


class _FaultyStore(InMemoryTaskStore):
    async def get(self, task_id: str) -> TaskRecord | None:
        if task_id == "boom":
            raise RuntimeError("disk on fire")
        return await super().get(task_id)


async def test_a_server_fault_fails_the_server_span(spans: InMemorySpanExporter) -> None:
    async with A2AServer(_agent_b(), store=_FaultyStore(), config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url) as client:
            with pytest.raises(InternalError):
                await client.get_task("boom")
    [span] = [s for s in spans.get_finished_spans() if s.kind == trace.SpanKind.SERVER and s.name == "a2a/GetTask"]
    assert span.status.status_code == trace.StatusCode.ERROR
    assert "RuntimeError: disk on fire" in (span.status.description or "")  # the cause, not the caller's view
    assert [e.name for e in span.events] == ["exception"]


async def test_the_envelope_carries_the_trace_context_on_connections(spans: InMemorySpanExporter) -> None:
    """WebSocket and stdio requests name their trace in the JSON-RPC envelope (protocol.md)."""
    sent: list[bytes] = []

    async def send(data: bytes) -> None:
        sent.append(data)

    mux = Multiplexer(send)
    with _ROOT_TRACER.start_as_current_span("caller") as caller:
        call = asyncio.ensure_future(mux.call("GetTask", {"id": "x"}, None, timeout=5))
        await asyncio.sleep(0)
        call.cancel()
    decoded = decode_call(sent[0])
    context = caller.get_span_context()
    assert decoded.traceparent is not None
    assert decoded.traceparent.startswith(f"00-{context.trace_id:032x}-{context.span_id:016x}-")


async def test_supervisor_run_is_one_trace_through_every_delegation(spans: InMemorySpanExporter) -> None:
    """supervisor → agent A → nested agent B: one trace id (the supervisor delegates with A2AClient)."""
    supervisor = pytest.importorskip("supervisor")
    async with A2AServer(_agent_b(), config=ServerConfig(port=0)) as b:
        assert b.url is not None
        b_url = b.url

        def client_for_b() -> A2AClient:
            return A2AClient(b_url)

        async with A2AServer(_agent_a(client_for_b, False), config=ServerConfig(port=0)) as a:
            assert a.url is not None
            sup = supervisor.Supervisor([a.url], checkpoint={"backend": "memory"})
            with _ROOT_TRACER.start_as_current_span("supervisor run") as root:
                result = await asyncio.wait_for(sup.run("ask about apples"), WAIT)
    assert result.status == "completed", result.final
    finished = spans.get_finished_spans()
    servers = {_agent_of(s): s for s in _by_name(finished, "a2a/SendMessage", trace.SpanKind.SERVER)}
    servers |= {_agent_of(s): s for s in _by_name(finished, "a2a/SendStreamingMessage", trace.SpanKind.SERVER)}
    assert {"A", "B"} <= set(servers)
    trace_id = root.get_span_context().trace_id
    assert servers["A"].context.trace_id == trace_id
    assert servers["B"].context.trace_id == trace_id


def test_without_opentelemetry_nothing_is_traced_and_requests_are_served() -> None:
    """The import is tried once and its absence costs nothing: no observer on the handler, no
    trace members in envelopes, and the server serves."""
    script = """
import asyncio, sys
sys.modules["opentelemetry"] = None  # as if not installed
from a2a import A2AClient, A2AServer, Agent, ServerConfig, telemetry
from a2a.transport.multiplex import Multiplexer
agent = Agent("Plain", "no traces")
@agent.skill()
async def echo(text: str) -> str:
    return text
async def main():
    assert telemetry.tracing() is None
    async with A2AServer(agent, config=ServerConfig(port=0)) as server:
        assert server.handler.observer is None
        sent = []
        async def send(data):
            sent.append(data)
        mux = Multiplexer(send)
        call = asyncio.ensure_future(mux.call("GetTask", {"id": "x"}, None, timeout=5))
        await asyncio.sleep(0)
        call.cancel()
        assert b"traceparent" not in sent[0]
        async with A2AClient(server.url) as client:
            await client.send("hi")
    print("ok")
asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_an_envelope_trace_context_that_is_no_string_is_ignored() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"},"traceparent":5,"tracestate":"a=b"}'
    call = decode_call(body)
    assert call.traceparent is None and call.params.id == "x"
    plain = decode_call(b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}')
    assert plain.traceparent is None and plain.tracestate is None


class _NoSpans:
    """A tracer that fails the test if a span is started."""

    def start_span(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("a span was started although no SDK records it")


_CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _without_sdk(monkeypatch: pytest.MonkeyPatch) -> telemetry.Tracing:
    """A ``Tracing`` in a process where no SDK provider is set (the API's proxy answers)."""
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    tracing = telemetry.Tracing()
    tracing.tracer = _NoSpans()  # type: ignore[assignment]
    return tracing


def test_without_an_sdk_no_span_is_made_and_the_callers_context_is_carried(monkeypatch: pytest.MonkeyPatch) -> None:
    """With only the API installed a span records nothing: none is made (it cost a fifth of a
    SendMessage), yet calls made while serving still pass the caller's trace context on."""
    tracing = _without_sdk(monkeypatch)
    assert not tracing.recording()
    with tracing.span("SendMessage", "server", {}):
        assert tracing.carrier() == {}
    with tracing.span("SendMessage", "server", {}, _CALLER):
        assert tracing.carrier()["traceparent"].split("-")[1] == _CALLER.split("-")[1]
    assert tracing.carrier() == {}  # detached after the block


async def test_without_an_sdk_a_stream_carries_the_callers_context_only(monkeypatch: pytest.MonkeyPatch) -> None:
    tracing = _without_sdk(monkeypatch)
    closed: list[bool] = []

    async def items() -> AsyncIterator[dict[str, str]]:
        try:
            for _ in range(2):
                yield tracing.carrier()
        finally:
            closed.append(True)

    plain = items()
    assert tracing.stream("SubscribeToTask", "server", {}, plain) is plain  # nothing to carry: untouched
    seen = [carrier async for carrier in tracing.stream("SubscribeToTask", "server", {}, items(), _CALLER)]
    assert [carrier["traceparent"].split("-")[1] for carrier in seen] == [_CALLER.split("-")[1]] * 2
    assert closed == [True]
    assert tracing.carrier() == {}


def test_an_sdk_provider_set_later_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: trace.ProxyTracerProvider())
    tracing = telemetry.Tracing()
    assert not tracing.recording()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: TracerProvider())
    tracing._asked_at -= 1.0  # a second later
    assert tracing.recording()
