"""The key conformance cases, one body each, over JSON-RPC, REST, WebSocket and stdio alike."""

from __future__ import annotations

import asyncio

import pytest

from a2a import A2AClient
from a2a import types as t
from a2a.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.protocol.methods import METHODS

from ._bindings_support import BOUND


async def _working_task(client: A2AClient) -> t.Task:
    task = await client.send("hold:30", return_immediately=True)
    assert isinstance(task, t.Task)
    return task


async def test_card_names_the_binding_in_use(any_client: A2AClient) -> None:
    card = await any_client.get_card()
    assert card.name == "Echo"
    transport = await any_client.connect()
    binding = getattr(transport, "binding", None) or any_client.interface.protocol_binding  # type: ignore[union-attr]
    assert binding in [i.protocol_binding for i in card.supported_interfaces]


async def test_send_text_gets_a_message(any_client: A2AClient) -> None:
    reply = await any_client.send("hello")
    assert isinstance(reply, t.Message)
    assert reply.text == "hello"
    assert reply.role == t.Role.AGENT


async def test_stream_delivers_task_chunks_completion(any_client: A2AClient) -> None:
    async with asyncio.timeout(BOUND):
        events = [e.payload async for e in any_client.stream("stream:3")]
    assert isinstance(events[0], t.Task)
    chunks = [e for e in events if isinstance(e, t.TaskArtifactUpdateEvent)]
    assert [c.artifact.parts[0].text for c in chunks] == ["chunk 0", "chunk 1", "chunk 2"]
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state == t.TaskState.COMPLETED


async def test_stream_of_a_plain_reply_is_one_message(any_client: A2AClient) -> None:
    async with asyncio.timeout(BOUND):
        events = [e.payload async for e in any_client.stream("just text")]
    assert len(events) == 1
    assert isinstance(events[0], t.Message)


async def test_get_and_list(any_client: A2AClient) -> None:
    done = await any_client.send("stream:2")
    assert isinstance(done, t.Task)
    got = await any_client.get_task(done.id, history_length=1)
    assert got.status.state == t.TaskState.COMPLETED
    assert got.history is not None and len(got.history) == 1
    page = await any_client.list_tasks(context_id=done.context_id)
    assert [task.id for task in page.tasks] == [done.id]
    assert page.next_page_token == ""


async def test_cancel_then_cancel_again(any_client: A2AClient) -> None:
    task = await _working_task(any_client)
    canceled = await any_client.cancel_task(task.id)
    assert canceled.status.state == t.TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError):
        await any_client.cancel_task(task.id)


async def test_subscribe_follows_a_task_until_it_ends(any_client: A2AClient) -> None:
    task = await _working_task(any_client)
    seen: list[object] = []
    async with asyncio.timeout(BOUND):
        async for event in any_client.subscribe(task.id):
            seen.append(event.payload)
            if len(seen) == 1:
                assert isinstance(event.payload, t.Task)
                await any_client.cancel_task(task.id)
    final = seen[-1]
    assert isinstance(final, t.TaskStatusUpdateEvent)
    assert final.status.state == t.TaskState.CANCELED
    with pytest.raises(UnsupportedOperationError):
        async with asyncio.timeout(BOUND):
            async for _ in any_client.subscribe(task.id):
                pass


async def test_errors_have_the_same_types_everywhere(any_client: A2AClient) -> None:
    with pytest.raises(TaskNotFoundError):
        await any_client.get_task("no-such-task")
    with pytest.raises(TaskNotFoundError):
        await any_client.send("again", task_id="no-such-task")
    with pytest.raises(InvalidParamsError):
        await any_client.list_tasks(page_size=1000)
    with pytest.raises(UnsupportedOperationError):
        await any_client.get_extended_card()
    transport = await any_client.connect()
    request = t.GetTaskPushNotificationConfigRequest(task_id="x", id="y")
    with pytest.raises(PushNotificationNotSupportedError):
        await transport.call(METHODS["GetTaskPushNotificationConfig"], request, timeout=BOUND)
