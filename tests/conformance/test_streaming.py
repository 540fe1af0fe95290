"""Streams: many subscribers per task, event ids, where a stream ends, and disconnects."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import pytest

from a2a import A2AClient, A2AServer
from a2a.types import Task, TaskState

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import (
    Gate,
    Raw,
    RawEvent,
    bounded,
    collect,
    gated_agent,
    send_params,
    summary,
    task_state,
    wait_until,
)

CHUNKS = 20


@pytest.fixture
async def gated_server(serve: StartServer, gate: Gate) -> A2AServer:
    return await serve(gated_agent(gate, chunks=CHUNKS))


@pytest.fixture
def gated_raw(gated_server: A2AServer, open_raw: OpenRaw) -> Raw:
    return open_raw(gated_server)


def _ids(events: list[RawEvent]) -> list[int]:
    assert all(e.id is not None for e in events), "every stream event carries an SSE id"
    return [int(e.id or "") for e in events]


def _assert_increasing(ids: list[int]) -> None:
    assert all(a < b for a, b in itertools.pairwise(ids)), f"SSE ids do not strictly increase: {ids}"


async def test_several_subscribers_each_get_every_event_in_order(gated_raw: Raw, gate: Gate) -> None:
    async with contextlib.AsyncExitStack() as stack:
        origin = await stack.enter_async_context(gated_raw.stream("SendStreamingMessage", send_params("go")))
        origin_events = [await origin.next()]
        task_id = origin_events[0].payload["task"]["id"]
        await bounded(gate.entered.wait())
        subscribers = [
            await stack.enter_async_context(gated_raw.stream("SubscribeToTask", {"id": task_id})) for _ in range(3)
        ]
        firsts = [await s.next() for s in subscribers]
        for first in firsts:
            assert first.payload["task"]["id"] == task_id
            assert first.state == "TASK_STATE_WORKING"
        gate.release.set()
        rests = await bounded(asyncio.gather(*(s.rest() for s in subscribers)))
        origin_events += await origin.rest()

    expected = [("artifactUpdate", f"part {i}") for i in range(CHUNKS)] + [("statusUpdate", "TASK_STATE_COMPLETED")]
    for rest in rests:
        assert [_summary(e) for e in rest] == expected
    # Every subscriber saw the very same events: same payloads, same ids, same order.
    assert all([(e.id, e.payload) for e in rest] == [(e.id, e.payload) for e in rests[0]] for rest in rests)
    # The stream that created the task saw them too, after its own earlier events.
    assert [(e.id, e.payload) for e in origin_events[-len(expected) :]] == [(e.id, e.payload) for e in rests[0]]
    for events in [origin_events, *([first, *rest] for first, rest in zip(firsts, rests, strict=True))]:
        _assert_increasing(_ids(events))


def _summary(event: RawEvent) -> tuple[str, str]:
    payload = event.payload
    if "artifactUpdate" in payload:
        return "artifactUpdate", payload["artifactUpdate"]["artifact"]["parts"][0]["text"]
    if "statusUpdate" in payload:
        return "statusUpdate", payload["statusUpdate"]["status"]["state"]
    return next(iter(payload)), ""


async def test_sse_ids_strictly_increase_on_a_send_stream(raw: Raw) -> None:
    async with raw.stream("SendStreamingMessage", send_params("stream:10")) as stream:
        events = [await stream.next(), *await stream.rest()]
    assert len(events) == 1 + 10 + 1
    _assert_increasing(_ids(events))


async def test_stream_closes_after_a_terminal_state(raw: Raw) -> None:
    async with raw.stream("SendStreamingMessage", send_params("stream:2")) as stream:
        events = [await stream.next(), *await stream.rest()]  # rest() fails unless the server ends it
    assert events[-1].state == "TASK_STATE_COMPLETED"
    assert sum(1 for e in events if e.state == "TASK_STATE_COMPLETED") == 1, "nothing follows the terminal state"


async def test_stream_closes_after_input_required(greeter_server: A2AServer, open_raw: OpenRaw) -> None:
    raw = open_raw(greeter_server)
    async with raw.stream("SendStreamingMessage", send_params("hi")) as stream:
        events = [await stream.next(), *await stream.rest()]
    assert events[-1].state == "TASK_STATE_INPUT_REQUIRED"
    task_id = events[0].payload["task"]["id"]
    # The stream ended, the task did not: it waits for the answer.
    assert await task_state(greeter_server, task_id) == TaskState.INPUT_REQUIRED


async def test_subscribe_to_a_task_waiting_for_input_stays_open_until_it_ends(
    greeter_server: A2AServer, open_raw: OpenRaw
) -> None:
    """Spec §3.1.6: SubscribeToTask "can be used with any task that is not in a terminal state.
    The stream MUST terminate when the task reaches a terminal state" (INPUT_REQUIRED is not one)."""
    raw = open_raw(greeter_server)
    task = (await raw.call("SendMessage", send_params("hi"))).result["task"]
    async with raw.stream("SubscribeToTask", {"id": task["id"]}) as stream:
        first = await stream.next()
        assert first.state == "TASK_STATE_INPUT_REQUIRED"
        answer = await raw.call("SendMessage", send_params("Ada", taskId=task["id"]))
        assert answer.result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        rest = await stream.rest()
    assert rest, "the subscription closed at INPUT_REQUIRED"
    assert rest[-1].state == "TASK_STATE_COMPLETED"


