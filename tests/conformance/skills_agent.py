"""A multi-skill agent for the skill routing and argument tests (also served by the CLI tests)."""

from __future__ import annotations

from typing import Any

from a2a import Agent, RequestContext

agent = Agent("Shop", "Chats, takes orders, forecasts the weather")


@agent.skill(description="Answers in chat (the default skill)")
async def chat(text: str) -> str:
    return f"chat: {text}"


@agent.skill(description="Takes an order; asks for the size")
async def order(ctx: RequestContext) -> None:
    if ctx.task is None:
        await ctx.require_input("Which size?")
        return
    await ctx.complete(f"order: size {ctx.text}")


@agent.skill(description="Forecasts the weather")
async def forecast(city: str, days: int = 3) -> dict[str, Any]:
    return {"city": city, "days": days}


@agent.skill(description="Books a table; asks for the day")
async def book(ctx: RequestContext, people: int) -> None:
    if ctx.task is None:
        await ctx.require_input("Which day?")
        return
    await ctx.complete(f"{people} people on {ctx.text}")
