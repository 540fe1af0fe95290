"""Bugs of issue 14, each pinned by a test that fails without its fix."""

from __future__ import annotations

import asyncio
import io
import json
import shlex
import socket
import sys
from collections import Counter
from typing import Any

import pytest
from rich.console import Console

from supervisor import Supervisor
from supervisor import events as ev
from supervisor.card_summary import summarize_card
from supervisor.delegation import Delegator
from supervisor.model import catalog_text
from supervisor.registry import SkillInfo
from supervisor.ui import LiveView, redrawing
from tests.fakes import Failure, FakeOpenAI, ToolCalls, call
from tests.supervisor.agents import WAIT, Probe, serving, worker
from tests.supervisor.test_model import model_settings


async def test_a_run_without_checkpoints_completes() -> None:
    probe = Probe()
    sup = Supervisor([worker("A", probe)], checkpoint={"backend": "none"})
    result = await asyncio.wait_for(sup.run("work on apples; work on pears"), WAIT)
    assert result.status == "completed", (result.error, result.final)
    assert sorted(probe.started) == ["work on apples", "work on pears"]


def _unanswered(body: dict[str, Any]) -> list[str]:
    """Tool calls of the request's assistant turns not answered by exactly one tool message (OpenAI's 400)."""
    asked = [c["id"] for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = Counter(m["tool_call_id"] for m in body["messages"] if m["role"] == "tool")
    return [c for c in asked if answered[c] != 1]


def strict(step: Any) -> Any:
    """A model step that refuses (400) a conversation with a tool call answered never or twice, as OpenAI does."""

    def checked(body: dict[str, Any]) -> Any:
        bad = _unanswered(body)
        if bad:
            return Failure(400, f"tool calls not answered exactly once: {bad}")
        return step(body) if callable(step) else step

    return checked


async def test_two_delegate_calls_for_one_item_in_one_turn_are_both_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = Probe()
    turns = [
        ToolCalls(call("update_todo", items=[{"id": "t1", "description": "fruit", "agent": "A"}])),
        ToolCalls(
            call("delegate", agent="A", task="work on apples", description="apples", item_id="t1"),
            call("delegate", agent="A", task="work on pears", description="pears", item_id="t1"),
        ),
        ToolCalls(call("finish", answer="both done")),
    ]
    async with FakeOpenAI([strict(t) for t in turns]) as fake:
        sup = Supervisor(
            [worker("A", probe)],
            mode="conversational",
            model=model_settings(fake, monkeypatch, max_retries=0),
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("fruit"), WAIT)
        last = fake.requests[-1]
    assert result.status == "completed", (result.error, result.final)
    assert sorted(probe.started) == ["work on apples", "work on pears"]  # neither call was dropped
    assert _unanswered(last.body) == []
    answers = [m["content"] for m in last.messages if m["role"] == "tool"]
    assert any("did: work on apples" in a for a in answers) and any("did: work on pears" in a for a in answers)


async def test_agents_given_by_url_take_their_cards_names() -> None:
    async with serving(worker("Apple Picker"), worker("Apple Picker"), worker("Pear")) as urls:
        sup = Supervisor(urls, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
        assert sorted(a["name"] for a in sup.agents) == ["Apple-Picker", "Apple-Picker-2", "Pear"]
    assert result.status == "completed"
    assert result.items[0].agent in ("Apple-Picker", "Apple-Picker-2", "Pear")


@pytest.mark.slow
async def test_an_agent_given_as_stdio_command_is_started_and_named_after_its_card() -> None:
    command = f"{shlex.quote(sys.executable)} -m a2a.cli.main serve tests/supervisor/agents.py:stdio_worker --stdio"
    sup = Supervisor([f"stdio:{command}", f"stdio:{command}"], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed", (result.error, result.final)
    assert result.items[0].agent in ("StdioWorker", "StdioWorker-2")
    assert '"text": "work on apples"' in result.final


def test_a_stdio_agent_without_a_command_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="give the command"):
        Supervisor(["stdio:  "])


def _big_card_skills(n: int) -> list[SkillInfo]:
    return [
        SkillInfo(
            id=f"skill_{i}",
            name=f"Skill {i}",
            description="Does a long and careful thing. " * 20,
            tags=("t",),
            examples=tuple(f"example {j} for skill {i} " * 5 for j in range(5)),
            input_modes=("text/plain",),
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("skills", [3, 12, 60])
def test_a_long_card_is_summarised_as_valid_json_within_the_budget(skills: int) -> None:
    entries = _big_card_skills(skills)
    summary = summarize_card("Big", "A big agent. " * 50, entries, 2000)
    text = json.dumps(summary, ensure_ascii=False)
    assert len(text) <= 2000
    assert summary["agent"] == "Big"
    listed = [s["id"] for s in summary.get("skills", [])] + summary.get("skill_ids", [])
    assert listed[0] == "skill_0"
    assert len(listed) + summary.get("skills_not_shown", 0) == skills  # nothing left out silently


def test_the_models_catalog_quotes_whole_cards() -> None:
    class Entry:
        name, description, skills = "Big", "A big agent", _big_card_skills(40)

    text = catalog_text([Entry()], limit=1500)  # type: ignore[list-item]
    body = text.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert json.loads(body)["agent"] == "Big"  # valid JSON: not cut in the middle
    assert "more characters not shown" not in text


async def test_the_live_view_redraws_while_a_delegation_works_quietly() -> None:
    now = [100.0]
    view = LiveView(clock=lambda: now[0])
    view.handle(ev.RunStarted(run_id="r", objective="fruit", mode="plan_upfront", strategy="adaptive", model=None))
    view.handle(
        ev.DelegationStarted(
            run_id="r",
            delegation_id="1.1.0",
            item_id="1",
            agent="A",
            skill="work",
            description="apples",
            message_id="m",
        )
    )
    frames: list[str] = []
    shown = asyncio.Event()

    def update(renderable: Any) -> None:
        console = Console(record=True, width=120, file=io.StringIO())
        console.print(renderable)
        frames.append(console.export_text())
        if "2.5s" in frames[-1]:
            shown.set()

    async with redrawing(view, update, interval=0.01):
        now[0] = 102.5  # no event arrives: only the timer can show the time passing
        await asyncio.wait_for(shown.wait(), WAIT)
    count = len(frames)
    await asyncio.sleep(0.05)
    assert len(frames) == count  # the timer stops with the block


async def test_an_unreachable_model_endpoint_fails_the_run_with_one_line_naming_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    sup = Supervisor(
        [worker("A")], model={"model": "m", "base_url": url, "max_retries": 0}, checkpoint={"backend": "memory"}
    )
    result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "failed"
    assert result.error is not None and "\n" not in result.error
    assert result.error.startswith(f"the model endpoint {url} cannot be reached")
    assert [r for r in caplog.records if r.exc_info] == []  # no traceback in the log
    assert any(url in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


async def test_a_delegation_that_has_ended_is_not_cancelled_when_a_budget_runs_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A's task has ended (its stream is read to the end; the supervisor has not yet taken the
    result) when B's usage exhausts the budget."""
    probe = Probe(hold=True)
    reading, go_on = asyncio.Event(), asyncio.Event()
    original = Delegator._consume

    async def slow_consume(self: Delegator, entry: Any, record: Any, *args: Any, **kwargs: Any) -> None:
        await original(self, entry, record, *args, **kwargs)
        if record.agent == "A":
            reading.set()
            await go_on.wait()

    monkeypatch.setattr(Delegator, "_consume", slow_consume)
    sup = Supervisor(
        [worker("A", usage=None), worker("B", probe, usage=(10, 5, 0.0))],
        strategy="parallel",
        budget={"tokens": 10},
        checkpoint={"backend": "memory"},
    )
    finished: ev.RunFinished | None = None

    async def consume() -> None:
        nonlocal finished
        async for event in sup.stream("work on apples; work on pears"):
            if isinstance(event, ev.BudgetExhausted):
                go_on.set()  # only now may A's final read go on: the budget is already spent
            elif isinstance(event, ev.RunFinished):
                finished = event

    run = asyncio.create_task(consume())
    await asyncio.wait_for(reading.wait(), WAIT)
    probe.release()  # B finishes and its usage crosses the budget
    await asyncio.wait_for(run, WAIT)
    assert finished is not None and finished.result is not None
    result = finished.result
    # The budget is a cap: it stops new work, and here there was none left, so nothing was stopped.
    assert result.stopped is None and result.status == "completed"
    apples = next(i for i in result.items if i.agent == "A")
    assert apples.status == "done" and "A did: work on apples" in (apples.result or "")


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from a2a import A2AClient

    reads: list[str] = []
    original = A2AClient.get_task

    async def counting(self: A2AClient, task_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(task_id)
        return await original(self, task_id, *args, **kwargs)

    monkeypatch.setattr(A2AClient, "get_task", counting)
    return reads


async def test_a_stream_that_opens_with_the_task_is_the_whole_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """A delegation's stream that began with the task carries every artifact chunk and the
    token use: no GetTask after its final event (it cost a request per delegation)."""
    reads = _counting_reads(monkeypatch)
    async with serving(worker("A", partial="first part")) as urls:
        sup = Supervisor(urls, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed", result.error
    (delegation,) = result.delegations
    assert reads == []
    assert [a["name"] for a in delegation.artifacts] == ["partial", "result"]
    assert (delegation.input_tokens, delegation.output_tokens) == (10, 5)


async def test_a_stream_that_did_not_open_with_the_task_is_read_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the task at its start (a peer that opens with a status update), the stream may
    lack what came before it: the final task is read with GetTask."""
    from a2a import A2AClient
    from a2a import types as t

    reads = _counting_reads(monkeypatch)
    original = A2AClient.stream

    def without_the_task(self: A2AClient, *args: Any, **kwargs: Any) -> Any:
        async def events() -> Any:
            async for event in original(self, *args, **kwargs):
                if not isinstance(event.payload, t.Task):
                    yield event

        return events()

    monkeypatch.setattr(A2AClient, "stream", without_the_task)
    async with serving(worker("A")) as urls:
        sup = Supervisor(urls, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed", result.error
    (delegation,) = result.delegations
    assert reads == [delegation.task_id]


async def test_a_stream_that_brought_no_result_is_read_once_more(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent that puts its artifacts only in the task, never in an event (fasta2a does): the
    stream opened with the task but brought nothing, so the final task is read for them."""
    from a2a import A2AClient
    from a2a import types as t

    reads = _counting_reads(monkeypatch)
    original = A2AClient.stream

    def without_artifact_events(self: A2AClient, *args: Any, **kwargs: Any) -> Any:
        async def events() -> Any:
            async for event in original(self, *args, **kwargs):
                if isinstance(event.payload, t.TaskStatusUpdateEvent):
                    event.payload.status.message = None  # its text is no result either
                if not isinstance(event.payload, t.TaskArtifactUpdateEvent):
                    yield event

        return events()

    monkeypatch.setattr(A2AClient, "stream", without_artifact_events)
    async with serving(worker("A")) as urls:
        sup = Supervisor(urls, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed", result.error
    (delegation,) = result.delegations
    assert reads == [delegation.task_id]
    assert [a["name"] for a in delegation.artifacts] == ["result"]
