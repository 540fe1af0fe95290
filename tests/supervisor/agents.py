"""Agents for the supervisor's tests: they record what happens to them, on their side.

A ``Probe`` counts executions (by message id), tasks in flight and the most ever in flight,
and can hold every task at a gate until the test opens it, so tests synchronise on what the
agents observe, never on sleeps. The module-level agents are served by child processes
(``a2a serve tests/supervisor/agents.py:hanging --port 0`` / ``--stdio``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from a2a import A2AServer, Agent, RequestContext, ServerConfig

WAIT = 20.0  # every wait in these tests is bounded by this many seconds


@dataclass
class Probe:
    """What the agents saw: executions, concurrency, order; and a gate that holds tasks."""

    in_flight: int = 0
    max_in_flight: int = 0
    executions: Counter[str] = field(default_factory=Counter)
    by_agent: Counter[str] = field(default_factory=Counter)
    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)
    hold: bool = False

    def __post_init__(self) -> None:
        self.gate = asyncio.Event()
        self.changed = asyncio.Condition()

    async def enter(self, agent: str, ctx: RequestContext) -> None:
        async with self.changed:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.executions[ctx.message.message_id] += 1
            self.by_agent[agent] += 1
            self.started.append(ctx.text.splitlines()[0] if ctx.text else "")
            self.texts.append(ctx.text)
            self.metadata.append(dict(ctx.message.metadata or {}))
            self.changed.notify_all()

    async def leave(self, ctx: RequestContext) -> None:
        async with self.changed:
            self.in_flight -= 1
            self.finished.append(ctx.text.splitlines()[0] if ctx.text else "")
            self.changed.notify_all()

    async def wait_until(self, predicate: Callable[[Probe], bool], timeout: float = WAIT) -> None:
        async with asyncio.timeout(timeout), self.changed:
            await self.changed.wait_for(lambda: predicate(self))

    def release(self) -> None:
        self.gate.set()


def worker(
    name: str,
    probe: Probe | None = None,
    *,
    skill: str = "work",
    tags: Sequence[str] = ("work",),
    description: str = "Does work",
    answer: Callable[[str], Any] | None = None,
    usage: tuple[int, int, float] | None = (10, 5, 0.001),
    streaming: bool = True,
    partial: str | None = None,
) -> Agent:
    """An agent with one skill that reports WORKING, may wait at the probe's gate, then answers."""
    agent = Agent(name, f"{name}: {description}", streaming=streaming)

    @agent.skill(skill, tags=list(tags), description=description)
    async def work(ctx: RequestContext) -> None:
        if probe is not None:
            await probe.enter(name, ctx)
        try:
            await ctx.working(f"{name} is on it")
            if partial is not None:
                await ctx.artifact(partial, name="partial")
            if probe is not None and probe.hold:
                await probe.gate.wait()
            result = answer(ctx.text) if answer else f"{name} did: {ctx.text.splitlines()[0]}"
            if usage is not None:
                ctx.report_usage(usage[0], usage[1], cost_usd=usage[2], model="test")
            await ctx.artifact(result, name="result")
            await ctx.complete()
        finally:
            if probe is not None:
                await probe.leave(ctx)

    return agent


def asking(name: str = "Asker") -> Agent:
    """Asks a question (INPUT_REQUIRED), then answers with what it was told."""
    agent = Agent(name, "Asks which colour, then paints it")

    @agent.skill("paint", tags=["paint", "colour"], description="Paints in a colour it asks for")
    async def paint(ctx: RequestContext) -> None:
        if ctx.task is None:
            await ctx.require_input("Which colour?")
            return
        await ctx.complete(f"painted {ctx.text.strip()}")

    return agent


class FlakyServer(A2AServer):
    """Answers the first ``failures`` A2A requests (not the card) with HTTP 503."""

    def __init__(self, agent: Agent, failures: int = 3, **kwargs: Any) -> None:
        super().__init__(agent, config=ServerConfig(port=0), middlewares=[self.flaky], **kwargs)
        self.failures = failures
        self.refused = 0

    async def flaky(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.method == "POST" and self.refused < self.failures:
            self.refused += 1
            return web.Response(status=503, text="busy, try again")
        return await handler(request)


@contextlib.asynccontextmanager
async def serving(*agents: Agent) -> AsyncIterator[list[str]]:
    """Serve each agent over HTTP on its own free loopback port; yields their URLs."""
    async with contextlib.AsyncExitStack() as stack:
        urls = []
        for agent in agents:
            server = await stack.enter_async_context(A2AServer(agent, config=ServerConfig(port=0)))
            assert server.url is not None
            urls.append(server.url)
        yield urls


# ---- agents for child processes ---------------------------------------------------------------

#: Works until cancelled (or killed): reports WORKING, then waits forever.
hanging = Agent("Hanging", "Starts work and never finishes")


@hanging.skill("work", tags=["work"], description="Does work")
async def _hang(ctx: RequestContext) -> None:
    await ctx.working("started")
    await asyncio.Event().wait()


#: A stdio worker that reports which process served it.
stdio_worker = Agent("StdioWorker", "Does work in a child process")


@stdio_worker.skill("work", tags=["work"], description="Does work")
async def _stdio_work(ctx: RequestContext) -> None:
    ctx.report_usage(3, 2)
    await ctx.artifact(json.dumps({"pid": os.getpid(), "text": ctx.text.splitlines()[0]}), name="result")
    await ctx.complete()


def python() -> str:
    return sys.executable


class Shouting:
    """A hook for the configuration tests (loaded by import path): results in capitals."""

    async def after_delegation(self, request: Any, result: Any) -> Any:
        return result.replace(result=(result.result or "").upper())
