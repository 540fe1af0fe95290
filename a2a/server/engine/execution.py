"""One execution of an agent for one message: applies what it publishes to the task.

A ``Run`` owns the asyncio task that runs ``agent.execute``. Each event the agent publishes
is applied to the task, saved to the store, then published on the ``EventBus`` (so a
reader never sees a status the store does not have). The task is *materialized* (saved,
announced as the first stream event) before the agent runs, unless the skill may answer with a
plain message (``Agent.may_reply``): then lazily, at the first task event, so a reply leaves no
task; ``returnImmediately`` and follow-ups materialize it at once in any case.

A new task's materialization does not wait for its save when the store can queue it
(``TaskStore.queue_save``): the agent goes on, and the events it publishes meanwhile are *held*
(numbered, not published) until that save is committed. An agent that ends at once (a quick
task) thus queues its first and its last save together, and the store merges them into one
write. Nothing about the task leaves the run before its first save is committed: its events
are published, ``started`` is set and ``visible`` (what GetTask, ListTasks, CancelTask and
SubscribeToTask look at for a task running here) turns true only then.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from ...metadata import USAGE_KEY
from ...types import (
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ..backends.store import DONE, IdempotencyRecord, TaskRecord, TaskStore
from ..push import PushNotifier
from .bus import EventBus
from .events import LoggedEvent
from .latch import Latch
from .run_lock import RunLock

if TYPE_CHECKING:
    from ..authoring.agent import Agent
    from ..authoring.context import RequestContext

__all__ = ["Run", "now_iso"]

log = logging.getLogger("a2a.server")

#: Releases of held events under way (held here so that they are not collected).
_releasing: set[asyncio.Future[None]] = set()

#: Artifact chunks within this many seconds of the last save are saved with the next change.
SAVE_INTERVAL = 0.25


_second: tuple[int, str] = (-1, "")
#: The terminal states, as a set (a frozenset's lookup is cheaper than the enum property).
_ENDED = frozenset(state for state in TaskState if state.is_terminal)
#: The states in which a blocking send is answered: terminal or interrupted.
_SETTLING = _ENDED | frozenset(state for state in TaskState if state.is_interrupted)


def now_iso() -> str:
    """UTC now, fixed width with microseconds, so that timestamps also sort as strings.

    The formatted second is cached (formatting is slow, and a busy server asks many times a
    second); only the microseconds are formatted each time. ``time.time`` rather than
    ``datetime.now``: a third of the cost, and every task event asks.
    """
    global _second
    now = time.time()
    whole = int(now)
    if _second[0] != whole:
        _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{_second[1]}.{int((now - whole) * 1_000_000):06d}Z"


def snapshot(task: Task) -> Task:
    """A copy safe to hand out: later changes to ``task`` (new history, appended artifact
    chunks, which extend an artifact's parts in place) do not show in it.

    A terminal task's lists change no more (the run refuses every event after the end), so
    its copy shares them: only the task's own fields (its metadata may still be set) are copied.
    """
    if task.status.state in _ENDED:
        return msgspec.structs.replace(task)
    return msgspec.structs.replace(
        task,
        artifacts=[msgspec.structs.replace(a, parts=list(a.parts)) for a in task.artifacts] if task.artifacts else None,
        history=list(task.history) if task.history else None,
    )


class Run:
    # Slots: a run lives as long as its task works (an open stream's whole life).
    __slots__ = (
        "_asyncio_task",
        "_done_callback",
        "_entered",
        "_held",
        "_idem",
        "_idem_key",
        "_lock",
        "_materialize_callback",
        "_saved_at",
        "_saving",
        "_uncommitted",
        "_unwinding",
        "announced",
        "bus",
        "first_seq",
        "followers",
        "leased",
        "materialized",
        "push",
        "record",
        "reply",
        "reply_written",
        "settled",
        "shutdown",
        "started",
        "store",
        "streamed",
        "task_id",
        "visible",
    )

    def __init__(
        self,
        *,
        store: TaskStore,
        record: TaskRecord,
        bus: EventBus,
        materialized: bool,
        push: PushNotifier | None = None,
        idempotency_key: tuple[str, str, str] | None,
        idempotency: IdempotencyRecord | None,
    ) -> None:
        self.store = store
        self.record = record
        #: The task's id: fixed for the run's life, and read for every event.
        self.task_id = record.task.id
        self.bus = bus
        self.push = push
        self.materialized = materialized
        self._idem_key = idempotency_key
        self._idem = idempotency
        self._lock = RunLock()
        #: Set when the first answer exists: the task is visible, or a plain message replied.
        self.started = Latch()
        #: Set when the caller of a blocking send can be answered (terminal, interrupted, message).
        self.settled = Latch()
        self.reply: Message | None = None
        #: The write of the reply's idempotency record, when it was not durable at once: whoever
        #: hands ``reply`` to a caller awaits it first (each of them: a failed write fails each).
        self.reply_written: Awaitable[object] | None = None
        self.shutdown = False
        #: A stream of SendStreamingMessage follows this run (so even a plain reply is published).
        self.streamed = False
        #: The task id reached a caller (a follow-up, returnImmediately, or a delivered event).
        self.announced = False
        #: SendStreamingMessage streams following this run now (the last to leave unannounced
        #: cancels it: nobody else can reach it).
        self.followers = 0
        #: This process told the other replicas that it runs the task (``on_materialize``).
        self.leased = False
        self._unwinding = False
        self._asyncio_task: asyncio.Task[None] | None = None
        self._done_callback: Callable[[Run], None] | None = None
        self._materialize_callback: Callable[[Run], None] | None = None
        #: The agent's coroutine began (a run cancelled before that never runs its own end).
        self._entered = False
        #: Sequence number of this run's first event (where its streaming readers start).
        self.first_seq = record.last_seq + 1
        self._saved_at = 0.0
        #: The task is committed and its events may be published (see the module docstring).
        self.visible = materialized
        #: The commit of a save queued without waiting (the task's first), until it is known.
        self._uncommitted: asyncio.Future[None] | None = None
        #: Events numbered after that save, published once a commit covers them (in order).
        #: (``None`` while there are none: a list per run would be kept for its whole life.)
        self._held: list[LoggedEvent] | None = None
        #: The run awaits a save now (it publishes the held events itself once it returns).
        self._saving = False

    @property
    def task(self) -> Task:
        return self.record.task

    @property
    def context_id(self) -> str:
        return self.record.task.context_id or ""

    @property
    def done(self) -> bool:
        return self._asyncio_task is not None and self._asyncio_task.done()

    def on_done(self, callback: Callable[[Run], None]) -> None:
        """Call ``callback(run)`` once the agent's coroutine has finished (or was cancelled
        before it began).

        Called from the run itself as it ends, not as a done callback of its asyncio task:
        that would be one more callback through the event loop for every message. Register it
        before ``start``: with eager tasks (Python 3.12+) a quick agent ends inside ``start``.
        """
        self._done_callback = callback

    def on_materialize(self, callback: Callable[[Run], None]) -> None:
        """Call ``callback(run)`` just before the task is first saved: where the server tells
        other replicas that the task runs here (a run answered with a plain message saves no
        task, and nobody else can ask about it)."""
        self._materialize_callback = callback

    def _notify_done(self) -> None:
        callback, self._done_callback = self._done_callback, None
        if callback is not None:
            callback(self)

    async def wait_done(self) -> None:
        if self._asyncio_task is not None and not self._asyncio_task.done():
            await asyncio.wait([self._asyncio_task])

    # ---- lifecycle ---------------------------------------------------------------------

    async def open(self, *, queue: bool = False) -> None:
        """Make the task visible now (returnImmediately, or a follow-up to an existing task).
        With ``queue`` (a new task) its save may be queued: it is visible once committed."""
        async with self._lock:
            await self._materialize(queue=queue)

    def start(self, agent: Agent, ctx: RequestContext) -> None:
        self._asyncio_task = asyncio.create_task(self._execute(agent, ctx), name=f"a2a-run-{self.task_id}")

    async def cancel(self, *, shutdown: bool = False, wait: float = 10.0) -> None:
        """Cancel the agent's work; the task ends CANCELED (once the agent has unwound)."""
        self.shutdown = shutdown
        task = self._asyncio_task
        if task is not None and not task.done():
            # A run cancelled before its first step never runs its own end, so its task reports
            # it (this callback also fires if the caller of cancel() is itself cancelled).
            task.add_done_callback(self._ended_unentered)
            await self._deliver_cancel(task, wait)
        # A run cancelled before its first step never reaches its own handler: record it here.
        await self._finish(TaskState.CANCELED, self._cancel_note())

    def _ended_unentered(self, _task: asyncio.Task[None]) -> None:
        if not self._entered:
            self._notify_done()

    async def _deliver_cancel(self, task: asyncio.Task[None], wait: float) -> None:
        """Cancel the agent's task, and cancel again until it starts unwinding.

        Python 3.11's ``asyncio.wait_for`` (used inside libraries such as redis-py) can swallow
        a cancellation that arrives as its inner future completes; the agent then runs on. A
        repeated cancel reaches it at its next ``await``.
        """
        deadline = time.monotonic() + wait
        pause = 0.05
        while not task.done() and not self._unwinding:
            task.cancel()
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.wait([task], timeout=min(pause, left))
            pause = min(pause * 2, 1.0)
        left = deadline - time.monotonic()
        if not task.done() and left > 0:
            await asyncio.wait([task], timeout=left)

    def _cancel_note(self) -> str:
        return "Canceled: the server is shutting down" if self.shutdown else "Canceled"

    async def _execute(self, agent: Agent, ctx: RequestContext) -> None:
        self._entered = True
        try:
            try:
                await agent.execute(ctx)
            except asyncio.CancelledError:
                self._unwinding = True
                await self._finish(TaskState.CANCELED, self._cancel_note())
                return
            except Exception as exc:  # the agent's own failure: the task fails, the server goes on
                log.exception("agent %r failed on task %s", agent.name, self.task_id)
                # The type too: a bare KeyError says only 'zzz'.
                await self._finish(TaskState.FAILED, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
                return
            if self.reply is None and self.record.task.status.state not in _SETTLING:
                await self.publish_status(TaskState.COMPLETED, None)
            self.settled.set()
            self.started.set()
        finally:
            self._notify_done()

    async def _finish(self, state: TaskState, note: str) -> None:
        from ..authoring.context import agent_message

        try:
            if self.task.status.state.is_terminal or self.reply is not None:
                return
            message = agent_message(note, task_id=self.task_id, context_id=self.context_id)
            await self.publish_status(state, message)
        except Exception:
            log.exception("could not record the end of task %s", self.task_id)
        finally:
            self.settled.set()
            self.started.set()

    # ---- what the agent publishes -------------------------------------------------------

    async def _materialize(self, *, queue: bool = False) -> None:
        """Save the task and announce it (its first event). With ``queue`` (a lazy
        materialization: nobody has the task id yet) the save may be queued, not awaited."""
        if self.materialized:
            return
        self.materialized = True
        # The message's idempotency record then only matters for a plain reply, which a run
        # with a task no longer gives: not kept for the run's (a stream's) whole life.
        self._idem_key = self._idem = None
        if self._materialize_callback is not None:
            self._materialize_callback(self)
        await self._save_and_log(StreamResponse(task=snapshot(self.record.task)), queue=queue)

    async def _save_and_log(self, event: StreamResponse, *, must_save: bool = True, queue: bool = False) -> None:
        """Number the event, save the task (before anyone can see the event), publish it.

        Artifact chunks may skip the save (``must_save=False``) when the task was saved less
        than ``SAVE_INTERVAL`` ago: the next status change (every task ends with one) saves
        them, and a server that dies in between marks the task FAILED on restart anyway.
        With ``queue`` the save is queued when the store can (``TaskStore.queue_save``) and the
        event held until it is committed (see the module docstring).
        """
        self.record.last_seq += 1
        logged = LoggedEvent(self.record.last_seq, event)  # encoded if anybody reads it
        now = time.monotonic()
        if must_save or now - self._saved_at >= SAVE_INTERVAL:
            if queue and (commit := self.store.queue_save(self.record)) is not None:
                self._saved_at = now
                self._hold(commit, logged)
                return
            self._saving = True
            if self._uncommitted is not None:
                # This save covers the queued one (committed with or after it) and publishes
                # the held events itself: ``_committed`` would be a callback through the loop
                # that finds nothing to do (a quick task's every time). Added back on failure.
                self._uncommitted.remove_done_callback(self._committed)
            try:
                await self.store.save(self.record)
            except BaseException:
                self._saving = False
                if self._held and self._uncommitted is not None:
                    # This save failed (or was cancelled): the held events go out once the
                    # queued save is known committed, or with the next save.
                    self._uncommitted.add_done_callback(self._committed)
                raise
            self._saving = False
            self._saved_at = now
            # This save wrote the whole task: every event numbered so far is covered by it.
            self._uncommitted = None
        elif self._uncommitted is not None:
            self._keep(logged)  # after events not yet published: it waits with them
            return
        if self._held:
            await self._release()
        await self._publish(logged)

    async def _publish(self, logged: LoggedEvent) -> None:
        if not self.visible and self.materialized:
            self.visible = True  # its first save is committed: the task id may be handed out
            self.started.set()
        await self.bus.publish(self.task_id, logged)
        if self.push is not None and self.push.wants(self.task_id):
            # Under the run's lock, so the webhooks' queues get the events in order.
            await self.push.notify(self.task_id, logged)

    # ---- a queued save and the events held behind it -------------------------------------

    def _hold(self, commit: asyncio.Future[None], logged: LoggedEvent) -> None:
        self._uncommitted = commit
        self._keep(logged)
        commit.add_done_callback(self._committed)

    def _keep(self, logged: LoggedEvent) -> None:
        if self._held is None:
            self._held = []
        self._held.append(logged)

    def _committed(self, commit: asyncio.Future[None]) -> None:
        """The queued save's commit is known. A run awaiting a save of its own publishes the
        held events when that returns; otherwise (the agent does something else meanwhile)
        they are published now, so a stream sees the task at once."""
        if commit is not self._uncommitted or self._saving or not self._held:
            return
        if commit.cancelled() or commit.exception() is not None:
            # Not on disk: the next event is saved (the whole task), and releases them.
            self._saved_at = 0.0
            return
        releasing = asyncio.ensure_future(self._release_locked())
        _releasing.add(releasing)
        releasing.add_done_callback(_releasing.discard)

    async def _release_locked(self) -> None:
        async with self._lock:
            commit = self._uncommitted
            committed = commit is not None and commit.done() and not commit.cancelled() and commit.exception() is None
            if self._held and committed:
                await self._release()

    async def _release(self) -> None:
        """Publish the held events (the save they wait for is committed, or a later one is)."""
        self._uncommitted = None
        held, self._held = self._held or [], None
        for logged in held:
            await self._publish(logged)

    async def publish_status(self, state: TaskState, message: Message | None) -> None:
        async with self._lock:
            self._check_open()
            await self._status(state, message)

    async def _status(self, state: TaskState, message: Message | None) -> None:
        if not self.materialized:
            await self._materialize(queue=True)
        task = self.record.task
        status = TaskStatus(state=state, message=message, timestamp=now_iso())
        task.status = status
        if message is not None:
            task.history = [*(task.history or []), message]
        # Model use travels with the status (metadata only changes between events).
        usage = task.metadata.get(USAGE_KEY) if task.metadata else None
        event = TaskStatusUpdateEvent(
            task_id=task.id,
            context_id=task.context_id or "",
            status=status,
            metadata={USAGE_KEY: usage} if usage is not None else None,
        )
        await self._save_and_log(StreamResponse(status_update=event))
        if state in _SETTLING:
            self.settled.set()

    async def publish_artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> None:
        async with self._lock:
            self._check_open()
            if not self.materialized:
                await self._materialize(queue=True)
            task = self.record.task
            task.artifacts = _merge_artifact(task.artifacts or [], artifact, append)
            event = TaskArtifactUpdateEvent(
                task_id=task.id,
                context_id=task.context_id or "",
                artifact=artifact,
                append=append,
                last_chunk=last_chunk,
            )
            await self._save_and_log(StreamResponse(artifact_update=event), must_save=False)

    async def publish_message(self, message: Message) -> None:
        async with self._lock:
            self._check_open()
            if self.materialized:
                # Inside a task a message is a status update carrying it (a stream is either
                # one Message, or a Task and its events).
                state = self.task.status.state
                await self._status(TaskState.WORKING if state == TaskState.SUBMITTED else state, message)
                return
            # No task was created, so the reply must not point at one.
            message = msgspec.structs.replace(message, task_id=None, context_id=message.context_id or self.context_id)
            self.reply = message
            if self._idem_key is not None and self._idem is not None:
                self._idem.message = message
                written = self.store.record_reply(self._idem_key, self._idem)
                if written is DONE:
                    pass
                elif self.streamed or self.followers:
                    await written  # a stream is told nothing that is not on disk
                else:
                    # The unary answer waits for it (``reply_written``); the agent goes on.
                    self.reply_written = written
            self.record.last_seq += 1
            if self.streamed or self.followers:
                # A reply has no task to resume: it only goes to a stream waiting for it. Only
                # streams of this message in this process can be (the task id of a run that
                # never saved its task reached nobody else), and they are counted: so a server
                # on a shared bus sends nothing to it for a plain reply.
                reply = StreamResponse(message=message)
                await self.bus.publish(self.task_id, LoggedEvent(self.record.last_seq, reply))
            self.started.set()
            self.settled.set()

    def _check_open(self) -> None:
        if self.reply is not None:
            raise RuntimeError("the agent already answered with a message; it cannot publish task events")
        state = self.record.task.status.state
        if state in _ENDED:
            raise RuntimeError(f"task {self.task_id} is already {state.value}")


def _merge_artifact(artifacts: list[Artifact], artifact: Artifact, append: bool) -> list[Artifact]:
    """An appended chunk extends the artifact with the same id (in place: no copy of the parts
    so far, so a long stream costs linear time); any other artifact is added, or replaces the
    one with its id, as a copy the task owns."""
    own = msgspec.structs.replace(artifact, parts=list(artifact.parts))
    for i, existing in enumerate(artifacts):
        if existing.artifact_id == artifact.artifact_id:
            if append:
                existing.parts.extend(artifact.parts)
            else:
                artifacts[i] = own
            return artifacts
    artifacts.append(own)
    return artifacts
