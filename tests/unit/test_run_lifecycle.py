"""A run leaves the handler's table of runs when its agent ends, however it ends (no HTTP)."""

from __future__ import annotations

import asyncio

from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.server.engine.ids import new_id
from a2a.types import (
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

NOBODY = CallContext()


def send(text: str, *, immediately: bool = False) -> SendMessageRequest:
    message = Message(message_id=new_id(), role=Role.USER, parts=[Part(text=text)])
    return SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=immediately))


def agent_that(behaviour: str) -> tuple[Agent, list[str]]:
    agent = Agent("Lifecycle", "ends in several ways")
    entered: list[str] = []

    @agent.skill(tags=["test"], replies=behaviour == "reply")
    async def act(ctx: RequestContext) -> None:
        entered.append(ctx.text)
        if behaviour == "reply":
            await ctx.reply("hi")
        elif behaviour == "fail":
            raise RuntimeError("broken")
        else:
            await ctx.working("waiting")
            await asyncio.sleep(3600)

    return agent, entered


async def test_a_run_is_forgotten_when_its_agent_replies_or_fails() -> None:
    for behaviour in ("reply", "fail"):
        agent, _ = agent_that(behaviour)
        handler = RequestHandler(agent)
        await handler.start()
        await handler.send_message(send("go"), NOBODY)
        await asyncio.sleep(0)
        assert handler._runs == {}, behaviour
        await handler.shutdown()


async def test_a_run_cancelled_before_its_first_step_is_forgotten() -> None:
    agent, entered = agent_that("wait")
    handler = RequestHandler(agent)
    await handler.start()
    # The run is started and cancelled in one step of the event loop (a memory store never
    # suspends), so its agent never begins.
    run, _ = await handler._start(send("go"), NOBODY, materialize=False)
    assert run is not None and run.task_id in handler._runs
    await run.cancel()  # directly: a wait_for would let the run take its first step first
    assert entered == [], "the agent never ran"
    assert run.task.status.state == TaskState.CANCELED
    assert handler._runs == {}
    await handler.shutdown()


async def test_a_run_cancelled_while_working_is_forgotten() -> None:
    agent, entered = agent_that("wait")
    handler = RequestHandler(agent)
    await handler.start()
    task = (await handler.send_message(send("go", immediately=True), NOBODY)).task
    for _ in range(100):
        if entered:
            break
        await asyncio.sleep(0.01)
    assert entered == ["go"]
    await asyncio.wait_for(handler.cancel_task(CancelTaskRequest(id=task.id), NOBODY), 5)
    assert handler._runs == {}
    await handler.shutdown()


async def test_a_run_is_forgotten_even_when_whoever_cancels_it_is_cancelled_too() -> None:
    agent, entered = agent_that("reply")
    handler = RequestHandler(agent)
    await handler.start()
    request = send("go")

    async def start_and_cancel() -> None:
        run, _ = await handler._start(request, NOBODY, materialize=False)
        assert run is not None
        await run.cancel()

    canceller = asyncio.create_task(start_and_cancel())
    await asyncio.sleep(0)  # it has started the run and is waiting for the cancel to land
    canceller.cancel()
    await asyncio.gather(canceller, return_exceptions=True)
    for _ in range(10):
        await asyncio.sleep(0)
    assert entered == []
    assert handler._runs == {}, "a run that never began must not stay in the table"
    # So a retry of the same message is served again instead of waiting on a dead run.
    again = await asyncio.wait_for(handler.send_message(request, NOBODY), 5)
    assert entered == ["go"]
    assert again.message is not None and again.message.text == "hi"
    await handler.shutdown()


class _SkillChoiceFails(Agent):
    """An agent whose skill choice raises (a subclass may route messages its own way)."""

    def select_skill(self, message: Message) -> str | None:
        raise RuntimeError("no skill for this")


async def test_a_failed_skill_choice_leaves_no_run_behind_for_a_retry_to_wait_on() -> None:
    agent = _SkillChoiceFails("Chooser", "fails to choose")

    @agent.skill(tags=["test"])
    async def act(ctx: RequestContext) -> str:
        return "done"

    handler = RequestHandler(agent)
    await handler.start()
    request = send("go")
    for _ in range(2):  # the retry of the same messageId must not wait on a run that never started
        async with asyncio.timeout(5):
            try:
                await handler.call("SendMessage", request, NOBODY)
            except Exception as exc:  # noqa: BLE001 - the handler turns it into its internal error
                assert "InternalError" in type(exc).__name__
        assert handler._runs == {}
    await handler.shutdown()
