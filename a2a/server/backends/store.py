"""Where tasks live: the ``TaskStore`` interface and the in-memory store.

A store keeps, per task, the task itself with its owner (the authenticated principal, ``""``
when anonymous) and tenant, and the idempotency records that map a caller's ``messageId`` to
what it produced. The handler only talks to this interface, so durable stores (SQLite, Redis)
slot in without touching it. Every method is a coroutine so that I/O-bound stores fit.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import binascii
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidParamsError
from ...types import Message, Task, TaskState

log = logging.getLogger("a2a.server")

__all__ = ["DONE", "IdempotencyRecord", "InMemoryTaskStore", "TaskPage", "TaskQuery", "TaskRecord", "TaskStore"]


class _Done:
    """An awaitable that is done already (a write that was durable when it returned)."""

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # a generator that yields nothing: awaiting it never suspends


DONE: Awaitable[None] = _Done()


def log_failed_write(written: asyncio.Future[Any]) -> None:
    # Whoever awaits it is told too; this is for a write nobody awaits (its caller went away).
    if not written.cancelled() and (exc := written.exception()) is not None:
        log.warning("could not record a reply's idempotency record: %r", exc)


#: States in which some process should be running the task's agent.
ACTIVE_STATES = frozenset({TaskState.SUBMITTED, TaskState.WORKING})


@dataclass(slots=True)
class TaskRecord:
    task: Task
    owner: str = ""
    tenant: str = ""
    #: Sequence number of the last stream event published for this task (for resumable streams).
    last_seq: int = 0
    #: Made by this process for a new task id, and not saved yet: no store holds anything
    #: under its id (a store may skip clearing what an earlier save left; it clears the flag).
    fresh: bool = False


@dataclass(slots=True)
class IdempotencyRecord:
    """What one ``messageId`` (per owner and tenant) led to."""

    fingerprint: str
    task_id: str | None = None
    message: Message | None = None


@dataclass(slots=True)
class TaskQuery:
    owner: str
    tenant: str
    context_id: str | None = None
    state: TaskState | None = None
    status_timestamp_after: str | None = None
    page_size: int = 50
    page_token: str | None = None


@dataclass(slots=True)
class TaskPage:
    records: list[TaskRecord] = field(default_factory=list)
    next_page_token: str = ""
    total_size: int = 0


def sort_key(task: Task) -> tuple[str, str]:
    """Newest status first; timestamps are fixed-width ISO-8601 UTC, so strings sort as times."""
    return (task.status.timestamp or "", task.id)


def encode_cursor(task: Task) -> str:
    stamp, task_id = sort_key(task)
    return base64.urlsafe_b64encode(f"{stamp}|{task_id}".encode()).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        stamp, _, task_id = raw.partition("|")
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidParamsError(f"Invalid pageToken {token!r}: pass a nextPageToken from ListTasks") from exc
    if not task_id:
        raise InvalidParamsError(f"Invalid pageToken {token!r}: pass a nextPageToken from ListTasks")
    return stamp, task_id


def paginate(matching: list[TaskRecord], query: TaskQuery) -> TaskPage:
    """Shared cursor pagination over records that already match the query's filters."""
    matching.sort(key=lambda r: sort_key(r.task), reverse=True)
    total = len(matching)
    if query.page_token:
        cursor = decode_cursor(query.page_token)
        matching = [r for r in matching if sort_key(r.task) < cursor]
    page = matching[: query.page_size]
    more = len(matching) > query.page_size
    return TaskPage(page, encode_cursor(page[-1].task) if more and page else "", total)


def matches(record: TaskRecord, query: TaskQuery) -> bool:
    task = record.task
    if record.owner != query.owner or record.tenant != query.tenant:
        return False
    if query.context_id and task.context_id != query.context_id:
        return False
    if query.state and task.status.state != query.state:
        return False
    return not (query.status_timestamp_after and (task.status.timestamp or "") < query.status_timestamp_after)


class TaskStore(abc.ABC):
    """Persistence for tasks and idempotency records."""

    @abc.abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None:
        """The record, whoever owns it (the handler checks ownership)."""

    @abc.abstractmethod
    def save(self, record: TaskRecord) -> Awaitable[None]:
        """Insert or replace the task. Called after every change the handler makes. (An
        ``async def`` fits; a store may also return a future to await.)"""

    def queue_save(self, record: TaskRecord) -> asyncio.Future[None] | None:
        """Queue a save of the task as it is now, without waiting: the future is done once it
        is committed (or failed). A store that groups writes commits it with the next save
        awaited (merged into it when that save is of the same task), and never later than
        that. ``None``: this store does not queue (the caller awaits ``save``)."""
        return None

    @abc.abstractmethod
    async def list(self, query: TaskQuery) -> TaskPage:
        """The owner's tasks matching the filters, newest status first, one cursor page."""

    @abc.abstractmethod
    async def unfinished(self) -> Sequence[TaskRecord]:
        """Every task (any owner) that is SUBMITTED or WORKING: what a restart must look at."""

    @abc.abstractmethod
    async def claim_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        """Atomically store ``record`` under ``(owner, tenant, messageId)`` unless one exists.

        Returns ``None`` when this call claimed the id, or the existing record otherwise.
        """

    @abc.abstractmethod
    async def get_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        """The idempotency record for ``(owner, tenant, messageId)``, if any."""

    @abc.abstractmethod
    async def update_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> None:
        """Replace the idempotency record once the outcome is known."""

    def record_reply(self, key: tuple[str, str, str], record: IdempotencyRecord) -> Awaitable[object]:
        """Write the idempotency record of a plain reply (``update_message``) without waiting.

        The write goes ahead whether or not the result is awaited; the result is done once it
        is durable. The agent goes on at once, and whoever hands the reply to a caller awaits it
        first (nobody is told of a write before it is durable): one suspension fewer per reply.
        The default runs ``update_message`` as a task of its own."""
        written = asyncio.ensure_future(self.update_message(key, record))
        written.add_done_callback(log_failed_write)
        return written

    async def ping(self) -> None:
        """Raise if the store cannot be reached (what ``GET /readyz`` asks). The default reads a
        task that does not exist: one round trip to wherever the tasks live."""
        await self.get("")

    async def close(self) -> None:  # noqa: B027  (optional hook: stores without resources skip it)
        """Release connections and files."""


class InMemoryTaskStore(TaskStore):
    """Everything in dicts: fast, and gone when the process ends. For tests and embedded agents."""

    def __init__(self, *, max_idempotency_records: int = 100_000) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        # Ordered, so the oldest record is dropped in O(1) when the bound is reached.
        self._messages: OrderedDict[tuple[str, str, str], IdempotencyRecord] = OrderedDict()
        self._max_messages = max_idempotency_records

    async def get(self, task_id: str) -> TaskRecord | None:
        return self._tasks.get(task_id)

    async def save(self, record: TaskRecord) -> None:
        self._tasks[record.task.id] = record

    async def list(self, query: TaskQuery) -> TaskPage:
        return paginate([r for r in self._tasks.values() if matches(r, query)], query)

    async def unfinished(self) -> Sequence[TaskRecord]:
        return [r for r in self._tasks.values() if r.task.status.state in ACTIVE_STATES]

    async def claim_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        existing = self._messages.get(key)
        if existing is not None:
            return existing
        if len(self._messages) >= self._max_messages:
            self._messages.popitem(last=False)  # a bounded memory, documented in protocol.md
        self._messages[key] = record
        return None

    async def get_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        return self._messages.get(key)

    async def update_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> None:
        self._messages[key] = record

    def record_reply(self, key: tuple[str, str, str], record: IdempotencyRecord) -> Awaitable[object]:
        self._messages[key] = record
        return DONE
