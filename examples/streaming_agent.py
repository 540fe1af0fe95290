"""A streaming agent: a WORKING status first, then the answer word by word into one artifact.

The skill is an async generator: each value it yields becomes a chunk appended to one
artifact as soon as it is yielded, and when the generator returns an empty chunk flagged
``lastChunk`` closes the artifact and the task completes.
A client that streams (``SendStreamingMessage``) can show the answer as it is written; one
that does not gets the finished task with the whole artifact.

Serve it with ``a2a serve examples/streaming_agent.py:agent``, then
``a2a send --stream http://127.0.0.1:8000 "streams"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from a2a import Agent, RequestContext

agent = Agent(
    name="Storyteller",
    description="Answers at length, streaming the answer word by word.",
    version="1.0.0",
)


def answer_for(topic: str) -> str:
    """The whole answer (a real agent would be reading it from a model, token by token)."""
    topic = topic.strip() or "nothing in particular"
    return (
        f"You asked about {topic}. Here is a longer answer, sent one word at a time, so that "
        "a client can show it while it is being written instead of waiting for the end. "
        "Every word travels as a chunk appended to the same artifact."
    )


@agent.skill(
    "tell",
    name="Tell",
    description="Writes a few sentences about the topic it is sent, streamed word by word.",
    tags=["streaming", "text"],
    examples=["streams", "the sea"],
)
async def tell(ctx: RequestContext) -> AsyncIterator[str]:
    # Before the first chunk: tell the client what is going on.
    await ctx.working(f"Writing about {ctx.text.strip() or 'nothing in particular'}")
    for i, word in enumerate(answer_for(ctx.text).split(" ")):
        # Spaces travel with the words, so joining the chunks gives back the answer exactly.
        yield word if i == 0 else " " + word
        await asyncio.sleep(0)  # let other tasks run between words, as a model client would
