"""The handler is the one exception boundary: only protocol errors leave ``call`` and ``stream``
(and iterating a stream); any other exception is logged there once and becomes -32603."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from a2a import types as t
from a2a.errors import InternalError, MethodNotFoundError, TaskNotFoundError
from a2a.server import Agent, CallContext, RequestHandler
from a2a.server.engine.events import LoggedEvent
from a2a.server.engine.ids import new_id

SECRET = "s3cr3t-internal-detail"
NOBODY = CallContext()


def _send(text: str, *, immediately: bool = False) -> t.SendMessageRequest:
    message = t.Message(message_id=new_id(), role=t.Role.USER, parts=[t.Part(text=text)])
    return t.SendMessageRequest(
        message=message, configuration=t.SendMessageConfiguration(return_immediately=immediately)
    )


@pytest.fixture
async def handler(echo_agent: Agent) -> AsyncIterator[RequestHandler]:
    served = RequestHandler(echo_agent)
    yield served
    await served.shutdown()


def _faults(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info is not None and SECRET in str(r.exc_info[1])]


async def _broken(*_: Any) -> Any:
    raise RuntimeError(SECRET)


async def test_a_fault_in_a_unary_call_is_one_logged_internal_error(
    handler: RequestHandler, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(handler.store, "get", _broken)
    with caplog.at_level(logging.ERROR), pytest.raises(InternalError) as caught:
        await handler.call("GetTask", t.GetTaskRequest(id="t1"), NOBODY)
    assert caught.value.message == "Internal error" and SECRET not in str(caught.value)
    assert isinstance(caught.value.__cause__, RuntimeError)  # kept for whoever debugs in-process
    [record] = _faults(caplog)
    assert "GetTask" in record.getMessage()


async def test_protocol_errors_pass_unchanged(handler: RequestHandler, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        with pytest.raises(TaskNotFoundError):
            await handler.call("GetTask", t.GetTaskRequest(id="nope"), NOBODY)
        with pytest.raises(TaskNotFoundError):
            await anext(handler.stream("SubscribeToTask", t.SubscribeToTaskRequest(id="nope"), NOBODY))
    assert not caplog.records


async def test_an_operation_of_the_other_kind_is_method_not_found(handler: RequestHandler) -> None:
    with pytest.raises(MethodNotFoundError):
        await handler.call("SubscribeToTask", t.SubscribeToTaskRequest(id="t1"), NOBODY)
    with pytest.raises(MethodNotFoundError):
        handler.stream("GetTask", t.GetTaskRequest(id="t1"), NOBODY)


async def test_a_fault_in_the_middle_of_a_stream_is_one_logged_internal_error(
    handler: RequestHandler, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    task = (await handler.call("SendMessage", _send("hold:30", immediately=True), NOBODY)).task
    follow_closed = asyncio.Event()

    async def follow_then_break(*_: Any, **__: Any) -> AsyncIterator[LoggedEvent]:
        try:
            raise RuntimeError(SECRET)
            yield  # an async generator
        finally:
            follow_closed.set()

    monkeypatch.setattr(handler.bus, "follow", follow_then_break)
    events = handler.stream("SubscribeToTask", t.SubscribeToTaskRequest(id=task.id), NOBODY)
    first = await anext(events)  # the task as it is, before the bus is followed
    assert first.event.task is not t.UNSET and first.event.task.id == task.id
    with caplog.at_level(logging.ERROR), pytest.raises(InternalError):
        await anext(events)
    assert follow_closed.is_set()
    assert len(_faults(caplog)) == 1


async def test_closing_a_stream_closes_the_operation_behind_it(echo_agent: Agent) -> None:
    closed = asyncio.Event()
    snapshot = t.StreamResponse(task=t.Task(id="t1", status=t.TaskStatus(state=t.TaskState.WORKING)))

    class Handler(RequestHandler):
        async def subscribe(self, req: t.SubscribeToTaskRequest, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
            try:
                yield LoggedEvent(1, snapshot, b"{}")
                await asyncio.Event().wait()
            finally:
                closed.set()

    handler = Handler(echo_agent)
    events = handler.stream("SubscribeToTask", t.SubscribeToTaskRequest(id="t1"), NOBODY)
    assert (await anext(events)).seq == 1
    await events.aclose()  # type: ignore[attr-defined]
    assert closed.is_set()
    await handler.shutdown()
