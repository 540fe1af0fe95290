"""Where a resumed stream starts, as protocol.md §5 "Resuming a stream" says, on the SSE bindings.

The spec leaves resuming to SSE (``Last-Event-ID``); what a2a-net answers for each resume point
is its own choice, written down in protocol.md and checked here: the SubscribeToTask snapshot's
id, a resume point at or past the end, and a retried SendStreamingMessage after its task ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from a2a import A2AServer

from .conftest import OpenRaw, StartServer
from .helpers import WAIT, Gate, Raw, expect_error, gated_agent, send_params, user_message


@pytest.fixture
async def gated_raw(serve: StartServer, open_raw: OpenRaw, gate: Gate) -> Raw:
    server: A2AServer = await serve(gated_agent(gate, chunks=3))
    return open_raw(server)


async def _finished_stream(raw: Raw, message: dict[str, Any]) -> list[str | None]:
    async with raw.stream("SendStreamingMessage", {"message": message}) as stream:
        return [e.id for e in [await stream.next(), *await stream.rest()]]


async def test_a_retried_stream_after_its_task_ended_is_the_final_task_without_an_id(raw: Raw) -> None:
    """§5: with or without Last-Event-ID, a retried SendStreamingMessage whose task has ended
    gets the final task as its only event, which carries no id (it is no event of the log)."""
    message = user_message("stream:3")
    ids = await _finished_stream(raw, message)
    assert ids == ["1", "2", "3", "4", "5"]
    for resume in (None, "2"):
        headers = {} if resume is None else {"Last-Event-ID": resume}
        async with raw.stream("SendStreamingMessage", {"message": message}, headers=headers) as stream:
            events = [await stream.next(), *await stream.rest()]
        assert [(e.id, e.state) for e in events] == [(None, "TASK_STATE_COMPLETED")]
        assert events[0].payload["task"]["artifacts"][0]["parts"][2] == {"text": "chunk 2"}


async def test_resuming_an_ended_task_after_its_last_event_is_unsupported_operation(raw: Raw) -> None:
    """§5: SubscribeToTask with Last-Event-ID = an ended task's last event id: nothing follows,
    so it is answered as without one (-32004), not with a stream that never ends."""
    ids = await _finished_stream(raw, user_message("stream:2"))
    task_id = (await raw.call("ListTasks", {})).result["tasks"][0]["id"]
    async with raw.stream("SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": str(ids[-1])}) as stream:
        expect_error(await stream.outcome(), -32004)
    async with raw.stream("SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": str(ids[-2])}) as stream:
        assert [e.state for e in await stream.rest()] == ["TASK_STATE_COMPLETED"]


async def test_a_resume_point_past_the_end_is_ignored(gated_raw: Raw, gate: Gate) -> None:
    """§5: a Last-Event-ID past the task's last event is as if none was sent: a running task's
    snapshot (whose id is its last event's), an ended task -32004."""
    started = await gated_raw.call("SendMessage", send_params("gate", configuration={"returnImmediately": True}))
    task_id = started.result["task"]["id"]
    await asyncio.wait_for(gate.entered.wait(), WAIT)
    async with gated_raw.stream("SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": "99"}) as stream:
        snapshot = await stream.next()
        assert "task" in snapshot.payload and snapshot.id is not None
        async with gated_raw.stream("SubscribeToTask", {"id": task_id}) as plain:
            assert (await plain.next()).id == snapshot.id  # the id of the last event it includes
        gate.release.set()
        rest = await stream.rest()
    assert [int(e.id or 0) for e in rest] == list(range(int(snapshot.id) + 1, int(snapshot.id) + 1 + len(rest)))
    ended = await gated_raw.call("GetTask", {"id": task_id})
    assert ended.result["status"]["state"] == "TASK_STATE_COMPLETED"
    async with gated_raw.stream("SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": "99"}) as stream:
        outcome = await stream.outcome()
    expect_error(outcome, -32004)
