"""Follow-up messages: continuing a task, its context and history, and what is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, Agent, RequestContext
from a2a.errors import ProtocolError
from a2a.types import Task, TaskState, TaskStatusUpdateEvent

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import (
    Gate,
    Raw,
    bounded,
    collect,
    expect_error,
    load_module,
    new_id,
    send_params,
    task_state,
    user_message,
)


async def _ask(greeter: A2AClient, **kwargs: object) -> Task:
    task = await bounded(greeter.send("hi", **kwargs))  # type: ignore[arg-type]
    assert isinstance(task, Task)
    assert task.status.state == TaskState.INPUT_REQUIRED
    assert task.status.message is not None and task.status.message.text == "What is your name?"
    return task


async def test_input_required_then_the_next_message_resumes_the_task(greeter: A2AClient) -> None:
    task = await _ask(greeter)
    done = await bounded(greeter.send("Ada", task_id=task.id, context_id=task.context_id))
    assert isinstance(done, Task)
    assert done.id == task.id, "a follow-up continues the same task"
    assert done.status.state == TaskState.COMPLETED
    assert done.status.message is not None and done.status.message.text == "Hello, Ada!"
    assert done.artifacts and done.artifacts[0].parts[0].text == "Hello, Ada!"


async def test_follow_up_with_only_task_id_inherits_the_context(greeter_server: A2AServer, open_raw: OpenRaw) -> None:
    raw = open_raw(greeter_server)
    task = (await raw.call("SendMessage", send_params("hi"))).result["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow_up = user_message("Grace", taskId=task["id"])  # no contextId at all
    done = (await raw.call("SendMessage", {"message": follow_up})).result["task"]
    assert done["id"] == task["id"]
    assert done["contextId"] == task["contextId"]
    stored = next(m for m in done["history"] if m["messageId"] == follow_up["messageId"])
    assert stored["contextId"] == task["contextId"], "the stored follow-up carries the task's contextId"
    assert stored["taskId"] == task["id"]


async def test_follow_up_message_is_kept_in_history(greeter: A2AClient) -> None:
    task = await _ask(greeter)
    await greeter.send("Linus", task_id=task.id)
    history = (await greeter.get_task(task.id)).history or []
    texts = [(m.role.value, m.text) for m in history]
    assert ("ROLE_USER", "hi") in texts
    assert ("ROLE_AGENT", "What is your name?") in texts
    assert ("ROLE_USER", "Linus") in texts
    assert texts.index(("ROLE_USER", "Linus")) > texts.index(("ROLE_AGENT", "What is your name?"))
    assert texts[-1] == ("ROLE_AGENT", "Hello, Linus!")


async def test_empty_answer_asks_again(greeter: A2AClient) -> None:
    task = await _ask(greeter)
    again = await greeter.send("   ", task_id=task.id)
    assert isinstance(again, Task)
    assert again.status.state == TaskState.INPUT_REQUIRED
    done = await greeter.send("Barbara", task_id=task.id)
    assert isinstance(done, Task) and done.status.state == TaskState.COMPLETED


async def test_follow_up_to_unknown_task_is_task_not_found(raw: Raw) -> None:
    outcome = await raw.call("SendMessage", {"message": user_message("hello", taskId="no-such-task")})
    expect_error(outcome, -32001)


async def test_follow_up_with_another_context_is_invalid_params(greeter: A2AClient) -> None:
    task = await _ask(greeter)
    with pytest.raises(ProtocolError) as caught:
        await greeter.send("Ada", task_id=task.id, context_id=new_id())
    assert caught.value.code == -32602
    assert "contextId" in caught.value.message
    # Nothing changed: the task still waits for the name.
    assert (await greeter.get_task(task.id)).status.state == TaskState.INPUT_REQUIRED


async def test_message_to_a_terminal_task_is_unsupported(raw: Raw) -> None:
    task = (await raw.call("SendMessage", send_params("stream:1"))).result["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    outcome = await raw.call("SendMessage", {"message": user_message("more", taskId=task["id"])})
    expect_error(outcome, -32004)


async def test_new_task_in_an_existing_context(greeter: A2AClient) -> None:
    first = await _ask(greeter)
    second = await _ask(greeter, context_id=first.context_id)
    assert second.id != first.id, "the server makes a new task id"
    assert second.context_id == first.context_id


async def test_streamed_follow_up_starts_with_the_task_and_ends_terminal(greeter: A2AClient) -> None:
    task = await _ask(greeter)
    events = [e.payload for e in await collect(greeter.stream("Ada", task_id=task.id))]
    assert isinstance(events[0], Task) and events[0].id == task.id
    states = [e.status.state for e in events if isinstance(e, TaskStatusUpdateEvent)]
    assert states == [TaskState.WORKING, TaskState.COMPLETED]


async def test_cancel_while_waiting_for_input(greeter: A2AClient) -> None:
    task = await _ask(greeter)
    canceled = await bounded(greeter.cancel_task(task.id))
    assert canceled.status.state == TaskState.CANCELED
    with pytest.raises(ProtocolError) as caught:
        await greeter.send("too late", task_id=task.id)
    assert caught.value.code == -32004


async def test_cancel_while_the_agent_works_on_the_answer(
    serve: StartServer, open_client: OpenClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = load_module("input_required_agent.py")
    entered, never = asyncio.Event(), asyncio.Event()

    async def slow_greeting(name: str) -> str:
        entered.set()
        await never.wait()  # only a cancellation gets the agent out of here
        return name

    monkeypatch.setattr(module, "write_greeting", slow_greeting)
    server = await serve(module.agent)
    client = await open_client(server)
    task = await _ask(client)
    await bounded(client.send("Ada", task_id=task.id, return_immediately=True))
    await bounded(entered.wait())
    canceled = await bounded(client.cancel_task(task.id))
    assert canceled.status.state == TaskState.CANCELED
    assert canceled.status.message is not None
    assert canceled.status.message.text == "Canceled before Ada was greeted", "the agent reacted to the cancel"
    assert await task_state(server, task.id) == TaskState.CANCELED


@pytest.mark.patches_server_handler
async def test_second_follow_up_while_the_first_is_handled_is_refused(
    serve: StartServer, open_client: OpenClient, gate: Gate, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two answers race for one question. The first resumes the task; the second must be refused
    # (the task no longer waits for input) and must not reach the agent or the task's history.
    async def handler(ctx: RequestContext) -> None:
        gate.executions += 1
        gate.texts.append(ctx.text)
        if ctx.task is None:
            await ctx.require_input("Your name?")
            return
        gate.entered.set()
        await gate.release.wait()  # slow work, before any status is published
        await ctx.complete(f"Hello, {ctx.text}!")

    server = await serve(Agent("Slow greeter", description="Asks, then takes its time", handler=handler))
    client = await open_client(server)
    task = await bounded(client.send("hi"))
    assert isinstance(task, Task) and task.status.state == TaskState.INPUT_REQUIRED
    first = asyncio.create_task(client.send("Ada", task_id=task.id))
    await bounded(gate.entered.wait())

    # Know when the second answer reaches the handler, without sleeping: watch its dispatch.
    handler_call = server.handler.call
    arrived = asyncio.Event()

    async def watching_call(method: str, params: Any, ctx: Any) -> Any:
        if method == "SendMessage" and params.message.text == "Bob":
            arrived.set()
        return await handler_call(method, params, ctx)

    monkeypatch.setattr(server.handler, "call", watching_call)
    second = asyncio.create_task(client.send("Bob", task_id=task.id))
    await bounded(arrived.wait())
    gate.release.set()

    done = await bounded(first)
    assert isinstance(done, Task) and done.status.state == TaskState.COMPLETED
    with pytest.raises(ProtocolError) as caught:
        await bounded(second)
    assert caught.value.code == -32004
    assert gate.texts == ["hi", "Ada"], "the refused answer reached the agent"
    history = (await client.get_task(task.id)).history or []
    assert "Bob" not in [m.text for m in history], "the refused answer was added to a finished task's history"
