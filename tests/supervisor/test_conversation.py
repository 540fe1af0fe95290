"""Conversations: runs on one thread see the earlier turns; the prompt's history stays in budget."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from supervisor import Supervisor
from supervisor.cli import build_parser
from supervisor.conversation import conversation_text
from supervisor.state import Turn
from supervisor.tokens import estimate_tokens
from tests.fakes import Failure, FakeOpenAI, Reply, ToolCalls, call
from tests.supervisor.agents import WAIT, Probe, worker
from tests.supervisor.test_bugs import _unanswered
from tests.supervisor.test_model import model_settings
from tests.supervisor.test_offline_planner import Agents, agents  # noqa: F401 (the fixture)


async def test_a_later_turn_saves_what_the_earlier_turn_computed(agents: Agents) -> None:  # noqa: F811
    sup = agents.supervisor()
    first = await asyncio.wait_for(sup.run("Compute with Python: ```print(6 * 7)```", thread="t"), WAIT)
    second = await asyncio.wait_for(sup.run("Save it to answer.txt", thread="t"), WAIT)
    assert first.status == second.status == "completed", second.final
    assert first.run_id != second.run_id
    assert [i.agent for i in second.items] == ["Files"]  # the new turn starts from empty work
    assert (agents.workspace / "answer.txt").read_text() == "42\n"
    turns = await sup.get_thread("t")
    assert [t["objective"] for t in turns] == ["Compute with Python: ```print(6 * 7)```", "Save it to answer.txt"]
    assert turns[0]["items"][0]["output"] == "42\n"


async def test_the_model_sees_the_earlier_turns_and_agents_keep_their_context(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probe = Probe()

    def plan(what: str) -> ToolCalls:
        return ToolCalls(call("update_todo", items=[{"id": "1", "description": what, "agent": "A"}]))

    turns = [plan("apples"), Reply("apples: done"), plan("pears"), Reply("pears: done")]
    async with FakeOpenAI(turns) as fake:
        sup = Supervisor(
            [worker("A", probe)],
            model=model_settings(fake, monkeypatch),
            reflection="rules",
            checkpoint={"backend": "memory"},
        )
        first = await asyncio.wait_for(sup.run("work on apples", thread="chat"), WAIT)
        second = await asyncio.wait_for(sup.run("now the same for pears", thread="chat"), WAIT)
        second_plan = fake.requests[2].last_message()["content"]
    assert first.status == second.status == "completed"
    assert "Earlier in this conversation" in second_plan
    assert "turn 1: work on apples" in second_plan and "apples: done" in second_plan
    contexts = {d.context_id for d in [*first.delegations, *second.delegations]}
    assert len(contexts) == 1 and None not in contexts  # agent A saw one conversation


def _turn(n: int, answer_chars: int) -> Turn:
    return Turn(
        run_id=f"r{n}",
        objective=f"objective number {n}",
        status="completed",
        final=f"answer {n} " + "x" * answer_chars,
        items=[{"id": "1", "description": f"step of {n}", "agent": "A", "status": "done", "output": "o" * 500}],
    )


@pytest.mark.parametrize("budget", [300, 2000])
def test_fifty_turns_stay_within_the_history_budget(budget: int) -> None:
    history = [_turn(n, 3000) for n in range(1, 51)]
    text = conversation_text(history, budget=budget, count=estimate_tokens, limit=4000)
    assert estimate_tokens(text) <= budget
    assert "turn 50: objective number 50" in text  # the newest turn is there
    if budget == 300:
        assert re.search(r"^\(\d+ earlier turn\(s\) not shown", text)  # what was left out is said
    else:
        assert "turn 1: objective number 1 -> completed" in text  # older turns as one line each
    assert history[0]["final"].startswith("answer 1")  # the state keeps everything


async def test_a_fifty_turn_conversation_keeps_the_models_prompt_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    sizes: list[int] = []

    def step(body: dict[str, Any]) -> ToolCalls | Reply:
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        if tools == ["update_todo"]:
            sizes.append(sum(len(m.get("content") or "") for m in body["messages"]))
            return ToolCalls(call("update_todo", items=[{"id": "1", "description": "work", "agent": "A"}]))
        return Reply("a long answer " + "y" * 2000)

    async with FakeOpenAI([step] * 100) as fake:
        sup = Supervisor(
            [worker("A")],
            model=model_settings(fake, monkeypatch),
            reflection="rules",
            history_tokens=600,
            checkpoint={"backend": "memory"},
        )
        for n in range(50):
            result = await asyncio.wait_for(sup.run(f"work on turn {n}", thread="long"), WAIT)
            assert result.status == "completed"
        assert len(await sup.get_thread("long")) == 50
    assert len(sizes) == 50
    # The prompt grows with the first turns, then stays flat: the history is digested to its budget
    # (600 tokens, about 2,400 characters, over the first turn's prompt, which has no history).
    assert max(sizes) <= sizes[0] + 600 * 4 + 100
    assert max(sizes[42:]) - min(sizes[42:]) < 100  # full from about turn 40 on


def test_the_cli_takes_a_thread() -> None:
    args = build_parser().parse_args(["supervise", "say more", "--thread", "chat-1"])
    assert args.thread == "chat-1"


async def test_a_long_conversational_run_keeps_its_prompt_within_messages_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes: list[int] = []
    turn = [0]

    def step(body: dict[str, Any]) -> ToolCalls | Any:
        bad = _unanswered(body)
        if bad:
            return Failure(400, f"tool calls not answered: {bad}")
        sizes.append(sum(len(m.get("content") or "") for m in body["messages"][1:]))  # all but the system prompt
        turn[0] += 1
        if turn[0] > 25:
            return ToolCalls(call("finish", answer="all 25 done"))
        return ToolCalls(call("delegate", agent="A", task=f"work on part {turn[0]}", description=f"part {turn[0]}"))

    async with FakeOpenAI([step] * 26) as fake:
        sup = Supervisor(
            [worker("A", answer=lambda text: text + " " + "z" * 4000)],
            mode="conversational",
            model=model_settings(fake, monkeypatch, max_retries=0),
            messages_tokens=2000,
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("do 25 parts"), WAIT * 3)
    assert result.status == "completed" and result.final == "all 25 done"
    assert len(sizes) == 26
    assert max(sizes) <= 2000 * 4 + 4100  # the budget, plus the newest result that is always whole
    assert sizes[-1] < sum(4000 for _ in range(25)) // 5  # without compaction it would be over 100,000
