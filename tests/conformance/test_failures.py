"""Failures: an agent that raises fails its task; a server fault is a generic -32603, and serving goes on."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, Agent, RequestContext
from a2a.errors import InternalError
from a2a.types import AgentExtension, Message, Task, TaskState, TaskStatusUpdateEvent

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import TRACEBACK_MARKERS, Raw, bounded, collect, expect_error, send_params, summary, text_of

SECRET = "s3cr3t-internal-detail"


def _raising_agent() -> Agent:
    async def handler(ctx: RequestContext) -> None:
        await ctx.working("about to fail")
        raise ValueError("the widget broke: part 7 is missing")

    return Agent("Raiser", description="Always fails", handler=handler)


@pytest.fixture
async def raiser(serve: StartServer, open_raw: OpenRaw) -> Raw:
    return open_raw(await serve(_raising_agent()))


def _no_traceback(text: str) -> None:
    for marker in TRACEBACK_MARKERS:
        assert marker not in text, f"traceback text {marker!r} leaked to the caller: {text[:300]}"


async def test_agent_exception_fails_the_task_with_its_type_and_text(raiser: Raw) -> None:
    outcome = await raiser.call("SendMessage", send_params("go"))
    task = outcome.result["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    message = task["status"]["message"]
    assert message["role"] == "ROLE_AGENT"
    assert text_of(message) == "ValueError: the widget broke: part 7 is missing"
    _no_traceback(outcome.body.decode())
    stored = await raiser.call("GetTask", {"id": task["id"]})
    assert stored.result["status"]["state"] == "TASK_STATE_FAILED"
    _no_traceback(stored.body.decode())


async def test_agent_exception_ends_the_stream_with_failed(raiser: Raw) -> None:
    async with raiser.stream("SendStreamingMessage", send_params("go")) as stream:
        events = [await stream.next(), *await stream.rest()]
    assert events[-1].state == "TASK_STATE_FAILED"
    assert (
        text_of(events[-1].payload["statusUpdate"]["status"]["message"])
        == "ValueError: the widget broke: part 7 is missing"
    )
    for event in events:
        _no_traceback(str(event.data))


async def test_echo_agent_bad_input_fails_only_that_task(raw: Raw) -> None:
    task = (await raw.call("SendMessage", send_params("hold:forever"))).result["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "forever" in text_of(task["status"]["message"])
    await raw.echo_ok()


@pytest.mark.parametrize("method", ["GetTask", "CancelTask"])
async def test_server_fault_is_a_generic_internal_error(
    echo_server: A2AServer, raw: Raw, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    task_id = (await raw.call("SendMessage", send_params("stream:1"))).result["task"]["id"]

    async def broken_get(_task_id: str) -> None:
        raise RuntimeError(SECRET)

    with monkeypatch.context() as patch:
        patch.setattr(echo_server.handler.store, "get", broken_get)
        outcome = await raw.call(method, {"id": task_id})
    message = expect_error(outcome, -32603, http_status=None if raw.binding == "JSONRPC" else 500)
    assert message == "Internal error"
    assert SECRET not in outcome.body.decode()
    _no_traceback(outcome.body.decode())
    # The fault was one request's; the server goes on serving.
    assert (await raw.call("GetTask", {"id": task_id})).result["id"] == task_id
    await raw.echo_ok()


async def test_server_fault_while_listing(echo_server: A2AServer, raw: Raw, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken_list(_query: object) -> None:
        raise OSError(SECRET)

    with monkeypatch.context() as patch:
        patch.setattr(echo_server.handler.store, "list", broken_list)
        outcome = await raw.call("ListTasks", {})
    expect_error(outcome, -32603)
    assert SECRET not in outcome.body.decode()
    await raw.ok()


async def test_server_fault_while_sending(echo_server: A2AServer, raw: Raw, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken_claim(_key: object, _record: object) -> None:
        raise RuntimeError(SECRET)

    with monkeypatch.context() as patch:
        patch.setattr(echo_server.handler.store, "claim_message", broken_claim)
        outcome = await raw.call("SendMessage", send_params("hello"))
        async with raw.stream("SendStreamingMessage", send_params("stream:1")) as stream:
            assert not stream.is_sse
            streamed = await stream.outcome()
    for result in (outcome, streamed):
        assert expect_error(result, -32603) == "Internal error"
        assert SECRET not in result.body.decode()
    await raw.echo_ok()


# ---- the same, through the client, on every binding ------------------------------------------
#
# WebSocket and stdio frame errors in their own place (the connection dispatcher), so the same
# promises are checked there too: the task fails with the agent's text, a server fault is a
# generic -32603 with nothing of the fault in it, and serving goes on.


@pytest.fixture
async def raiser_client(serve: StartServer, open_client: OpenClient) -> A2AClient:
    return await open_client(await serve(_raising_agent()))


async def test_client_agent_exception_fails_the_task_with_its_text(raiser_client: A2AClient) -> None:
    task = await bounded(raiser_client.send("go"))
    assert isinstance(task, Task) and task.status.state == TaskState.FAILED
    assert task.status.message is not None
    assert task.status.message.text == "ValueError: the widget broke: part 7 is missing"
    _no_traceback(task.status.message.text)
    assert (await bounded(raiser_client.get_task(task.id))).status.state == TaskState.FAILED


async def test_client_agent_exception_ends_the_stream_with_failed(raiser_client: A2AClient) -> None:
    events = await collect(raiser_client.stream("go"))
    last = events[-1].payload
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state == TaskState.FAILED
    assert (
        last.status.message is not None
        and last.status.message.text == "ValueError: the widget broke: part 7 is missing"
    )


@pytest.mark.parametrize("method", ["GetTask", "CancelTask"])
async def test_client_server_fault_is_a_generic_internal_error(
    echo_server: A2AServer, client: A2AClient, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    task = await bounded(client.send("stream:1"))
    assert isinstance(task, Task)

    async def broken_get(_task_id: str) -> None:
        raise RuntimeError(SECRET)

    call = client.get_task if method == "GetTask" else client.cancel_task
    with monkeypatch.context() as patch:
        patch.setattr(echo_server.handler.store, "get", broken_get)
        with pytest.raises(InternalError) as caught:
            await bounded(call(task.id))
    assert caught.value.code == -32603
    assert caught.value.message == "Internal error"
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value.data)
    # The fault was one request's; the connection and the server go on serving.
    assert (await bounded(client.get_task(task.id))).id == task.id
    reply = await bounded(client.send("still there?"))
    assert isinstance(reply, Message) and reply.text == "still there?"


async def test_client_server_fault_while_streaming(
    echo_server: A2AServer, client: A2AClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_claim(_key: object, _record: object) -> None:
        raise RuntimeError(SECRET)

    with monkeypatch.context() as patch:
        patch.setattr(echo_server.handler.store, "claim_message", broken_claim)
        with pytest.raises(InternalError) as caught:
            await collect(client.stream("stream:1"))
    assert caught.value.message == "Internal error" and SECRET not in str(caught.value)
    assert [summary(e)[1] for e in await collect(client.stream("stream:1"))][-1] == "TASK_STATE_COMPLETED"


# ---- the one exception boundary: the handler ---------------------------------------------------
#
# Agent code the handler runs outside ``execute`` (here: reading the agent's extensions, which
# every SendMessage does) raises something that is not a protocol error. Whatever the binding,
# the caller gets the generic -32603 with nothing of the fault in it, and the fault is logged
# once: by the handler, not again by a binding.


class _ExplodingExtensions(list[AgentExtension]):
    def __iter__(self) -> Any:
        raise RuntimeError(SECRET)


def _agent_with_broken_extensions() -> Agent:
    async def reply(ctx: RequestContext) -> None:
        await ctx.reply(ctx.text)

    agent = Agent("Broken", description="Its extensions break when read", handler=reply)
    agent.extensions = _ExplodingExtensions()
    return agent


def _logged_faults(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info is not None and SECRET in str(r.exc_info[1])]


async def test_client_fault_in_agent_code_is_one_logged_internal_error(
    serve: StartServer, open_client: OpenClient, caplog: pytest.LogCaptureFixture
) -> None:
    client = await open_client(await serve(_agent_with_broken_extensions()))
    calls: list[Callable[[], Awaitable[Any]]] = [lambda: client.send("hi"), lambda: collect(client.stream("hi"))]
    for call in calls:
        with caplog.at_level(logging.ERROR):
            caplog.clear()
            with pytest.raises(InternalError) as caught:
                await bounded(call())
        assert caught.value.code == -32603 and caught.value.message == "Internal error"
        assert SECRET not in str(caught.value) and SECRET not in repr(caught.value.data)
        assert len(_logged_faults(caplog)) == 1, [r.getMessage() for r in caplog.records]


async def test_fault_in_agent_code_has_no_traceback_on_the_wire(
    serve: StartServer, open_raw: OpenRaw, caplog: pytest.LogCaptureFixture
) -> None:
    raw = open_raw(await serve(_agent_with_broken_extensions()))
    with caplog.at_level(logging.ERROR):
        outcome = await raw.call("SendMessage", send_params("hi"))
        async with raw.stream("SendStreamingMessage", send_params("hi")) as stream:
            assert not stream.is_sse
            streamed = await stream.outcome()
    for result in (outcome, streamed):
        assert expect_error(result, -32603, http_status=None if raw.binding == "JSONRPC" else 500) == "Internal error"
        assert SECRET not in result.body.decode()
        _no_traceback(result.body.decode())
    assert len(_logged_faults(caplog)) == 2, [r.getMessage() for r in caplog.records]
