"""What a skill's return value adds to what it published itself (the skill's usual case runs
inline in ``Skill.run``; these pin down that it answers exactly as ``_publish_result`` did)."""

from __future__ import annotations

from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

NOBODY = CallContext()


def _send(text: str, message_id: str = "m1", **metadata: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=message_id, role=Role.USER, parts=[Part(text=text)], metadata=metadata or None)
    )


def _agent() -> Agent:
    agent = Agent("Shapes", "answers in every shape")

    @agent.skill(replies=True)
    async def replies(ctx: RequestContext) -> None:
        await ctx.reply(f"re: {ctx.text}")

    @agent.skill(replies=True)
    async def silent(ctx: RequestContext) -> None:
        pass  # published nothing: the task completes

    @agent.skill(replies=True)
    async def asks(ctx: RequestContext) -> None:
        await ctx.require_input("which one?")  # interrupted: nothing more is published

    @agent.skill(replies=True)
    async def twice(ctx: RequestContext) -> str:
        await ctx.reply("first")
        return "then an artifact"  # refused after a reply: the reply stands

    @agent.skill()
    async def text(text: str) -> str:
        return text.upper()  # the text form: an artifact, then COMPLETED

    return agent


async def test_a_skill_that_replied_itself_answers_with_its_message_only() -> None:
    handler = RequestHandler(_agent())
    answer = await handler.send_message(_send("hello", skillId="replies"), NOBODY)
    assert answer.task is not None and answer.message is not None  # UNSET is not None
    assert isinstance(answer.message, Message) and answer.message.text == "re: hello"
    assert answer.message.task_id is None and answer.message.context_id
    assert answer.message.role == Role.AGENT and len(answer.message.message_id) == 32
    # A retry of the same message gets the same answer (its idempotency record).
    again = await handler.send_message(_send("hello", skillId="replies"), NOBODY)
    assert again.message == answer.message


async def test_a_skill_that_published_nothing_completes_its_task() -> None:
    answer = await RequestHandler(_agent()).send_message(_send("x", skillId="silent"), NOBODY)
    assert not isinstance(answer.message, Message)
    assert answer.task.status.state == TaskState.COMPLETED


async def test_a_skill_that_asked_for_input_stays_interrupted() -> None:
    answer = await RequestHandler(_agent()).send_message(_send("x", skillId="asks"), NOBODY)
    assert answer.task.status.state == TaskState.INPUT_REQUIRED
    assert answer.task.status.message is not None and answer.task.status.message.text == "which one?"


async def test_a_value_returned_after_a_reply_does_not_replace_it() -> None:
    answer = await RequestHandler(_agent()).send_message(_send("x", skillId="twice"), NOBODY)
    assert isinstance(answer.message, Message) and answer.message.text == "first"


async def test_a_text_skill_gets_the_text_and_completes_with_an_artifact() -> None:
    answer = await RequestHandler(_agent()).send_message(_send("abc", skillId="text"), NOBODY)
    assert answer.task.status.state == TaskState.COMPLETED
    assert answer.task.artifacts is not None and answer.task.artifacts[0].parts[0].text == "ABC"
    # The skill that owns the task is kept in its metadata (a follow-up goes back to it).
    assert answer.task.metadata is not None and "text" in answer.task.metadata.values()
