"""``langgraph.json``: the graph LangGraph Server, ``langgraph dev`` and Studio serve, run from
serialisable settings only — in process, as a subgraph of a user's graph, and by a real server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypedDict

import httpx
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from tests.fakes import FakeOpenAI, Reply, ToolCalls, call

ROOT = Path(__file__).resolve().parents[2]
WORKER = {"name": "W", "module": "tests/supervisor/agents.py:stdio_worker"}
SERVER_START = 90.0  # seconds `langgraph dev` may take to serve (it imports a lot)


def test_langgraph_json_points_at_the_graph() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    module, _, attr = config["graphs"]["supervisor"].partition(":")
    assert module == "./supervisor/studio.py" and attr == "graph"
    assert config["dependencies"] == ["."]
    from supervisor import hosted

    default = hosted._config({})  # what a run given only {"objective": ...} uses
    assert {a.name: a.command for a in default.agents} == {
        "files": ["a2a", "serve", "agents.files:agent", "--stdio"],
        "web": ["a2a", "serve", "agents.web:agent", "--stdio"],
        "code": ["a2a", "serve", "agents.code:agent", "--stdio"],
    }


async def test_the_graph_runs_from_its_configurable_alone() -> None:
    from supervisor.studio import graph

    config = {"configurable": {"thread_id": "t1", "agents": [WORKER], "supervisor": {"offline": True}}}
    state = await graph.ainvoke({"objective": "work on apples"}, config)
    assert state["status"] == "completed"
    assert state["items"]["1"]["agent"] == "W" and "work on apples" in state["final"]
    assert state["run_id"] == "t1"


async def test_the_graph_is_a_subgraph_of_a_users_graph() -> None:
    from supervisor.graph import graph

    class Outer(TypedDict, total=False):
        objective: str
        final: str
        status: str
        shouted: str

    def shout(state: Outer) -> Outer:
        return {"shouted": (state.get("final") or "").upper()}

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(Outer)
    builder.add_node("supervise", graph())
    builder.add_node("shout", shout)
    builder.add_edge(START, "supervise")
    builder.add_edge("supervise", "shout")
    builder.add_edge("shout", END)
    app = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "outer", "agents": [WORKER], "supervisor": {"offline": True}}}
    state = await app.ainvoke({"objective": "work on pears"}, config)
    assert state["status"] == "completed"
    assert "WORK ON PEARS" in state["shouted"]


# ---- a real server -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def langgraph_dev(
    tmp_path: Path, extra_env: dict[str, str], *, default_config: bool = False
) -> AsyncIterator[str]:
    """``langgraph dev`` on a free loopback port, from the repository root; yields its URL. Its
    blocking-call detector stays on (no ``--allow-blocking``): a blocking call in a run fails it."""
    cli = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    if cli is None:
        pytest.skip("langgraph-cli[inmem] is not installed (it is in the test extra)")
    port = _free_port()
    env = {**os.environ, **extra_env, "LANGSMITH_TRACING": "false"}
    env.pop("A2A_SUPERVISOR_CONFIG", None)
    if not default_config:
        config = tmp_path / "studio.yaml"
        config.write_text("supervisor: {offline: true}\nagents:\n  - " + json.dumps(WORKER) + "\n")
        env["A2A_SUPERVISOR_CONFIG"] = str(config)
    log = (tmp_path / "langgraph-dev.log").open("wb")
    child = await asyncio.create_subprocess_exec(
        cli, "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload",
        cwd=ROOT, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client, asyncio.timeout(SERVER_START):
            while True:
                assert child.returncode is None, (tmp_path / "langgraph-dev.log").read_text()[-3000:]
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{url}/ok")).status_code == 200:
                        break
                await asyncio.sleep(0.3)
        yield url
    finally:
        if child.returncode is None:
            child.terminate()
            try:
                await asyncio.wait_for(child.wait(), 15)
            except TimeoutError:
                child.kill()
                await child.wait()
        log.close()


@pytest.mark.slow
async def test_langgraph_dev_serves_the_graph_and_runs_it_through_its_api(tmp_path: Path) -> None:
    plan = ToolCalls(call("update_todo", items=[{"id": "a", "description": "apples", "agent": "W"}]))
    accept = ToolCalls(call("reflect", item_id="a", verdict="accept", reason="fine"))
    async with (
        FakeOpenAI([plan, accept, Reply("apples are done")]) as fake,
        langgraph_dev(tmp_path, {"FAKE_MODEL_KEY": fake.api_key}) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        # No model: the offline planner, agents from $A2A_SUPERVISOR_CONFIG.
        offline = await client.post(
            "/runs/wait", json={"assistant_id": "supervisor", "input": {"objective": "work on apples"}}
        )
        # The fake model, agents and settings given with the run (its configurable).
        model = {"model": fake.model, "base_url": fake.base_url, "api_key_env": "FAKE_MODEL_KEY"}
        modelled = await client.post(
            "/runs/wait",
            json={
                "assistant_id": "supervisor",
                "input": {"objective": "handle the apples"},
                "config": {"configurable": {"agents": [WORKER], "supervisor": {"model": model}}},
            },
        )
        requests = len(fake.requests)
        # An agent that needs approval: the run stops at an interrupt; the thread resumes with the answer.
        thread = (await client.post("/threads", json={})).json()["thread_id"]
        approval = {"configurable": {"agents": [{**WORKER, "approval": True}], "supervisor": {"offline": True}}}
        paused = await client.post(
            f"/threads/{thread}/runs/wait",
            json={"assistant_id": "supervisor", "input": {"objective": "work on plums"}, "config": approval},
        )
        resumed = await client.post(
            f"/threads/{thread}/runs/wait",
            json={"assistant_id": "supervisor", "command": {"resume": True}, "config": approval},
        )
    asked = paused.json()["__interrupt__"][0]["value"]
    assert asked == {"approve": {"item_id": "1", "agent": "W", "instruction": "work on plums"}}
    done = resumed.json()
    assert done["status"] == "completed" and '"text": "work on plums"' in done["final"], done
    state = offline.json()
    assert state["status"] == "completed", state
    assert state["items"]["1"]["agent"] == "W" and '"text": "work on apples"' in state["final"]
    state = modelled.json()
    assert state["status"] == "completed", state
    assert state["final"] == "apples are done"
    assert requests == 3  # plan, reflect, synthesize: the server's run used the model


@pytest.mark.slow
async def test_langgraph_dev_out_of_the_box_runs_an_objective_with_the_built_in_agents(tmp_path: Path) -> None:
    """The default configuration (examples/studio.yaml): the built-in agents over stdio, started by the
    run itself; an objective alone completes, with no blocking call on the server's event loop."""
    workspace = tmp_path / "workspace"
    env = {
        "A2A_FILES_WORKSPACE": str(workspace),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"],
    }
    async with (
        langgraph_dev(tmp_path, env, default_config=True) as url,
        httpx.AsyncClient(base_url=url, timeout=90) as client,
    ):
        objective = "Compute with Python: ```print(6 * 7)```\nSave the result to answer.txt"
        response = await client.post(
            "/runs/wait", json={"assistant_id": "supervisor", "input": {"objective": objective}}
        )
    log = (tmp_path / "langgraph-dev.log").read_text()
    assert "BlockingError" not in log, log[-3000:]
    state = response.json()
    assert state["status"] == "completed", (state, log[-3000:])
    assert [i["agent"] for i in state["items"].values()] == ["code", "files"]
    assert (workspace / "answer.txt").read_text() == "42\n"


