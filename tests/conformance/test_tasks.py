"""GetTask, ListTasks, CancelTask and SubscribeToTask."""

from __future__ import annotations

import pytest

from a2a import A2AClient, A2AServer
from a2a.errors import ProtocolError
from a2a.types import Task, TaskState, TaskStatusUpdateEvent

from .conftest import OpenClient, StartServer
from .helpers import (
    Gate,
    Raw,
    bounded,
    collect,
    expect_error,
    gated_agent,
    new_id,
    task_state,
    user_message,
    wait_until,
)


async def _task(client: A2AClient, text: str, **kwargs: object) -> Task:
    task = await client.send(text, **kwargs)  # type: ignore[arg-type]
    assert isinstance(task, Task), f"{text!r} should make a task, got {task!r}"
    return task


# ---- GetTask -------------------------------------------------------------------------------


@pytest.mark.parametrize(("history_length", "expected"), [(None, 3), (0, 0), (1, 1), (3, 3), (10, 3)])
async def test_get_task_history_length(client: A2AClient, history_length: int | None, expected: int) -> None:
    task = await _task(client, "hold:0")
    got = await client.get_task(task.id, history_length=history_length)
    assert got.id == task.id and got.status.state == TaskState.COMPLETED
    history = got.history or []
    assert len(history) == expected
    if expected:
        assert history[-1].text == "held for 0s"
    if expected == 3:
        assert history[0].text == "hold:0"


async def test_get_task_negative_history_length_is_invalid_params(raw: Raw) -> None:
    task = (await raw.call("SendMessage", {"message": user_message("stream:1")})).result["task"]
    expect_error(await raw.call("GetTask", {"id": task["id"], "historyLength": -1}), -32602)


async def test_get_unknown_task_is_task_not_found(raw: Raw) -> None:
    expect_error(await raw.call("GetTask", {"id": "no-such-task"}), -32001)


# ---- ListTasks -----------------------------------------------------------------------------


async def test_list_tasks_pages_newest_first_with_cursor(client: A2AClient) -> None:
    created = [await _task(client, "stream:1") for _ in range(5)]
    newest_first = [task.id for task in reversed(created)]
    seen: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        page = await client.list_tasks(page_size=2, page_token=token)
        pages += 1
        assert len(page.tasks) <= 2
        assert page.page_size == 2
        assert page.total_size == 5
        seen += [task.id for task in page.tasks]
        if not page.next_page_token:
            break
        token = page.next_page_token
        assert pages < 10, "pagination does not end"
    assert pages == 3
    assert seen == newest_first, "tasks come newest status first, each exactly once"


async def test_list_tasks_next_page_token_is_always_present(raw: Raw) -> None:
    for _ in range(3):
        await raw.call("SendMessage", {"message": user_message("stream:1")})
    first = (await raw.call("ListTasks", {"pageSize": 2})).result
    assert isinstance(first["nextPageToken"], str) and first["nextPageToken"]
    last = (await raw.call("ListTasks", {"pageSize": 2, "pageToken": first["nextPageToken"]})).result
    assert len(last["tasks"]) == 1
    assert "nextPageToken" in last and last["nextPageToken"] == "", "the last page carries an empty token"
    everything = (await raw.call("ListTasks", {})).result
    assert everything["nextPageToken"] == "" and len(everything["tasks"]) == 3


async def test_list_tasks_of_nobody_is_an_empty_page(raw: Raw) -> None:
    result = (await raw.call("ListTasks", {})).result
    assert result["tasks"] == []
    assert result["nextPageToken"] == ""


async def test_list_tasks_filters_by_context(client: A2AClient) -> None:
    ctx_a, ctx_b = new_id(), new_id()
    in_a = {(await _task(client, "stream:1", context_id=ctx_a)).id for _ in range(2)}
    in_b = {(await _task(client, "stream:1", context_id=ctx_b)).id}
    page = await client.list_tasks(context_id=ctx_a)
    assert {task.id for task in page.tasks} == in_a
    assert all(task.context_id == ctx_a for task in page.tasks)
    assert {task.id for task in (await client.list_tasks(context_id=ctx_b)).tasks} == in_b


async def test_list_tasks_filters_by_status(client: A2AClient) -> None:
    done = await _task(client, "stream:1")
    failed = await _task(client, "hold:not-a-number")  # the echo agent raises: FAILED
    assert failed.status.state == TaskState.FAILED
    working = await _task(client, "hold:30", return_immediately=True)
    try:
        completed = await client.list_tasks(status=TaskState.COMPLETED)
        assert [task.id for task in completed.tasks] == [done.id]
        assert [task.id for task in (await client.list_tasks(status=TaskState.FAILED)).tasks] == [failed.id]

        async def is_working() -> bool:
            return (await client.get_task(working.id)).status.state == TaskState.WORKING

        await wait_until(is_working, what="the hold task to be WORKING")
        assert [task.id for task in (await client.list_tasks(status=TaskState.WORKING)).tasks] == [working.id]
    finally:
        await client.cancel_task(working.id)


