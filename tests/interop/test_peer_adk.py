"""Google ADK both ways, in two releases: its ``RemoteA2aAgent`` against OUR server, our side
against its ``to_a2a()``.

- ADK 2.13.0 is built on a2a-sdk 1.x: A2A 1.0 on the wire.
- ADK 1.39.1 is built on a2a-sdk 0.3 (the newest release whose ``a2a`` extra still requires
  a2a-sdk < 0.4): A2A 0.3 on the wire, what many ADK users still run. Our server answers it
  in 0.3 (no ``A2A-Version`` header); our client reads its 0.3 card and talks 0.3 to it.

Every test runs once per release (the ``adk`` fixture). ADK runs in its own venv per release
(``peers/adk_env.py``); its agent is a custom ``BaseAgent`` without a model. ``RemoteA2aAgent``
resolves our card by URL, so it applies its same-origin check to every interface the card
declares (both releases do): these tests need a card whose interfaces are all on its own
origin (the WebSocket interface included).

ADK 1.x's own limits, asserted as the clear errors our side reports:
- ``to_a2a()``'s default card declares no capability, so its a2a-sdk 0.3 server refuses
  ``message/stream`` (JSON-RPC -32603 "Streaming is not supported by the agent"): ``a2a send
  --stream`` says so; the supervisor sends instead (it streams only where the card says so).
  An ADK 1.x agent whose card declares streaming (``AgentCardBuilder(capabilities=...)``)
  streams to our client: its first event is a SUBMITTED status update, not the task.
- A2A 0.3 has no ``tasks/list``: ``list_tasks`` names that instead of calling.
- ``RemoteA2aAgent`` in 1.x turns a streamed artifact into an ADK event only when its first
  chunk arrives and when it is whole (``lastChunk``), never as partial events.
- A cancel or a subscribe after the task ended is refused by both releases with the A2A error
  (TaskNotCancelable; a2a-sdk 0.3 answers the subscribe with InvalidParams, 1.x with
  UnsupportedOperation).
- ADK 1.x cannot cancel a running task: its server answers -32603 "Cancellation is not
  supported" (raised as ``InternalError`` with those words) and the task runs on. ADK 2.x
  cancels it.

``to_a2a()`` waits for input with a long-running function call (the task INPUT_REQUIRED) and
reads the answer as a function response; it has no authentication of its own, so the
bearer-token tests put an ASGI check in front of it (as a deployment would).
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
from peers.adk_env import AdkRelease

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a import types as t
from a2a.errors import A2AError, InternalError, InvalidParamsError, TaskNotCancelableError, UnsupportedOperationError

pytestmark = [pytest.mark.interop, pytest.mark.slow]

DEADLINE = 30.0


def texts_of(lines: list[dict[str, Any]], turn: int) -> list[str]:
    return [text for line in lines if line["turn"] == turn for text in line["texts"]]


# ---- ADK's RemoteA2aAgent -> a2a serve -------------------------------------------------------


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "blocking"])
def test_adk_remote_agent_sends(adk: AdkRelease, our_server_url: str, streaming: bool) -> None:
    lines = adk.run_remote_agent(our_server_url, "send", streaming=streaming)
    assert texts_of(lines, 1)[-1] == "hello adk"


def test_adk_remote_agent_streams_a_task(adk: AdkRelease, our_server_url: str) -> None:
    lines = adk.run_remote_agent(our_server_url, "stream")
    texts = texts_of(lines, 1)
    if adk.wire == "1.0":
        assert [x for x in texts if x.startswith("chunk")][:3] == ["chunk 0", "chunk 1", "chunk 2"]
        assert any(line["partial"] for line in lines)  # the chunks arrived as they were made
    else:
        # ADK 1.x shows the artifact when its first chunk arrives and when it is whole.
        artifacts = [line["texts"] for line in lines if line["texts"]]
        assert artifacts == [["chunk 0"], ["chunk 0", "chunk 1", "chunk 2"]], lines


def test_adk_remote_agent_multi_turn(adk: AdkRelease, our_server_url: str) -> None:
    lines = adk.run_remote_agent(our_server_url, "multi_turn")
    assert texts_of(lines, 1)[-1] == "first"
    assert texts_of(lines, 2)[-1] == "second"


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "blocking"])
def test_adk_remote_agent_input_required_round_trip(adk: AdkRelease, our_greeter_url: str, streaming: bool) -> None:
    lines = adk.run_remote_agent(our_greeter_url, "input_required", streaming=streaming)
    calls = [call["name"] for line in lines if line["turn"] == 1 for call in line["calls"]]
    assert calls == ["mock_function_call_for_required_user_input"]  # ADK's form of INPUT_REQUIRED
    assert "Hello, Ada!" in texts_of(lines, 2)


def test_adk_remote_agent_bearer_token(adk: AdkRelease, our_auth_server: AuthServer) -> None:
    lines = adk.run_remote_agent(our_auth_server.url, "send", token=our_auth_server.token)
    assert texts_of(lines, 1)[-1] == "hello adk"
    refused = adk.run_remote_agent(our_auth_server.url, "send", token="wrong-token", check=False)
    assert refused[-1]["exit"] != 0 and not texts_of(refused[:-1], 1), refused
    assert "401" in refused[-1]["stderr"], refused


# ---- our client, CLI and supervisor -> ADK's to_a2a() ----------------------------------------


@pytest.fixture
async def client(adk_server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(adk_server_url, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


async def test_card(adk: AdkRelease, client: A2AClient, adk_server_url: str) -> None:
    card = await client.get_card()
    assert card.name == "echo"
    jsonrpc = [i for i in card.supported_interfaces if i.protocol_binding == "JSONRPC"]
    assert jsonrpc and all(i.url.startswith(adk_server_url) for i in jsonrpc), card.supported_interfaces
    if adk.wire == "0.3":  # a 0.3 card (url, preferredTransport): read as a 0.3 interface
        assert [i.protocol_version for i in jsonrpc] == ["0.3"]
    assert card.capabilities.streaming is (True if adk.streams_by_default else None)


async def test_send_get_list_cancel(adk: AdkRelease, client: A2AClient) -> None:
    task = await client.send("hello")
    assert isinstance(task, t.Task)  # to_a2a always answers with a task
    assert task.status.state is t.TaskState.COMPLETED
    assert task.artifacts is not None and [p.text for p in task.artifacts[0].parts] == ["echo: hello"]
    got = await client.get_task(task.id)
    assert (got.id, got.status.state) == (task.id, t.TaskState.COMPLETED)
    if adk.wire == "1.0":
        listed = await client.list_tasks(context_id=task.context_id)
        assert [found.id for found in listed.tasks] == [task.id]
    else:
        with pytest.raises(UnsupportedOperationError, match=r"speaks A2A 0\.3, which has no ListTasks"):
            await client.list_tasks(context_id=task.context_id)
    with pytest.raises(TaskNotCancelableError):  # it ended before the reply
        await client.cancel_task(task.id)


async def test_cancel_a_running_task(adk: AdkRelease, client: A2AClient) -> None:
    task = await client.send("hold:10", return_immediately=True)
    assert isinstance(task, t.Task)
    async with asyncio.timeout(DEADLINE):
        while (await client.get_task(task.id)).status.state is not t.TaskState.WORKING:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if adk.wire == "1.0":
            cancelled = await client.cancel_task(task.id)
            assert cancelled.status.state is t.TaskState.CANCELED
            assert (await client.get_task(task.id)).status.state is t.TaskState.CANCELED
        else:
            # ADK 1.x's executor cannot cancel: its a2a-sdk 0.3 server answers -32603 with the
            # executor's words, and the task runs on.
            with pytest.raises(InternalError, match="Cancellation is not supported"):
                await client.cancel_task(task.id)
            assert (await client.get_task(task.id)).status.state is t.TaskState.WORKING


async def test_subscribe_to_an_ended_task(adk: AdkRelease, client: A2AClient) -> None:
    task = await client.send("hello")
    assert isinstance(task, t.Task)
    # Both refuse it with the peer's own words; a2a-sdk 0.3 calls it InvalidParams, 1.x
    # UnsupportedOperation (what A2A 1.0 says for a terminal task).
    refusal = InvalidParamsError if adk.wire == "0.3" else UnsupportedOperationError
    with pytest.raises(refusal, match="terminal state"):
        async with asyncio.timeout(DEADLINE):
            await anext(aiter(client.subscribe(task.id)))


async def test_stream(adk: AdkRelease, adk_streaming_url: str) -> None:
    async with A2AClient(adk_streaming_url, retry=RetryPolicy.none(), timeout=10) as client:
        async with asyncio.timeout(DEADLINE):
            events = [event.payload async for event in client.stream("stream:2")]
    # ADK 1.x's executor opens with a SUBMITTED status update where 2.x sends the task.
    first = events[0]
    if adk.wire == "1.0":
        assert isinstance(first, t.Task)
    else:
        assert isinstance(first, t.TaskStatusUpdateEvent) and first.status.state is t.TaskState.SUBMITTED
    working = [
        e.status.message.parts[0].text
        for e in events
        if isinstance(e, t.TaskStatusUpdateEvent)
        and e.status.message is not None
        and e.status.state is t.TaskState.WORKING
    ]
    assert working[:2] == ["chunk 0", "chunk 1"]
    assert isinstance(events[-1], t.TaskStatusUpdateEvent)
    assert events[-1].status.state is t.TaskState.COMPLETED


async def test_stream_with_adks_own_card(adk: AdkRelease, client: A2AClient) -> None:
    """ADK 2.x's own card declares streaming; 1.x's does not, and its server refuses the stream:
    our client says what it said (the card never offered a stream: no silent send + poll)."""
    async with asyncio.timeout(DEADLINE):
        if adk.streams_by_default:
            events = [event.payload async for event in client.stream("stream:1")]
            assert isinstance(events[-1], t.TaskStatusUpdateEvent)
            assert events[-1].status.state is t.TaskState.COMPLETED
        else:
            with pytest.raises(InternalError, match="Streaming is not supported by the agent"):
                async for _ in client.stream("stream:1"):
                    pass


def ok_json(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_cli_card_send_stream(adk: AdkRelease, adk_server_url: str, adk_streaming_url: str) -> None:
    (card,) = ok_json(run_cli("card", adk_server_url, "--json", "--retries", "1"))
    assert card["name"] == "echo"
    plain_card = run_cli("card", adk_server_url, "--retries", "1")
    assert plain_card.returncode == 0 and f"A2A {adk.wire}" in plain_card.stdout, plain_card
    (task,) = ok_json(run_cli("send", adk_server_url, "hello", "--json", "--retries", "1"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    events = ok_json(run_cli("send", adk_streaming_url, "stream:1", "--stream", "--json", "--retries", "1"))
    assert next(iter(events[0])) == ("task" if adk.wire == "1.0" else "statusUpdate")
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    plain = run_cli("send", adk_server_url, "hello", "--retries", "1")
    assert plain.returncode == 0 and "echo: hello" in plain.stdout, plain.stderr
    if not adk.streams_by_default:
        refused = run_cli("send", adk_server_url, "stream:1", "--stream", "--retries", "1")
        assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused
        assert "Streaming is not supported by the agent" in refused.stderr, refused.stderr


def test_supervisor_delegates_to_the_adk_agent(adk_server_url: str, adk_streaming_url: str, tmp_path: Path) -> None:
    """Through ADK's own card and through one declaring streaming (the same agent on ADK 2.x):
    the supervisor streams where the card says it may (progress events), sends elsewhere."""
    for url in dict.fromkeys([adk_server_url, adk_streaming_url]):
        proc = run_cli(
            "supervise",
            "--agent",
            url,
            "--offline",
            "--batch",
            "--json",
            "--checkpoint",
            str(tmp_path / f"checkpoint-{url.rsplit(':', 1)[-1]}.db"),
            "echo hello from the supervisor",
            timeout=60,
        )
        assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
        events = [json.loads(line) for line in proc.stdout.splitlines()]
        (status,) = [e for e in events if e["event"] == "agent_status"]
        assert (status["agent"], status["status"]) == ("echo", "up")
        (finished,) = [e for e in events if e["event"] == "delegation_finished"]
        assert (finished["agent"], finished["state"]) == ("echo", "completed")
        assert events[-1]["status"] == "completed"
        assert "echo: echo hello from the supervisor" in events[-1]["final"]
        if url == adk_streaming_url:
            progress = [e["state"] for e in events if e["event"] == "delegation_progress"]
            assert "working" in progress and progress[-1] == "completed", progress


# ---- input-required and a bearer token, our side -> to_a2a() ---------------------------------


def _ask_user_call(task: t.Task) -> dict[str, Any]:
    """The ``ask_user`` function call ADK put in the input-required task (a data part, marked
    ``adk_type: function_call``), from its status message or its history."""
    messages = [task.status.message, *(task.history or [])]
    for message in messages:
        for part in message.parts if message is not None else []:
            if isinstance(part.data, dict) and part.data.get("name") == "ask_user":
                return part.data
    raise AssertionError(f"no ask_user call in {task}")


async def test_input_required_round_trip(client: A2AClient) -> None:
    """``ask`` makes ADK wait for input: the task ends INPUT_REQUIRED with a long-running function
    call in its status message. The answer ADK's own clients send is a function response (a
    data part marked ``adk_type: function_response``): sent to the same task, it completes it.
    A plain text answer goes to the agent as the user's text (this one echoes it)."""
    asked = await client.send("ask")
    assert isinstance(asked, t.Task) and asked.status.state is t.TaskState.INPUT_REQUIRED, asked
    call = _ask_user_call(asked)
    answer = t.Part(
        data={"id": call["id"], "name": "ask_user", "response": {"answer": "Ada"}},
        metadata={"adk_type": "function_response"},
    )
    answered = await client.send([answer], task_id=asked.id, context_id=asked.context_id)
    assert isinstance(answered, t.Task) and answered.id == asked.id, answered
    assert answered.status.state is t.TaskState.COMPLETED, answered
    assert answered.artifacts is not None and [p.text for p in answered.artifacts[-1].parts] == ["answered: Ada"]
    again = await client.send("ask")
    assert isinstance(again, t.Task) and again.status.state is t.TaskState.INPUT_REQUIRED, again
    texted = await client.send("Bo", task_id=again.id, context_id=again.context_id)
    assert isinstance(texted, t.Task) and (texted.id, texted.status.state) == (again.id, t.TaskState.COMPLETED)


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_bearer_token(adk_auth_server: AuthServer, streaming: bool) -> None:
    """``to_a2a()`` behind a bearer token check: our client sends the token on every call; a
    wrong one is refused with a clear error."""
    async with A2AClient(
        adk_auth_server.url, credentials=BearerToken(adk_auth_server.token), retry=RetryPolicy.none(), timeout=10
    ) as c:
        if streaming:
            async with asyncio.timeout(DEADLINE):
                events = [event.payload async for event in c.stream("stream:1")]
            last = events[-1]
            assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED
        else:
            task = await c.send("hello")
            assert isinstance(task, t.Task) and task.status.state is t.TaskState.COMPLETED
    async with A2AClient(
        adk_auth_server.url, credentials=BearerToken("wrong"), retry=RetryPolicy.none(), timeout=10
    ) as c:
        with pytest.raises(A2AError, match="401"):
            if streaming:
                [event async for event in c.stream("hello")]
            else:
                await c.send("hello")


def test_cli_bearer_token(adk_auth_server: AuthServer) -> None:
    url = adk_auth_server.url
    (task,) = ok_json(run_cli("send", url, "hello", "--json", "--token", adk_auth_server.token, "--retries", "1"))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    refused = run_cli("send", url, "hello", "--token", "wrong", "--retries", "1")
    assert refused.returncode != 0 and "401" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr


def test_cli_input_required_round_trip(adk_server_url: str) -> None:
    (asked,) = ok_json(run_cli("send", adk_server_url, "ask", "--json", "--retries", "1"))
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow_up = ["--task-id", asked["id"], "--context-id", asked["contextId"]]
    (answered,) = ok_json(run_cli("send", adk_server_url, "Bo", *follow_up, "--json", "--retries", "1"))
    assert (answered["id"], answered["status"]["state"]) == (asked["id"], "TASK_STATE_COMPLETED")
