"""OUR client, CLI and supervisor against LangGraph Server's A2A endpoint (``/a2a/{assistant_id}``).

The server is ``langgraph dev`` in memory with a trivial graph (``peers/langgraph/``, no model)
that answers "echo: <text>". It always answers with a task. Its streamed events after the first
are tagged the A2A 0.3 way (``"kind": "status-update"``): the stream rows need a client that
accepts 0.3-shaped events (or falls back to send + poll).

Input-required is the graph's ``interrupt`` (resumed by the answer to the same task and
context); the bearer token is LangGraph's own custom auth (``langgraph.json`` ``auth``), on a
second assistant of the same graph.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from our_env import run_cli
from peers.langgraph.auth import SECURE_ASSISTANT
from peers.langgraph_env import LangGraphServer

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a import types as t
from a2a.errors import A2AError

pytestmark = [pytest.mark.interop, pytest.mark.slow]

DEADLINE = 60.0


@pytest.fixture
async def client(langgraph_server: LangGraphServer) -> AsyncIterator[A2AClient]:
    async with A2AClient(langgraph_server.a2a_url, retry=RetryPolicy.none(), timeout=30) as c:
        yield c


def reply_text(task: t.Task) -> str:
    assert task.artifacts, task
    return "".join(str(p.text) for p in task.artifacts[-1].parts if p.text)


async def test_card(client: A2AClient, langgraph_server: LangGraphServer) -> None:
    card = await client.get_card()
    assert card.name == "echo"
    assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [("JSONRPC", langgraph_server.a2a_url)]
    assert card.capabilities.streaming is True


async def test_send_get_list(client: A2AClient) -> None:
    task = await client.send("hello")
    assert isinstance(task, t.Task)
    assert task.status.state is t.TaskState.COMPLETED
    assert reply_text(task) == "echo: hello"
    got = await client.get_task(task.id)
    assert (got.id, got.status.state) == (task.id, t.TaskState.COMPLETED)
    listed = await client.list_tasks(context_id=task.context_id)
    assert task.id in [found.id for found in listed.tasks]


async def test_multi_turn_in_one_context(client: A2AClient) -> None:
    first = await client.send("one")
    assert isinstance(first, t.Task)
    second = await client.send("two", context_id=first.context_id)
    assert isinstance(second, t.Task)
    assert second.context_id == first.context_id
    assert reply_text(second) == "echo: two"


async def test_stream(client: A2AClient) -> None:
    async with asyncio.timeout(DEADLINE):
        events = [event.payload async for event in client.stream("streamed")]
    assert isinstance(events[0], t.Task)
    final = events[-1]
    assert isinstance(final, t.TaskStatusUpdateEvent | t.Task)
    assert final.status.state is t.TaskState.COMPLETED
    said = [
        str(p.text) for e in events if isinstance(e, t.TaskArtifactUpdateEvent) for p in e.artifact.parts if p.text
    ] + [
        str(p.text)
        for e in events
        if isinstance(e, t.TaskStatusUpdateEvent) and e.status.message is not None
        for p in e.status.message.parts
        if p.text
    ]
    assert "echo: streamed" in said


def ok_json(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_cli_card_send_get_list(langgraph_server: LangGraphServer) -> None:
    url = langgraph_server.a2a_url
    (card,) = ok_json(run_cli("card", url, "--json", "--retries", "1"))
    assert card["name"] == "echo"
    (task,) = ok_json(run_cli("send", url, "hello", "--json", "--retries", "1"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (got,) = ok_json(run_cli("get", url, task["id"], "--json", "--retries", "1"))
    assert got["id"] == task["id"]
    (listed,) = ok_json(run_cli("list", url, "--context-id", task["contextId"], "--json", "--retries", "1"))
    assert [found["id"] for found in listed["tasks"]] == [task["id"]]
    plain = run_cli("send", url, "hi", "--retries", "1")
    assert plain.returncode == 0 and "echo: hi" in plain.stdout, plain.stderr


def test_cli_stream(langgraph_server: LangGraphServer) -> None:
    events = ok_json(run_cli("send", langgraph_server.a2a_url, "hi", "--stream", "--json", "--retries", "1"))
    assert next(iter(events[0])) == "task"
    last = events[-1]
    state = last["statusUpdate"]["status"]["state"] if "statusUpdate" in last else last["task"]["status"]["state"]
    assert state == "TASK_STATE_COMPLETED"


def test_supervisor_delegates_to_langgraph(langgraph_server: LangGraphServer, tmp_path: Path) -> None:
    proc = run_cli(
        "supervise",
        "--agent",
        langgraph_server.a2a_url,
        "--offline",
        "--batch",
        "--json",
        "--checkpoint",
        str(tmp_path / "checkpoint.db"),
        "echo hello from the supervisor",
        timeout=90,
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    (finished,) = [e for e in events if e["event"] == "delegation_finished"]
    assert (finished["agent"], finished["state"]) == ("echo", "completed")
    assert events[-1]["status"] == "completed"
    assert "echo: echo hello from the supervisor" in events[-1]["final"]


# ---- input-required and a bearer token (LangGraph's own interrupt and custom auth) -----------


async def test_input_required_round_trip(client: A2AClient) -> None:
    """``ask`` interrupts the graph: the endpoint answers input-required; our answer, sent to the
    same task and context, resumes the graph, which completes."""
    asked = await client.send("ask")
    assert isinstance(asked, t.Task) and asked.status.state is t.TaskState.INPUT_REQUIRED, asked
    answered = await client.send("Ada", task_id=asked.id, context_id=asked.context_id)
    assert isinstance(answered, t.Task) and answered.context_id == asked.context_id, answered
    assert answered.status.state is t.TaskState.COMPLETED, answered
    assert reply_text(answered) == "answered: Ada"


def test_cli_input_required_round_trip(langgraph_server: LangGraphServer) -> None:
    url = langgraph_server.a2a_url
    (asked,) = ok_json(run_cli("send", url, "ask", "--json", "--retries", "1"))
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow_up = ["--task-id", asked["id"], "--context-id", asked["contextId"]]
    (answered,) = ok_json(run_cli("send", url, "Bo", *follow_up, "--json", "--retries", "1"))
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_bearer_token(langgraph_server: LangGraphServer) -> None:
    """The ``secure`` assistant requires LangGraph's custom auth (a bearer token; its card stays
    public): our client sends it on every call; a wrong token is refused with a clear error."""
    assert langgraph_server.secure_assistant_id == SECURE_ASSISTANT  # what its auth.py protects
    async with A2AClient(
        langgraph_server.secure_a2a_url,
        credentials=BearerToken(langgraph_server.token),
        retry=RetryPolicy.none(),
        timeout=30,
    ) as c:
        task = await c.send("hello")
        assert isinstance(task, t.Task) and reply_text(task) == "echo: hello"
        got = await c.get_task(task.id)
        assert got.status.state is t.TaskState.COMPLETED
    async with A2AClient(
        langgraph_server.secure_a2a_url, credentials=BearerToken("wrong"), retry=RetryPolicy.none(), timeout=30
    ) as c:
        with pytest.raises(A2AError, match="401"):
            await c.send("hello")


def test_cli_bearer_token(langgraph_server: LangGraphServer) -> None:
    url = langgraph_server.secure_a2a_url
    (task,) = ok_json(run_cli("send", url, "hello", "--json", "--token", langgraph_server.token, "--retries", "1"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    refused = run_cli("send", url, "hello", "--token", "wrong", "--retries", "1")
    assert refused.returncode != 0 and "401" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