async def test_list_tasks_filters_by_status_timestamp_after(client: A2AClient) -> None:
    created = [await _task(client, "stream:1") for _ in range(4)]
    cutoff = created[1].status.timestamp
    assert cutoff
    listed = {task.id for task in (await client.list_tasks(status_timestamp_after=cutoff)).tasks}
    assert {created[2].id, created[3].id} <= listed
    assert created[0].id not in listed, "a task whose status is older than the cutoff is left out"
    # Any ISO-8601 instant is accepted, e.g. with an explicit offset instead of Z.
    as_offset = cutoff.replace("Z", "+00:00")
    assert {task.id for task in (await client.list_tasks(status_timestamp_after=as_offset)).tasks} == listed


async def test_list_tasks_leaves_artifacts_out_unless_asked(client: A2AClient) -> None:
    task = await _task(client, "stream:2")
    [listed] = (await client.list_tasks()).tasks
    assert listed.id == task.id
    assert not listed.artifacts, "includeArtifacts defaults to false"
    [with_artifacts] = (await client.list_tasks(include_artifacts=True)).tasks
    assert with_artifacts.artifacts and len(with_artifacts.artifacts[0].parts) == 2


async def test_list_tasks_history_length(client: A2AClient) -> None:
    await _task(client, "hold:0")
    [task] = (await client.list_tasks(history_length=1)).tasks
    assert [m.text for m in task.history or []] == ["held for 0s"]


@pytest.mark.parametrize("page_size", [0, 101, -1])
async def test_list_tasks_page_size_out_of_range_is_invalid_params(raw: Raw, page_size: int) -> None:
    message = expect_error(await raw.call("ListTasks", {"pageSize": page_size}), -32602)
    assert "pageSize" in message


async def test_list_tasks_page_size_bounds_are_accepted(raw: Raw) -> None:
    for page_size in (1, 100):
        assert (await raw.call("ListTasks", {"pageSize": page_size})).result["tasks"] == []


async def test_list_tasks_bad_page_token_is_invalid_params(raw: Raw) -> None:
    expect_error(await raw.call("ListTasks", {"pageToken": "not-a-token!"}), -32602)


# ---- CancelTask ----------------------------------------------------------------------------


async def test_cancel_running_task_ends_canceled(client: A2AClient, echo_server: A2AServer) -> None:
    task = await _task(client, "hold:30", return_immediately=True)
    canceled = await bounded(client.cancel_task(task.id))
    assert canceled.id == task.id
    assert canceled.status.state == TaskState.CANCELED
    assert (await client.get_task(task.id)).status.state == TaskState.CANCELED
    assert await task_state(echo_server, task.id) == TaskState.CANCELED


async def test_cancel_terminal_task_is_not_cancelable(raw: Raw) -> None:
    task = (await raw.call("SendMessage", {"message": user_message("stream:1")})).result["task"]
    expect_error(await raw.call("CancelTask", {"id": task["id"]}), -32002)


async def test_cancel_twice_second_is_not_cancelable(client: A2AClient) -> None:
    task = await _task(client, "hold:30", return_immediately=True)
    await client.cancel_task(task.id)
    with pytest.raises(ProtocolError) as caught:
        await client.cancel_task(task.id)
    assert caught.value.code == -32002


async def test_cancel_unknown_task_is_task_not_found(raw: Raw) -> None:
    expect_error(await raw.call("CancelTask", {"id": "no-such-task"}), -32001)


# ---- SubscribeToTask -----------------------------------------------------------------------


async def test_subscribe_starts_with_the_current_task(serve: StartServer, open_client: OpenClient, gate: Gate) -> None:
    client = await open_client(await serve(gated_agent(gate, chunks=3)))
    task = await _task(client, "work", return_immediately=True)
    await bounded(gate.entered.wait())
    events = client.subscribe(task.id)
    first = (await bounded(anext(events))).payload
    assert isinstance(first, Task)
    assert first.id == task.id
    assert first.status.state == TaskState.WORKING, "the first event is the task as it is now"
    gate.release.set()
    rest = [e.payload for e in await collect(events)]
    assert isinstance(rest[-1], TaskStatusUpdateEvent)
    assert rest[-1].status.state == TaskState.COMPLETED


async def test_subscribe_to_terminal_task_is_unsupported(raw: Raw) -> None:
    task = (await raw.call("SendMessage", {"message": user_message("stream:1")})).result["task"]
    async with raw.stream("SubscribeToTask", {"id": task["id"]}) as stream:
        assert not stream.is_sse, "an error before the first event is a plain error response"
        expect_error(await stream.outcome(), -32004)


async def test_subscribe_to_unknown_task_is_task_not_found(raw: Raw) -> None:
    async with raw.stream("SubscribeToTask", {"id": "no-such-task"}) as stream:
        expect_error(await stream.outcome(), -32001)
