"""The one request handler: the A2A operations, whatever binding carried the request.

Bindings decode a request into the method's typed params, call ``call`` (unary methods) or
``stream`` (streaming methods) with a ``CallContext``, and encode what comes back, or the
``ProtocolError`` raised, in their own framing. Behaviour fixed here is fixed on every binding.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .. import types as t
from ..errors import (
    AuthenticationRequiredError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    ExtensionSupportRequiredError,
    InvalidParamsError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..protocol.codec import encode
from .agent import Agent
from .context import RequestContext
from .events import EventLog, LoggedEvent
from .execution import Run, now_iso, snapshot
from .store import IdempotencyRecord, InMemoryTaskStore, TaskQuery, TaskRecord, TaskStore

__all__ = ["CallContext", "RequestHandler"]

log = logging.getLogger("a2a.server")

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50
#: How long a follow-up waits for an agent that asked for input to return from ``execute``.
FOLLOW_UP_GRACE = 5.0


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who is calling, and what the binding learned from the transport."""

    principal: str | None = None
    extensions: frozenset[str] = field(default_factory=frozenset)

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


def _fingerprint(message: t.Message) -> str:
    return hashlib.sha256(encode(message)).hexdigest()


def _accepts(accepted: list[str], offered: list[str]) -> bool:
    for want in accepted:
        major = want.split("/")[0]
        for have in offered:
            if want in ("*/*", "*", have) or have == "*/*" or (want == f"{major}/*" and have.startswith(major + "/")):
                return True
    return False


