"""Where a task's stream events go, so that every reader of the task gets them.

An ``EventBus`` carries each task's events in order, numbered by the task's sequence (the SSE
``id``), to any number of followers, and keeps them for a while after the task ends so that a
client that lost its connection can resume (``follow(task_id, from_seq)``) with no gap and no
duplicate. ``InMemoryEventBus`` serves one process; ``RedisEventBus`` (in ``backends/redis/bus``)
lets several replicas share streams. (What replicas tell each other besides events, cancel
requests and leases, is a ``Coordination``: see ``coordination``.)
"""

from __future__ import annotations

import abc
import math
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable

from . import latch
from .events import EventLog, LoggedEvent, ends_stream

__all__ = ["DEFAULT_RETENTION_SECONDS", "EventBus", "InMemoryEventBus", "is_final"]

#: How long the events of a finished task stay available for resuming.
DEFAULT_RETENTION_SECONDS = 300.0


class EventBus(abc.ABC):
    @abc.abstractmethod
    def publish(self, task_id: str, logged: LoggedEvent) -> Awaitable[None]:
        """Append one event (its ``seq`` is one more than the last) and wake the followers.
        (An ``async def`` fits; a bus that needs no I/O returns something already done.)"""

    @abc.abstractmethod
    def follow(self, task_id: str, from_seq: int, *, until_terminal: bool = False) -> AsyncIterator[LoggedEvent]:
        """Events with ``seq >= from_seq`` (retained ones first, then live ones) until one ends
        the stream (terminal or interrupted state, or a message; with ``until_terminal``, as a
        subscription follows a task, not an interrupted state)."""

    @abc.abstractmethod
    async def retained_from(self, task_id: str) -> int | None:
        """The lowest seq still available for a task (``None``: nothing retained)."""

    async def last_published(self, task_id: str) -> int | None:
        """The highest seq published for a task, if the bus knows it (``None``: it does not, or
        nothing). A bus shared by processes answers it: a process that died may have published
        events it had not saved (artifact chunks are saved in batches), and whoever ends its
        task numbers the final event after them."""
        return None

    @abc.abstractmethod
    async def close(self) -> None:
        """Followers finish; nothing more is published."""

    async def ping(self) -> None:
        """Raise if the bus cannot be reached (what ``GET /readyz`` asks). The default asks what
        is retained of a stream that does not exist: one round trip to a shared bus."""
        await self.retained_from("")


class InMemoryEventBus(EventBus):
    """One process: an ``EventLog`` per task, kept ``retention`` seconds after the task ends
    (and at most ``max_finished`` finished logs, oldest dropped first)."""

    def __init__(self, *, retention: float = DEFAULT_RETENTION_SECONDS, max_finished: int = 10_000) -> None:
        self.retention = retention
        self.max_finished = max_finished
        self._logs: dict[str, EventLog] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()
        #: No finished log expires before this (the first one's deadline, or later): ``publish``
        #: looks no further until then. Never later than the first deadline, only earlier.
        self._next_expiry = math.inf

    def _log(self, task_id: str, first_seq: int) -> EventLog:
        event_log = self._logs.get(task_id)
        if event_log is None:
            event_log = self._logs[task_id] = EventLog(first_seq=first_seq)
        return event_log

    def publish(self, task_id: str, logged: LoggedEvent) -> Awaitable[None]:
        # Not a coroutine, and ``_log`` and ``is_final`` written out: every event of every task
        # passes here.
        event_log = self._logs.get(task_id)
        if event_log is None:
            event_log = self._logs[task_id] = EventLog(first_seq=logged.seq)
        event_log.append(logged)
        if ends_stream(logged.event, until_terminal=True):
            now = time.monotonic()
            finished = self._finished
            deadline = finished[task_id] = now + self.retention
            finished.move_to_end(task_id)
            if len(finished) == 1:  # the first one: its deadline is the next
                self._next_expiry = deadline
            # Only here: finished logs are what expire, and a task's other events need no look
            # (nor does this one before the first deadline: a call less for most tasks).
            if now >= self._next_expiry or len(finished) > self.max_finished:
                self._expire(now)
        return latch._done or latch.done()

    def _expire(self, now: float) -> None:
        finished = self._finished
        while finished:
            task_id, deadline = next(iter(finished.items()))
            if deadline > now and len(finished) <= self.max_finished:
                self._next_expiry = deadline
                return
            del finished[task_id]
            event_log = self._logs.pop(task_id, None)
            if event_log is not None:
                event_log.close()
        self._next_expiry = math.inf

    async def retained_from(self, task_id: str) -> int | None:
        event_log = self._logs.get(task_id)
        return None if event_log is None else event_log.first_seq

    def follow(self, task_id: str, from_seq: int, *, until_terminal: bool = False) -> AsyncIterator[LoggedEvent]:
        # The log's own generator rather than one more around it: every open stream holds its
        # generators (a frame each, and an entry in the loop's set of async generators).
        return self._log(task_id, from_seq).follow(from_seq, until_terminal=until_terminal)

    async def close(self) -> None:
        for event_log in self._logs.values():
            event_log.close()
        self._logs.clear()
        self._finished.clear()
        self._next_expiry = math.inf


def is_final(logged: LoggedEvent) -> bool:
    """Terminal (not merely interrupted): the task will publish nothing more."""
    return ends_stream(logged.event, until_terminal=True)
