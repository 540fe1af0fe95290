"""The handler tells its ``Coordination`` about runs, cancels and recovery, and never asks
whether other processes exist: one process gets the null object (no HTTP)."""

from __future__ import annotations

import asyncio

from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.server.backends.store import TaskRecord
from a2a.server.engine.coordination import CancelHandler, Coordination, RecoverHandler, SingleProcessCoordination
from a2a.server.engine.ids import new_id
from a2a.types import CancelTaskRequest, Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus

NOBODY = CallContext()


class Recording(Coordination):
    """Says what a shared coordination would say, and records what the handler told it."""

    def __init__(self, *, elsewhere: bool, others: bool) -> None:
        self.elsewhere = elsewhere
        self.others = others
        self.calls: list[tuple[str, str]] = []
        self.cancel: CancelHandler | None = None
        self.recover: RecoverHandler | None = None

    async def start(self, *, cancel: CancelHandler, recover: RecoverHandler) -> None:
        self.cancel, self.recover = cancel, recover

    def run_started(self, task_id: str) -> None:
        self.calls.append(("started", task_id))

    def run_finished(self, task_id: str) -> None:
        self.calls.append(("finished", task_id))

    async def request_cancel(self, task_id: str) -> bool:
        self.calls.append(("cancel", task_id))
        return self.others

    async def is_running_elsewhere(self, task_id: str) -> bool:
        return self.elsewhere

    async def close(self) -> None:
        self.calls.append(("closed", ""))


def echo() -> Agent:
    agent = Agent("Echo", "echoes")

    @agent.skill()
    async def reply(ctx: RequestContext) -> None:
        await ctx.reply(ctx.text)

    return agent


def send(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id=new_id(), role=Role.USER, parts=[Part(text=text)]))


def working(task_id: str) -> TaskRecord:
    return TaskRecord(Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.WORKING)))


async def test_a_handler_made_without_one_has_the_single_process_null_object() -> None:
    handler = RequestHandler(echo())
    assert isinstance(handler.coordination, SingleProcessCoordination)
    await handler.start()
    # A task left WORKING in the store: no other process can be running it, so it is recovered,
    # and cancelling one asks nobody (and waits for nobody).
    await handler.store.save(working("left"))
    assert await handler.recover() == 1
    await handler.store.save(working("orphan"))
    async with asyncio.timeout(2):  # far less than the wait for another replica's answer
        canceled = await handler.cancel_task(CancelTaskRequest(id="orphan"), NOBODY)
    assert canceled.status.state == TaskState.CANCELED
    await handler.shutdown()


async def test_the_handler_tells_its_coordination_of_runs_cancels_and_recovery() -> None:
    coordination = Recording(elsewhere=True, others=False)
    handler = RequestHandler(echo(), coordination=coordination)
    await handler.start()
    assert coordination.cancel is not None and coordination.recover == handler.recover
    answer = await handler.send_message(send("hi"), NOBODY)
    assert answer.message is not None
    await asyncio.sleep(0)  # the run's end is bookkept after the reply
    (started, finished) = coordination.calls
    assert started[0] == "started" and finished == ("finished", started[1])
    await handler.store.save(working("elsewhere"))
    assert await handler.recover() == 0, "a task another live process runs is left alone"
    await handler.cancel_task(CancelTaskRequest(id="elsewhere"), NOBODY)
    assert coordination.calls[-1] == ("cancel", "elsewhere")
    await handler.shutdown()
    assert coordination.calls[-1] == ("closed", "")


async def test_a_plain_reply_that_saves_no_task_takes_no_lease() -> None:
    agent = Agent("Replier", "replies")

    @agent.skill(replies=True)
    async def reply(ctx: RequestContext) -> None:
        if ctx.text == "task":
            await ctx.working("on it")  # the task is made (and saved) here; the run completes it
            return
        await ctx.reply(ctx.text)

    coordination = Recording(elsewhere=False, others=False)
    handler = RequestHandler(agent, coordination=coordination)
    await handler.start()
    answer = await handler.send_message(send("hi"), NOBODY)
    assert answer.message is not None
    await asyncio.sleep(0)  # the run's end is bookkept after the reply
    assert coordination.calls == [], "nobody else can ask about a task that was never saved"
    answer = await handler.send_message(send("task"), NOBODY)
    assert answer.task is not None and answer.task.status.state == TaskState.COMPLETED
    await asyncio.sleep(0)
    assert coordination.calls == [("started", answer.task.id), ("finished", answer.task.id)]
    await handler.shutdown()
