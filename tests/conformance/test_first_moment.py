"""A task exists from the first moment: visible, fetchable and cancelable before the agent speaks.

A2A 1.0, ``TaskState``: ``TASK_STATE_SUBMITTED`` "Indicates that a task has been successfully
submitted and acknowledged." §3.3.3: "Operations return immediately with either Task objects or
Message objects, and when a Task is returned, processing continues in the background." A skill
that works a long time before it publishes anything is still a task the server has
acknowledged: the first stream event is the Task, it is in ListTasks, GetTask fetches it,
CancelTask stops it (the agent's coroutine really ends), and a stream whose client leaves before
it saw any task id cancels the work nobody can reach.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from a2a import Agent, RequestContext
from a2a.types import Task, TaskState, TaskStatusUpdateEvent

from .conftest import OpenClient, StartServer
from .helpers import bounded, collect


@dataclass
class Sleeper:
    """What the sleeping skill went through."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    published: bool = False


def sleeping_agent(sleeper: Sleeper, *, replies: bool = False) -> Agent:
    """One skill that sleeps an hour without publishing anything (``replies``: it may answer
    with a plain Message, so its task is made only at its first task event)."""
    agent = Agent("Sleeper", description="Sleeps before it says anything")

    @agent.skill(tags=["test"], replies=replies)
    async def sleep(ctx: RequestContext) -> str:
        sleeper.entered.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            sleeper.stopped.set()
            raise
        sleeper.published = True
        return "woke up"

    return agent


async def test_a_sleeping_skill_is_a_task_from_the_first_moment(serve: StartServer, open_client: OpenClient) -> None:
    """The first stream event is the Task (SUBMITTED or WORKING) before the agent publishes
    anything; a second client lists it, fetches it and cancels it, and the agent stops."""
    sleeper = Sleeper()
    server = await serve(sleeping_agent(sleeper))
    watcher, other = await open_client(server), await open_client(server)
    events = watcher.stream("sleep, please")
    first = (await bounded(anext(events))).payload
    assert isinstance(first, Task), f"the first event of a task's stream is the Task, got {first!r}"
    assert first.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    assert not sleeper.published

    listed = await bounded(other.list_tasks())
    assert [task.id for task in listed.tasks] == [first.id], "the task is in ListTasks at once"
    fetched = await bounded(other.get_task(first.id))
    assert fetched.status.state in (TaskState.SUBMITTED, TaskState.WORKING)

    await bounded(sleeper.entered.wait())
    canceled = await bounded(other.cancel_task(first.id))
    assert canceled.status.state == TaskState.CANCELED
    await bounded(sleeper.stopped.wait())  # the agent's coroutine saw CancelledError
    rest = [event.payload for event in await collect(events)]
    assert isinstance(rest[-1], TaskStatusUpdateEvent) and rest[-1].status.state == TaskState.CANCELED
    assert not sleeper.published


async def test_subscribe_follows_a_task_that_has_not_published_yet(serve: StartServer, open_client: OpenClient) -> None:
    """SubscribeToTask reaches a task whose agent has published nothing, and sees it end."""
    sleeper = Sleeper()
    server = await serve(sleeping_agent(sleeper))
    client = await open_client(server)
    task = await bounded(client.send("sleep, please", return_immediately=True))
    assert isinstance(task, Task)
    await bounded(sleeper.entered.wait())
    events = client.subscribe(task.id)
    snapshot = (await bounded(anext(events))).payload
    assert isinstance(snapshot, Task) and snapshot.id == task.id
    await bounded(client.cancel_task(task.id))
    rest = [event.payload for event in await collect(events)]
    assert isinstance(rest[-1], TaskStatusUpdateEvent) and rest[-1].status.state == TaskState.CANCELED
    await bounded(sleeper.stopped.wait())


async def test_a_stream_left_before_it_saw_a_task_id_cancels_the_run(
    serve: StartServer, open_client: OpenClient
) -> None:
    """A skill that may reply with a Message has no task until it publishes one: a client that
    leaves its stream before then leaves work nobody can reach, so the work stops."""
    sleeper = Sleeper()
    server = await serve(sleeping_agent(sleeper, replies=True))
    client = await open_client(server)
    events = client.stream("sleep, please")
    waiting = asyncio.ensure_future(anext(events))
    await bounded(sleeper.entered.wait())
    assert not waiting.done(), "a skill that may reply shows nothing before it answers"
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    await events.aclose()
    await bounded(sleeper.stopped.wait())


async def test_a_stream_left_after_it_saw_the_task_leaves_the_task_running(
    serve: StartServer, open_client: OpenClient
) -> None:
    """Leaving a stream that delivered the task id does not cancel the task. A2A 1.0 §3.5.2:
    "Closing one stream MUST NOT affect other active streams for the same task" and "The task
    lifecycle is independent of any individual stream's lifecycle"."""
    sleeper = Sleeper()
    server = await serve(sleeping_agent(sleeper))
    client = await open_client(server)
    events = client.stream("sleep, please")
    first = (await bounded(anext(events))).payload
    assert isinstance(first, Task)
    await events.aclose()
    await bounded(sleeper.entered.wait())
    await asyncio.sleep(0.2)  # give a wrongly sent cancellation time to land (the check is that none does)
    assert not sleeper.stopped.is_set()
    assert (await bounded(client.get_task(first.id))).status.state in (TaskState.SUBMITTED, TaskState.WORKING)
    await bounded(client.cancel_task(first.id))
    await bounded(sleeper.stopped.wait())
