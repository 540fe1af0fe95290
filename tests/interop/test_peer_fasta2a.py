"""fasta2a 2.1.1 (pydantic-ai's A2A library) both ways: its client against OUR server, our side
against an agent on its server.

fasta2a's client speaks the 0.3 JSON-RPC method names without an ``A2A-Version`` header (0.3 by
the spec) but reads the results in the 1.0 shape, and requires skills' ``inputModes`` and
``outputModes`` on the card: a server must recognise it to answer it (its messages carry no
``kind``, as a 0.3 client's always do).
fasta2a's server never blocks on ``SendMessage`` (it returns the task SUBMITTED) and does not
implement ``ListTasks``. It makes every message a new task (it ignores ``taskId``), so an
input-required round trip continues in the same context with a new task. It has no
authentication of its own: the bearer-token tests put an ASGI check in front of it (as a
deployment would), which is what our client's token is checked against.
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
from peers import fasta2a_env

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a import types as t
from a2a.errors import A2AError, UnsupportedOperationError

pytestmark = [pytest.mark.interop, pytest.mark.slow]

DEADLINE = 30.0


# ---- fasta2a's client -> a2a serve -----------------------------------------------------------


def test_fasta2a_client_sends_and_gets(fasta2a_python: Path, our_modes_server_url: str) -> None:
    lines = fasta2a_env.run_client(our_modes_server_url, "send")
    (sent,) = [line["data"] for line in lines if line["step"] == "sent"]
    message = sent["result"]["message"]  # the echo agent answers with a Message
    assert message["role"] == "agent"
    assert [p.get("text") for p in message["parts"]] == ["hello fasta2a"], sent


def test_fasta2a_client_streams(fasta2a_python: Path, our_modes_server_url: str) -> None:
    lines = fasta2a_env.run_client(our_modes_server_url, "stream")
    events = [line["data"] for line in lines if line["step"] == "event"]
    assert [next(iter(e["result"])) for e in events] == ["message"], events
    assert [p.get("text") for p in events[0]["result"]["message"]["parts"]] == ["hello stream"]


# ---- our client, CLI and supervisor -> fasta2a's server --------------------------------------


@pytest.fixture
async def client(fasta2a_server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(fasta2a_server_url, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


async def finished(client: A2AClient, task_id: str) -> t.Task:
    """fasta2a answers SendMessage at once (SUBMITTED): read the task until it ends."""
    async with asyncio.timeout(DEADLINE):
        while not (task := await client.get_task(task_id)).status.state.is_terminal:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
    return task


async def test_card(client: A2AClient, fasta2a_server_url: str) -> None:
    card = await client.get_card()
    assert card.name == "fasta2a-echo"
    assert [(i.protocol_binding, i.url) for i in card.supported_interfaces] == [("JSONRPC", fasta2a_server_url)]


async def test_send_then_get(client: A2AClient) -> None:
    task = await client.send("hello")
    assert isinstance(task, t.Task)
    done = await finished(client, task.id)
    assert done.status.state is t.TaskState.COMPLETED
    assert done.artifacts is not None and [p.text for p in done.artifacts[0].parts] == ["echo: hello"]


async def test_stream(client: A2AClient) -> None:
    async with asyncio.timeout(DEADLINE):
        events = [event.payload async for event in client.stream("streamed")]
    assert isinstance(events[0], t.Task)
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state is t.TaskState.COMPLETED
    done = await finished(client, events[0].id)
    assert done.artifacts is not None and [p.text for p in done.artifacts[0].parts] == ["echo: streamed"]


async def test_list_is_refused_by_name(client: A2AClient) -> None:
    with pytest.raises(UnsupportedOperationError):
        await client.list_tasks()


def ok_json(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_cli_card_send_stream_get(fasta2a_server_url: str) -> None:
    (card,) = ok_json(run_cli("card", fasta2a_server_url, "--json", "--retries", "1"))
    assert card["name"] == "fasta2a-echo"
    events = ok_json(run_cli("send", fasta2a_server_url, "hi", "--stream", "--json", "--retries", "1"))
    assert next(iter(events[0])) == "task"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    (got,) = ok_json(run_cli("get", fasta2a_server_url, events[0]["task"]["id"], "--json", "--retries", "1"))
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert got["artifacts"][0]["parts"][0]["text"] == "echo: hi"


def test_supervisor_delegates_to_the_fasta2a_agent(fasta2a_server_url: str, tmp_path: Path) -> None:
    proc = run_cli(
        "supervise",
        "--agent",
        fasta2a_server_url,
        "--offline",
        "--batch",
        "--json",
        "--checkpoint",
        str(tmp_path / "checkpoint.db"),
        "echo hello from the supervisor",
        timeout=60,
    )
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    (done,) = [e for e in events if e["event"] == "delegation_finished"]
    assert (done["agent"], done["state"]) == ("fasta2a-echo", "completed")
    assert "echo: echo hello from the supervisor" in events[-1]["final"]


# ---- input-required and a bearer token -------------------------------------------------------


async def test_input_required_round_trip(client: A2AClient) -> None:
    """``ask`` ends its task input-required. fasta2a makes every message a new task (it ignores
    ``taskId``): our answer, sent to the task and its context, is answered by a new task in the
    same context, which completes with the answer."""
    asked = await client.send("ask")
    assert isinstance(asked, t.Task)
    async with asyncio.timeout(DEADLINE):
        while (waiting := await client.get_task(asked.id)).status.state is not t.TaskState.INPUT_REQUIRED:
            assert not waiting.status.state.is_terminal, waiting
            await asyncio.sleep(0.05)
    answer = await client.send("Ada", task_id=asked.id, context_id=asked.context_id)
    assert isinstance(answer, t.Task) and answer.context_id == asked.context_id
    done = await finished(client, answer.id)
    assert done.status.state is t.TaskState.COMPLETED
    assert done.artifacts is not None and [p.text for p in done.artifacts[0].parts] == ["answered: Ada"]


async def test_bearer_token(fasta2a_auth_server: AuthServer) -> None:
    async with A2AClient(
        fasta2a_auth_server.url,
        credentials=BearerToken(fasta2a_auth_server.token),
        retry=RetryPolicy.none(),
        timeout=10,
    ) as c:
        task = await c.send("hello")
        assert isinstance(task, t.Task)
        done = await finished(c, task.id)
        assert done.artifacts is not None and [p.text for p in done.artifacts[0].parts] == ["echo: hello"]
    async with A2AClient(
        fasta2a_auth_server.url, credentials=BearerToken("wrong"), retry=RetryPolicy.none(), timeout=10
    ) as c:
        with pytest.raises(A2AError, match="401"):
            await c.send("hello")


def test_cli_bearer_token(fasta2a_auth_server: AuthServer) -> None:
    url = fasta2a_auth_server.url
    (task,) = ok_json(run_cli("send", url, "hello", "--json", "--token", fasta2a_auth_server.token, "--retries", "1"))
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED")
    refused = run_cli("send", url, "hello", "--token", "wrong", "--retries", "1")
    assert refused.returncode != 0 and "401" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr
