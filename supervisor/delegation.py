"""Delegation, the supervisor's task tool: one TODO item sent to one agent over A2A, followed to its end.

For each item the ``Delegator`` runs one asyncio task (the pool of the delegate node):

1. **Refusals first.** A delegation whose hop count (``a2a-net/depth`` in the message metadata:
   the run's depth + 1) would exceed ``supervisor.max_depth`` is refused, naming both numbers.
2. **Send and follow.** The message (the instruction and its context, plus a data part
   ``{"tool": skill, "arguments": ...}`` when the skill takes structured input) is sent with
   ``SendStreamingMessage`` and followed event by event; an agent whose card says it cannot
   stream is sent ``SendMessage(returnImmediately)`` and polled with ``GetTask``. The message id
   is derived from the run, the item and the agent, so a resend is always the same message.
3. **Retries** are the agent's ``RetryPolicy`` running each attempt (retryable failures only:
   refused, reset, 429/502/503/504; each retry is a ``DelegationRetrying`` event, through the
   policy's ``on_retry``), resending the *same* ``messageId`` (the agent answers a repeat with
   the original task). A stream that breaks is resumed by the client; one it could not resume
   is followed again by the task's id with ``A2AClient.follow`` from the last event seen, never
   by sending again.
4. **Timeout.** The whole delegation, retries included, has ``timeout`` seconds; past that the
   remote task is sent ``CancelTask`` and the delegation ends ``timeout``.
5. **Failover and circuit breaker.** When an agent cannot be reached after its retries, times
   out, or its task ends CANCELED without us asking, the agent's breaker counts a failure and
   the item moves to another available agent that offers the same skill (a ``failover`` event),
   until none is left. An agent whose breaker is open is skipped the same way.
6. **INPUT_REQUIRED.** In an interactive run the question is relayed (an ``input_requested``
   event; answer with ``Supervisor.answer``) and the answer is sent into the same task; in a
   batch run the item fails with the agent's question.
7. **Cancellation** of the run cancels every delegation in flight: each sends ``CancelTask``
   for its remote task (learning the task id from the agent if the first event had not arrived
   yet) and keeps what it had received as a partial result.

Each delegation is recorded (``supervisor.delegation_record.Delegation``): duration, attempts, events received, and
the token use and cost that the agent reports in the task's ``a2a-net/usage`` metadata.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from a2a.client.retry import RetryHook
from a2a.errors import A2AError, TaskNotFoundError, TransportError
from a2a.metadata import DEPTH_KEY, SKILL_KEY, TOOLS_KEY, USAGE_KEY
from a2a.types import (
    UNSET,
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

from . import events as ev
from .delegation_record import Delegation
from .file_urls import UrlFetcher
from .hooks import DelegationRequest, DelegationResult, Vetoed
from .registry import AgentEntry, Registry

__all__ = ["Delegator", "ItemDone", "Job", "Outcome", "RecordUpdate", "message_id_for", "outcome_of"]

log = logging.getLogger("supervisor.delegation")

_NAMESPACE = uuid.UUID("8a0c7c52-6d0e-4a55-9d5e-3f0c2a2b7e11")
_FINAL = frozenset({"completed", "failed", "rejected", "canceled", "timeout", "error", "refused"})
_STATE_NAMES = {
    TaskState.SUBMITTED: "submitted",
    TaskState.WORKING: "working",
    TaskState.COMPLETED: "completed",
    TaskState.FAILED: "failed",
    TaskState.CANCELED: "canceled",
    TaskState.REJECTED: "rejected",
    TaskState.INPUT_REQUIRED: "input_required",
    TaskState.AUTH_REQUIRED: "auth_required",
}
#: How long the clean-up calls of a cancelled delegation (CancelTask) may take.
CANCEL_GRACE = 5.0
#: How long a stream may stay open after its final event before it is closed.
DRAIN_GRACE = 1.0


#: Message metadata: the id of the supervisor's run that sent the message, and of the run that
#: started that one (a nested supervisor), so that a remote agent, its logs and a nested
#: supervisor can tie its work to the run (protocol.md, "Metadata").
RUN_KEY = "a2a-net/runId"
PARENT_RUN_KEY = "a2a-net/parentRunId"


def context_id_for(run_id: str, agent: str) -> str:
    """The contextId the run gives an agent it has no conversation with yet (stable across a resume)."""
    return uuid.uuid5(_NAMESPACE, f"{run_id}/context/{agent}").hex


def message_id_for(run_id: str, delegation_id: str, agent: str, turn: int = 0) -> str:
    """The same ids every time, so that a resumed run resends exactly what it sent before."""
    return uuid.uuid5(_NAMESPACE, f"{run_id}/{delegation_id}/{agent}/{turn}").hex


@dataclass
class Job:
    """One item to delegate."""

    item_id: str
    description: str
    agent: str
    skill: str | None
    text: str
    arguments: dict[str, Any] | None
    dispatch: int
    #: A delegation of this item that a resumed run finds unfinished: follow it, do not resend.
    resume: Delegation | None = None
    #: The A2A contextId each agent has in this thread (a conversation): sent with the message.
    contexts: dict[str, str] = dataclasses.field(default_factory=dict)
    #: A person approved it already (a LangGraph interrupt): approval hooks are not asked again.
    approved: bool = False
    #: The agent's tools for this delegation (``a2a-net/tools``); ``None``: not sent.
    tools: list[str] | None = None
    #: Files of the items it depends on, sent as parts of the message (``supervisor.workspace``).
    parts: list[Part] = dataclasses.field(default_factory=list)


@dataclass
class Outcome:
    #: ``done``, ``failed`` or ``canceled``.
    status: str
    agent: str | None
    result: str | None = None
    data: Any = None
    error: str | None = None
    #: The final delegation state (``completed``, ``failed``, ``timeout`` ...).
    state: str = ""


@dataclass
class RecordUpdate:
    """A delegation changed in a way worth a checkpoint (its task id is known, or it ended)."""

    record: Delegation


@dataclass
class ItemDone:
    item_id: str
    outcome: Outcome


Update = RecordUpdate | ItemDone


@dataclass
class _Send:
    """What the current attempt has to send (``None`` once the agent has it)."""

    message: Message | None
    #: After an answer to INPUT_REQUIRED: the id of the question's status message. Until the agent
    #: takes the answer up, the task still shows that question; it must not be asked again.
    stale_question: str | None = None


def _part_to_text(part: Part) -> str | None:
    if isinstance(part.text, str):
        return part.text
    if part.data is not UNSET:
        return None
    size = len(part.raw) if isinstance(part.raw, bytes) else None
    where = part.url if isinstance(part.url, str) else f"{size} bytes" if size is not None else ""
    return f"[file {part.filename or ''} ({part.media_type or 'unknown type'}, {where})]"


def _collect(parts: list[Part]) -> tuple[list[str], list[Any]]:
    texts, data = [], []
    for part in parts:
        if part.data is not UNSET:
            data.append(part.data)
        else:
            text = _part_to_text(part)
            if text:
                texts.append(text)
    return texts, data


def _artifact_dict(artifact: Artifact) -> dict[str, Any]:
    value: dict[str, Any] = msgspec.to_builtins(artifact)
    return value


def _merge_artifact(artifacts: list[dict[str, Any]], update: TaskArtifactUpdateEvent) -> list[dict[str, Any]]:
    incoming = _artifact_dict(update.artifact)
    merged = list(artifacts)
    for i, existing in enumerate(merged):
        if existing.get("artifactId") == incoming.get("artifactId"):
            if update.append:
                merged[i] = {**existing, "parts": [*existing.get("parts", []), *incoming.get("parts", [])]}
            else:
                merged[i] = incoming
            return merged
    merged.append(incoming)
    return merged


def _result_of(record: Delegation) -> tuple[str | None, Any]:
    """The text and data an agent returned: its artifacts, else (for a completed task) its last
    status message. An unfinished delegation's result is what it had streamed so far."""
    texts: list[str] = []
    data: list[Any] = []
    for artifact in record.artifacts:
        parts = msgspec.convert(artifact.get("parts", []), list[Part])
        t, d = _collect(parts)
        texts.extend(t)
        data.extend(d)
    if not texts and not data and record.status_text and record.state == "completed":
        texts.append(record.status_text)
    text = "\n".join(texts) if texts else None
    value = data[0] if len(data) == 1 else (data or None)
    if text is None and value is not None:
        text = msgspec.json.encode(value).decode()
    return text, value


