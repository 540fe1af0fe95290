"""The echo agent: the smallest agent that shows every shape of answer.

- any text: a plain Message with the same text back (no task; the skill declares
  ``replies=True``, so no task is made before it answers);
- ``stream:N``: a task that streams N chunks into one artifact, then completes;
- ``hold:S``: a task that reports WORKING, waits S seconds (cancellable), then completes.

Serve it with ``a2a serve examples/echo_agent.py:agent``.
"""

from __future__ import annotations

import asyncio

from a2a import Agent, RequestContext

agent = Agent(
    name="Echo",
    description="Echoes text back; 'stream:N' streams N chunks, 'hold:S' works for S seconds.",
    version="1.0.0",
)

MAX_CHUNKS = 10_000
MAX_HOLD_SECONDS = 3600.0


@agent.skill(
    "echo",
    name="Echo",
    description="Replies with the text it was sent. 'stream:N' and 'hold:S' make a task instead.",
    tags=["echo", "test"],
    examples=["hello", "stream:5", "hold:2"],
    # Plain text gets a plain Message (no task, no store write): its task is made only when
    # 'stream:' or 'hold:' publishes its first task event.
    replies=True,
)
async def echo(ctx: RequestContext) -> None:
    text = ctx.text.strip()
    if text.startswith("stream:"):
        await _stream(ctx, _bounded_int(text[7:], MAX_CHUNKS))
    elif text.startswith("hold:"):
        await _hold(ctx, _bounded_float(text[5:], MAX_HOLD_SECONDS))
    else:
        await ctx.reply(ctx.text)


async def _stream(ctx: RequestContext, count: int) -> None:
    artifact_id = "echo-stream"
    for i in range(count):
        await ctx.artifact(
            f"chunk {i}", artifact_id=artifact_id, name="echo-stream", append=i > 0, last_chunk=i == count - 1
        )
    await ctx.complete()


async def _hold(ctx: RequestContext, seconds: float) -> None:
    await ctx.working(f"holding for {seconds:g}s")
    await asyncio.sleep(seconds)  # cancellation arrives here as CancelledError
    await ctx.complete(f"held for {seconds:g}s")


def _bounded_int(raw: str, limit: int) -> int:
    value = int(raw)
    if not 0 <= value <= limit:
        raise ValueError(f"expected a number from 0 to {limit}, got {value}")
    return value


def _bounded_float(raw: str, limit: float) -> float:
    value = float(raw)
    if not 0 <= value <= limit:
        raise ValueError(f"expected seconds from 0 to {limit:g}, got {value:g}")
    return value
