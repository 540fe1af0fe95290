"""``langgraph.json`` and the graph LangGraph Studio serves."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_json_points_at_the_graph() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    module, _, attr = config["graphs"]["supervisor"].partition(":")
    assert module == "./supervisor/studio.py" and attr == "graph"
    assert config["dependencies"] == ["."]


async def test_the_studio_graph_runs_without_a_supervisor_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "studio.yaml"
    config.write_text("agents:\n  - {name: W, module: 'tests/supervisor/agents.py:stdio_worker'}\n")
    monkeypatch.setenv("A2A_SUPERVISOR_CONFIG", str(config))
    from supervisor import graph as graph_module
    from supervisor import studio

    studio = importlib.reload(studio)
    try:
        state = await studio.graph.ainvoke({"objective": "work on apples"}, {"configurable": {"thread_id": "t1"}})
    finally:
        graph_module.set_fallback_context(None)
        if studio._supervisor is not None:
            await studio._supervisor.close()
    assert state["status"] == "completed"
    assert state["items"]["1"]["agent"] == "W" and "work on apples" in state["final"]
