"""Hooks around delegations and model calls (``supervisor.hooks``)."""

from __future__ import annotations

import asyncio
import dataclasses
import io

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from rich.console import Console

from supervisor import Supervisor
from supervisor.config import parse_config
from supervisor.hooks import ApprovalHook, DelegationRequest, DelegationResult, Hook, Vetoed
from supervisor.ui import TerminalApproval
from tests.fakes import FakeOpenAI, Reply, ToolCalls, call
from tests.supervisor.agents import WAIT, Probe, serving, worker
from tests.supervisor.test_model import model_settings


class Redirect(Hook):
    async def before_delegation(self, request: DelegationRequest) -> DelegationRequest:
        return dataclasses.replace(request, agent="B", text=request.text.replace("apples", "green apples"))


class Refuse(Hook):
    async def before_delegation(self, request: DelegationRequest) -> DelegationRequest:
        if "secret" in request.text:
            raise Vetoed("secrets stay here")
        return request


class Redact(Hook):
    async def after_delegation(self, request: DelegationRequest, result: DelegationResult) -> DelegationResult:
        return result.replace(result=(result.result or "").replace("pears", "[fruit]"))


async def test_a_hook_rewrites_the_instruction_and_picks_another_agent() -> None:
    probe = Probe()
    sup = Supervisor([worker("A", probe), worker("B", probe)], hooks=[Redirect()], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed"
    assert probe.by_agent == {"B": 1} and probe.started == ["work on green apples"]


async def test_a_hook_vetoes_a_delegation_and_nothing_is_sent() -> None:
    probe = Probe()
    sup = Supervisor([worker("A", probe)], hooks=[Refuse()], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on the secret plan; work on pears"), WAIT)
    vetoed, pears = result.items
    assert vetoed.status == "failed" and vetoed.error == "vetoed: secrets stay here"
    assert pears.status == "done"
    assert probe.started == ["work on pears"]
    assert result.status == "partial"


async def test_a_hook_replaces_the_result_and_hooks_load_by_import_path() -> None:
    config = parse_config("supervisor:\n  hooks: ['tests.supervisor.agents:Shouting']\n")
    sup = Supervisor([worker("A")], config=config, hooks=[Redact()], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on pears"), WAIT)
    assert result.items[0].result == "A DID: WORK ON [FRUIT]"  # Redact, then Shouting (from the YAML)


async def test_model_hooks_see_every_call_and_may_change_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    class Watch(Hook):
        async def before_model(self, purpose: str, messages: list[BaseMessage]) -> list[BaseMessage]:
            seen.append(purpose)
            return messages

        async def after_model(self, purpose: str, response: AIMessage) -> AIMessage:
            return AIMessage(f"[checked] {response.content}") if purpose == "synthesize" else response

    plan = ToolCalls(call("update_todo", items=[{"id": "1", "description": "apples", "agent": "A"}]))
    async with FakeOpenAI([plan, Reply("apples done")]) as fake:
        sup = Supervisor(
            [worker("A")],
            model=model_settings(fake, monkeypatch),
            reflection="rules",
            hooks=[Watch()],
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("apples"), WAIT)
    assert seen == ["plan", "synthesize"]
    assert result.final == "[checked] apples done"


async def test_the_approval_hook_asks_before_delegating_to_agents_that_need_it() -> None:
    probe = Probe()
    asked: list[str] = []

    async def ask(request: DelegationRequest) -> bool:
        asked.append(f"{request.agent}: {request.text}")
        return "apples" in request.text

    async with serving(worker("A", probe), worker("B", probe)) as (a, b):
        sup = Supervisor(
            [{"name": "A", "url": a, "approval": True}, {"name": "B", "url": b}],
            hooks=[ApprovalHook(ask)],
            strategy="sequential",
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("work on apples; work on pears; work on plums"), WAIT)
    assert asked == ["A: work on apples", "A: work on plums"]  # B needs no approval
    assert [i.status for i in result.items] == ["done", "done", "failed"]
    assert result.items[2].error == "vetoed: delegating to A was not approved"
    assert sorted(probe.started) == ["work on apples", "work on pears"]


async def test_the_cli_asks_on_the_terminal_and_refuses_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    request = DelegationRequest("r", "1", "apples", "A", "work", "work on apples", None, needs_approval=True)
    assert await TerminalApproval(interactive=False)(request) is False  # --batch / --json: cannot ask
    asking = TerminalApproval(interactive=True)
    asking.attach(Console(file=io.StringIO()), None)
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert await asking(request) is True
    monkeypatch.setattr("builtins.input", lambda prompt: "")
    assert await asking(request) is False


async def test_an_agent_that_needs_approval_is_refused_when_no_one_can_approve() -> None:
    probe = Probe()
    async with serving(worker("A", probe)) as (a,):
        sup = Supervisor([{"name": "A", "url": a, "approval": True}], checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.items[0].error == "vetoed: delegating to A was not approved"
    assert probe.started == []
