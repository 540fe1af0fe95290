"""The five everyday objectives with a scripted model that behaves like a tool-calling model.

The fake model (an OpenAI-compatible endpoint) plans its TODO list, calls several delegations in
one turn, reads their results from the tool answers, reflects, and answers — in conversational
mode, against the built-in agents (files, web, code). Every request it gets must answer each
earlier tool call exactly once (as OpenAI's API demands). The side effects are checked.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest

from agents import code, files
from agents import web as web_agent
from supervisor import RunResult, Supervisor
from tests.fakes import Failure, FakeOpenAI, Reply, ToolCalls, call
from tests.supervisor.agents import WAIT
from tests.supervisor.test_bugs import _unanswered
from tests.supervisor.test_model import model_settings
from tests.supervisor.test_offline_planner import Agents, agents  # noqa: F401 (the fixture)

Turn = Callable[[list[str]], ToolCalls | Reply]


def tool_answers(body: dict[str, Any]) -> list[str]:
    """The tool answers since the model's last turn, in order."""
    answers: list[str] = []
    for message in reversed(body["messages"]):
        if message["role"] != "tool":
            break
        answers.insert(0, message["content"])
    return answers


def scripted(*turns: Turn) -> list[Callable[[dict[str, Any]], Any]]:
    def step(turn: Turn) -> Callable[[dict[str, Any]], Any]:
        def answer(body: dict[str, Any]) -> Any:
            bad = _unanswered(body)
            if bad:
                return Failure(400, f"tool calls not answered exactly once: {bad}")
            return turn(tool_answers(body))

        return answer

    return [step(t) for t in turns]


def delegate(agent: str, skill: str, description: str, **arguments: Any) -> Any:
    return call("delegate", agent=agent, skill=skill, task=description, description=description, arguments=arguments)


async def run(where: Agents, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, objective: str) -> RunResult:
    settings = web_agent.WebSettings.from_env({"A2A_WEB_ALLOW": "127.0.0.1/32"})
    sup = Supervisor(
        [files.make_agent(where.workspace), web_agent.make_agent(settings), code.make_agent()],
        mode="conversational",
        model=model_settings(fake, monkeypatch, max_retries=0),
        checkpoint={"backend": "memory"},
    )
    return await asyncio.wait_for(sup.run(objective), WAIT)


async def test_fetch_summarise_and_save(agents: Agents, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    page = f"{agents.site}/one.html"

    def summarise(answers: list[str]) -> ToolCalls:
        sentence = re.search(r"Apples are [^.]*\.", answers[0])
        assert sentence is not None, answers
        return ToolCalls(delegate("Files", "write", "save the summary", path="summary.txt", content=sentence.group(0)))

    script = scripted(
        lambda _: ToolCalls(delegate("Web", "fetch", "fetch the page", url=page)),
        summarise,
        lambda answers: ToolCalls(call("finish", answer="Saved the summary to summary.txt")),
    )
    async with FakeOpenAI(script) as fake:
        result = await run(agents, fake, monkeypatch, f"Fetch {page}, summarise it and save the summary")
    assert result.status == "completed", result.final
    assert (agents.workspace / "summary.txt").read_text() == "Apples are red or green."


async def test_compute_and_save(agents: Agents, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    def save(answers: list[str]) -> ToolCalls:
        value = re.search(r"\b(\d+)\b", answers[0].split("\n", 1)[1])
        assert value is not None, answers
        return ToolCalls(delegate("Files", "write", "save it", path="result.txt", content=value.group(1) + "\n"))

    script = scripted(
        lambda _: ToolCalls(delegate("Code", "run_python", "compute 2**10", code="print(2 ** 10)")),
        save,
        lambda _: ToolCalls(call("finish", answer="2**10 = 1024, saved")),
    )
    async with FakeOpenAI(script) as fake:
        result = await run(agents, fake, monkeypatch, "Compute 2**10 with Python and save it to result.txt")
    assert result.status == "completed", result.final
    assert (agents.workspace / "result.txt").read_text() == "1024\n"


async def test_edit_then_read_back_with_reflection(agents: Agents, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    (agents.workspace / "settings.txt").write_text("name=x\nmode=dev\n")
    read_back: list[str] = []

    def finish(answers: list[str]) -> ToolCalls:
        read_back.extend(answers)
        return ToolCalls(
            call("reflect", item_id="c2", verdict="accept", reason="the file says mode=prod"),
            call("finish", answer="mode is now prod"),
        )

    script = scripted(
        lambda _: ToolCalls(
            delegate("Files", "edit", "set mode=prod", path="settings.txt", old_text="mode=dev", new_text="mode=prod")
        ),
        lambda _: ToolCalls(delegate("Files", "read", "read it back", path="settings.txt")),
        finish,
    )
    async with FakeOpenAI(script) as fake:
        result = await run(agents, fake, monkeypatch, "In settings.txt change mode=dev to mode=prod, then read it back")
    assert result.status == "completed", result.final
    assert (agents.workspace / "settings.txt").read_text() == "name=x\nmode=prod\n"
    assert "mode=prod" in read_back[0]


async def test_fetch_two_pages_in_one_turn_and_compare(agents: Agents, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    def compare(answers: list[str]) -> ToolCalls:
        assert len(answers) == 2 and "Apples" in answers[0] and "Pears" in answers[1], answers
        return ToolCalls(call("finish", answer="one is about apples, two is about pears"))

    script = scripted(
        lambda _: ToolCalls(
            delegate("Web", "fetch", "fetch one", url=f"{agents.site}/one.html"),
            delegate("Web", "fetch", "fetch two", url=f"{agents.site}/two.html"),
        ),
        compare,
    )
    async with FakeOpenAI(script) as fake:
        result = await run(agents, fake, monkeypatch, "Fetch the two pages and compare them")
    assert result.status == "completed", result.final
    assert result.final == "one is about apples, two is about pears"
    assert sorted(i.status for i in result.items) == ["done", "done"]


async def test_compute_two_values_in_one_turn_and_save_both(agents: Agents, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    def save(answers: list[str]) -> ToolCalls:
        results = [a for a in answers if a.startswith("<peer-data")]  # not the update_todo answer
        values = [re.search(r"\b(\d+)\b", a.split("\n", 1)[1]) for a in results]
        assert all(values), answers
        content = "".join(f"{v.group(1)}\n" for v in values if v)
        return ToolCalls(delegate("Files", "write", "save both", path="values.txt", content=content))

    script = scripted(
        lambda _: ToolCalls(
            call(
                "update_todo",
                items=[
                    {"id": "a", "description": "6*7", "agent": "Code"},
                    {"id": "b", "description": "2**5", "agent": "Code"},
                    {"id": "s", "description": "save both", "agent": "Files", "depends_on": ["a", "b"]},
                ],
            ),
            call(
                "delegate",
                agent="Code",
                skill="run_python",
                task="6*7",
                description="6*7",
                item_id="a",
                arguments={"code": "print(6 * 7)"},
            ),
            call(
                "delegate",
                agent="Code",
                skill="run_python",
                task="2**5",
                description="2**5",
                item_id="b",
                arguments={"code": "print(2 ** 5)"},
            ),
        ),
        save,
        lambda _: ToolCalls(call("finish", answer="42 and 32, saved")),
    )
    async with FakeOpenAI(script) as fake:
        result = await run(agents, fake, monkeypatch, "Compute 6*7 and 2**5 with Python and save both to values.txt")
    assert result.status == "completed", result.final
    assert (agents.workspace / "values.txt").read_text() == "42\n32\n"
