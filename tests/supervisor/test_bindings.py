"""End to end over every binding (HTTP, WebSocket, stdio, in-process), both modes, all three strategies."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from a2a import A2AServer, ServerConfig
from supervisor import Supervisor
from tests.fakes import FakeOpenAI, ToolCalls, call
from tests.supervisor.agents import WAIT, worker
from tests.supervisor.test_model import model_settings, reflector

BINDINGS = ["http", "websocket", pytest.param("stdio", marks=pytest.mark.slow), "in-process"]  # stdio: child processes
STRATEGIES = ["sequential", "parallel", "adaptive"]
MODES = ["offline", "model", "conversational"]
STDIO = [sys.executable, "-m", "a2a.cli.main", "serve", "tests/supervisor/agents.py:stdio_worker", "--stdio"]


@contextlib.asynccontextmanager
async def agents_over(binding: str) -> AsyncIterator[list[Any]]:
    """Two agents named A and B with the same skill, reachable over ``binding``."""
    if binding == "in-process":
        yield [worker("A"), worker("B")]
        return
    if binding == "stdio":
        yield [{"name": name, "command": STDIO} for name in "AB"]
        return
    async with contextlib.AsyncExitStack() as stack:
        configs = []
        for name in "AB":
            server = await stack.enter_async_context(A2AServer(worker(name), config=ServerConfig(port=0)))
            assert server.url is not None
            url = server.url.replace("http://", "ws://") + "/a2a/ws" if binding == "websocket" else server.url
            configs.append({"name": name, "url": url})
        yield configs


def script(mode: str) -> list[Any]:
    if mode == "model":
        plan = ToolCalls(
            call(
                "update_todo",
                items=[
                    {"id": "1", "description": "apples", "instruction": "work on apples", "agent": "A"},
                    {"id": "2", "description": "pears", "instruction": "work on pears", "agent": "B"},
                    {
                        "id": "3",
                        "description": "both",
                        "instruction": "work on both",
                        "agent": "A",
                        "depends_on": ["1", "2"],
                    },
                ],
            )
        )
        return [plan, *[reflector()] * 6]
    if mode == "conversational":
        turn = ToolCalls(
            call("delegate", agent="A", task="work on apples", description="apples"),
            call("delegate", agent="B", task="work on pears", description="pears"),
        )
        return [turn, ToolCalls(call("finish", answer="apples and pears are done"))]
    return []


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("binding", BINDINGS)
async def test_plan_delegate_synthesize(
    binding: str, mode: str, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with agents_over(binding) as agents, FakeOpenAI(script(mode)) as fake:
        options: dict[str, Any] = {"strategy": strategy, "checkpoint": {"backend": "memory"}}
        if mode != "offline":
            options["model"] = model_settings(fake, monkeypatch)
        if mode == "conversational":
            options["mode"] = "conversational"
        async with Supervisor(agents, **options) as sup:
            transports = {a["name"]: a["transport"] for a in sup.agents}
            result = await asyncio.wait_for(sup.run("work on apples; work on pears. Then work on both"), WAIT)
    expected = {"http": "JSONRPC", "websocket": "websocket", "stdio": "stdio", "in-process": "in-process"}[binding]
    assert set(transports.values()) == {expected}
    assert result.status == "completed", result.final
    assert all(i.status == "done" for i in result.items)
    assert {d.agent for d in result.delegations} == {"A", "B"}
    assert all(d.state == "completed" and d.task_id for d in result.delegations)
    if mode == "conversational":
        assert result.final == "apples and pears are done"
    elif mode == "model":
        assert result.final == "FINAL: apples and pears are done"
    else:
        assert "work on apples" in result.final and "work on both" in result.final
    if binding == "stdio":
        assert result.metrics.agent_input_tokens == 3 * len(result.delegations)
    else:
        assert result.metrics.agent_input_tokens == 10 * len(result.delegations)


async def test_an_http_agent_can_be_asked_to_use_its_websocket_interface() -> None:
    async with (
        A2AServer(worker("A"), config=ServerConfig(port=0)) as server,
        Supervisor([{"name": "A", "url": server.url, "binding": "WEBSOCKET"}], checkpoint={"backend": "memory"}) as sup,
    ):
        (agent,) = sup.agents
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert agent["transport"].endswith("/websocket/v1")
    assert result.status == "completed"


@pytest.mark.slow
async def test_stdio_agents_are_started_and_stopped_by_the_supervisor() -> None:
    sup = Supervisor([{"name": "A", "command": STDIO}], checkpoint={"backend": "memory"})
    async with sup:
        entry = sup.registry.get("A")
        assert entry is not None and entry.client is not None
        transport = await entry.client.connect()
        pid = transport.pid  # type: ignore[attr-defined]
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
        assert str(pid) in (result.items[0].result or "")
    assert transport.returncode is not None  # type: ignore[attr-defined]  # the process was ended
