"""SendMessage and SendStreamingMessage: message or task answers, blocking, returnImmediately, historyLength."""

from __future__ import annotations

import asyncio

import pytest

from a2a import A2AClient
from a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent

from .conftest import OpenClient, StartServer
from .helpers import Gate, Raw, bounded, collect, gated_agent, send_params, text_of


async def test_text_is_answered_with_a_message_and_no_task(raw: Raw) -> None:
    result = (await raw.call("SendMessage", send_params("hello there"))).result
    assert set(result) == {"message"}, "a SendMessageResponse holds exactly one of task | message"
    message = result["message"]
    assert message["role"] == "ROLE_AGENT"
    assert text_of(message) == "hello there"
    assert message["messageId"]
    assert "taskId" not in message, "a plain reply must not point at a task"


async def test_task_answer_has_the_wire_shape_of_a_task(raw: Raw) -> None:
    result = (await raw.call("SendMessage", send_params("stream:2"))).result
    assert set(result) == {"task"}
    task = result["task"]
    assert task["id"] and task["contextId"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["timestamp"].endswith("Z")
    [artifact] = task["artifacts"]
    assert [p["text"] for p in artifact["parts"]] == ["chunk 0", "chunk 1"]
    assert task["history"][0]["role"] == "ROLE_USER"
    assert text_of(task["history"][0]) == "stream:2"
    assert task["history"][0]["taskId"] == task["id"], "the stored message is linked to its task"


async def test_blocking_send_waits_for_a_terminal_state(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client(await serve(gated_agent(gate, chunks=2)))
    sending = asyncio.create_task(client.send("work"))
    await bounded(gate.entered.wait())
    # The agent is parked at the gate with its task WORKING: a blocking send must not return yet.
    done, _ = await asyncio.wait([sending], timeout=0.2)
    assert not done, "SendMessage returned before the task reached a terminal or interrupted state"
    gate.release.set()
    task = await bounded(sending)
    assert isinstance(task, Task)
    assert task.status.state == TaskState.COMPLETED
    assert task.artifacts and len(task.artifacts[0].parts) == 2


async def test_return_immediately_answers_with_a_non_terminal_task(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client(await serve(gated_agent(gate)))
    task = await bounded(client.send("work", return_immediately=True))
    assert isinstance(task, Task)
    assert task.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    # The task exists for other calls at once, while the agent still works.
    assert (await client.get_task(task.id)).status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    await bounded(gate.entered.wait())
    gate.release.set()


@pytest.mark.parametrize(("history_length", "expected"), [(None, 3), (0, 0), (1, 1), (2, 2), (50, 3)])
async def test_send_history_length(client: A2AClient, history_length: int | None, expected: int) -> None:
    # hold:0 leaves three messages: the user's, the WORKING note and the completion note.
    task = await client.send("hold:0", history_length=history_length)
    assert isinstance(task, Task)
    history = task.history or []
    assert len(history) == expected
    if expected:
        assert history[-1].text == "held for 0s", "historyLength keeps the most recent messages"


async def test_stream_of_a_message_reply_is_that_one_message(client: A2AClient) -> None:
    events = await collect(client.stream("just a message"))
    assert len(events) == 1
    assert isinstance(events[0].payload, Message)
    assert events[0].payload.text == "just a message"


async def test_stream_of_a_task_is_the_task_then_its_events_in_order(client: A2AClient) -> None:
    events = [e.payload for e in await collect(client.stream("stream:4"))]
    first = events[0]
    assert isinstance(first, Task)
    assert first.status.state == TaskState.SUBMITTED
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.parts[0].text for c in chunks] == [f"chunk {i}" for i in range(4)]
    assert all(c.task_id == first.id and c.context_id == first.context_id for c in chunks)
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.status.state == TaskState.COMPLETED
    # What was streamed is what the store kept.
    stored = await client.get_task(first.id)
    assert stored.status.state == TaskState.COMPLETED
    assert [p.text for p in (stored.artifacts or [])[0].parts] == [f"chunk {i}" for i in range(4)]


async def test_send_streaming_raw_frames_are_stream_responses(raw: Raw) -> None:
    async with raw.stream("SendStreamingMessage", send_params("stream:2")) as stream:
        assert stream.status == 200 and stream.is_sse
        events = [await stream.next(), *await stream.rest()]
    for event in events:
        assert event.kind == "message", "data events use the default SSE event name"
        assert len(event.payload) == 1, f"a StreamResponse holds exactly one member: {event.payload}"
    assert "task" in events[0].payload
    assert events[-1].state == "TASK_STATE_COMPLETED"
    if raw.binding == "JSONRPC":
        assert all(e.data["jsonrpc"] == "2.0" and e.data["id"] == 1 for e in events)