@pytest.mark.parametrize(("answer", "status"), [(True, "completed"), ("no", "failed")])
async def test_a_hosted_run_asks_for_approval_with_an_interrupt(answer: Any, status: str) -> None:
    from langgraph.types import Command

    from supervisor.graph import build_graph

    app = build_graph().compile(checkpointer=InMemorySaver())
    agent = {**WORKER, "approval": True}
    config = {"configurable": {"thread_id": f"approve-{status}", "agents": [agent], "supervisor": {"offline": True}}}
    paused = await app.ainvoke({"objective": "work on apples"}, config)
    (asked,) = paused["__interrupt__"]
    assert asked.value == {"approve": {"item_id": "1", "agent": "W", "instruction": "work on apples"}}
    assert paused["items"]["1"]["status"] == "pending"  # nothing was sent before the answer
    state = await app.ainvoke(Command(resume=answer), config)
    assert state["status"] == status
    if status == "failed":
        assert state["items"]["1"]["error"] == "vetoed: delegating to W was not approved"
    else:
        assert '"text": "work on apples"' in state["final"]


async def test_a_hosted_run_left_at_an_interrupt_does_not_stay_in_memory() -> None:
    from langgraph.types import Command

    from supervisor import hosted
    from supervisor.graph import build_graph

    app = build_graph().compile(checkpointer=InMemorySaver())
    settings = {"agents": [{**WORKER, "approval": True}], "supervisor": {"offline": True}}
    first = {"configurable": {"thread_id": "left", "run_id": "run-1", **settings}}
    await app.ainvoke({"objective": "work on apples"}, first)
    assert "run-1" in hosted._runs  # stopped at the interrupt: not released
    second = {"configurable": {"thread_id": "left", "run_id": "run-2", **settings}}
    state = await app.ainvoke(Command(resume=True), second)
    assert state["status"] == "completed"
    assert "run-1" not in hosted._runs and "run-2" not in hosted._runs


async def test_a_hosted_run_streams_its_events_in_custom_mode() -> None:
    from supervisor.graph import build_graph

    app = build_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "custom", "agents": [WORKER], "supervisor": {"offline": True}}}
    chunks = [c async for c in app.astream({"objective": "work on apples"}, config, stream_mode="custom")]
    kinds = [c["event"] for c in chunks]
    assert "plan_updated" in kinds and "delegation_started" in kinds and "delegation_finished" in kinds
    started = next(c for c in chunks if c["event"] == "delegation_started")
    assert started["agent"] == "W" and started["run_id"] == "custom"