async def test_disconnecting_one_subscriber_affects_no_other(
    gated_raw: Raw, gated_server: A2AServer, gate: Gate
) -> None:
    task = (await gated_raw.call("SendMessage", send_params("go", configuration={"returnImmediately": True}))).result
    task_id = task["task"]["id"]
    await bounded(gate.entered.wait())
    async with gated_raw.stream("SubscribeToTask", {"id": task_id}) as stayer:
        await stayer.next()
        async with gated_raw.stream("SubscribeToTask", {"id": task_id}) as leaver:
            await leaver.next()
        # The leaver has hung up; the agent now publishes into its closed connection too.
        gate.release.set()
        events = await stayer.rest()
    assert len(events) == CHUNKS + 1
    assert events[-1].state == "TASK_STATE_COMPLETED"
    assert await task_state(gated_server, task_id) == TaskState.COMPLETED
    await gated_raw.ok()


async def test_the_creating_stream_hanging_up_does_not_cancel_the_task(
    gated_raw: Raw, gated_server: A2AServer, gate: Gate
) -> None:
    async with gated_raw.stream("SendStreamingMessage", send_params("go")) as origin:
        task_id = (await origin.next()).payload["task"]["id"]
        await bounded(gate.entered.wait())
    gate.release.set()

    async def completed() -> bool:
        return await task_state(gated_server, task_id) == TaskState.COMPLETED

    await wait_until(completed, what="the task to complete after its stream hung up")
    stored = (await gated_raw.call("GetTask", {"id": task_id})).result
    assert len(stored["artifacts"][0]["parts"]) == CHUNKS


async def test_client_subscribers_agree(gated_server: A2AServer, open_client: OpenClient, gate: Gate) -> None:
    client_a = await open_client(gated_server)
    client_b = await open_client(gated_server)
    task = await client_a.send("go", return_immediately=True)
    assert isinstance(task, Task)
    await bounded(gate.entered.wait())
    stream_a, stream_b = client_a.subscribe(task.id), client_b.subscribe(task.id)
    await bounded(anext(stream_a))
    await bounded(anext(stream_b))
    gate.release.set()
    events_a, events_b = await bounded(asyncio.gather(collect(stream_a), collect(stream_b)))
    assert events_a == events_b
    assert len(events_a) == CHUNKS + 1


# ---- the same, through the client, on every binding ------------------------------------------
#
# The tests above read the SSE wire by hand (HTTP bindings only); these say the same through the
# A2A client, so they hold on WebSocket and stdio too (event ids are the SSE ids there, not here).

EXPECTED = [("artifactUpdate", f"part {i}") for i in range(CHUNKS)] + [("statusUpdate", "TASK_STATE_COMPLETED")]


