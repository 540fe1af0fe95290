"""The one request handler: the A2A operations, whatever binding carried the request.

Bindings decode a request into the method's typed params, call ``call`` (unary methods) or
``stream`` (streaming methods) with a ``CallContext``, and encode what comes back, or the
``ProtocolError`` raised, in their own framing. Behaviour fixed here is fixed on every binding.

``call`` and ``stream`` are the one exception boundary: only ``ProtocolError`` leaves them. Any
other exception is logged here, once, and the caller gets a generic ``InternalError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from ... import types as t
from ...errors import (
    AuthenticationRequiredError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InternalError,
    InvalidParamsError,
    MethodNotFoundError,
    ProtocolError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ...metadata import OWNER_SKILL_KEY
from ...protocol.codec import encode
from ...protocol.methods import OPERATIONS
from ..authoring.agent import Agent
from ..authoring.context import RequestContext
from ..backends.store import IdempotencyRecord, InMemoryTaskStore, TaskQuery, TaskRecord, TaskStore
from ..push import PushNotifier
from .bus import EventBus, InMemoryEventBus
from .coordination import LIVENESS_POLL_SECONDS, Coordination, SingleProcessCoordination
from .events import LoggedEvent, LogReader
from .execution import Run, now_iso, snapshot
from .ids import new_id, new_task_id

if TYPE_CHECKING:
    from .observe import Observer

__all__ = ["CallContext", "RequestHandler"]

log = logging.getLogger("a2a.server")

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50
#: How long a follow-up waits for an agent that asked for input to return from ``execute``.
FOLLOW_UP_GRACE = 5.0
#: How long CancelTask waits for another replica to stop a task before marking it itself.
REMOTE_CANCEL_WAIT = 10.0
#: How long a retried blocking send waits for a task running elsewhere.
SETTLE_WAIT = 300.0
#: How long after a lease would lapse a wait for its task looks again (Redis expires keys to
#: the millisecond; this is for the clocks of two processes).
_LAPSE_MARGIN = 0.05
#: When a wait for a task running elsewhere first looks whether it still runs, and looks again
#: while another process is ending it.
_LOOK_AGAIN = 0.25
#: Ends a task whose process died (its record read again); whether it was still to be ended.
OrphanEnd = Callable[[TaskRecord], Awaitable[bool]]
#: The status message of tasks that were running when their server died.
RESTART_NOTE = "Failed: the server restarted while this task was running; send the message again to retry"


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling, and what the binding learned from the transport."""

    principal: str | None = None
    extensions: frozenset[str] = field(default_factory=frozenset)
    #: The last event id the client saw (SSE ``Last-Event-ID``): resume after it.
    last_event_id: int | None = None
    #: The caller's W3C trace context (HTTP headers, or the JSON-RPC envelope on WebSocket and
    #: stdio): the operation's span continues the caller's trace.
    traceparent: str | None = None
    tracestate: str | None = None
    #: The protocol version the binding serves this request in: ``""`` is 1.0, ``"0.3"`` a
    #: request translated at the edge (``v03``). Kept with what outlives the request (a push
    #: config: its webhook is sent the shapes its registrant speaks).
    dialect: str = ""

    @property
    def owner(self) -> str:
        return self.principal or ""


def view(task: t.Task, history_length: int | None, include_artifacts: bool = True) -> t.Task:
    """The task as a caller asked to see it (history trimmed, artifacts optionally left out)."""
    history = task.history
    if history_length is not None and history:
        history = history[-history_length:] if history_length > 0 else None
    artifacts = task.artifacts if include_artifacts else None
    if history is task.history and artifacts is task.artifacts:
        return task
    return msgspec.structs.replace(task, history=history or None, artifacts=artifacts)


#: What a request without ``configuration`` gets (read only; one object, not one per request).
_DEFAULT_CONFIGURATION = t.SendMessageConfiguration()


def _accepts(accepted: list[str], offered: list[str]) -> bool:
    for want in accepted:
        major = want.split("/")[0]
        for have in offered:
            if want in ("*/*", "*", have) or have == "*/*" or (want == f"{major}/*" and have.startswith(major + "/")):
                return True
    return False


def media_type_of(part: t.Part) -> str:
    """A part's media type, as its input mode is judged: its ``mediaType`` (parameters such as
    ``charset`` left out); without one, ``text/plain`` for text, ``application/json`` for data,
    ``application/octet-stream`` for a file (``raw`` or ``url``)."""
    if part.media_type:
        return part.media_type.split(";")[0].strip().lower()
    if part.text is not t.UNSET:
        return "text/plain"
    if part.data is not t.UNSET:
        return "application/json"
    return "application/octet-stream"


