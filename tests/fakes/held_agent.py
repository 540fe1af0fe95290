"""An agent that publishes an artifact chunk and then waits for the test to let it complete:
what the tests of a task's queued first save hold a run with."""

from __future__ import annotations

import asyncio

from a2a.server import Agent, RequestContext


def held_agent(*, replies: bool = True) -> tuple[Agent, asyncio.Event, asyncio.Event]:
    """``(agent, published, go)``: ``published`` is set once the chunk is out; the skill then
    waits for ``go`` before it completes. With ``replies`` (a skill that may answer with a
    message) its task is made lazily, at that first task event."""
    agent = Agent("Held", "publishes a chunk, then waits")
    published = asyncio.Event()
    go = asyncio.Event()

    @agent.skill(tags=["test"], replies=replies)
    async def act(ctx: RequestContext) -> None:
        await ctx.artifact("chunk", artifact_id="a")
        published.set()
        await go.wait()
        await ctx.complete()

    return agent, published, go