def _usage(record: Delegation, metadata: dict[str, Any] | None) -> None:
    usage = (metadata or {}).get(USAGE_KEY)
    if not isinstance(usage, dict):
        return
    # The agent reports totals for its task: take the latest figures, do not add them up.
    record.input_tokens = int(usage.get("inputTokens") or 0)
    record.output_tokens = int(usage.get("outputTokens") or 0)
    record.cost_usd = float(usage.get("costUsd") or 0.0)


class Delegator:
    """The pool of delegations in flight for one run."""

    def __init__(
        self,
        *,
        run_id: str,
        registry: Registry,
        depth: int,
        max_depth: int,
        emit: Callable[[ev.Event], None],
        interactive: bool,
        hooks: Sequence[Any] = (),
        parent_run_id: str | None = None,
    ) -> None:
        #: ``supervisor.hooks``: around each delegation (before: change or veto; after: replace).
        self.hooks = list(hooks)
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.registry = registry
        self.depth = depth
        self.max_depth = max_depth
        self.emit = emit
        self.interactive = interactive
        self.updates: asyncio.Queue[Update] = asyncio.Queue()
        self.tasks: dict[str, asyncio.Task[None]] = {}
        #: Every item this process has started (a "running" item not in here was started by a
        #: process that died: the resumed run must pick it up).
        self.started_items: set[str] = set()
        self.records: dict[str, Delegation] = {}
        self._answers: dict[str, asyncio.Future[str | None]] = {}
        #: Delegations whose final Task (metadata, all artifacts) has been seen.
        self._final_seen: set[str] = set()
        #: The id of each delegation's latest status message (to tell a new question from an old one).
        self._status_message: dict[str, str] = {}
        #: The delegation each item is on now.
        self._current: dict[str, Delegation] = {}
        #: The last event id of each delegation whose stream the client could not resume.
        self._resume_after: dict[str, str | None] = {}
        self.canceling = False
        #: Why the delegations in flight are cancelled (``cancel_all``), as their error says.
        self.cancel_reason = "the run was canceled"
        #: Fetches the files agents return by URL (``supervisor.file_urls``); ``None``: off.
        self.fetcher = UrlFetcher.from_config(registry.config.supervisor.file_urls)

    # ---- the pool ----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self.tasks)

    def running(self, item_id: str) -> bool:
        return item_id in self.tasks

    def orphaned(self, item_id: str) -> bool:
        """Marked running in the state, but not started by this process (a resumed run)."""
        return item_id not in self.started_items

    def start(self, job: Job) -> None:
        self.started_items.add(job.item_id)
        self.tasks[job.item_id] = asyncio.create_task(self._run_item(job), name=f"delegate-{job.item_id}")

    async def next_updates(self, cancel: asyncio.Event, timeout: float | None) -> list[Update]:
        """Wait for at least one update (or cancellation, or ``timeout``), then take all that are queued."""
        if self.updates.empty() and not cancel.is_set():
            getter = asyncio.ensure_future(self.updates.get())
            stopper = asyncio.ensure_future(cancel.wait())
            try:
                await asyncio.wait({getter, stopper}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stopper.cancel()
                if not getter.done():
                    getter.cancel()
                    await asyncio.gather(getter, return_exceptions=True)
            found = [getter.result()] if getter.done() and not getter.cancelled() else []
        else:
            found = []
        while not self.updates.empty():
            found.append(self.updates.get_nowait())
        return found

    async def cancel_all(self, reason: str = "the run was canceled") -> list[Update]:
        """Cancel every delegation in flight (each sends CancelTask); returns their last updates."""
        self.canceling = True
        self.cancel_reason = reason
        tasks = list(self.tasks.values())
        # A delegation whose remote task has already ended is not cancelled: it is only reading
        # the final task (its usage, its artifacts) and its result stands. Which delegations a
        # budget cuts off then depends on what the agents had finished, not on where each
        # coroutine happened to be waiting.
        ended = {
            task
            for item_id, task in self.tasks.items()
            if (record := self._current.get(item_id)) is not None and record.state in _FINAL
        }
        for task in tasks:
            if task not in ended:
                task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CANCEL_GRACE * 2)
        for task in ended:
            task.cancel()  # past the grace period even a finished one is given up
        if ended:
            await asyncio.wait(ended, timeout=CANCEL_GRACE)
        found = []
        while not self.updates.empty():
            found.append(self.updates.get_nowait())
        return found

    async def close(self) -> None:
        if self.tasks:
            await self.cancel_all()

    def answer(self, delegation_id: str, text: str | None) -> bool:
        """Answer a relayed INPUT_REQUIRED question (``None``: decline, the item fails)."""
        future = self._answers.get(delegation_id)
        if future is None or future.done():
            return False
        future.set_result(text)
        return True

    # ---- one item: its agent, then failovers ---------------------------------------------

    async def _run_item(self, job: Job) -> None:
        outcome = Outcome("canceled", job.agent, error="canceled")
        try:
            request = self._request(job)
            if job.resume is None:  # a delegation picked up after a restart was already let through
                try:
                    request = await self._before(request)
                except Vetoed as exc:
                    outcome = Outcome("failed", job.agent, error=f"vetoed: {exc}", state="refused")
                    return
                job = dataclasses.replace(
                    job, agent=request.agent, text=request.text, arguments=request.arguments, tools=request.tools
                )
            outcome = await self._after(request, await self._try_agents(job))
        except asyncio.CancelledError:
            current = self._current.get(job.item_id)
            if current is not None:
                outcome = outcome_of(current)  # what had arrived before the cancellation: a partial result
            raise
        finally:
            self.tasks.pop(job.item_id, None)
            self._current.pop(job.item_id, None)
            self.updates.put_nowait(ItemDone(job.item_id, outcome))

    def _request(self, job: Job) -> DelegationRequest:
        entry = self.registry.get(job.agent)
        return DelegationRequest(
            run_id=self.run_id,
            item_id=job.item_id,
            description=job.description,
            agent=job.agent,
            skill=job.skill,
            text=job.text,
            arguments=job.arguments,
            needs_approval=bool(entry and entry.config.approval) and not job.approved,
            tools=job.tools,
        )

    async def _before(self, request: DelegationRequest) -> DelegationRequest:
        for hook in self.hooks:
            method = getattr(hook, "before_delegation", None)
            if method is not None:
                request = await method(request)
        return request

    async def _after(self, request: DelegationRequest, outcome: Outcome) -> Outcome:
        hooks = [m for h in self.hooks if (m := getattr(h, "after_delegation", None)) is not None]
        if not hooks:
            return outcome
        result = DelegationResult(outcome.status, outcome.agent, outcome.result, outcome.data, outcome.error)
        for method in hooks:
            result = await method(request, result)
        return dataclasses.replace(
            outcome,
            status=result.status,
            agent=result.agent,
            result=result.result,
            data=result.data,
            error=result.error,
        )

    async def _try_agents(self, job: Job) -> Outcome:
        tried: list[str] = []
        agent, failover_from = job.agent, None
        record = job.resume
        hop = record.hop if record else 0
        while True:
            entry = self.registry.get(agent)
            problem = self._unusable(entry, agent)
            if problem is None and entry is not None:
                if record is None:
                    record = self._new_record(job, entry, hop, failover_from)
                self._current[job.item_id] = record
                outcome = await self._delegate(entry, job, record)
                if not self._failover_worthy(record):
                    if record.state not in ("refused",):
                        entry.breaker.record_success()
                    return outcome
                problem = record.error or record.state
                if entry.breaker.record_failure():
                    cb = self.registry.config.a2a.circuit_breaker
                    self.emit(
                        ev.CircuitOpened(
                            run_id=self.run_id, agent=agent, failures=entry.breaker.failures, reset_after=cb.reset_after
                        )
                    )
            elif record is not None:
                self._finish(record, "error", f"{agent} is not available: {problem}")
            tried.append(agent)
            alternatives = self.registry.alternatives(job.skill, tried)
            if not alternatives:
                error = problem if not tried[:-1] else f"{problem} (also tried: {', '.join(tried[:-1])})"
                return Outcome("failed", agent, error=error, state=record.state if record else "error")
            self.emit(
                ev.Failover(
                    run_id=self.run_id,
                    item_id=job.item_id,
                    from_agent=agent,
                    to_agent=alternatives[0].name,
                    reason=problem or "unavailable",
                )
            )
            failover_from, agent, record, hop = agent, alternatives[0].name, None, hop + 1

    def _unusable(self, entry: AgentEntry | None, name: str) -> str | None:
        if entry is None:
            return f"no agent named {name!r} is configured"
        if not entry.up:
            return entry.problem
        if not entry.breaker.allow():
            return f"agent {name} is failing (circuit breaker open after {entry.breaker.failures} failures)"
        return None

    @staticmethod
    def _failover_worthy(record: Delegation) -> bool:
        """Failures of the agent or the way to it, as opposed to an answer (even a failed task)."""
        return record.state in ("timeout", "error") or (
            record.state == "canceled" and not (record.error or "").startswith("canceled by the supervisor")
        )

    def _new_record(self, job: Job, entry: AgentEntry, hop: int, failover_from: str | None) -> Delegation:
        delegation_id = f"{job.item_id}.{job.dispatch}.{hop}"
        return Delegation(
            id=delegation_id,
            item_id=job.item_id,
            agent=entry.name,
            skill=job.skill if entry.skill(job.skill) is not None else None,
            message_id=message_id_for(self.run_id, delegation_id, entry.name),
            text=job.text,
            arguments=job.arguments,
            failover_from=failover_from,
            # An agent first met in this run gets a contextId chosen here, the same for every
            # delegation to it: parallel first delegations join one conversation, not one each.
            context_id=job.contexts.get(entry.name) or context_id_for(self.run_id, entry.name),
            tools=job.tools,
        )

    def _message(self, record: Delegation, files: Sequence[Part] = ()) -> Message:
        parts = [Part(text=record.text), *files]
        metadata: dict[str, Any] = {DEPTH_KEY: self.depth + 1, RUN_KEY: self.run_id}
        if self.parent_run_id:
            metadata[PARENT_RUN_KEY] = self.parent_run_id
        if record.tools is not None:
            metadata[TOOLS_KEY] = list(record.tools)
        if record.skill:
            metadata[SKILL_KEY] = record.skill
            if record.arguments is not None:
                parts.append(
                    Part(data={"tool": record.skill, "arguments": record.arguments}, media_type="application/json")
                )
        return Message(
            message_id=record.message_id,
            role=Role.USER,
            parts=parts,
            metadata=metadata,
            context_id=record.context_id,  # the agent's conversation in this thread, if it has one
        )

    # ---- one delegation ------------------------------------------------------------------

    async def _delegate(self, entry: AgentEntry, job: Job, record: Delegation) -> Outcome:
        resumed = record.state != "starting"
        self.records[record.id] = record
        self.emit(record.started_event(self.run_id, job.description))
        hop = self.depth + 1
        if hop > self.max_depth:
            self._finish(
                record,
                "refused",
                (
                    f"delegation refused: it would be hop {hop} ({DEPTH_KEY}), beyond supervisor.max_depth = "
                    f"{self.max_depth}; this run was itself started at depth {self.depth}"
                ),
            )
            return outcome_of(record)
        message = self._message(record, job.parts)
        send = _Send(None if resumed and record.task_id else message)
        try:
            async with asyncio.timeout(entry.timeout):
                await self._follow(entry, record, send, message)
        except TimeoutError:
            await self._cancel_remote(entry, record, message)
            self._finish(record, "timeout", f"{entry.name} did not finish within {entry.timeout:g}s (timeout)")
        except asyncio.CancelledError:
            await self._cancel_remote(entry, record, message)
            self._finish(record, "canceled", f"canceled by the supervisor ({self.cancel_reason})")
            raise
        except A2AError as exc:
            self._finish(record, "error", f"{type(exc).__name__}: {exc}")
        else:
            try:
                await self._fetch_files(record)
            finally:  # even when the run is canceled meanwhile: the remote task did end
                self._finish_from_state(record)
        return outcome_of(record)

    async def _fetch_files(self, record: Delegation) -> None:
        """The files a completed delegation returned by URL, fetched and kept inline (``supervisor.file_urls``)."""
        if self.fetcher is None or record.state != "completed" or not UrlFetcher.wanted(record.artifacts):
            return
        # Never raises for a file: one not fetched stays a URL, with a note saying why.
        record.artifacts = await self.fetcher.inline(record.artifacts)

    async def _follow(self, entry: AgentEntry, record: Delegation, send: _Send, original: Message) -> None:
        """Send (or follow again), retried by the agent's policy, until the task ends or needs something."""
        policy = dataclasses.replace(entry.retry, on_retry=self._retrying(record))
        what = f"delegation {record.id} to {entry.name}"
        while True:
            await policy.run(functools.partial(self._attempt, entry, record, send, original), what=what)
            if record.state in _FINAL:
                return
            if self._stale(record, send):
                continue  # the agent has not taken the answer up yet: follow the task again
            if record.state == "auth_required":
                return
            if record.state == "input_required":
                answer = await self._ask(record)
                if answer is None:
                    return
                record.turn += 1
                send.message = Message(
                    message_id=message_id_for(self.run_id, record.id, entry.name, record.turn),
                    role=original.role,
                    parts=[Part(text=answer)],
                    task_id=record.task_id,
                    context_id=record.context_id,
                    metadata=original.metadata,
                )
                send.stale_question = self._status_message.get(record.id)

    def _retrying(self, record: Delegation) -> RetryHook:
        """The policy's ``on_retry`` for one delegation: each retry is a ``DelegationRetrying`` event."""

        def retrying(_attempt: int, exc: Exception, delay: float) -> None:
            self.emit(record.retrying_event(self.run_id, exc, delay))

        return retrying

    def _stale(self, record: Delegation, send: _Send) -> bool:
        """The task still shows the question that was already answered."""
        return (
            send.stale_question is not None
            and record.state in ("input_required", "auth_required")
            and self._status_message.get(record.id) == send.stale_question
        )

    def _settled(self, record: Delegation, send: _Send) -> bool:
        """The task ended, or waits for something (not a question already answered)."""
        return record.state in _FINAL or (
            record.state in ("input_required", "auth_required") and not self._stale(record, send)
        )

    async def _attempt(self, entry: AgentEntry, record: Delegation, send: _Send, original: Message) -> None:
        """One attempt: send the message, or follow the task the agent has, to the end of its stream."""
        record.attempts += 1
        try:
            await self._send_or_follow(entry, record, send, original)
        except TransportError as exc:
            # A stream the client could not resume: the next attempt follows it from there.
            if exc.task_id is not None and exc.task_id == record.task_id:
                self._resume_after[record.id] = exc.last_event_id
            raise
        if record.state in _FINAL and record.task_id and record.id not in self._final_seen:
            await self._final_task(entry, record)
        elif not self._settled(record, send) and not self._stale(record, send):
            raise TransportError(f"{entry.name} closed the stream before task {record.task_id} ended", retryable=True)

    async def _send_or_follow(self, entry: AgentEntry, record: Delegation, send: _Send, original: Message) -> None:
        assert entry.client is not None
        if send.message is None and record.task_id:
            try:
                await self._reattach(entry, record, send)
                return
            except TaskNotFoundError:
                # The agent no longer knows the task (it restarted): the work was lost, send it again.
                log.warning("task %s is gone from %s; sending the message again", record.task_id, entry.name)
                record.task_id = None
                send.message = original
        message = send.message or original
        if entry.streaming:
            await self._consume(entry, record, entry.client.stream(message), send, from_start=True)
        else:
            await self._poll(entry, record, message, send)

    async def _consume(
        self,
        entry: AgentEntry,
        record: Delegation,
        events: AsyncIterator[StreamResponse],
        send: _Send,
        *,
        from_start: bool = False,
    ) -> None:
        """Apply a stream's events until the task settles. A stream of a new message (``from_start``)
        that opens with the task itself and brings a result carries every artifact chunk and
        status (with its token use) there is: its end is the whole task, with no GetTask after
        it. A stream that brought no result is read once more: some agents (fasta2a) put their
        artifacts only in the task, never in an event."""
        whole: bool | None = None if from_start else False
        async with contextlib.aclosing(events) as stream:  # type: ignore[type-var]
            async for event in stream:
                if whole is None:
                    whole = isinstance(event.payload, Task)
                send.message = None  # the agent has the message: from now on, follow the task
                self._apply(record, event)
                self._progress(record)
                if self._settled(record, send):
                    if record.state in _FINAL:
                        if whole and (record.artifacts or record.status_text):
                            self._final_seen.add(record.id)
                        await self._drain(stream)
                    # An interrupted task's subscription stays open until the task ends: closed
                    # here, it is followed again once the question is answered.
                    return

    @staticmethod
    async def _drain(stream: AsyncIterator[StreamResponse]) -> None:
        """Read a stream to its end (the agent closes it after a final event), so that its HTTP
        connection can be reused; an agent that keeps it open is cut off after ``DRAIN_GRACE``."""
        with contextlib.suppress(TimeoutError, A2AError):
            async with asyncio.timeout(DRAIN_GRACE):
                async for _ in stream:
                    pass

    async def _poll(self, entry: AgentEntry, record: Delegation, message: Message, send: _Send) -> None:
        assert entry.client is not None
        if send.message is not None:
            answer = await entry.client.send(message, return_immediately=True)
            send.message = None
            self._apply(
                record, StreamResponse(message=answer) if isinstance(answer, Message) else StreamResponse(task=answer)
            )
            self._progress(record)
        await self._poll_task(entry, record)

    async def _poll_task(self, entry: AgentEntry, record: Delegation) -> None:
        assert entry.client is not None
        interval = 0.05
        while record.state not in _FINAL and record.state not in ("input_required", "auth_required"):
            await asyncio.sleep(interval)  # polling an agent that cannot stream
            interval = min(interval * 2, 2.0)
            task = await entry.client.get_task(record.task_id or "", history_length=0)
            self._apply(record, StreamResponse(task=task))
            self._progress(record)

    async def _reattach(self, entry: AgentEntry, record: Delegation, send: _Send) -> None:
        """Follow a task the agent has already (a resumed run, a stream the client could not
        resume): with the client's ``follow``, after the last event seen if known; or by polling."""
        assert entry.client is not None and record.task_id
        after = self._resume_after.pop(record.id, None)
        if not entry.streaming or self._stale(record, send):
            await self._refresh(entry, record, send)
            after = None  # the task just read is newer than that event
        if not entry.streaming:
            await self._poll_task(entry, record)
        elif not self._settled(record, send):
            await self._consume(entry, record, entry.client.follow(record.task_id, after_event_id=after), send)

    async def _refresh(self, entry: AgentEntry, record: Delegation, send: _Send) -> None:
        """The task as it is now (GetTask); read again, less often each time, while it still shows
        a question already answered (the answer is on its way to the agent)."""
        assert entry.client is not None and record.task_id
        task = await entry.client.get_task(record.task_id, history_length=0)
        self._apply(record, StreamResponse(task=task))
        interval = 0.02
        while self._stale(record, send):
            await asyncio.sleep(interval)
            interval = min(interval * 2, 1.0)
            self._apply(record, StreamResponse(task=await entry.client.get_task(record.task_id, history_length=0)))
        self._progress(record)

    async def _final_task(self, entry: AgentEntry, record: Delegation) -> None:
        """The finished task once more: its metadata (token use) and all of its artifacts."""
        assert entry.client is not None and record.task_id
        try:
            task = await entry.client.get_task(record.task_id, history_length=0)
        except A2AError as exc:
            log.info("could not read the final state of task %s at %s: %s", record.task_id, entry.name, exc)
            return
        self._apply(record, StreamResponse(task=task), count=False)

    # ---- applying events ---------------------------------------------------------------

    def _apply(self, record: Delegation, event: StreamResponse, *, count: bool = True) -> None:
        if count:
            record.events += 1
        payload = event.payload
        known = record.task_id
        if isinstance(payload, Message):
            texts, data = _collect(payload.parts)
            record.status_text = "\n".join(texts) or None
            if data:
                record.artifacts = [
                    {
                        "artifactId": "reply",
                        "name": "reply",
                        "parts": msgspec.to_builtins([p for p in payload.parts if p.data is not UNSET]),
                    }
                ]
            record.state = "completed"
        elif isinstance(payload, Task):
            self._apply_task(record, payload)
        elif isinstance(payload, TaskStatusUpdateEvent):
            record.task_id = record.task_id or payload.task_id
            record.context_id = record.context_id or payload.context_id
            self._apply_status(record, payload.status.state, payload.status.message)
            _usage(record, payload.metadata)
        elif isinstance(payload, TaskArtifactUpdateEvent):
            record.task_id = record.task_id or payload.task_id
            record.context_id = record.context_id or payload.context_id
            record.artifacts = _merge_artifact(record.artifacts, payload)
        if record.task_id and not known:
            self.updates.put_nowait(RecordUpdate(dataclasses.replace(record)))

    def _apply_task(self, record: Delegation, task: Task) -> None:
        record.task_id = task.id
        record.context_id = task.context_id
        self._apply_status(record, task.status.state, task.status.message)
        if task.artifacts is not None:
            record.artifacts = [_artifact_dict(a) for a in task.artifacts]
        _usage(record, task.metadata)
        if record.state in _FINAL:
            self._final_seen.add(record.id)

    def _apply_status(self, record: Delegation, state: TaskState, message: Message | None) -> None:
        record.state = _STATE_NAMES.get(state, record.state)
        if message is not None:
            self._status_message[record.id] = message.message_id
            texts, _ = _collect(message.parts)
            if texts:
                record.status_text = "\n".join(texts)

    def _progress(self, record: Delegation) -> None:
        self.emit(record.progress_event(self.run_id))

    # ---- endings -----------------------------------------------------------------------

    async def _ask(self, record: Delegation) -> str | None:
        if not self.interactive:
            return None
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._answers[record.id] = future
        self.emit(record.question_event(self.run_id))
        try:
            return await future
        finally:
            self._answers.pop(record.id, None)

    async def _cancel_remote(self, entry: AgentEntry, record: Delegation, message: Message) -> None:
        """CancelTask for the remote task (asking the agent for its id first if we never saw it)."""
        if record.state in _FINAL or entry.client is None:
            return
        client = entry.client
        try:
            async with asyncio.timeout(CANCEL_GRACE):
                if record.task_id is None and record.attempts > 0:
                    # The same messageId names the same task: the agent tells us its id.
                    answer = await client.send(message, return_immediately=True)
                    if isinstance(answer, Task):
                        self._apply_task(record, answer)
                if record.task_id and record.state not in _FINAL:
                    self._apply_task(record, await client.cancel_task(record.task_id))
        except (A2AError, TimeoutError) as exc:
            log.info("could not cancel task %s at %s: %s", record.task_id, entry.name, exc)

    def _finish_from_state(self, record: Delegation) -> None:
        state = record.state
        if state == "completed":
            self._finish(record, "completed", None)
        elif state == "input_required":
            question = record.status_text or "(no question given)"
            self._finish(
                record, "input_required", f"{record.agent} needs input, and this run is not interactive: {question}"
            )
        elif state == "auth_required":
            self._finish(
                record,
                "auth_required",
                f"{record.agent} needs authentication: {record.status_text or '(no detail)'}",
            )
        else:
            self._finish(record, state, record.status_text or f"the task ended {state}")

    def _finish(self, record: Delegation, state: str, error: str | None) -> None:
        record.state = state
        if error is not None:
            record.error = error
        ended = time.time()
        record.ended_at = ended
        record.duration = round(ended - record.started_at, 6)
        record.result, record.data = _result_of(record)
        self._final_seen.discard(record.id)
        self._resume_after.pop(record.id, None)
        self.records[record.id] = record
        self.updates.put_nowait(RecordUpdate(dataclasses.replace(record)))
        self.emit(record.finished_event(self.run_id))


def outcome_of(record: Delegation) -> Outcome:
    """What a finished delegation means for its item."""
    if record.state == "completed":
        return Outcome("done", record.agent, record.result, record.data, None, "completed")
    status = "canceled" if record.state == "canceled" else "failed"
    return Outcome(status, record.agent, record.result, record.data, record.error, record.state)
