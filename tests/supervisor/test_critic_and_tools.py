"""The smaller points of the supervisor at scale: the ``delegate`` tool names the agents; the rules
critic does not accept a "completed" answer that says the work was not done."""

from __future__ import annotations

import asyncio

import pytest

from supervisor import Supervisor
from tests.fakes import FakeOpenAI, ToolCalls, call
from tests.supervisor.agents import WAIT, Probe, worker
from tests.supervisor.test_model import model_settings


async def test_the_delegate_tool_lists_the_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    finish = ToolCalls(call("finish", answer="nothing to do"))
    async with FakeOpenAI([finish]) as fake:
        sup = Supervisor(
            [worker("Apples", description="Picks apples"), worker("Pears", skill="pick", description="Picks pears")],
            mode="conversational",
            model=model_settings(fake, monkeypatch),
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("pick fruit"), WAIT)
        tools = {t["function"]["name"]: t["function"] for t in fake.requests[0].body["tools"]}
    assert result.status == "completed"
    delegate = tools["delegate"]
    assert delegate["parameters"]["properties"]["agent"]["enum"] == ["Apples", "Pears"]
    assert "- Apples (skills: work): <peer-data" in delegate["description"]
    assert "- Pears (skills: pick): " in delegate["description"] and "Picks pears" in delegate["description"]


async def test_a_completed_answer_that_says_it_could_not_do_the_work_is_not_accepted() -> None:
    probe = Probe()
    sup = Supervisor(
        [worker("A", probe, answer=lambda text: "Sorry, I could not reach the archive.")],
        offline=True,
        checkpoint={"backend": "memory"},
    )
    result = await asyncio.wait_for(sup.run("work on the archive"), WAIT)
    (item,) = result.items
    assert len(probe.started) == 2  # retried once, with the problem named
    assert "the answer said the work could not be done" in probe.texts[1]
    assert item.status == "failed" and result.status == "failed"
    assert item.error == "the agent said it could not do it: Sorry, I could not reach the archive."
