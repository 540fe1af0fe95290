"""Every example runs: the agents are served and called over each binding, the client script is run."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from a2a import A2AClient, A2AServer, Agent, RetryPolicy, ServerConfig
from a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LIMIT = 10.0  # seconds any one wait may take


def _load(file_name: str) -> ModuleType:
    """A fresh copy of an example module, so a test can patch it without touching other tests."""
    spec = importlib.util.spec_from_file_location(f"_example_{uuid.uuid4().hex}", EXAMPLES / file_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _serve(agent: Agent) -> A2AServer:
    server = A2AServer(agent, config=ServerConfig(port=0))
    await server.start()
    return server


@dataclass
class Running:
    """An example module, its agent served on a free port, and a client on the test's binding."""

    module: ModuleType
    client: A2AClient


@asynccontextmanager
async def _running(file_name: str, binding: str) -> AsyncIterator[Running]:
    module = _load(file_name)
    server = await _serve(module.agent)
    assert server.url is not None
    try:
        async with A2AClient(server.url, binding=binding, retry=RetryPolicy.none(), timeout=LIMIT) as client:
            yield Running(module, client)
    finally:
        await server.stop()


@pytest.fixture
async def storyteller(binding: str) -> AsyncIterator[Running]:
    async with _running("streaming_agent.py", binding) as running:
        yield running


@pytest.fixture
async def greeter(binding: str) -> AsyncIterator[Running]:
    async with _running("input_required_agent.py", binding) as running:
        yield running


# ---- examples/streaming_agent.py -----------------------------------------------------------