async def test_client_several_subscribers_each_get_every_event_in_order(
    gated_server: A2AServer, open_client: OpenClient, gate: Gate
) -> None:
    origin_client = await open_client(gated_server)
    subscriber_clients = [await open_client(gated_server) for _ in range(3)]
    origin = origin_client.stream("go")
    first = await bounded(anext(origin))
    assert isinstance(first.payload, Task)
    task_id = first.payload.id
    await bounded(gate.entered.wait())
    subscribers = [c.subscribe(task_id) for c in subscriber_clients]
    # One more on the origin's own connection: two streams of one task multiplexed on it.
    subscribers.append(origin_client.subscribe(task_id))
    firsts = [await bounded(anext(s)) for s in subscribers]
    for event in firsts:
        assert isinstance(event.payload, Task) and event.payload.id == task_id
        assert event.payload.status.state == TaskState.WORKING
    gate.release.set()
    rests = await bounded(asyncio.gather(*(collect(s) for s in subscribers)))
    origin_rest = await collect(origin)
    for rest in rests:
        assert [summary(e) for e in rest] == EXPECTED
        assert rest == rests[0], "every subscriber saw the very same events"
    assert origin_rest[-len(EXPECTED) :] == rests[0], "the creating stream saw them too"


async def test_client_stream_ends_after_input_required(greeter_server: A2AServer, greeter: A2AClient) -> None:
    events = await collect(greeter.stream("hi"))
    assert summary(events[-1]) == ("statusUpdate", "TASK_STATE_INPUT_REQUIRED")
    first = events[0].payload
    assert isinstance(first, Task)
    assert await task_state(greeter_server, first.id) == TaskState.INPUT_REQUIRED


async def test_client_subscribe_to_a_task_waiting_for_input_stays_open_until_it_ends(greeter: A2AClient) -> None:
    """Spec §3.1.6: SubscribeToTask "can be used with any task that is not in a terminal state.
    The stream MUST terminate when the task reaches a terminal state": a subscriber sees it resume."""
    task = await bounded(greeter.send("hi"))
    assert isinstance(task, Task)
    events = greeter.subscribe(task.id)
    assert summary(await bounded(anext(events))) == ("task", "TASK_STATE_INPUT_REQUIRED")
    done = await bounded(greeter.send("Ada", task_id=task.id))
    assert isinstance(done, Task) and done.status.state == TaskState.COMPLETED
    rest = await collect(events)
    assert rest and summary(rest[-1]) == ("statusUpdate", "TASK_STATE_COMPLETED")


async def test_client_send_streaming_still_ends_at_input_required(greeter: A2AClient) -> None:
    """Spec §3.1.2 only requires the stream to close at a terminal state; ours also closes at
    INPUT_REQUIRED (protocol.md): the caller answers with a new SendStreamingMessage."""
    events = await collect(greeter.stream("hi"))
    assert summary(events[-1]) == ("statusUpdate", "TASK_STATE_INPUT_REQUIRED")


async def test_client_leaving_one_subscription_affects_no_other(
    gated_server: A2AServer, open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client(gated_server)
    task = await bounded(client.send("go", return_immediately=True))
    assert isinstance(task, Task)
    await bounded(gate.entered.wait())
    stayer, leaver = client.subscribe(task.id), client.subscribe(task.id)
    await bounded(anext(stayer))
    await bounded(anext(leaver))
    await bounded(leaver.aclose())  # type: ignore[attr-defined]  # one connection (WebSocket, stdio): $/cancel
    gate.release.set()
    events = await collect(stayer)
    assert [summary(e) for e in events] == EXPECTED
    assert await task_state(gated_server, task.id) == TaskState.COMPLETED
    assert (await bounded(client.get_task(task.id))).status.state == TaskState.COMPLETED


async def test_client_the_creating_stream_leaving_does_not_cancel_the_task(
    gated_server: A2AServer, open_client: OpenClient, gate: Gate
) -> None:
    client = await open_client(gated_server)
    origin = client.stream("go")
    first = (await bounded(anext(origin))).payload
    assert isinstance(first, Task)
    await bounded(gate.entered.wait())
    await bounded(origin.aclose())  # type: ignore[attr-defined]
    gate.release.set()

    async def completed() -> bool:
        return await task_state(gated_server, first.id) == TaskState.COMPLETED

    await wait_until(completed, what="the task to complete after its stream was left")
    stored = await bounded(client.get_task(first.id))
    assert stored.artifacts and len(stored.artifacts[0].parts) == CHUNKS
