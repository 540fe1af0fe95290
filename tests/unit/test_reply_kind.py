"""Whether a skill may answer with a plain Message: declared, or read from its return annotation."""

from __future__ import annotations

from a2a import Agent, RequestContext
from a2a.types import Message


def test_a_skill_gets_a_task_at_once_unless_it_says_it_replies() -> None:
    agent = Agent("Kinds", "declares reply kinds")

    @agent.skill()
    async def plain(ctx: RequestContext) -> None: ...

    @agent.skill()
    async def text(text: str) -> str:
        return text

    @agent.skill()
    async def replier(ctx: RequestContext) -> Message: ...

    @agent.skill()
    async def maybe(ctx: RequestContext) -> Message | None: ...

    @agent.skill(replies=True)
    async def declared(ctx: RequestContext) -> None: ...

    @agent.skill(replies=False)
    async def overruled(ctx: RequestContext) -> Message: ...

    kinds = {skill.card.id: agent.may_reply(skill.card.id) for skill in agent.skills}
    assert kinds == {
        "plain": False,
        "text": False,
        "replier": True,
        "maybe": True,
        "declared": True,
        "overruled": False,
    }
    assert agent.may_reply("no-such-skill") is False  # rejected inside a task


def test_an_evaluated_annotation_is_read_too() -> None:
    agent = Agent("Evaluated", "annotations as objects")

    async def answer(ctx: RequestContext) -> Message: ...

    answer.__annotations__["return"] = Message  # as without postponed annotations
    agent.skill()(answer)
    assert agent.may_reply("answer") is True


def test_an_agent_with_a_handler_declares_it_on_the_agent() -> None:
    async def handler(ctx: RequestContext) -> None: ...

    assert Agent("Tasks", handler=handler).may_reply(None) is False
    assert Agent("Replies", handler=handler, replies=True).may_reply(None) is True