class RequestHandler:
    """Serves one agent. Owns the task store and the runs in flight in this process."""

    def __init__(self, agent: Agent, store: TaskStore | None = None) -> None:
        self.agent = agent
        self.store = store or InMemoryTaskStore()
        self._runs: dict[str, Run] = {}
        self._logs: dict[str, EventLog] = {}
        self._reapers: set[asyncio.Task[None]] = set()
        self._unary: dict[str, Callable[[Any, CallContext], Awaitable[Any]]] = {
            "SendMessage": self.send_message,
            "GetTask": self.get_task,
            "ListTasks": self.list_tasks,
            "CancelTask": self.cancel_task,
            "CreateTaskPushNotificationConfig": self._push_unsupported,
            "GetTaskPushNotificationConfig": self._push_unsupported,
            "ListTaskPushNotificationConfigs": self._push_unsupported,
            "DeleteTaskPushNotificationConfig": self._push_unsupported,
            "GetExtendedAgentCard": self.get_extended_card,
        }
        self._streaming: dict[str, Callable[[Any, CallContext], AsyncIterator[LoggedEvent]]] = {
            "SendStreamingMessage": self.send_streaming_message,
            "SubscribeToTask": self.subscribe,
        }

    # ---- dispatch ----------------------------------------------------------------------

    async def call(self, method: str, params: Any, ctx: CallContext) -> Any:
        handler = self._unary.get(method)
        if handler is None:
            raise MethodNotFoundError(f"{method} is not a unary method")
        return await handler(params, ctx)

    def stream(self, method: str, params: Any, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
        handler = self._streaming.get(method)
        if handler is None:
            raise MethodNotFoundError(f"{method} is not a streaming method")
        if not self.agent.streaming:
            raise UnsupportedOperationError("This agent does not support streaming (capabilities.streaming is false)")
        return handler(params, ctx)

    # ---- SendMessage -------------------------------------------------------------------

    async def send_message(self, req: t.SendMessageRequest, ctx: CallContext) -> t.SendMessageResponse:
        config = req.configuration or t.SendMessageConfiguration()
        run, replayed = await self._start(req, ctx, materialize=config.return_immediately)
        if run is None:
            return self._answer(replayed, config.history_length)
        await (run.started if config.return_immediately else run.settled).wait()
        if run.reply is not None:
            return t.SendMessageResponse(message=run.reply)
        return t.SendMessageResponse(task=view(snapshot(run.task), config.history_length))

    async def send_streaming_message(self, req: t.SendMessageRequest, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
        run, replayed = await self._start(req, ctx, materialize=False)
        if run is None:
            # A retried stream whose task already ended: its final state is the whole answer.
            answer = self._answer(replayed, None)
            event = (
                t.StreamResponse(task=answer.task)
                if answer.task is not t.UNSET
                else t.StreamResponse(message=answer.message)
            )
            yield LoggedEvent(0, event, encode(event))
            return
        async for logged in run.log.follow(run.first_seq):
            yield logged

    def _answer(self, replayed: t.Task | t.Message | None, history_length: int | None) -> t.SendMessageResponse:
        if isinstance(replayed, t.Message):
            return t.SendMessageResponse(message=replayed)
        assert replayed is not None
        return t.SendMessageResponse(task=view(replayed, history_length))

    async def _start(
        self, req: t.SendMessageRequest, ctx: CallContext, *, materialize: bool
    ) -> tuple[Run | None, t.Task | t.Message | None]:
        """Start (or find again, for a retried messageId) the run for this message.

        Returns ``(run, None)`` to follow a run in this process, or ``(None, outcome)`` when a
        retry finds a finished outcome.
        """
        message = req.message
        self._check_request(req, ctx)
        tenant = req.tenant or ""
        key = (ctx.owner, tenant, message.message_id)
        fingerprint = _fingerprint(message)
        existing_record = await self._task_for(message, ctx, tenant)
        task_id = existing_record.task.id if existing_record else uuid.uuid4().hex
        claim = IdempotencyRecord(fingerprint=fingerprint, task_id=task_id)
        previous = await self.store.claim_message(key, claim)
        if previous is not None:
            return await self._replay(previous, fingerprint, message)
        run = self._begin(req, ctx, existing_record, task_id, key, claim)
        if materialize or existing_record is not None:
            await run.open()
        return run, None

    async def _replay(
        self, previous: IdempotencyRecord, fingerprint: str, message: t.Message
    ) -> tuple[Run | None, t.Task | t.Message | None]:
        if previous.fingerprint != fingerprint:
            raise InvalidParamsError(
                f"messageId {message.message_id!r} was already used for a different message: "
                "use a new messageId for a new message"
            )
        if previous.message is not None:
            return None, previous.message
        run = self._runs.get(previous.task_id or "")
        if run is not None:
            return run, None
        record = await self.store.get(previous.task_id or "")
        if record is None:
            raise TaskNotFoundError(f"The task for messageId {message.message_id!r} no longer exists")
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
        if run is not None and not run.done:
            raise UnsupportedOperationError(
                f"Task {task.id} is still working; send a follow-up only when it asks for input"
            )
        return record

    def _begin(
        self,
        req: t.SendMessageRequest,
        ctx: CallContext,
        existing: TaskRecord | None,
        task_id: str,
        key: tuple[str, str, str],
        claim: IdempotencyRecord,
    ) -> Run:
        message = req.message
        if existing is not None:
            record = existing
            prior = snapshot(record.task)
            message = msgspec.structs.replace(message, task_id=task_id, context_id=record.task.context_id)
            record.task.history = [*(record.task.history or []), message]
            event_log = self._logs.get(task_id) or EventLog(first_seq=record.last_seq + 1)
        else:
            prior = None
            context_id = message.context_id or uuid.uuid4().hex
            message = msgspec.structs.replace(message, task_id=task_id, context_id=context_id)
            task = t.Task(
                id=task_id,
                context_id=context_id,
                status=t.TaskStatus(state=t.TaskState.SUBMITTED, timestamp=now_iso()),
                history=[message],
                metadata=req.metadata,
            )
            record = TaskRecord(task, owner=ctx.owner, tenant=req.tenant or "")
            event_log = EventLog()
        self._logs[task_id] = event_log
        run = Run(
            store=self.store,
            record=record,
            log_=event_log,
            materialized=False,
            idempotency_key=key,
            idempotency=claim,
        )
        self._runs[task_id] = run
        rc = RequestContext(run, message, prior, self.agent.select_skill(message), ctx.principal)
        run.start(self.agent, rc)
        reaper = asyncio.get_running_loop().create_task(self._reap(run))
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)
        return run

    async def _reap(self, run: Run) -> None:
        """Forget a run once its agent has returned; drop the log of a finished task."""
        await run.wait_done()
        if self._runs.get(run.task_id) is run:
            del self._runs[run.task_id]
        if run.reply is not None or run.task.status.state.is_terminal:
            event_log = self._logs.pop(run.task_id, None)
            if event_log is not None:
                event_log.close()

    def _check_request(self, req: t.SendMessageRequest, ctx: CallContext) -> None:
        config = req.configuration
        if config is not None:
            if config.task_push_notification_config is not None:
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

    # ---- tasks -------------------------------------------------------------------------

    async def _owned(self, task_id: str, ctx: CallContext, tenant: str | None) -> TaskRecord:
        """The task if it exists *and* belongs to the caller; anything else looks like 'not found'."""
        record = await self.store.get(task_id)
        if record is None or record.owner != ctx.owner or record.tenant != (tenant or ""):
            raise TaskNotFoundError(f"Task not found: {task_id}")
        run = self._runs.get(task_id)
        if run is not None and not run.materialized:
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
        else:
            await self._cancel_idle(record)
        return snapshot(record.task)

    async def _cancel_idle(self, record: TaskRecord) -> None:
        """Cancel a task no agent code is running for (e.g. waiting for input)."""
        event_log = self._logs.get(record.task.id) or EventLog(first_seq=record.last_seq + 1)
        run = Run(
            store=self.store,
            record=record,
            log_=event_log,
            materialized=True,
            idempotency_key=None,
            idempotency=None,
        )
        await run.publish_status(t.TaskState.CANCELED, None)
        stale = self._logs.pop(record.task.id, None)
        if stale is not None:
            stale.close()

    async def subscribe(self, req: t.SubscribeToTaskRequest, ctx: CallContext) -> AsyncIterator[LoggedEvent]:
        record = await self._owned(req.id, ctx, req.tenant)
        state = record.task.status.state
        if state.is_terminal:
            raise UnsupportedOperationError(f"Task {req.id} is {state.value}: there is nothing to subscribe to")
        event_log = self._logs.get(req.id)
        # Start with the current task, then everything after it. Taken in one step (no await
        # between), so no event can slip in between the snapshot and the log position.
        first = t.StreamResponse(task=snapshot(record.task))
        next_seq = event_log.next_seq if event_log is not None else record.last_seq + 1
        yield LoggedEvent(next_seq - 1, first, encode(first))
        if event_log is None or state.is_interrupted:
            return
        async for logged in event_log.follow(next_seq):
            yield logged

    # ---- the rest ----------------------------------------------------------------------

    async def _push_unsupported(self, _req: Any, _ctx: CallContext) -> Any:
        raise PushNotificationNotSupportedError()

    async def get_extended_card(self, _req: t.GetExtendedAgentCardRequest, ctx: CallContext) -> t.AgentCard:
        if not self.agent.offers_extended_card:
            raise UnsupportedOperationError("This agent offers no extended agent card")
        if ctx.principal is None:
            raise AuthenticationRequiredError("GetExtendedAgentCard needs an authenticated caller")
        if self.agent.extended_card is None:
            raise ExtendedAgentCardNotConfiguredError()
        return self.agent.extended_card

    async def shutdown(self) -> None:
        """Cancel every run in this process (tasks end CANCELED) and close every stream."""
        runs = list(self._runs.values())
        await asyncio.gather(*(run.cancel(shutdown=True, wait=5.0) for run in runs), return_exceptions=True)
        for event_log in self._logs.values():
            event_log.close()
        self._logs.clear()
        await self.store.close()


def _normalize_timestamp(value: str | None) -> str | None:
    """Accept any ISO-8601 instant and bring it to the stored fixed-width UTC form."""
    if not value:
        return None
    from datetime import UTC, datetime

    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidParamsError(f"statusTimestampAfter {value!r} is not an ISO-8601 timestamp") from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
