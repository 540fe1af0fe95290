"""OUR side against @a2a-js/sdk 0.3.14's server (A2A 0.3 on the wire): ``A2AClient`` and the
``a2a`` CLI.

The JS agent (``peers/js03/echo_server.mjs``) serves a 0.3 card, JSON-RPC at ``/a2a/jsonrpc``
and HTTP+JSON at ``/a2a/rest``: plain text gets a Message back, ``stream:N`` a task streaming N
chunks, ``hold:S`` a task working S seconds, ``ask`` a task waiting in input-required. Our
client reads the 0.3 card and speaks 0.3 JSON-RPC (or 0.3 HTTP+JSON) to it. A second instance
requires a bearer token on both bindings.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from typing import Any

import pytest
from our_env import AuthServer, run_cli

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a import types as t
from a2a.errors import A2AError, TaskNotCancelableError, TaskNotFoundError

pytestmark = [pytest.mark.interop, pytest.mark.slow]

BINDINGS = ["JSONRPC", "HTTP+JSON"]
DEADLINE = 30.0  # bound on every exchange: a hung peer fails the test, it does not stall the suite


@pytest.fixture
async def client(js03_server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(js03_server_url, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


async def collect(events: AsyncIterator[t.StreamResponse]) -> list[Any]:
    async with asyncio.timeout(DEADLINE):
        return [event.payload async for event in events]


def texts(parts: list[t.Part]) -> list[str]:
    return [str(p.text) for p in parts]


async def test_card(client: A2AClient, js03_server_url: str) -> None:
    card = await client.get_card()
    assert card.name == "js03-echo"
    bindings = {(i.protocol_binding, i.url) for i in card.supported_interfaces}
    assert ("JSONRPC", f"{js03_server_url}/a2a/jsonrpc") in bindings
    assert card.capabilities.streaming is True


async def test_send_message_and_task_replies(client: A2AClient) -> None:
    reply = await client.send("hello")
    assert isinstance(reply, t.Message) and texts(reply.parts) == ["hello"]
    task = await client.send("stream:2")
    assert isinstance(task, t.Task)
    assert task.status.state is t.TaskState.COMPLETED
    assert task.artifacts is not None and texts(task.artifacts[0].parts) == ["chunk 0", "chunk 1"]


async def test_stream(client: A2AClient) -> None:
    events = await collect(client.stream("stream:3"))
    assert isinstance(events[0], t.Task)
    chunks = [texts(e.artifact.parts) for e in events if isinstance(e, t.TaskArtifactUpdateEvent)]
    assert chunks == [["chunk 0"], ["chunk 1"], ["chunk 2"]]
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state is t.TaskState.COMPLETED


async def test_get(client: A2AClient) -> None:
    task = await client.send("stream:2")
    assert isinstance(task, t.Task)
    got = await client.get_task(task.id)
    assert (got.id, got.status.state) == (task.id, t.TaskState.COMPLETED)
    with pytest.raises(A2AError):
        await client.get_task("no-such-task")


async def test_cancel(client: A2AClient) -> None:
    task = await client.send("hold:30", return_immediately=True)
    assert isinstance(task, t.Task) and not task.status.state.is_terminal
    canceled = await client.cancel_task(task.id)
    assert canceled.id == task.id
    async with asyncio.timeout(DEADLINE):  # the JS server may answer before its executor wrote canceled
        while (await client.get_task(task.id)).status.state is not t.TaskState.CANCELED:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_subscribe(client: A2AClient) -> None:
    task = await client.send("hold:1", return_immediately=True)
    assert isinstance(task, t.Task)
    events = await collect(client.subscribe(task.id))
    assert isinstance(events[0], t.Task) and events[0].id == task.id
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state is t.TaskState.COMPLETED


async def test_our_client_speaks_0_3_rest_to_it(js03_server_url: str) -> None:
    """Asked for HTTP+JSON, our client speaks 0.3's REST binding to it (``RestV03Transport``)."""
    async with A2AClient(js03_server_url, binding="HTTP+JSON", retry=RetryPolicy.none(), timeout=10) as c:
        reply = await c.send("hello")
        assert isinstance(reply, t.Message) and [p.text for p in reply.parts] == ["hello"]
        assert c.interface is not None
        assert (c.interface.protocol_binding, c.interface.protocol_version) == ("HTTP+JSON", "0.3")


