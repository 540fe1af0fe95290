"""Graceful shutdown: running tasks end CANCELED, open streams end, nothing is left hanging."""

from __future__ import annotations

import asyncio

import pytest

from a2a import A2AServer, ServerConfig
from a2a.server import InMemoryTaskStore
from a2a.server.backends.store import TaskQuery
from a2a.types import Task, TaskState

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import Gate, RawEvent, bounded, collect, gated_agent, load_module, send_params, summary, wait_until


async def _store_state(store: InMemoryTaskStore, task_id: str) -> TaskState | None:
    record = await store.get(task_id)
    return None if record is None else record.task.status.state


@pytest.mark.parametrize("how", ["send-stream", "subscribe"])
async def test_stop_cancels_running_task_and_ends_its_stream(serve: StartServer, open_raw: OpenRaw, how: str) -> None:
    store = InMemoryTaskStore()
    server = await serve(load_module("echo_agent.py").agent, store=store, config=ServerConfig(shutdown_timeout=5))
    raw = open_raw(server)
    if how == "send-stream":
        opened = raw.stream("SendStreamingMessage", send_params("hold:30"))
    else:
        params = send_params("hold:30", configuration={"returnImmediately": True})
        task_id = (await raw.call("SendMessage", params)).result["task"]["id"]
        opened = raw.stream("SubscribeToTask", {"id": task_id})
    async with opened as stream:
        first = await stream.next()
        task_id = first.payload["task"]["id"]
        events: list[RawEvent] = [first]
        while events[-1].state != "TASK_STATE_WORKING":  # the agent is inside its 30 s wait
            events.append(await stream.next())
        stopping = asyncio.create_task(server.stop())
        events += await stream.rest()  # fails unless the server ends the stream in time
        await bounded(stopping)
    assert await _store_state(store, task_id) == TaskState.CANCELED
    assert events[-1].state == "TASK_STATE_CANCELED", "the stream tells its reader how the task ended"


async def test_stop_cancels_tasks_nobody_watches(serve: StartServer, open_raw: OpenRaw, gate: Gate) -> None:
    store = InMemoryTaskStore()
    server = await serve(gated_agent(gate), store=store)
    raw = open_raw(server)
    ids = []
    for i in range(3):
        params = send_params(f"wait {i}", configuration={"returnImmediately": True})
        ids.append((await raw.call("SendMessage", params)).result["task"]["id"])
    await bounded(gate.entered.wait())
    await bounded(server.stop())
    assert gate.executions == 3
    for task_id in ids:
        assert await _store_state(store, task_id) == TaskState.CANCELED


async def test_stop_with_a_blocking_send_in_flight_answers_it(serve: StartServer, open_raw: OpenRaw) -> None:
    store = InMemoryTaskStore()
    server: A2AServer = await serve(load_module("echo_agent.py").agent, store=store)
    raw = open_raw(server)
    sending = asyncio.create_task(raw.call("SendMessage", send_params("hold:30")))

    async def running() -> list[str]:
        page = await store.list(TaskQuery(owner="", tenant=""))
        return [r.task.id for r in page.records if r.task.status.state == TaskState.WORKING]

    async def has_running() -> bool:
        return bool(await running())

    await wait_until(has_running, what="the hold task to be WORKING")
    [task_id] = await running()
    await bounded(server.stop())
    outcome = await bounded(sending)
    assert outcome.result["task"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert await _store_state(store, task_id) == TaskState.CANCELED


# ---- the same, through the client, on every binding ------------------------------------------
#
# ``server.stop()`` stops the server on every binding (for stdio it also stops the stdio
# servers of its connections, as SIGTERM stops ``a2a serve --stdio``).


@pytest.mark.parametrize("how", ["send-stream", "subscribe"])
async def test_client_stop_cancels_running_task_and_ends_its_stream(
    serve: StartServer, open_client: OpenClient, how: str
) -> None:
    store = InMemoryTaskStore()
    server = await serve(load_module("echo_agent.py").agent, store=store, config=ServerConfig(shutdown_timeout=5))
    client = await open_client(server)
    if how == "send-stream":
        stream = client.stream("hold:30")
    else:
        task = await bounded(client.send("hold:30", return_immediately=True))
        assert isinstance(task, Task)
        stream = client.subscribe(task.id)
    first = await bounded(anext(stream))
    assert isinstance(first.payload, Task)
    task_id = first.payload.id
    events = [first]
    while summary(events[-1])[1] != "TASK_STATE_WORKING":  # the agent is inside its 30 s wait
        events.append(await bounded(anext(stream)))
    stopping = asyncio.create_task(server.stop())
    try:
        events += await collect(stream)  # fails unless the server ends the stream in time
    finally:
        await bounded(stopping)
    assert await _store_state(store, task_id) == TaskState.CANCELED
    assert summary(events[-1]) == ("statusUpdate", "TASK_STATE_CANCELED"), "the stream tells how the task ended"


async def test_client_stop_cancels_tasks_nobody_watches(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    store = InMemoryTaskStore()
    server = await serve(gated_agent(gate), store=store)
    client = await open_client(server)
    ids = []
    for i in range(3):
        task = await bounded(client.send(f"wait {i}", return_immediately=True))
        assert isinstance(task, Task)
        ids.append(task.id)
    await bounded(gate.entered.wait())
    await bounded(server.stop())
    assert gate.executions == 3
    for task_id in ids:
        assert await _store_state(store, task_id) == TaskState.CANCELED


async def test_client_stop_with_a_blocking_send_in_flight_answers_it(
    serve: StartServer, open_client: OpenClient
) -> None:
    store = InMemoryTaskStore()
    server = await serve(load_module("echo_agent.py").agent, store=store)
    client = await open_client(server)
    sending = asyncio.create_task(client.send("hold:30"))

    async def running() -> list[str]:
        page = await store.list(TaskQuery(owner="", tenant=""))
        return [r.task.id for r in page.records if r.task.status.state == TaskState.WORKING]

    async def has_running() -> bool:
        return bool(await running())

    await wait_until(has_running, what="the hold task to be WORKING")
    [task_id] = await running()
    await bounded(server.stop())
    answer = await bounded(sending)
    assert isinstance(answer, Task) and answer.status.state == TaskState.CANCELED
    assert await _store_state(store, task_id) == TaskState.CANCELED


async def test_closing_a_client_leaves_the_server_and_its_tasks_running(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    """A client that closes ends its connection only: the server's other callers and the task
    it started go on (an in-process connection does not stop the handler it shares)."""
    server = await serve(gated_agent(gate, chunks=1))
    leaving, staying = await open_client(server), await open_client(server)
    task = await bounded(leaving.send("work on", return_immediately=True))
    assert isinstance(task, Task)
    await bounded(gate.entered.wait())
    watching = staying.subscribe(task.id)
    first = await bounded(anext(watching))
    assert summary(first) == ("task", "TASK_STATE_WORKING")
    await bounded(leaving.close())
    gate.release.set()
    events = await collect(watching)
    assert summary(events[-1]) == ("statusUpdate", "TASK_STATE_COMPLETED")
    reply = await bounded(staying.send("still served?"))
    assert isinstance(reply, Task) and reply.status.state == TaskState.COMPLETED