async def test_streaming_agent_streams_words_after_a_working_status(storyteller: Running) -> None:
    module, client = storyteller.module, storyteller.client
    async with asyncio.timeout(LIMIT):
        events = [event.payload async for event in client.stream("the sea")]
    assert isinstance(events[0], Task)
    assert isinstance(events[1], TaskStatusUpdateEvent), "a WORKING status comes before the first chunk"
    assert events[1].status.state == TaskState.WORKING
    assert events[1].status.message is not None and events[1].status.message.text == "Writing about the sea"
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    expected = module.answer_for("the sea")
    # One chunk per word, each sent when yielded; an empty one flagged lastChunk closes the artifact.
    assert len(chunks) == len(expected.split(" ")) + 1 > 10, "one chunk per word, then the closing one"
    assert "".join(str(c.artifact.parts[0].text) for c in chunks) == expected
    assert chunks[-1].artifact.parts[0].text == ""
    assert len({c.artifact.artifact_id for c in chunks}) == 1, "all chunks go into one artifact"
    assert [c.append for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.last_chunk for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert isinstance(events[-1], TaskStatusUpdateEvent) and events[-1].status.state == TaskState.COMPLETED


async def test_streaming_agent_without_streaming_returns_the_whole_answer(storyteller: Running) -> None:
    module, client = storyteller.module, storyteller.client
    task = await asyncio.wait_for(client.send("tides"), LIMIT)
    assert isinstance(task, Task) and task.status.state == TaskState.COMPLETED
    [artifact] = task.artifacts or []
    assert "".join(p.text for p in artifact.parts if isinstance(p.text, str)) == module.answer_for("tides")


# ---- examples/input_required_agent.py ------------------------------------------------------


async def test_input_required_agent_asks_then_greets(greeter: Running) -> None:
    client = greeter.client
    asked = await asyncio.wait_for(client.send("hi"), LIMIT)
    assert isinstance(asked, Task) and asked.status.state == TaskState.INPUT_REQUIRED
    assert asked.status.message is not None and asked.status.message.text == "What is your name?"
    done = await asyncio.wait_for(client.send("Ada", task_id=asked.id), LIMIT)
    assert isinstance(done, Task) and done.id == asked.id
    assert done.status.state == TaskState.COMPLETED
    assert done.status.message is not None and done.status.message.text == "Hello, Ada!"
    assert done.artifacts and done.artifacts[0].name == "greeting"


async def test_input_required_agent_can_be_canceled_while_waiting(greeter: Running) -> None:
    client = greeter.client
    asked = await asyncio.wait_for(client.send("hi"), LIMIT)
    assert isinstance(asked, Task)
    canceled = await asyncio.wait_for(client.cancel_task(asked.id), LIMIT)
    assert canceled.status.state == TaskState.CANCELED


async def test_input_required_agent_reacts_to_cancel_while_working(
    greeter: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered = asyncio.Event()

    async def slow_greeting(name: str) -> str:  # the "slow work", held until canceled
        entered.set()
        await asyncio.Event().wait()
        return name

    monkeypatch.setattr(greeter.module, "write_greeting", slow_greeting)  # looked up when the skill runs
    client = greeter.client
    async with asyncio.timeout(LIMIT):
        asked = await client.send("hi")
        assert isinstance(asked, Task)
        await client.send("Grace", task_id=asked.id, return_immediately=True)
        await entered.wait()
        canceled = await client.cancel_task(asked.id)
    assert canceled.status.state == TaskState.CANCELED
    assert canceled.status.message is not None
    assert canceled.status.message.text == "Canceled before Grace was greeted"


# ---- examples/graph_agent.py ---------------------------------------------------------------


@pytest.fixture
async def graph_greeter(binding: str) -> AsyncIterator[Running]:
    async with _running("graph_agent.py", binding) as running:
        yield running


def _artifact_text(task: Task) -> str:
    [artifact] = task.artifacts or []
    return "".join(p.text for p in artifact.parts if isinstance(p.text, str))


async def test_graph_agent_asks_through_interrupt_and_resumes_with_the_answer(graph_greeter: Running) -> None:
    client = graph_greeter.client
    async with asyncio.timeout(LIMIT):
        events = [event.payload async for event in client.stream("hello")]
        asked = events[-1]
        assert isinstance(asked, TaskStatusUpdateEvent), events
        assert asked.status.state == TaskState.INPUT_REQUIRED
        assert asked.status.message is not None and asked.status.message.text == "What is your name?"
        done = await client.send("Ada", task_id=asked.task_id)
    assert isinstance(done, Task) and done.id == asked.task_id
    assert done.status.state == TaskState.COMPLETED
    assert _artifact_text(done) == "Hello, Ada! You said: hello"


async def test_graph_agent_publishes_each_node_as_working(graph_greeter: Running) -> None:
    client = graph_greeter.client
    async with asyncio.timeout(LIMIT):
        asked = await client.send("hi")
        assert isinstance(asked, Task)
        events = [event.payload async for event in client.stream("Grace", task_id=asked.id)]
    working = [
        e.status.message.text
        for e in events
        if isinstance(e, TaskStatusUpdateEvent) and e.status.state == TaskState.WORKING and e.status.message
    ]
    assert working == ["ask_name", "greet"]
    assert isinstance(events[-1], TaskStatusUpdateEvent) and events[-1].status.state == TaskState.COMPLETED


async def test_graph_agent_continues_the_conversation_of_a_context(graph_greeter: Running) -> None:
    client = graph_greeter.client
    async with asyncio.timeout(LIMIT):
        asked = await client.send("hello")
        assert isinstance(asked, Task)
        await client.send("Ada", task_id=asked.id)
        # A new task in the same conversation: the graph's thread remembers the name.
        again = await client.send("how are you?", context_id=asked.context_id)
        # Another conversation starts afresh.
        stranger = await client.send("hello")
    assert isinstance(again, Task) and again.id != asked.id
    assert again.status.state == TaskState.COMPLETED
    assert _artifact_text(again) == "Hello, Ada! You said: how are you?"
    assert isinstance(stranger, Task) and stranger.status.state == TaskState.INPUT_REQUIRED


# ---- examples/client.py --------------------------------------------------------------------


@pytest.mark.slow
async def test_client_script_talks_to_the_echo_agent(echo_server: A2AServer, binding: str) -> None:
    assert echo_server.url is not None
    env = {k: v for k, v in os.environ.items() if k not in ("A2A_TOKEN", "A2A_API_KEY")}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / "client.py"),
        echo_server.url,
        "--binding",
        binding,
        "--text",
        "hi from the test",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        async with asyncio.timeout(60):  # a fresh interpreter importing the package: be generous
            stdout, stderr = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, stderr.decode()
    lines = stdout.decode().splitlines()
    assert lines[0].startswith("agent: Echo 1.0.0: ")
    assert lines[1] == "skills: echo"
    assert lines[2].startswith(f"interface: {binding} {echo_server.url}/a2a/")
    assert lines[3] == "reply: hi from the test"
    assert lines[4].startswith("task ") and lines[4].endswith(": TASK_STATE_SUBMITTED")
    assert lines[5:] == ["chunk: chunk 0", "chunk: chunk 1", "chunk: chunk 2", "status: TASK_STATE_COMPLETED"]


def test_examples_say_what_they_show() -> None:
    for name in ("streaming_agent.py", "input_required_agent.py", "graph_agent.py", "client.py"):
        module = _load(name)
        assert module.__doc__ and len(module.__doc__.strip().splitlines()) > 2, f"{name} needs a docstring"