async def test_its_0_3_rest_errors_are_typed(js03_server_url: str) -> None:
    """Its HTTP+JSON errors are ``{"code", "message"}`` (the JSON-RPC code) with a status (404,
    409): our client raises the same typed errors as for a 1.0 peer."""
    async with A2AClient(js03_server_url, binding="HTTP+JSON", retry=RetryPolicy.none(), timeout=10) as c:
        with pytest.raises(TaskNotFoundError):
            await c.get_task("no-such-task")
        done = await c.send("stream:1")
        assert isinstance(done, t.Task) and done.status.state is t.TaskState.COMPLETED
        with pytest.raises(TaskNotCancelableError):
            await c.cancel_task(done.id)


@pytest.mark.parametrize("binding", BINDINGS)
async def test_input_required_round_trip(js03_server_url: str, binding: str) -> None:
    async with A2AClient(js03_server_url, binding=binding, retry=RetryPolicy.none(), timeout=10) as c:
        asked = await c.send("ask")
        assert isinstance(asked, t.Task) and asked.status.state is t.TaskState.INPUT_REQUIRED, asked
        assert asked.status.message is not None and texts(asked.status.message.parts) == ["What is your name?"]
        answered = await c.send("Ada", task_id=asked.id, context_id=asked.context_id)
        assert isinstance(answered, t.Task), answered
        assert (answered.id, answered.status.state) == (asked.id, t.TaskState.COMPLETED)
        assert answered.artifacts is not None and texts(answered.artifacts[0].parts) == ["Hello, Ada!"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_bearer_token(js03_auth_server: AuthServer, binding: str) -> None:
    """Its card declares the scheme the 0.3 way; our client sends the token on every call (a
    stream too) and a wrong one is refused with the 401 named."""
    async with A2AClient(
        js03_auth_server.url,
        binding=binding,
        credentials=BearerToken(js03_auth_server.token),
        retry=RetryPolicy.none(),
        timeout=10,
    ) as c:
        reply = await c.send("hello")
        assert isinstance(reply, t.Message) and texts(reply.parts) == ["hello"]
        events = await collect(c.stream("stream:1"))
        assert isinstance(events[-1], t.TaskStatusUpdateEvent)
        assert events[-1].status.state is t.TaskState.COMPLETED
    async with A2AClient(
        js03_auth_server.url, binding=binding, credentials=BearerToken("wrong"), retry=RetryPolicy.none(), timeout=10
    ) as c:
        with pytest.raises(A2AError, match="401"):
            await c.send("hello")


def ok_json(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_cli_card_send_stream_get_cancel(js03_server_url: str) -> None:
    (card,) = ok_json(run_cli("card", js03_server_url, "--json", "--retries", "1"))
    assert card["name"] == "js03-echo"
    (message,) = ok_json(run_cli("send", js03_server_url, "hello", "--json", "--retries", "1"))
    assert [p["text"] for p in message["parts"]] == ["hello"]
    events = ok_json(run_cli("send", js03_server_url, "stream:2", "--stream", "--json", "--retries", "1"))
    kinds = [next(iter(e)) for e in events]
    assert kinds == ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    (got,) = ok_json(run_cli("get", js03_server_url, events[0]["task"]["id"], "--json", "--retries", "1"))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    (held,) = ok_json(run_cli("send", js03_server_url, "hold:30", "--no-wait", "--json", "--retries", "1"))
    (canceled,) = ok_json(run_cli("cancel", js03_server_url, held["id"], "--json", "--retries", "1"))
    assert canceled["id"] == held["id"]


def test_cli_input_required_round_trip(js03_server_url: str) -> None:
    (asked,) = ok_json(run_cli("send", js03_server_url, "ask", "--no-prompt", "--json", "--retries", "1"))
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answer = run_cli("send", js03_server_url, "Ada", "--task-id", asked["id"], "--context-id", asked["contextId"])
    assert answer.returncode == 0, answer.stderr
    assert "Hello, Ada!" in answer.stdout


def test_cli_bearer_token(js03_auth_server: AuthServer) -> None:
    url = js03_auth_server.url
    (message,) = ok_json(run_cli("send", url, "hello", "--json", "--token", js03_auth_server.token, "--retries", "1"))
    assert [p["text"] for p in message["parts"]] == ["hello"]
    refused = run_cli("send", url, "hello", "--token", "wrong", "--retries", "1")
    assert refused.returncode != 0 and "401" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
