"""``Agent.from_graph``: a LangGraph graph served as an agent (``a2a.server.authoring.graph_agent``).

The example (``examples/graph_agent.py``, tested in ``tests/test_examples.py``) shows the
message-state case over the network; these pin down the rest in process.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from a2a import Agent
from a2a.local import local_client
from a2a.types import Message, Part, Role, Task, TaskState

LIMIT = 10.0


class Order(TypedDict, total=False):
    item: str
    size: Any
    note: str


def _order_graph(*, checkpointer: bool = False) -> Any:
    def choose(state: Order) -> dict[str, Any]:
        return {"size": interrupt({"question": "which size?", "item": state["item"]})}

    def confirm(state: Order) -> dict[str, Any]:
        return {"note": f"{state['size']['size']} {state['item']}"}

    builder = StateGraph(Order)
    builder.add_node("choose", choose)
    builder.add_node("confirm", confirm)
    builder.add_edge(START, "choose")
    builder.add_edge("choose", "confirm")
    builder.add_edge("confirm", END)
    # Compiled without a checkpointer, as many graphs are: the agent gives it an in-memory one.
    return builder.compile()


async def test_a_state_graph_with_its_own_input_output_and_a_data_answer() -> None:
    agent = Agent.from_graph(
        _order_graph(), "Orders", input=lambda ctx: {"item": ctx.text}, output=lambda state: {"order": state["note"]}
    )
    async with local_client(agent) as client, asyncio.timeout(LIMIT):
        asked = await client.send("coffee")
        assert isinstance(asked, Task) and asked.status.state == TaskState.INPUT_REQUIRED
        assert asked.status.message is not None
        assert asked.status.message.parts[0].data == {"question": "which size?", "item": "coffee"}
        answer = Message(message_id="m2", role=Role.USER, parts=[Part(data={"size": "large"})], task_id=asked.id)
        done = await client.send(answer)
    assert isinstance(done, Task) and done.status.state == TaskState.COMPLETED
    [artifact] = done.artifacts or []
    assert artifact.parts[0].data == {"order": "large coffee"}


async def test_cancelling_the_task_stops_the_graph() -> None:
    entered, stopped = asyncio.Event(), asyncio.Event()

    async def work(state: Order) -> dict[str, Any]:
        entered.set()
        try:
            await asyncio.Event().wait()  # long work, until cancelled
        finally:
            stopped.set()
        return {}

    builder = StateGraph(Order)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    agent = Agent.from_graph(builder.compile(), "Worker", input=lambda ctx: {"item": ctx.text})
    async with local_client(agent) as client, asyncio.timeout(LIMIT):
        started = await client.send("x", return_immediately=True)
        assert isinstance(started, Task)
        await entered.wait()
        cancelled = await client.cancel_task(started.id)
        await stopped.wait()
    assert cancelled.status.state == TaskState.CANCELED


async def test_a_failing_graph_fails_the_task_with_its_message() -> None:
    def broken(state: Order) -> dict[str, Any]:
        raise ValueError("no such item")

    builder = StateGraph(Order)
    builder.add_node("broken", broken)
    builder.add_edge(START, "broken")
    agent = Agent.from_graph(builder.compile(), "Broken", input=lambda ctx: {"item": ctx.text})
    async with local_client(agent) as client, asyncio.timeout(LIMIT):
        task = await client.send("x")
    assert isinstance(task, Task) and task.status.state == TaskState.FAILED
    assert task.status.message is not None and "no such item" in task.status.message.text


def test_a_graph_that_is_not_compiled_is_refused_with_what_to_do() -> None:
    builder = StateGraph(Order)
    with pytest.raises(
        TypeError, match=r"compiled LangGraph graph, not StateGraph \(a StateGraph: serve graph.compile\(\)\)"
    ):
        Agent.from_graph(builder, "Nope")


def test_without_langgraph_one_line_says_which_extra_brings_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.memory", None)
    with pytest.raises(ImportError) as caught:
        Agent.from_graph(object(), "Nope")
    assert str(caught.value) == (
        "serving a LangGraph graph needs langgraph: pip install 'a2a-net[supervisor]' brings it"
    )


def test_importing_the_adapter_does_not_import_langgraph() -> None:
    probe = (
        "import sys, a2a.server.authoring.graph_agent, a2a; "
        "print(sorted(m for m in sys.modules if m.startswith('langgraph')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
