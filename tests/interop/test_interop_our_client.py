"""OUR client (``A2AClient``) against the reference SDK's server, over JSON-RPC and HTTP+JSON.

The SDK's echo agent (sdk_echo_server.py) serves both bindings at its base URL: JSON-RPC
at ``POST /``, HTTP+JSON below it. It answers plain text with a Message, ``stream:N`` with a
task streaming N chunks into one artifact, ``hold:S`` with a task working S seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from a2a import A2AClient, RetryPolicy
from a2a import types as t
from a2a.errors import InternalError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from a2a.transport.http import JsonRpcTransport, RestTransport

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # the reference SDK runs as processes

BINDINGS = ["JSONRPC", "HTTP+JSON"]
#: Bound on every exchange with the SDK server (a hung stream must fail, not stall the suite).
DEADLINE = 30.0


@pytest.fixture(params=BINDINGS)
async def client(request: pytest.FixtureRequest, sdk_server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(sdk_server_url, binding=request.param, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


async def collect(events: AsyncIterator[t.StreamResponse]) -> list[Any]:
    async with asyncio.timeout(DEADLINE):
        return [event.payload async for event in events]


def texts(parts: list[t.Part]) -> list[str]:
    return [str(p.text) for p in parts]


async def test_card_resolution_picks_the_first_interface(sdk_server_url: str) -> None:
    async with A2AClient(sdk_server_url, retry=RetryPolicy.none(), timeout=10) as c:
        card = await c.get_card()
        assert card.name == "sdk-echo"
        assert [i.protocol_binding for i in card.supported_interfaces] == ["JSONRPC", "HTTP+JSON"]
        assert card.capabilities.streaming is True
        assert [s.id for s in card.skills] == ["echo"]
        # No binding asked for: the card's order decides.
        assert c.interface is not None
        assert c.interface.protocol_binding == "JSONRPC"
        assert c.interface.url == sdk_server_url
        assert isinstance(await c.connect(), JsonRpcTransport)


@pytest.mark.parametrize(("binding", "transport"), [("JSONRPC", JsonRpcTransport), ("HTTP+JSON", RestTransport)])
async def test_interface_choice_by_binding(sdk_server_url: str, binding: str, transport: type) -> None:
    async with A2AClient(sdk_server_url, binding=binding, retry=RetryPolicy.none(), timeout=10) as c:
        assert isinstance(await c.connect(), transport)
        assert c.interface is not None
        assert (c.interface.protocol_binding, c.interface.url) == (binding, sdk_server_url)
        reply = await c.send("through " + binding)
        assert isinstance(reply, t.Message)
        assert texts(reply.parts) == ["through " + binding]


async def test_send_gets_a_message(client: A2AClient) -> None:
    reply = await client.send("hello")
    assert isinstance(reply, t.Message)
    assert reply.role is t.Role.AGENT
    assert texts(reply.parts) == ["hello"]


async def test_send_gets_a_finished_task(client: A2AClient) -> None:
    task = await client.send("stream:3")
    assert isinstance(task, t.Task)
    assert task.status.state is t.TaskState.COMPLETED  # SendMessage blocks until the end
    assert task.artifacts is not None
    (artifact,) = task.artifacts
    assert artifact.name == "echo-stream"
    assert texts(artifact.parts) == ["chunk 0", "chunk 1", "chunk 2"]


async def test_stream_task_then_chunks_then_completed(client: A2AClient) -> None:
    events = await collect(client.stream("stream:3"))
    first = events[0]
    assert isinstance(first, t.Task)
    assert not first.status.state.is_terminal
    rest = events[1:]
    assert all(e.task_id == first.id and e.context_id == first.context_id for e in rest)
    statuses = [e.status.state for e in rest if isinstance(e, t.TaskStatusUpdateEvent)]
    assert statuses == [t.TaskState.WORKING, t.TaskState.COMPLETED]
    assert isinstance(rest[-1], t.TaskStatusUpdateEvent)  # the stream ends at the terminal state
    chunks = [e for e in rest if isinstance(e, t.TaskArtifactUpdateEvent)]
    assert [texts(c.artifact.parts) for c in chunks] == [["chunk 0"], ["chunk 1"], ["chunk 2"]]
    assert len({c.artifact.artifact_id for c in chunks}) == 1
    assert [c.append for c in chunks] == [False, True, True]
    assert [c.last_chunk for c in chunks] == [False, False, True]


async def test_stream_of_a_plain_reply_is_one_message(client: A2AClient) -> None:
    events = await collect(client.stream("hi there"))
    assert len(events) == 1
    assert isinstance(events[0], t.Message)
    assert texts(events[0].parts) == ["hi there"]


async def test_get_task(client: A2AClient) -> None:
    sent = await client.send("stream:2")
    assert isinstance(sent, t.Task)
    got = await client.get_task(sent.id)
    assert (got.id, got.context_id, got.status.state) == (sent.id, sent.context_id, t.TaskState.COMPLETED)
    assert got.artifacts is not None
    assert texts(got.artifacts[0].parts) == ["chunk 0", "chunk 1"]
    assert got.history is not None
    assert [m.text for m in got.history] == ["stream:2"]
    trimmed = await client.get_task(sent.id, history_length=0)
    assert not trimmed.history


async def test_cancel_a_running_task(client: A2AClient) -> None:
    sent = await client.send("hold:30", return_immediately=True)
    assert isinstance(sent, t.Task)
    assert not sent.status.state.is_terminal
    canceled = await client.cancel_task(sent.id)
    assert canceled.id == sent.id
    assert canceled.status.state is t.TaskState.CANCELED
    got = await client.get_task(sent.id)
    assert got.status.state is t.TaskState.CANCELED
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(sent.id)


async def test_get_unknown_task(client: A2AClient) -> None:
    with pytest.raises(TaskNotFoundError):
        await client.get_task("no-such-task")


async def test_subscribe_to_a_running_task(client: A2AClient) -> None:
    sent = await client.send("hold:2", return_immediately=True)
    assert isinstance(sent, t.Task)
    events = await collect(client.subscribe(sent.id))
    assert isinstance(events[0], t.Task)  # the current Task first
    assert events[0].id == sent.id
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state is t.TaskState.COMPLETED
    with pytest.raises(UnsupportedOperationError):  # nothing to follow once it has ended
        await collect(client.subscribe(sent.id))


async def test_list_tasks_of_one_context_in_pages(client: A2AClient) -> None:
    first = await client.send("stream:1")
    assert isinstance(first, t.Task)
    second = await client.send("stream:1", context_id=first.context_id)
    assert isinstance(second, t.Task)
    assert second.context_id == first.context_id

    page1 = await client.list_tasks(context_id=first.context_id, page_size=1)
    assert [task.id for task in page1.tasks] == [second.id]  # newest first
    assert page1.next_page_token
    assert page1.total_size == 2
    page2 = await client.list_tasks(context_id=first.context_id, page_size=1, page_token=page1.next_page_token)
    assert [task.id for task in page2.tasks] == [first.id]
    assert page2.next_page_token == ""

    done = await client.list_tasks(context_id=first.context_id, status=t.TaskState.COMPLETED, include_artifacts=True)
    assert {task.id for task in done.tasks} == {first.id, second.id}
    assert all(task.artifacts for task in done.tasks)


async def test_errors_from_the_sdk_map_to_ours(client: A2AClient) -> None:
    done = await client.send("stream:1")
    assert isinstance(done, t.Task)
    with pytest.raises(UnsupportedOperationError):  # a finished task takes no more messages
        await client.send("more", task_id=done.id)
    with pytest.raises(TaskNotFoundError):
        await client.send("more", task_id="no-such-task")
    with pytest.raises(TaskNotFoundError):
        await client.cancel_task("no-such-task")


async def test_agent_failure_is_an_internal_error(client: A2AClient) -> None:
    with pytest.raises(InternalError):
        await client.send("fail")


async def test_error_inside_a_stream(client: A2AClient) -> None:
    """The SDK sends the error as an SSE ``event: error`` after the task has started."""
    seen: list[Any] = []
    with pytest.raises(InternalError):
        async with asyncio.timeout(DEADLINE):
            async for event in client.stream("fail:working"):
                seen.append(event.payload)
    assert isinstance(seen[0], t.Task)
    assert isinstance(seen[-1], t.TaskStatusUpdateEvent)
    assert seen[-1].status.state is t.TaskState.WORKING


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_stream_cut_after_its_first_event_is_resumed(sdk_server_url: str, binding: str) -> None:
    """The reference SDK reached through a TCP proxy that cuts every connection after the
    stream's first event: our client resubscribes (``SubscribeToTask``) and delivers the rest."""
    from urllib.parse import urlsplit, urlunsplit

    import msgspec

    from tests.bindings._bindings_support import CuttableProxy

    proxy = CuttableProxy(int(urlsplit(sdk_server_url).port or 80))
    await proxy.start()
    try:
        async with A2AClient(sdk_server_url, retry=RetryPolicy.none(), timeout=20) as probe:
            card = await probe.get_card()
        interfaces = [
            msgspec.structs.replace(i, url=urlunsplit(urlsplit(i.url)._replace(netloc=f"127.0.0.1:{proxy.port}")))
            for i in card.supported_interfaces
        ]
        card = msgspec.structs.replace(card, supported_interfaces=interfaces)
        policy = RetryPolicy(max_attempts=3, initial_backoff=0.05)
        async with A2AClient(card=card, binding=binding, retry=policy, timeout=20) as client:
            payloads: list[Any] = []
            async for event in client.stream("hold:1"):
                payloads.append(event.payload)
                if len(payloads) == 1:
                    proxy.cut()
        assert proxy.accepted >= 2  # the stream was opened again
        assert isinstance(payloads[0], t.Task)
        last = payloads[-1]
        state = last.status.state
        # The reference SDK answers the resubscription with the task as it is, then what follows.
        assert any(isinstance(p, t.Task) for p in payloads[1:])
        assert state is t.TaskState.COMPLETED, payloads
    finally:
        await proxy.close()
