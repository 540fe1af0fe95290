"""OUR side against @a2a-js/sdk 1.3.0's server: ``A2AClient``, the ``a2a`` CLI and the supervisor.

The JS agent (``peers/js/echo_server.mjs``) serves JSON-RPC at ``/a2a/jsonrpc`` and HTTP+JSON
at ``/a2a/rest``: plain text gets a Message back, ``stream:N`` a task streaming N chunks,
``hold:S`` a task working S seconds, ``ask`` a task waiting in INPUT_REQUIRED.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from our_env import AuthServer, run_cli

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a import types as t
from a2a.errors import A2AError

pytestmark = [pytest.mark.interop, pytest.mark.slow]

BINDINGS = ["JSONRPC", "HTTP+JSON"]
DEADLINE = 30.0  # bound on every exchange: a hung peer fails the test, it does not stall the suite


@pytest.fixture(params=BINDINGS)
async def client(request: pytest.FixtureRequest, js_server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(js_server_url, binding=request.param, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


async def collect(events: AsyncIterator[t.StreamResponse]) -> list[Any]:
    async with asyncio.timeout(DEADLINE):
        return [event.payload async for event in events]


def texts(parts: list[t.Part]) -> list[str]:
    return [str(p.text) for p in parts]


# ---- A2AClient ------------------------------------------------------------------------------


async def test_card(client: A2AClient, js_server_url: str) -> None:
    card = await client.get_card()
    assert card.name == "js-echo"
    assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [
        ("JSONRPC", f"{js_server_url}/a2a/jsonrpc"),
        ("HTTP+JSON", f"{js_server_url}/a2a/rest"),
    ]
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


async def test_get_and_list(client: A2AClient) -> None:
    first = await client.send("stream:1")
    assert isinstance(first, t.Task)
    second = await client.send("stream:2", context_id=first.context_id)
    assert isinstance(second, t.Task)
    got = await client.get_task(second.id)
    assert (got.id, got.status.state) == (second.id, t.TaskState.COMPLETED)
    listed = await client.list_tasks(context_id=first.context_id)
    assert {task.id for task in listed.tasks} == {first.id, second.id}
    with pytest.raises(A2AError):
        await client.get_task("no-such-task")


async def test_cancel(client: A2AClient) -> None:
    task = await client.send("hold:30", return_immediately=True)
    assert isinstance(task, t.Task) and not task.status.state.is_terminal
    canceled = await client.cancel_task(task.id)
    assert canceled.id == task.id
    async with asyncio.timeout(DEADLINE):  # the JS server may answer before its executor wrote CANCELED
        while (await client.get_task(task.id)).status.state is not t.TaskState.CANCELED:  # noqa: ASYNC110
            await asyncio.sleep(0.05)


async def test_subscribe(client: A2AClient) -> None:
    task = await client.send("hold:1", return_immediately=True)
    assert isinstance(task, t.Task)
    events = await collect(client.subscribe(task.id))
    assert isinstance(events[0], t.Task) and events[0].id == task.id
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state is t.TaskState.COMPLETED


async def test_input_required_round_trip(client: A2AClient) -> None:
    asked = await client.send("ask")
    assert isinstance(asked, t.Task)
    assert asked.status.state is t.TaskState.INPUT_REQUIRED
    assert asked.status.message is not None and texts(asked.status.message.parts) == ["What is your name?"]
    answered = await client.send("Ada", task_id=asked.id, context_id=asked.context_id)
    assert isinstance(answered, t.Task)
    assert (answered.id, answered.status.state) == (asked.id, t.TaskState.COMPLETED)
    assert answered.artifacts is not None and texts(answered.artifacts[0].parts) == ["Hello, Ada!"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_bearer_token(js_auth_server: AuthServer, binding: str) -> None:
    async with A2AClient(
        js_auth_server.url, binding=binding, credentials=BearerToken(js_auth_server.token), retry=RetryPolicy.none()
    ) as c:
        reply = await c.send("hello")
        assert isinstance(reply, t.Message) and texts(reply.parts) == ["hello"]
    async with A2AClient(
        js_auth_server.url, binding=binding, credentials=BearerToken("wrong"), retry=RetryPolicy.none()
    ) as c:
        with pytest.raises(A2AError):
            await c.send("hello")


# ---- the CLI --------------------------------------------------------------------------------


def a2a(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--retries", "1", "--timeout", "20")


def ok_json(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("binding", BINDINGS)
def test_cli_send_stream_get_list_cancel(js_server_url: str, binding: str) -> None:
    (message,) = ok_json(a2a("send", js_server_url, "hello", "--json", "--binding", binding))
    assert [p["text"] for p in message["parts"]] == ["hello"]
    events = ok_json(a2a("send", js_server_url, "stream:2", "--stream", "--json", "--binding", binding))
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task_id, context_id = events[0]["task"]["id"], events[0]["task"]["contextId"]
    (got,) = ok_json(a2a("get", js_server_url, task_id, "--json", "--binding", binding))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    (listed,) = ok_json(a2a("list", js_server_url, "--context-id", context_id, "--json", "--binding", binding))
    assert [task["id"] for task in listed["tasks"]] == [task_id]
    (held,) = ok_json(a2a("send", js_server_url, "hold:30", "--no-wait", "--json", "--binding", binding))
    (canceled,) = ok_json(a2a("cancel", js_server_url, held["id"], "--json", "--binding", binding))
    assert canceled["id"] == held["id"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_cli_input_required_round_trip(js_server_url: str, binding: str) -> None:
    (asked,) = ok_json(a2a("send", js_server_url, "ask", "--no-prompt", "--json", "--binding", binding))
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answer = a2a("send", js_server_url, "Ada", "--task-id", asked["id"], "--context-id", asked["contextId"])
    assert answer.returncode == 0, answer.stderr
    assert "Hello, Ada!" in answer.stdout


def test_cli_bearer_token(js_auth_server: AuthServer) -> None:
    (message,) = ok_json(a2a("send", js_auth_server.url, "hello", "--json", "--token", js_auth_server.token))
    assert [p["text"] for p in message["parts"]] == ["hello"]
    refused = a2a("send", js_auth_server.url, "hello", "--token", "wrong")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr


# ---- the supervisor -------------------------------------------------------------------------


def test_supervisor_delegates_to_the_js_agent(js_server_url: str, tmp_path: Path) -> None:
    proc = run_cli(
        "supervise",
        "--agent",
        js_server_url,
        "--offline",
        "--batch",
        "--json",
        "--checkpoint",
        str(tmp_path / "checkpoint.db"),
        "echo stream:2",
        timeout=60,
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    (status,) = [e for e in events if e["event"] == "agent_status"]
    assert (status["agent"], status["status"]) == ("js-echo", "up")
    (finished,) = [e for e in events if e["event"] == "delegation_finished"]
    assert (finished["agent"], finished["state"]) == ("js-echo", "completed")
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "completed"
    assert "chunk 0" in events[-1]["final"] and "chunk 1" in events[-1]["final"]
