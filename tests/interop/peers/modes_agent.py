"""The echo agent with its skill's media types on the card, for fasta2a's client.

fasta2a's client refuses a card whose skills do not list ``inputModes`` and ``outputModes``
(optional in A2A 1.0, and our cards leave them to the agent's defaults). A user serving agents
to fasta2a clients declares them, as this agent does. Served by ``peers/ours.py``.
"""

from __future__ import annotations

from a2a import Agent, RequestContext

agent = Agent(name="Echo", description="Echoes text back (skill media types declared).", version="1.0.0")


@agent.skill(
    "echo",
    name="Echo",
    description="Replies with the text it was sent.",
    tags=["echo"],
    input_modes=["text/plain"],
    output_modes=["text/plain"],
    replies=True,
)
async def echo(ctx: RequestContext) -> None:
    await ctx.reply(ctx.text)
