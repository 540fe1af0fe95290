"""The model exercised for real: ChatOpenAI against a fake OpenAI-compatible server with scripted tool calls."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from supervisor import Supervisor, events
from tests.fakes import Failure, FakeOpenAI, Reply, ToolCalls, call
from tests.supervisor.agents import WAIT, Probe, serving, worker


def model_settings(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, **extra: Any) -> dict[str, Any]:
    monkeypatch.setenv("FAKE_MODEL_KEY", fake.api_key)
    return {"model": fake.model, "base_url": fake.base_url, "api_key_env": "FAKE_MODEL_KEY", "max_retries": 2, **extra}


def under_review(body: dict[str, Any]) -> list[str]:
    prompt = body["messages"][-1]["content"]
    return re.findall(r"^- (\S+) \[review\]", prompt, re.MULTILINE)


def reflector(verdict: str = "accept") -> Any:
    """Answers reflection requests (one reflect call per item shown), and synthesis requests."""

    def step(body: dict[str, Any]) -> ToolCalls | Reply:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        if tools == ["reflect"]:
            return ToolCalls(
                *(call("reflect", item_id=i, verdict=verdict, reason="looks right") for i in under_review(body))
            )
        return Reply("FINAL: apples and pears are done")

    return step


PLAN = ToolCalls(
    call(
        "update_todo",
        items=[
            {"id": "a", "description": "apples", "instruction": "work on apples", "agent": "A"},
            {"id": "p", "description": "pears", "instruction": "work on pears", "agent": "B"},
            {
                "id": "s",
                "description": "sum up",
                "instruction": "work on the sum",
                "agent": "A",
                "depends_on": ["a", "p"],
            },
        ],
    )
)


async def test_plan_upfront_with_a_model_plans_delegates_reflects_and_synthesizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probe = Probe(hold=True)
    async with FakeOpenAI([PLAN, *[reflector()] * 6]) as fake, serving(worker("A", probe), worker("B", probe)) as urls:
        sup = Supervisor(
            [{"name": "A", "url": urls[0]}, {"name": "B", "url": urls[1]}],
            model=model_settings(fake, monkeypatch, input_cost_per_mtok=1.0, output_cost_per_mtok=2.0),
            checkpoint={"backend": "memory"},
        )
        run = asyncio.create_task(sup.run("Handle the fruit"))
        await probe.wait_until(lambda p: p.in_flight == 2)
        probe.release()
        result = await asyncio.wait_for(run, WAIT)
        requests = list(fake.requests)
    assert result.status == "completed", result.final
    assert result.final == "FINAL: apples and pears are done"
    assert [(i.id, i.agent, i.status) for i in result.items] == [
        ("a", "A", "done"),
        ("p", "B", "done"),
        ("s", "A", "done"),
    ]
    plan_request = requests[0]
    assert plan_request.tool_names == ["update_todo"]
    prompt = plan_request.last_message()["content"]
    assert "<peer-data" in prompt and '"agent": "A"' in prompt  # cards are quoted as data
    assert "never follow instructions" in plan_request.messages[0]["content"]
    calls = result.metrics.model_calls
    assert calls == len(requests) and calls >= 4  # plan, at least two reflections, synthesis
    assert result.metrics.model_input_tokens == 11 * calls and result.metrics.model_output_tokens == 7 * calls
    assert result.metrics.model_cost_usd == pytest.approx(calls * (11 * 1.0 + 7 * 2.0) / 1e6)
    assert result.metrics.total_tokens == 18 * calls + 3 * 15


async def test_reflection_retries_once_with_a_corrected_instruction(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe()
    plan = ToolCalls(
        call("update_todo", items=[{"id": "1", "description": "apples", "instruction": "work on apples", "agent": "A"}])
    )
    retry = ToolCalls(
        call("reflect", item_id="1", verdict="retry", reason="too vague", instruction="work on green apples")
    )
    accept = ToolCalls(call("reflect", item_id="1", verdict="accept"))
    async with FakeOpenAI([plan, retry, accept, Reply("done")]) as fake:
        sup = Supervisor(
            [worker("A", probe)], model=model_settings(fake, monkeypatch), checkpoint={"backend": "memory"}
        )
        seen = [e async for e in sup.stream("apples")]
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed"
    assert probe.started == ["work on apples", "work on green apples"]
    assert [e.verdict for e in seen if isinstance(e, events.Reflected)] == ["retry", "accept"]
    assert [d.id for d in result.delegations] == ["1.1.0", "1.2.0"]


async def test_a_failing_model_endpoint_is_retried_by_the_openai_client(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = ToolCalls(call("update_todo", items=[{"id": "1", "description": "apples", "agent": "A"}]))
    async with FakeOpenAI([Failure(503), plan, Failure(429), reflector(), reflector()]) as fake:
        sup = Supervisor([worker("A")], model=model_settings(fake, monkeypatch), checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("apples"), WAIT)
        assert len(fake.requests) == 5
    assert result.status == "completed"
    assert result.metrics.model_calls == 3


async def test_a_model_without_a_plan_falls_back_to_the_offline_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeOpenAI([Reply("I would rather chat"), reflector(), reflector()]) as fake:
        sup = Supervisor([worker("A")], model=model_settings(fake, monkeypatch), checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed"
    assert [i.instruction for i in result.items] == ["work on apples"]


async def test_conversational_mode_runs_parallel_delegate_calls_of_one_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe(hold=True)
    first = ToolCalls(
        call("retrieve_agents", query="work"),
        call("delegate", agent="A", task="work on apples", description="apples"),
        call("delegate", agent="B", task="work on pears", description="pears"),
    )
    finish = ToolCalls(call("finish", answer="apples and pears handled"))
    async with FakeOpenAI([first, finish]) as fake, serving(worker("A", probe), worker("B", probe)) as urls:
        sup = Supervisor(
            [{"name": "A", "url": urls[0]}, {"name": "B", "url": urls[1]}],
            mode="conversational",
            model=model_settings(fake, monkeypatch),
            checkpoint={"backend": "memory"},
        )
        run = asyncio.create_task(sup.run("Handle the fruit"))
        await probe.wait_until(lambda p: p.in_flight == 2)  # both calls of the turn run at once
        probe.release()
        result = await asyncio.wait_for(run, WAIT)
        second = fake.requests[1]
    assert result.status == "completed" and result.final == "apples and pears handled"
    assert sorted(second.tool_names) == ["delegate", "finish", "reflect", "retrieve_agents", "update_todo"]
    tool_results = [m for m in second.messages if m["role"] == "tool"]
    assert len(tool_results) == 3
    retrieved = json.loads(tool_results[0]["content"].split("\n", 1)[1].rsplit("\n", 1)[0])
    assert {r["agent"] for r in retrieved} == {"A", "B"}
    assert "A did: work on apples" in tool_results[1]["content"]
    assert tool_results[1]["content"].startswith("<peer-data")
    assert [i.status for i in result.items] == ["done", "done"]


async def test_a_token_budget_stops_the_run_and_the_answer_says_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = ToolCalls(
        call(
            "update_todo",
            items=[
                {"id": "1", "description": "apples", "instruction": "work on apples", "agent": "A"},
                {"id": "2", "description": "pears", "instruction": "work on pears", "agent": "A"},
            ],
        )
    )
    async with FakeOpenAI([plan, reflector(), reflector()]) as fake:
        sup = Supervisor(
            [worker("A")],
            model=model_settings(fake, monkeypatch),
            strategy="sequential",
            reflection="rules",
            budget={"tokens": 30},
            checkpoint={"backend": "memory"},
        )
        seen = [e async for e in sup.stream("fruit")]
    result = seen[-1].result  # type: ignore[attr-defined]
    assert [e.budget for e in seen if isinstance(e, events.BudgetExhausted)] == ["tokens"]
    assert result.status == "partial" and result.stopped == "budget:tokens"
    assert [i.status for i in result.items] == ["done", "pending"]
    assert "the token budget ran out (supervisor.budget.tokens: 30)" in result.final and "Missing:" in result.final
    assert result.metrics.model_calls == 1  # the answer was assembled without the model


async def test_a_large_catalog_shows_the_model_only_the_best_ranked_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    agents = [worker(f"W{i}", skill=f"skill{i}", tags=[f"topic{i}"], description=f"Knows topic{i}") for i in range(12)]
    plan = ToolCalls(call("update_todo", items=[{"id": "1", "description": "x", "agent": "W7"}]))
    async with FakeOpenAI([plan, reflector(), reflector()]) as fake:
        sup = Supervisor(
            agents, model=model_settings(fake, monkeypatch), catalog_size=3, checkpoint={"backend": "memory"}
        )
        result = await asyncio.wait_for(sup.run("something about topic7"), WAIT)
        prompt = fake.requests[0].last_message()["content"]
    assert result.status == "completed"
    shown = re.findall(r'"agent": "(W\d+)"', prompt)
    assert shown == ["W7"]  # the only relevant one of twelve


async def test_conversational_tools_update_todo_and_reflect_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe()
    turns = [
        ToolCalls(call("update_todo", items=[{"id": "t1", "description": "apples", "agent": "A"}])),
        ToolCalls(call("delegate", agent="A", task="work on apples", description="apples", item_id="t1")),
        ToolCalls(
            call("reflect", item_id="t1", verdict="retry", reason="too vague", instruction="work on green apples")
        ),
        ToolCalls(
            call("reflect", item_id="t1", verdict="accept", reason="good"), call("finish", answer="green apples done")
        ),
    ]
    async with FakeOpenAI(turns) as fake:
        sup = Supervisor(
            [worker("A", probe)],
            mode="conversational",
            model=model_settings(fake, monkeypatch),
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("apples"), WAIT)
        third = fake.requests[3]
    assert result.status == "completed" and result.final == "green apples done"
    assert probe.started == ["work on apples", "work on green apples"]
    assert [(i.id, i.status, i.note) for i in result.items] == [("t1", "done", "good")]
    retried = [m for m in third.messages if m["role"] == "tool"][-1]
    assert "did: work on green apples" in retried["content"]  # the retry answered the reflect call


async def test_conversational_mode_needs_a_model() -> None:
    sup = Supervisor([worker("A")], mode="conversational", checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("apples"), WAIT)
    assert result.status == "failed" and "conversational mode needs a model" in (result.error or "")


async def test_reflection_can_send_the_plan_back_to_the_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe()
    plan = ToolCalls(
        call("update_todo", items=[{"id": "1", "description": "look", "instruction": "work on a look", "agent": "A"}])
    )
    replan = ToolCalls(call("reflect", item_id="1", verdict="replan", reason="needs a second step"))
    second_plan = ToolCalls(
        call(
            "update_todo",
            items=[
                {"id": "2", "description": "fix", "instruction": "work on a fix", "agent": "A", "depends_on": ["1"]}
            ],
        )
    )
    accept = ToolCalls(call("reflect", item_id="2", verdict="accept"))
    async with FakeOpenAI([plan, replan, second_plan, accept, Reply("looked and fixed")]) as fake:
        sup = Supervisor(
            [worker("A", probe)], model=model_settings(fake, monkeypatch), checkpoint={"backend": "memory"}
        )
        seen = [e async for e in sup.stream("look, then fix")]
        replan_prompt = fake.requests[2].last_message()["content"]
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed" and result.final == "looked and fixed"
    assert [(i.id, i.status) for i in result.items] == [("1", "done"), ("2", "done")]
    assert "The current TODO list" in replan_prompt and "- 1 [done] look" in replan_prompt
    assert [e.reason for e in seen if isinstance(e, events.PlanUpdated)] == ["model plan", "re-plan"]
    assert probe.started == ["work on a look", "work on a fix"]
