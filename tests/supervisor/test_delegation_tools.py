"""Per-delegation tools: the supervisor sends ``a2a-net/tools`` from the agent's config, the plan
item or the model's ``delegate`` call, and the built-in assistant uses only those tools."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from a2a.metadata import TOOLS_KEY
from agents.assistant import make_agent
from agents.code import Limits
from supervisor import Supervisor
from supervisor.hooks import DelegationRequest, Hook
from tests.fakes import FakeOpenAI, Reply, ToolCalls, call
from tests.supervisor.agents import WAIT, Probe, serving, worker
from tests.supervisor.test_model import model_settings

LIMITS = Limits(timeout=20, cpu_seconds=20, memory_bytes=256 * 1024 * 1024, output_bytes=4096, max_concurrent=2)


async def test_the_agents_configured_tools_go_with_each_delegation() -> None:
    probe = Probe()
    async with serving(worker("W", probe), worker("Plain", probe, skill="other", tags=["other"])) as (url, plain):
        sup = Supervisor(
            [{"name": "W", "url": url, "tools": ["code"]}, {"name": "Plain", "url": plain}],
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("work on apples; other pears"), WAIT)
    assert result.status == "completed", result.final
    by_text = {text.splitlines()[0]: meta for text, meta in zip(probe.texts, probe.metadata, strict=True)}
    assert by_text["work on apples"][TOOLS_KEY] == ["code"]
    assert TOOLS_KEY not in by_text["other pears"]  # nothing configured: nothing sent
    assert [d.tools for d in result.delegations if d.agent == "W"] == [["code"]]  # kept for a resume


async def test_the_models_delegate_call_chooses_them_and_a_hook_sees_them(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe()
    seen: list[list[str] | None] = []

    class Watch(Hook):
        async def before_delegation(self, request: DelegationRequest) -> DelegationRequest:
            seen.append(request.tools)
            return request

    script = [
        ToolCalls(call("delegate", agent="W", task="work on it", description="work", tools=["files"])),
        ToolCalls(call("finish", answer="done")),
    ]
    async with serving(worker("W", probe)) as (url,), FakeOpenAI(script) as fake:
        sup = Supervisor(
            [{"name": "W", "url": url, "tools": ["code"]}],
            mode="conversational",
            model=model_settings(fake, monkeypatch, max_retries=0),
            hooks=[Watch()],
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("work"), WAIT)
    assert result.status == "completed", result.final
    assert probe.metadata[0][TOOLS_KEY] == ["files"]  # the model's choice replaces the configured one
    assert seen == [["files"]]
    schema = fake.requests[0].body["tools"]
    delegate = next(t for t in schema if t["function"]["name"] == "delegate")
    assert "tools" in delegate["function"]["parameters"]["properties"]


async def test_the_assistant_served_is_offered_only_the_chosen_tools(tmp_path: Path) -> None:
    """End to end: the supervisor (offline) -> HTTP -> the assistant, whose own model sees the tools."""
    async with FakeOpenAI([Reply("I only have Python.")]) as model:
        assistant = make_agent(["files", "code"], workspace=tmp_path, code_limits=LIMITS, model=model.settings())
        async with serving(assistant) as (url,):
            sup = Supervisor(
                [{"name": "Assistant", "url": url, "tools": ["run_python"]}], checkpoint={"backend": "memory"}
            )
            result = await asyncio.wait_for(sup.run("explain what you can do"), WAIT)
    assert result.status == "completed", result.final
    (request,) = model.requests
    assert request.tool_names == ["run_python"]
