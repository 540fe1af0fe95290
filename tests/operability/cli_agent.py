"""An agent for the CLI tests, served with ``a2a serve tests/operability/cli_agent.py:agent``.

Skills: ``lookup`` (a KeyError for an unknown key), ``words`` (streams words, slowly enough that
a reader can leave in the middle), ``book`` (asks for input, then completes), ``think`` (silent
for a while, then answers), ``order`` (typed arguments, answered with two artifacts, one named).
"""

import asyncio
from collections.abc import AsyncIterator

from a2a import Agent, RequestContext

agent = Agent("CliAgent", "Serves the CLI tests", version="1.0.0")

TABLE = {"a": "alpha"}


@agent.skill()
async def lookup(text: str) -> str:
    return TABLE[text]  # 'zzz' raises KeyError('zzz'): the client must see its type


@agent.skill()
async def words(text: str) -> AsyncIterator[str]:
    count = int(text or "5")
    for i in range(count):
        yield f"word{i} "
        await asyncio.sleep(0.01)
    yield "end\n"


@agent.skill()
async def book(ctx: RequestContext) -> None:
    if ctx.task is None or not ctx.text.isdigit():
        await ctx.require_input("For how many people?")
        return
    await ctx.complete(f"Booked for {ctx.text}.")


@agent.skill()
async def think(text: str) -> str:
    await asyncio.sleep(float(text or "2"))
    return "thought"


@agent.skill()
async def order(ctx: RequestContext, item: str, quantity: int = 1, note: str | None = None) -> None:
    await ctx.artifact(f"{quantity} x {item}")
    await ctx.artifact({"item": item, "quantity": quantity, "note": note}, name="receipt")
    await ctx.complete()
