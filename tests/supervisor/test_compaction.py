"""The model's whole prompt (text, tool calls' arguments, tool results) stays within
``messages_tokens`` in every mode; the oldest turns are summarised; the metrics say so."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from supervisor import Supervisor
from supervisor.compaction import bound_prompt, cut_point, prompt_tokens
from supervisor.tokens import estimate_tokens
from tests.fakes import Failure, FakeOpenAI, Reply, ToolCalls, call
from tests.supervisor.agents import WAIT, worker
from tests.supervisor.test_bugs import _unanswered
from tests.supervisor.test_model import model_settings


def sent_chars(body: dict[str, Any]) -> int:
    """What the model was sent, in characters: every message's text and every tool call's name and arguments."""
    total = 0
    for message in body["messages"]:
        content = message.get("content") or ""
        total += len(content if isinstance(content, str) else json.dumps(content))
        for tool_call in message.get("tool_calls") or []:
            total += len(tool_call["function"]["name"]) + len(tool_call["function"]["arguments"])
    return total


def conversation(turns: int, sizes: list[int], summaries: list[str]) -> Any:
    """A model that delegates ``turns`` parts, each task carrying 3,000 characters of its own, then finishes."""
    done = [0]

    def step(body: dict[str, Any]) -> ToolCalls | Reply | Failure:
        bad = _unanswered(body)
        if bad:
            return Failure(400, f"tool calls not answered: {bad}")
        sizes.append(sent_chars(body))
        if not body.get("tools"):  # the summary of the oldest turns
            summaries.append(body["messages"][-1]["content"])
            return Reply(f"SUMMARY-{len(summaries)}: parts 1 to {done[0]} delegated to A, each answered")
        done[0] += 1
        if done[0] > turns:
            return ToolCalls(call("finish", answer=f"all {turns} done"))
        task = f"work on part {done[0]}: " + "t" * 3000
        return ToolCalls(call("delegate", agent="A", task=task, description=f"part {done[0]}"))

    return step


@pytest.mark.parametrize("summaries_by", ["model", "rules"])
async def test_a_hundred_turns_keep_the_whole_prompt_within_messages_tokens(
    monkeypatch: pytest.MonkeyPatch, summaries_by: str
) -> None:
    budget = 3000
    sizes: list[int] = []
    summaries: list[str] = []
    async with FakeOpenAI([conversation(100, sizes, summaries)] * 200) as fake:
        sup = Supervisor(
            [worker("A", answer=lambda text: text.splitlines()[0][:20] + " " + "r" * 3000)],
            mode="conversational",
            model=model_settings(fake, monkeypatch, max_retries=0),
            messages_tokens=budget,
            summaries=summaries_by,
            max_steps=400,
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("do 100 parts"), WAIT * 6)
        last_prompt = fake.requests[-1].messages
    assert result.status == "completed" and result.final == "all 100 done", result.final[-300:]
    assert len([d for d in result.delegations if d.state == "completed"]) == 100
    # Without compaction the prompt would pass 600,000 characters (100 tasks and 100 results).
    assert max(sizes) <= budget * 4
    metrics = result.metrics
    assert metrics.prompt_budget == budget and 0 < metrics.prompt_tokens_max <= budget
    assert metrics.summaries >= 1
    objective = next(m["content"] for m in last_prompt if m["role"] == "user")
    assert "Summary of the earlier steps of this run" in objective
    if summaries_by == "model":
        assert metrics.summaries == len(summaries) and "SUMMARY-" in objective
    else:
        assert summaries == [] and "you called delegate to A: work on part" in objective


async def test_plan_upfront_prompts_stay_within_messages_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    """40 results of 3,000 characters each: the synthesis prompt is cut to the budget."""
    sizes: list[int] = []
    plan = ToolCalls(
        call("update_todo", items=[{"id": str(n), "description": f"part {n}", "agent": "A"} for n in range(40)])
    )

    def synthesis(body: dict[str, Any]) -> Reply:
        sizes.append(sent_chars(body))
        return Reply("all parts done")

    async with FakeOpenAI([plan, synthesis]) as fake:
        sup = Supervisor(
            [worker("A", answer=lambda text: "r" * 3000)],
            model=model_settings(fake, monkeypatch),
            reflection="rules",
            messages_tokens=2000,
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("do 40 parts"), WAIT * 3)
    assert result.status == "completed" and result.final == "all parts done"
    assert sizes and sizes[0] <= 2000 * 4  # without the bound: over 120,000 characters
    assert result.metrics.prompts_cut == 1 and result.metrics.prompt_tokens_max <= 2000


def test_the_bound_cuts_tool_call_arguments_and_keeps_the_calls_valid() -> None:
    calls = [{"name": "delegate", "args": {"agent": "A", "task": "x" * 20000, "n": 3}, "id": "c1"}]
    messages = [
        SystemMessage("rules"),
        HumanMessage("objective"),
        AIMessage("", tool_calls=calls),
        ToolMessage("y" * 20000, tool_call_id="c1"),
    ]
    bounded = bound_prompt(messages, budget=1000, count=estimate_tokens)
    assert prompt_tokens(bounded, estimate_tokens) <= 1000
    assert [type(m) for m in bounded] == [type(m) for m in messages]
    assert bounded[:2] == messages[:2]  # small messages are left whole
    ai = bounded[2]
    assert isinstance(ai, AIMessage) and ai.tool_calls[0]["id"] == "c1"
    assert ai.tool_calls[0]["args"]["agent"] == "A" and ai.tool_calls[0]["args"]["n"] == 3
    assert "characters left out" in ai.tool_calls[0]["args"]["task"]
    tool = bounded[3]
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == "c1" and "left out" in str(tool.content)


def test_a_fold_never_separates_a_tool_call_from_its_result() -> None:
    def turn(n: int) -> list[Any]:
        calls = [{"name": "delegate", "args": {"task": f"t{n}"}, "id": f"c{n}{k}"} for k in range(2)]
        return [AIMessage("", tool_calls=calls), *(ToolMessage("r" * 400, tool_call_id=f"c{n}{k}") for k in range(2))]

    messages: list[Any] = [HumanMessage("objective")]
    for n in range(10):
        messages += turn(n)
    for room in (50, 300, 700, 2000):
        cut = cut_point(messages, start=1, room=room, count=estimate_tokens)
        assert cut == 1 or isinstance(messages[cut], AIMessage)
        assert cut < len(messages)  # the newest turn stays
    assert cut_point(messages, start=1, room=10**6, count=estimate_tokens) == 1  # it fits: nothing folded
