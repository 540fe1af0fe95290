"""SendMessage is idempotent by messageId (§3.3.1): a retry of the same message gets the original
outcome and the agent runs once; a different message under a used messageId is a new message."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from a2a import A2AClient, A2AServer
from a2a.client import user_message as a2a_user_message
from a2a.types import Message, Part, Task, TaskState

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import Gate, Raw, bounded, collect, counting_agent, gated_agent, load_module, user_message


@pytest.fixture
async def counter_raw(serve: StartServer, open_raw: OpenRaw, gate: Gate) -> Raw:
    return open_raw(await serve(counting_agent(gate)))


async def test_same_message_id_twice_is_the_same_task_and_one_execution(counter_raw: Raw, gate: Gate) -> None:
    params = {"message": user_message("once")}
    first = (await counter_raw.call("SendMessage", params)).result["task"]
    second = (await counter_raw.call("SendMessage", params)).result["task"]
    assert second["id"] == first["id"]
    assert second["status"]["state"] == first["status"]["state"] == "TASK_STATE_COMPLETED"
    assert gate.executions == 1
    listed = (await counter_raw.call("ListTasks", {})).result["tasks"]
    assert [task["id"] for task in listed] == [first["id"]], "a retry makes no second task"


async def test_same_message_id_for_a_message_reply_is_the_same_reply(
    serve: StartServer, open_raw: OpenRaw, gate: Gate
) -> None:
    raw = open_raw(await serve(counting_agent(gate, reply=True)))
    params = {"message": user_message("once")}
    first = (await raw.call("SendMessage", params)).result["message"]
    second = (await raw.call("SendMessage", params)).result["message"]
    assert second == first
    assert gate.executions == 1


async def test_same_message_id_with_other_content_is_a_new_message(counter_raw: Raw, gate: Gate) -> None:
    """Spec §3.3.1: "Agents may utilize the messageId to detect duplicate messages": a different
    message under a used messageId is no duplicate (clients reuse ids): it is processed anew."""
    message = user_message("original")
    first = (await counter_raw.call("SendMessage", {"message": message})).result["task"]
    changed = {**message, "parts": [{"text": "something else"}]}
    second = (await counter_raw.call("SendMessage", {"message": changed})).result["task"]
    assert second["id"] != first["id"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert gate.texts == ["original", "something else"]
    # Each is still its own duplicate: a retry of either finds its own outcome.
    again = (await counter_raw.call("SendMessage", {"message": message})).result["task"]
    assert again["id"] == first["id"]
    assert gate.executions == 2


async def test_message_ids_are_scoped_per_message_not_global(counter_raw: Raw, gate: Gate) -> None:
    await counter_raw.call("SendMessage", {"message": user_message("one")})
    await counter_raw.call("SendMessage", {"message": user_message("two")})
    assert gate.executions == 2


async def test_concurrent_duplicates_run_the_agent_once(serve: StartServer, open_raw: OpenRaw, gate: Gate) -> None:
    raw = open_raw(await serve(gated_agent(gate, chunks=1)))
    params = {"message": user_message("together")}
    sends = asyncio.gather(*(raw.call("SendMessage", params) for _ in range(5)))
    await bounded(gate.entered.wait())
    gate.release.set()
    outcomes = await bounded(sends)
    ids = {outcome.result["task"]["id"] for outcome in outcomes}
    assert len(ids) == 1, f"duplicates made several tasks: {ids}"
    assert all(o.result["task"]["status"]["state"] == "TASK_STATE_COMPLETED" for o in outcomes)
    assert gate.executions == 1


async def test_duplicate_of_a_running_send_with_return_immediately(
    serve: StartServer, open_raw: OpenRaw, gate: Gate
) -> None:
    raw = open_raw(await serve(gated_agent(gate, chunks=1)))
    params = {"message": user_message("slow"), "configuration": {"returnImmediately": True}}
    first = (await raw.call("SendMessage", params)).result["task"]
    await bounded(gate.entered.wait())
    again = (await raw.call("SendMessage", params)).result["task"]
    assert again["id"] == first["id"]
    gate.release.set()
    assert gate.executions == 1


async def test_retried_stream_gets_the_outcome_without_a_second_run(counter_raw: Raw, gate: Gate) -> None:
    params = {"message": user_message("streamed")}
    async with counter_raw.stream("SendStreamingMessage", params) as stream:
        first = [await stream.next(), *await stream.rest()]
    async with counter_raw.stream("SendStreamingMessage", params) as stream:
        again = [await stream.next(), *await stream.rest()]
    task_id = first[0].payload["task"]["id"]
    assert again[-1].payload.get("task", {}).get("id") == task_id
    assert again[-1].state == "TASK_STATE_COMPLETED"
    assert gate.executions == 1


async def test_retried_follow_up_is_the_same_task_not_an_error(serve: StartServer, open_raw: OpenRaw) -> None:
    # A follow-up whose answer was lost is retried with the same messageId (the client's retry
    # policy does exactly that). The retry must get the original outcome, not "task is terminal".
    server: A2AServer = await serve(load_module("input_required_agent.py").agent)
    raw = open_raw(server)
    task = (await raw.call("SendMessage", {"message": user_message("hi")})).result["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow_up = {"message": user_message("Ada", taskId=task["id"])}
    done = (await raw.call("SendMessage", follow_up)).result["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    retried = await raw.call("SendMessage", follow_up)
    assert not retried.is_error, f"retry of a finished follow-up failed: {retried.body!r}"
    assert retried.result["task"]["id"] == task["id"]
    assert retried.result["task"]["status"]["state"] == TaskState.COMPLETED.value


# ---- the same, through the client, on every binding ------------------------------------------
#
# A client sends a fixed messageId by passing a ``Message`` (as its retry policy does when it
# resends): the outcome is the same on every binding.


@pytest.fixture
async def counter(serve: StartServer, open_client: OpenClient, gate: Gate) -> A2AClient:
    return await open_client(await serve(counting_agent(gate)))


async def test_client_same_message_twice_is_the_same_task_and_one_execution(counter: A2AClient, gate: Gate) -> None:
    message = a2a_user_message("once")
    first, second = await bounded(counter.send(message)), await bounded(counter.send(message))
    assert isinstance(first, Task) and isinstance(second, Task)
    assert second.id == first.id
    assert second.status.state == first.status.state == TaskState.COMPLETED
    assert gate.executions == 1
    assert [task.id for task in (await bounded(counter.list_tasks())).tasks] == [first.id]


async def test_client_same_message_for_a_message_reply_is_the_same_reply(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client(await serve(counting_agent(gate, reply=True)))
    message = a2a_user_message("once")
    first, second = await bounded(client.send(message)), await bounded(client.send(message))
    assert isinstance(first, Message) and second == first
    assert gate.executions == 1


async def test_client_same_message_id_with_other_content_is_a_new_message(counter: A2AClient, gate: Gate) -> None:
    """Spec §3.3.1: "Agents may utilize the messageId to detect duplicate messages": only the same
    message again is a duplicate; another message under its id is processed as a new one."""
    message = a2a_user_message("original")
    first = await bounded(counter.send(message))
    changed = msgspec.structs.replace(message, parts=[Part(text="something else")])
    second = await bounded(counter.send(changed))
    assert isinstance(first, Task) and isinstance(second, Task)
    assert second.id != first.id and second.status.state == TaskState.COMPLETED
    retried = await bounded(counter.send(changed))
    assert isinstance(retried, Task) and retried.id == second.id
    assert gate.texts == ["original", "something else"]


async def test_client_concurrent_duplicates_run_the_agent_once(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client(await serve(gated_agent(gate, chunks=1)))
    message = a2a_user_message("together")
    # Five at once: on WebSocket and stdio, five requests in flight on one connection.
    sends = asyncio.gather(*(client.send(message) for _ in range(5)))
    await bounded(gate.entered.wait())
    gate.release.set()
    outcomes = await bounded(sends)
    assert all(isinstance(t, Task) and t.status.state == TaskState.COMPLETED for t in outcomes)
    assert len({task.id for task in outcomes if isinstance(task, Task)}) == 1, "duplicates made several tasks"
    assert gate.executions == 1


async def test_client_retried_stream_gets_the_outcome_without_a_second_run(counter: A2AClient, gate: Gate) -> None:
    message = a2a_user_message("streamed")
    first = await collect(counter.stream(message))
    again = await collect(counter.stream(message))
    task = first[0].payload
    assert isinstance(task, Task)
    last = again[-1].payload
    assert isinstance(last, Task) and last.id == task.id
    assert last.status.state == TaskState.COMPLETED
    assert gate.executions == 1
