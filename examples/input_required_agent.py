"""An agent that asks a question: INPUT_REQUIRED, then the answer continues the same task.

1. Send anything: the task pauses in ``TASK_STATE_INPUT_REQUIRED`` asking "What is your name?".
2. Send the name with that task's ``taskId``: the task completes with "Hello, <name>!".

Cancel the task while it waits for the name and it ends CANCELED (the server does that, no
agent code is running). Cancel it while the greeting is being written and the agent's ``except
asyncio.CancelledError`` says so in the task's final status.

Serve it with ``a2a serve examples/input_required_agent.py:agent``.
"""

from __future__ import annotations

import asyncio

from a2a import Agent, RequestContext
from a2a.types import TaskState

agent = Agent(
    name="Greeter",
    description="Asks for your name (the task waits in INPUT_REQUIRED), then greets you.",
    version="1.0.0",
)

QUESTION = "What is your name?"


async def write_greeting(name: str) -> str:
    """Stands in for slow work (a model call, a lookup); a cancellation interrupts it at an await."""
    await asyncio.sleep(0)
    return f"Hello, {name}!"


@agent.skill(
    "greet",
    name="Greet",
    description="Asks for your name, then greets you by it.",
    tags=["greeting", "multi-turn"],
    examples=["hi", "Ada"],
)
async def greet(ctx: RequestContext) -> None:
    # ctx.task is the task as it stood before this message: None when the conversation starts.
    if ctx.task is None:
        await ctx.require_input(QUESTION)  # execute returns; the next message resumes the task
        return
    name = ctx.text.strip()
    if not name:
        await ctx.require_input(f"I did not catch that. {QUESTION}")
        return
    await ctx.working(f"Writing a greeting for {name}")
    try:
        greeting = await write_greeting(name)
    except asyncio.CancelledError:
        # CancelTask (or a server shutdown) arrives at the await in progress. Record why in the
        # final status, then re-raise: swallowing a cancellation would leave the run hanging.
        await ctx.update(TaskState.CANCELED, f"Canceled before {name} was greeted")
        raise
    await ctx.artifact(greeting, name="greeting")
    await ctx.complete(greeting)