class RequestHandler:
    """Serves one agent. Owns the task store and the runs in flight in this process."""

    def __init__(
        self,
        agent: Agent,
        store: TaskStore | None = None,
        bus: EventBus | None = None,
        push: PushNotifier | None = None,
        coordination: Coordination | None = None,
        *,
        authenticates: bool = False,
    ) -> None:
        self.agent = agent
        #: Whether the bindings serving this handler authenticate their callers (only then can
        #: the extended agent card, which is for authenticated callers, be served).
        self.authenticates = authenticates
        self.store = store or InMemoryTaskStore()
        self.bus = bus or InMemoryEventBus()
        #: Push notifications (``None``: the capability is off and its operations are -32003).
        self.push = push
        if push is not None and push.task_view is None:
            # A 0.3 webhook is sent the whole task (what 0.3 servers push), read from our store.
            push.task_view = self._stored_task
        #: What the processes serving this agent tell each other (one process: nothing).
        self.coordination = coordination or SingleProcessCoordination()
        #: Spans, metrics and the access log's fields for each operation (``None``: none of them).
        self.observer: Observer | None = None
        self._runs: dict[str, Run] = {}
        # Bound once, given to every run: a bound method made per run would be two more objects
        # held by each open stream.
        self._run_done: Callable[[Run], None] = self._forget_run
        self._run_materializing: Callable[[Run], None] = self._hold
        #: Cancellations of runs whose only stream went away (held so they are not collected).
        self._cancelling: set[asyncio.Future[None]] = set()
        # The operation table names the method that serves each operation.
        self._unary: dict[str, Callable[[Any, CallContext], Awaitable[Any]]] = {
            spec.name: getattr(self, spec.handler) for spec in OPERATIONS if not spec.streaming
        }
        self._streaming: dict[str, Callable[[Any, CallContext], AsyncIterator[LoggedEvent]]] = {
            spec.name: getattr(self, spec.handler) for spec in OPERATIONS if spec.streaming
        }

    @property
    def offers_extended_card(self) -> bool:
        """``capabilities.extendedAgentCard``: the agent offers one and callers can authenticate."""
        return self.agent.offers_extended_card and self.authenticates

    def running_states(self) -> dict[str, int]:
        """How many tasks this process is running, by state (for the metrics)."""
        counts: dict[str, int] = {}
        for run in self._runs.values():
            state = run.task.status.state.value
            counts[state] = counts.get(state, 0) + 1
        return counts

    # ---- dispatch: the exception boundary ----------------------------------------------

    async def call(self, method: str, params: Any, ctx: CallContext) -> Any:
        """The unary operation's answer; raises ``ProtocolError`` only."""
        handler = self._unary.get(method)
        if handler is None:
            raise MethodNotFoundError(f"{method} is not a unary method")
        try:
            if self.observer is not None:
                return await self.observer.call(method, ctx, handler, params)
            return await handler(params, ctx)
        except ProtocolError:
            raise
        except Exception as exc:
            raise _internal_error(method, exc) from exc

    def stream(self, method: str, params: Any, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
        """The streaming operation's events; it, and iterating it, raise ``ProtocolError`` only.
        The caller ``aclose``s them when it stops reading, whatever the reason (the stream then
        leaves its run: see ``_RunStream``)."""
        handler = self._streaming.get(method)
        if handler is None:
            raise MethodNotFoundError(f"{method} is not a streaming method")
        if not self.agent.streaming:
            raise UnsupportedOperationError("This agent does not support streaming (capabilities.streaming is false)")
        events = handler(params, ctx)
        if not isinstance(events, _RunStream):  # it guards itself
            events = _Guarded(method, events)
        return events if self.observer is None else self.observer.stream(method, ctx, events)

    # ---- SendMessage -------------------------------------------------------------------

    async def send_message(self, req: t.SendMessageRequest, ctx: CallContext) -> t.SendMessageResponse:
        config = req.configuration or _DEFAULT_CONFIGURATION
        run, replayed = await self._start(req, ctx, materialize=config.return_immediately)
        if run is None:
            return self._answer(replayed, config.history_length)
        await (run.started if config.return_immediately else run.settled).wait()
        if run.reply_written is not None:
            await run.reply_written
        if run.reply is not None:
            return t.SendMessageResponse(message=run.reply)
        return t.SendMessageResponse(task=view(snapshot(run.task), config.history_length))

    def send_streaming_message(self, req: t.SendMessageRequest, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
        # An object rather than an async generator (see ``_RunStream``); it opens on its first
        # event, with ``_open_stream``.
        return _RunStream(self, req, ctx)

    async def _open_stream(
        self, stream: _RunStream, req: t.SendMessageRequest, ctx: CallContext
    ) -> AsyncIterator[LoggedEvent]:
        """The events of ``stream``: its run's (``stream`` then follows the run), or the one
        answer of a run that already gave it."""
        run, replayed = await self._start(req, ctx, materialize=False, streamed=True)
        if run is not None and run.reply_written is not None:
            await run.reply_written
        if run is not None and run.reply is not None:
            # Attached to a run that already answered with a plain message: that is the stream.
            return _one(t.StreamResponse(message=run.reply))
        if run is None:
            # A retried stream whose task already ended: its final state is the whole answer.
            answer = self._answer(replayed, None)
            return _one(
                t.StreamResponse(task=answer.task)
                if answer.task is not t.UNSET
                else t.StreamResponse(message=answer.message)
            )
        # A retried stream (same messageId) that saw some events resumes after them.
        start = run.first_seq if ctx.last_event_id is None else max(run.first_seq, ctx.last_event_id + 1)
        events = self.bus.follow(run.task_id, start)
        stream.follow(run, events)
        return events

    def _left(self, run: Run) -> None:
        """A stream of ``run`` ended or went away."""
        run.followers -= 1
        if not (run.announced or run.followers or run.done or run.settled.is_set()):
            # Gone before it saw a task id: nobody else can reach this run, so it stops.
            self._cancel_soon(run)

    def _cancel_soon(self, run: Run) -> None:
        """Cancel ``run`` without waiting for it (the caller may itself be unwinding)."""
        cancelling = asyncio.ensure_future(run.cancel())
        self._cancelling.add(cancelling)
        cancelling.add_done_callback(self._cancelling.discard)

    def _answer(self, replayed: t.Task | t.Message | None, history_length: int | None) -> t.SendMessageResponse:
        if isinstance(replayed, t.Message):
            return t.SendMessageResponse(message=replayed)
        assert replayed is not None
        return t.SendMessageResponse(task=view(replayed, history_length))

    async def _start(
        self, req: t.SendMessageRequest, ctx: CallContext, *, materialize: bool, streamed: bool = False
    ) -> tuple[Run | None, t.Task | t.Message | None]:
        """Start (or find again, for a retried messageId) the run for this message.

        Returns ``(run, None)`` to follow a run in this process, or ``(None, outcome)`` when a
        retry finds a finished outcome.
        """
        message = req.message
        self._check_request(req, ctx)
        tenant = req.tenant or ""
        owner = ctx.principal or ""  # ``ctx.owner``, read once without the property's call
        fingerprint = hashlib.sha256(encode(message)).hexdigest()
        # The message's content is part of its idempotency key: a retry of the same message
        # finds its outcome, a different message under a used messageId is a new message.
        key = (owner, tenant, f"{message.message_id}#{fingerprint}")
        if message.task_id:
            # A retried follow-up finds its outcome before the task's state is judged (the task
            # may have finished since, which would refuse a *new* message).
            seen = await self.store.get_message(key)
            if seen is not None:
                run, outcome = await self._replay(seen)
                if run is not None or outcome is not None:
                    return run, outcome
        existing_record = await self._task_for(message, ctx, tenant) if message.task_id else None
        # The skill first, before anything is claimed or registered: a message it refuses (bad
        # arguments, a media type it does not accept) leaves no trace. A follow-up goes to the
        # skill that owns the task.
        skill = self.agent.select_skill(message, existing_record.task if existing_record else None, req.metadata)
        self._check_input_modes(message, skill)
        task_id = existing_record.task.id if existing_record else new_task_id()
        claim = IdempotencyRecord(fingerprint=fingerprint, task_id=task_id)
        previous = await self.store.claim_message(key, claim)
        if previous is not None:
            run, outcome = await self._replay(previous)
            if run is not None or outcome is not None:
                return run, outcome
            # Claimed before, but its task was never saved (the server died in between): the
            # message was never accepted, so it runs now, under the id it was given then.
            task_id = claim.task_id = previous.task_id or task_id
            await self.store.update_message(key, claim)
        push_config = req.configuration.task_push_notification_config if req.configuration else None
        if push_config is not None and self.push is not None:
            # Registered before the agent can publish, so the webhook gets every event.
            await self.push.create(task_id, ctx.owner, tenant, push_config, dialect=ctx.dialect)
        run, rc = self._begin(req, ctx, owner, existing_record, skill, task_id, key, claim, materialize=materialize)
        if materialize or existing_record is not None or not self.agent.may_reply(skill):
            # The task exists (saved, the first stream event) before the agent runs, so slow
            # work can be listed, fetched and cancelled at once. Only a skill that may answer
            # with a plain message waits for its first task event (a reply leaves no task).
            # A new task's save may be queued: the agent starts at once, and the task is
            # visible (its events published, ``started`` set) once that save is committed; a
            # quick agent's last save then merges with it.
            await self._open(run, rc, queue=existing_record is None)
        run.start(self.agent, rc)
        run.streamed = streamed
        return run, None

    async def _replay(self, previous: IdempotencyRecord) -> tuple[Run | None, t.Task | t.Message | None]:
        if previous.message is not None:
            return None, previous.message
        run = self._runs.get(previous.task_id or "")
        if run is not None:
            return run, None
        record = await self.store.get(previous.task_id or "")
        if record is None:
            return None, None
        state = record.task.status.state
        if not (state.is_terminal or state.is_interrupted):
            # Running elsewhere: answered when it settles (or, if its replica died, at once).
            record = await self._wait_settled(record, orphaned=self._fail_orphan)
        return None, record.task

    async def _task_for(self, message: t.Message, ctx: CallContext, tenant: str) -> TaskRecord | None:
        """The existing task a follow-up message continues (``None`` for a new task)."""
        if not message.task_id:
            return None
        record = await self._owned(message.task_id, ctx, tenant)
        task = record.task
        if message.context_id and task.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                f"contextId {message.context_id!r} does not match task {task.id}'s contextId {task.context_id!r}"
            )
        if task.status.state.is_terminal:
            raise UnsupportedOperationError(
                f"Task {task.id} is {task.status.state.value}: a terminal task accepts no more messages; "
                "start a new task (reuse its contextId to stay in the conversation)"
            )
        run = self._runs.get(task.id)
        if run is not None and task.status.state.is_interrupted:
            # The agent asked for input and is returning; give it a moment to finish.
            await asyncio.wait([asyncio.ensure_future(run.wait_done())], timeout=FOLLOW_UP_GRACE)
        if (run is not None and not run.done) or not task.status.state.is_interrupted:
            # Judged again after the wait: the task may have moved on meanwhile.
            state = task.status.state
            raise UnsupportedOperationError(
                f"Task {task.id} is {state.value}: send a follow-up only when it asks for input"
            )
        return record

    def _begin(
        self,
        req: t.SendMessageRequest,
        ctx: CallContext,
        owner: str,
        existing: TaskRecord | None,
        skill: str | None,
        task_id: str,
        key: tuple[str, str, str],
        claim: IdempotencyRecord,
        *,
        materialize: bool,
    ) -> tuple[Run, RequestContext]:
        """The run for an accepted message, registered and ready to start (not a coroutine: a
        reply-only message goes from here to its agent without one more frame)."""
        message = req.message
        if existing is not None:
            record = existing
            prior = snapshot(record.task)
            message = msgspec.structs.replace(message, task_id=task_id, context_id=record.task.context_id)
            record.task.history = [*(record.task.history or []), message]
            # Accepted: the task works again (a second follow-up is now refused, and a stream of
            # this one does not end at the old INPUT_REQUIRED state).
            record.task.status = t.TaskStatus(state=t.TaskState.WORKING, timestamp=now_iso())
        else:
            prior = None
            context_id = message.context_id or new_id()
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
            metadata = req.metadata
            if skill is not None:
                # The skill that owns the task, kept with it (so it survives a restart).
                metadata = {**(metadata or {}), OWNER_SKILL_KEY: skill}
            task = t.Task(
                id=task_id,
                context_id=context_id,
                status=t.TaskStatus(state=t.TaskState.SUBMITTED, timestamp=now_iso()),
                history=[message],
                metadata=metadata,
            )
            # Fresh: a new id (or one whose claim found no task saved), so no store holds anything under it.
            record = TaskRecord(task, owner, req.tenant or "", 0, True)
        run = self._run(record, materialized=False, idempotency_key=key, idempotency=claim)
        self._runs[task_id] = run
        rc = RequestContext(run, message, prior, skill, ctx.principal)
        run.on_done(self._run_done)  # before start: with eager tasks a quick run ends in start
        run.on_materialize(self._run_materializing)
        # The caller of a follow-up or of a returnImmediately send knows (or gets) the task id.
        run.announced = existing is not None or materialize
        return run, rc

    def _hold(self, run: Run) -> None:
        """Replicas: a lease says the task runs here, written before the task is first saved
        (so no replica sees it unfinished and unheld). A run answered with a plain message
        never saves its task, and costs no lease."""
        if self._runs.get(run.task_id) is run:
            run.leased = True
            self.coordination.run_started(run.task_id)

    async def _open(self, run: Run, rc: RequestContext, *, queue: bool) -> None:
        """Save (or queue the save of) and announce the run's task before its agent starts."""
        try:
            await run.open(queue=queue)
        except asyncio.CancelledError:
            # The caller left while the task was being saved: it may be saved, and nobody
            # knows its id, so it ends CANCELED (a retry then finds that, not a dead run).
            run.start(self.agent, rc)
            self._cancel_soon(run)
            raise
        except BaseException:
            self._forget_run(run)  # never started: a retry must not wait on it
            raise

    def _forget_run(self, run: Run) -> None:
        """The agent has returned: the run is no longer this process's (and no longer leased)."""
        if self._runs.get(run.task_id) is run:
            del self._runs[run.task_id]
            if run.leased:
                self.coordination.run_finished(run.task_id)
            if self.observer is not None:
                self.observer.run_ended(run.task.status.state.value)

    def _check_request(self, req: t.SendMessageRequest, ctx: CallContext) -> None:
        config = req.configuration
        if config is not None:
            if config.task_push_notification_config is not None and self.push is None:
                raise PushNotificationNotSupportedError()
            if config.history_length is not None and config.history_length < 0:
                raise InvalidParamsError("configuration.historyLength must be >= 0")
            if config.accepted_output_modes and not _accepts(
                config.accepted_output_modes, self.agent.default_output_modes
            ):
                raise ContentTypeNotSupportedError(
                    f"None of acceptedOutputModes {config.accepted_output_modes} is produced by this agent "
                    f"(it produces {self.agent.default_output_modes})"
                )
        if not req.message.parts:
            raise InvalidParamsError("message.parts must contain at least one part")
        if req.message.role != t.Role.USER:
            raise InvalidParamsError("message.role must be ROLE_USER for a message sent to an agent")
        for ext in self.agent.extensions:
            if ext.required and ext.uri not in ctx.extensions:
                raise ExtensionSupportRequiredError(
                    f"This agent requires the extension {ext.uri}: list it in the A2A-Extensions header"
                )

    def _check_input_modes(self, message: t.Message, skill_id: str | None) -> None:
        """Every part's media type is one the chosen skill (its ``inputModes``, else the agent's
        ``defaultInputModes``) accepts; modes may be wildcards (``*/*``, ``text/*``). Checked
        with the skill the message goes to (for a follow-up, the task's own), before it runs."""
        skill: t.AgentSkill | None = None
        for candidate in self.agent.skills:  # a loop, not next() over a generator: no frame
            if candidate.card.id == skill_id:
                skill = candidate.card
                break
        modes = (skill.input_modes if skill is not None else None) or self.agent.default_input_modes
        for part in message.parts:
            media_type = media_type_of(part)
            if media_type not in modes and not _accepts(modes, [media_type]):  # the usual case first
                whom = f"skill {skill_id!r}" if skill is not None and skill.input_modes else "this agent"
                raise ContentTypeNotSupportedError(f"{whom} does not accept {media_type} input (it accepts {modes})")

    # ---- tasks -------------------------------------------------------------------------

    async def _owned(self, task_id: str, ctx: CallContext, tenant: str | None) -> TaskRecord:
        """The task if it exists *and* belongs to the caller; anything else looks like 'not found'."""
        run = self._runs.get(task_id)
        # A task running here is fresher in memory than in the store (chunk saves are batched).
        record = run.record if run is not None else await self.store.get(task_id)
        if record is None or record.owner != ctx.owner or record.tenant != (tenant or ""):
            raise TaskNotFoundError(f"Task not found: {task_id}")
        if run is not None and not run.visible:
            # Not materialized, or its first save is not committed yet: its id was handed to nobody.
            raise TaskNotFoundError(f"Task not found: {task_id}")
        return record

    async def get_task(self, req: t.GetTaskRequest, ctx: CallContext) -> t.Task:
        if req.history_length is not None and req.history_length < 0:
            raise InvalidParamsError("historyLength must be >= 0")
        record = await self._owned(req.id, ctx, req.tenant)
        return view(snapshot(record.task), req.history_length)

    async def list_tasks(self, req: t.ListTasksRequest, ctx: CallContext) -> t.ListTasksResponse:
        page_size = DEFAULT_PAGE_SIZE if req.page_size is None else req.page_size
        if not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidParamsError(f"pageSize must be between 1 and {MAX_PAGE_SIZE}, got {page_size}")
        if req.history_length is not None and req.history_length < 0:
            raise InvalidParamsError("historyLength must be >= 0")
        query = TaskQuery(
            owner=ctx.owner,
            tenant=req.tenant or "",
            context_id=req.context_id,
            state=req.status if req.status != t.TaskState.UNSPECIFIED else None,
            status_timestamp_after=_normalize_timestamp(req.status_timestamp_after),
            page_size=page_size,
            page_token=req.page_token or None,
        )
        page = await self.store.list(query)
        tasks = [view(snapshot(r.task), req.history_length, bool(req.include_artifacts)) for r in page.records]
        return t.ListTasksResponse(
            tasks=tasks, next_page_token=page.next_page_token, page_size=page_size, total_size=page.total_size
        )

    async def cancel_task(self, req: t.CancelTaskRequest, ctx: CallContext) -> t.Task:
        record = await self._owned(req.id, ctx, req.tenant)
        if record.task.status.state.is_terminal:
            raise TaskNotCancelableError(
                f"Task {req.id} is already {record.task.status.state.value} and cannot be canceled"
            )
        run = self._runs.get(req.id)
        if run is not None:
            await run.cancel()
            return snapshot(run.task)
        if not record.task.status.state.is_interrupted and await self.coordination.request_cancel(req.id):
            # A live replica runs it and was asked to stop: wait to see the end (if that replica
            # dies meanwhile, the wait ends the task here as soon as the death is noticed).
            record = await self._wait_settled(record, timeout=REMOTE_CANCEL_WAIT, orphaned=self._cancel_orphan)
            if record.task.status.state.is_terminal:
                return snapshot(record.task)
        # Nobody runs it (it waits for input, or its replica died): it ends here, at once.
        if await self._end_orphan(req.id, self._cancel_orphan) is None:
            # A replica still runs it and did not stop within REMOTE_CANCEL_WAIT: overruled.
            await self._cancel_idle(await self.store.get(req.id) or record)
        record = await self.store.get(req.id) or record
        return snapshot(record.task)

    async def _cancel_requested(self, task_id: str) -> None:
        """Another replica asked to cancel ``task_id``: cancel it if it runs here."""
        run = self._runs.get(task_id)
        if run is not None:
            await run.cancel()

    async def _wait_settled(
        self, record: TaskRecord, timeout: float = SETTLE_WAIT, *, orphaned: OrphanEnd
    ) -> TaskRecord:
        """Follow a task running elsewhere until it is terminal or interrupted (or time is up).

        While a live process runs it, the wait looks again when that process's lease would
        lapse unless renewed (with Redis, every 2-3 s); once none runs it (its process died),
        ``orphaned`` ends it here at once, not waiting for the recovery of the dead process's
        tasks.
        """
        task_id = record.task.id

        async def follow() -> None:
            async for _ in self.bus.follow(task_id, record.last_seq + 1):
                pass

        following = asyncio.ensure_future(follow())
        deadline = time.monotonic() + timeout
        # The first look comes a moment later: a run that has just started elsewhere may have
        # saved its task a moment before its lease was written.
        pause = _LOOK_AGAIN
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                await asyncio.wait([following], timeout=min(left, pause))
                if following.done() or time.monotonic() >= deadline:
                    break
                if task_id in self._runs:  # a follow-up started here meanwhile: its run ends it
                    pause = LIVENESS_POLL_SECONDS
                    continue
                lease = await self.coordination.lease_left(task_id)
                if lease is not None:
                    pause = lease + _LAPSE_MARGIN  # just after it would lapse, unless renewed
                elif await self._end_orphan(task_id, orphaned) is not None:
                    break
                else:
                    pause = _LOOK_AGAIN  # another process is ending it now
        finally:
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
        return await self.store.get(task_id) or record

    async def _end_orphan(self, task_id: str, end: OrphanEnd) -> bool | None:
        """End ``task_id`` with ``end`` if no live process runs it and no other process is
        ending it (``None`` otherwise); whether ``end`` found it still to be ended."""
        if not await self.coordination.claim_orphan(task_id):
            return None
        try:
            # Read again once claimed: it may have moved on (or been ended) since it was read.
            record = await self.store.get(task_id)
            if record is None:
                return False
            # Its dead process may have published events it had not saved yet: the end follows them.
            record.last_seq = max(record.last_seq, await self.bus.last_published(task_id) or 0)
            return await end(record)
        finally:
            await self.coordination.release_orphan(task_id)

    async def _fail_orphan(self, record: TaskRecord) -> bool:
        """FAILED, as after a restart, if it is still SUBMITTED or WORKING."""
        from ..authoring.context import agent_message

        state = record.task.status.state
        if state.is_terminal or state.is_interrupted:
            return False
        note = agent_message(RESTART_NOTE, task_id=record.task.id, context_id=record.task.context_id)
        await self._end_idle(record, t.TaskState.FAILED, note)
        return True

    async def _cancel_orphan(self, record: TaskRecord) -> bool:
        """CANCELED, unless it has ended."""
        if record.task.status.state.is_terminal:
            return False
        await self._cancel_idle(record)
        return True

    async def _cancel_idle(self, record: TaskRecord) -> None:
        """Cancel a task no agent code is running for (e.g. waiting for input)."""
        await self._end_idle(record, t.TaskState.CANCELED, None)

    async def _end_idle(self, record: TaskRecord, state: t.TaskState, note: t.Message | None) -> None:
        """Give a task no agent code is running for its final state."""
        run = self._run(record, materialized=True, idempotency_key=None, idempotency=None)
        await run.publish_status(state, note)

    def _run(
        self,
        record: TaskRecord,
        *,
        materialized: bool,
        idempotency_key: tuple[str, str, str] | None,
        idempotency: IdempotencyRecord | None,
    ) -> Run:
        """A run of ``record`` on this handler's store, bus and push notifier."""
        return Run(
            store=self.store,
            record=record,
            bus=self.bus,
            push=self.push,
            materialized=materialized,
            idempotency_key=idempotency_key,
            idempotency=idempotency,
        )

    async def subscribe(self, req: t.SubscribeToTaskRequest, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
        record = await self._owned(req.id, ctx, req.tenant)
        resume = ctx.last_event_id
        if resume is not None:
            retained = await self.bus.retained_from(req.id)
            # After an ended task's last event nothing will come: that is answered as without
            # Last-Event-ID (-32004 below), not by a stream that would wait forever.
            end = record.last_seq if record.task.status.state.is_terminal else record.last_seq + 1
            if retained is not None and retained <= resume + 1 <= end:
                # A reconnect: exactly the events after the last one the client saw.
                async for logged in self.bus.follow(req.id, resume + 1, until_terminal=True):
                    yield logged
                return
        state = record.task.status.state
        if state.is_terminal:
            raise UnsupportedOperationError(f"Task {req.id} is {state.value}: there is nothing to subscribe to")
        # Start with the task as it is, then every event after it. The snapshot and its seq are
        # taken together (no await in between), so nothing can slip between them.
        first = t.StreamResponse(task=snapshot(record.task))
        next_seq = record.last_seq + 1
        yield LoggedEvent(next_seq - 1, first, encode(first))
        # A subscription stays open through INPUT_REQUIRED and AUTH_REQUIRED (the subscriber
        # wants to see the task resume) until the task ends.
        async for logged in self.bus.follow(req.id, next_seq, until_terminal=True):
            yield logged

    # ---- the rest ----------------------------------------------------------------------

    def _notifier(self) -> PushNotifier:
        if self.push is None:
            raise PushNotificationNotSupportedError()
        return self.push

    async def create_push_config(
        self, req: t.TaskPushNotificationConfig, ctx: CallContext
    ) -> t.TaskPushNotificationConfig:
        notifier = self._notifier()
        # On a task that has ended the config is kept but never fires: nothing more is sent
        # (the spec lists no error for it, and the reference SDK accepts it too).
        record = await self._owned(req.task_id or "", ctx, req.tenant)
        return await notifier.create(record.task.id, ctx.owner, req.tenant or "", req, dialect=ctx.dialect)

    async def get_push_config(
        self, req: t.GetTaskPushNotificationConfigRequest, ctx: CallContext
    ) -> t.TaskPushNotificationConfig:
        notifier = self._notifier()
        await self._owned(req.task_id, ctx, req.tenant)
        found = await notifier.get(req.task_id, req.id)
        if found is None:
            raise TaskNotFoundError(f"Task {req.task_id} has no push notification config {req.id!r}")
        return found

    async def list_push_configs(
        self, req: t.ListTaskPushNotificationConfigsRequest, ctx: CallContext
    ) -> t.ListTaskPushNotificationConfigsResponse:
        notifier = self._notifier()
        await self._owned(req.task_id, ctx, req.tenant)
        return await notifier.list(req.task_id, req.page_size, req.page_token)

    async def delete_push_config(
        self, req: t.DeleteTaskPushNotificationConfigRequest, ctx: CallContext
    ) -> dict[str, Any]:
        """Idempotent (spec: "This operation MUST be idempotent"): a config already gone is no
        error, on a task that exists. The answer is ``{}`` (``google.protobuf.Empty``) everywhere."""
        notifier = self._notifier()
        await self._owned(req.task_id, ctx, req.tenant)
        await notifier.delete(req.task_id, req.id)
        return {}

    async def get_extended_card(self, _req: t.GetExtendedAgentCardRequest, ctx: CallContext) -> t.AgentCard:
        if not self.offers_extended_card:
            raise UnsupportedOperationError(
                "This agent offers no extended agent card (capabilities.extendedAgentCard is false)"
            )
        if ctx.principal is None:
            raise AuthenticationRequiredError("GetExtendedAgentCard needs an authenticated caller")
        if self.agent.extended_card is None:
            raise ExtendedAgentCardNotConfiguredError()
        return self.agent.extended_card

    async def _stored_task(self, task_id: str) -> t.Task | None:
        record = await self.store.get(task_id)
        return None if record is None else record.task

    async def start(self) -> None:
        """Before serving: listen to the other replicas (if any; they may die, so recovery runs
        again now and then), and end tasks a dead server left running."""
        await self.coordination.start(cancel=self._cancel_requested, recover=self.recover)
        if self.push is not None:
            await self.push.start()
        recovered = await self.recover()
        if recovered:
            log.warning("marked %d task(s) FAILED: they were running when their server stopped", recovered)

    async def shutdown(self) -> None:
        """Cancel every run in this process (tasks end CANCELED) and close every stream."""
        runs = list(self._runs.values())
        await asyncio.gather(*(run.cancel(shutdown=True, wait=5.0) for run in runs), return_exceptions=True)
        await asyncio.gather(*self._cancelling, return_exceptions=True)
        if self.push is not None:
            await self.push.close()
            await self.push.store.close()
        await self.bus.close()
        await self.coordination.close()
        await self.store.close()

    async def recover(self) -> int:
        """Mark FAILED the tasks a dead server left SUBMITTED or WORKING; returns how many.

        Called once at start, before serving, and by the coordination when another replica is
        found dead. Tasks waiting for input are left as they are: the next message resumes them.
        """
        count = 0
        for record in await self.store.unfinished():
            if record.task.id not in self._runs and await self._end_orphan(record.task.id, self._fail_orphan):
                count += 1
        return count


def _internal_error(method: str, exc: Exception) -> InternalError:
    """An unexpected fault: the detail goes to the log, the caller gets a generic error."""
    log.error("internal error while serving %s", method, exc_info=exc)
    return InternalError()


class _Guarded:
    """``events``, with any exception but a ``ProtocolError`` turned into ``InternalError``.

    An object rather than an async generator: an open stream holds it for its whole life, and
    a generator costs a frame and an entry in the loop's set of async generators besides.
    """

    __slots__ = ("_events", "_method")

    def __init__(self, method: str, events: AsyncIterator[LoggedEvent]) -> None:
        self._method = method
        self._events = events

    def __aiter__(self) -> _Guarded:
        return self

    async def __anext__(self) -> LoggedEvent:
        try:
            return await self._events.__anext__()
        except (ProtocolError, StopAsyncIteration):
            raise
        except Exception as exc:
            raise _internal_error(self._method, exc) from exc

    async def aclose(self) -> None:
        await self._events.aclose()  # type: ignore[attr-defined]


class _RunStream:
    """A ``SendStreamingMessage`` stream, guarded as ``_Guarded``: on its first event the message
    is started (``RequestHandler._open_stream``), then the stream follows its run, counted
    among the run's followers until ``aclose``; a task event handed out announces the task id.

    What an async generator did, without its frames: the stream is open as long as its run
    works, and holds only this object. Once the task id is out and the events come from this
    process's own log (``LogReader``, whose futures cannot fail), ``__anext__`` hands out the
    reader's future itself: no frame of the stream waits either.
    """

    __slots__ = ("_ctx", "_direct", "_events", "_handler", "_req", "_run")

    def __init__(self, handler: RequestHandler, req: t.SendMessageRequest, ctx: CallContext) -> None:
        self._handler: RequestHandler | None = handler
        self._req: t.SendMessageRequest | None = req
        self._ctx: CallContext | None = ctx
        self._events: AsyncIterator[LoggedEvent] = _NOT_OPEN
        self._run: Run | None = None
        self._direct = False

    def follow(self, run: Run, events: AsyncIterator[LoggedEvent]) -> None:
        run.followers += 1
        self._run = run
        self._direct = isinstance(events, LogReader)

    def __aiter__(self) -> _RunStream:
        return self

    def __anext__(self) -> Awaitable[LoggedEvent]:
        run = self._run
        if self._direct and run is not None and run.announced:
            return self._events.__anext__()
        return self._next()

    async def _next(self) -> LoggedEvent:
        try:
            if self._req is not None:
                assert self._handler is not None and self._ctx is not None
                req, ctx, self._req, self._ctx = self._req, self._ctx, None, None
                self._events = await self._handler._open_stream(self, req, ctx)
            logged = await self._events.__anext__()
        except (ProtocolError, StopAsyncIteration):
            raise
        except Exception as exc:
            raise _internal_error("SendStreamingMessage", exc) from exc
        run = self._run
        if run is not None and not run.announced and logged.event.message is t.UNSET:
            # Handed to the binding: the caller knows the task (a pull-based binding, such as
            # the in-process one, may close the stream right after this event).
            run.announced = True
        return logged

    async def aclose(self) -> None:
        self._req = self._ctx = None
        events, self._events = self._events, _NOT_OPEN
        run, self._run = self._run, None
        handler, self._handler = self._handler, None
        try:
            await events.aclose()  # type: ignore[attr-defined]
        finally:
            if run is not None and handler is not None:
                handler._left(run)


class _NoEvents:
    """The events of a stream not opened yet, or closed: none."""

    __slots__ = ()

    def __aiter__(self) -> _NoEvents:
        return self

    async def __anext__(self) -> LoggedEvent:
        raise StopAsyncIteration

    async def aclose(self) -> None:
        pass


_NOT_OPEN = _NoEvents()


async def _one(event: t.StreamResponse) -> AsyncIterator[LoggedEvent]:
    """A stream of one event, outside the task's sequence (no ``id``)."""
    yield LoggedEvent(0, event, encode(event))


def _normalize_timestamp(value: str | None) -> str | None:
    """Accept any ISO-8601 instant and bring it to the stored fixed-width UTC form."""
    if not value:
        return None
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        # OverflowError: an instant that exists only in its own offset (9999-12-31T23:59-23:59
        # is after year 9999 in UTC); ValueError: NUL bytes and other text fromisoformat refuses.
        return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (ValueError, OverflowError) as exc:
        raise InvalidParamsError(f"statusTimestampAfter {value!r} is not an ISO-8601 timestamp in range") from exc
