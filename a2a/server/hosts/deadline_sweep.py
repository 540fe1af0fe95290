"""Connections' deadlines, checked by one timer per server instead of a timer per connection.

A timer per connection (an asyncio/uvloop timer handle, about 0.5 KB with uvloop's own parts)
stayed alive for as long as the connection did, even while it served a long SSE stream that
has no deadline at all. Here a connection with a deadline is one dictionary entry; a single
timer wakes every ``resolution`` seconds while any entry is left, and tells the connections
whose deadline has passed. A deadline is therefore met up to ``resolution`` late: the server
picks it as a small part of its shortest timeout (``resolution_for``), so a peer never gets
noticeably more time than its limit allows.

Arming and disarming are a dictionary insert and pop (no timer is created, moved or cancelled
per request); the sweep itself costs one comparison per armed connection per tick.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ..engine.limits import HttpLimits

__all__ = ["DeadlineSweep", "resolution_for"]

#: Deadlines are checked this many times within the shortest timeout ...
_CHECKS_PER_TIMEOUT = 8
#: ... but at least once a second (a 60 s idle timeout is not met 7 s late).
_MAX_RESOLUTION = 1.0


def resolution_for(limits: HttpLimits) -> float:
    """How often the sweep looks: an eighth of the shortest timeout, at most a second."""
    timeouts = [limits.header_timeout, limits.body_timeout, limits.idle_timeout]
    if limits.drain_timeout > 0:
        timeouts.append(limits.drain_timeout)
    return min(_MAX_RESOLUTION, min(timeouts) / _CHECKS_PER_TIMEOUT)


class Expiring(Protocol):
    """What the sweep watches: a deadline (loop time, or ``None``: none now) and what to do
    once it has passed."""

    @property
    def deadline(self) -> float | None: ...

    def expired(self) -> None: ...


class DeadlineSweep:
    """The connections of one server that have a deadline, and the one timer that checks them."""

    __slots__ = ("_armed", "_loop", "_timer", "resolution")

    def __init__(self, loop: asyncio.AbstractEventLoop, resolution: float) -> None:
        self._loop = loop
        self.resolution = resolution
        #: Insertion-ordered, so connections are told in the order they were armed.
        self._armed: dict[Expiring, None] = {}
        self._timer: asyncio.TimerHandle | None = None

    def __len__(self) -> int:
        return len(self._armed)

    def watch(self, item: Expiring) -> None:
        """Check ``item``'s deadline from now on (it may move: the sweep reads it when it looks)."""
        self._armed[item] = None
        if self._timer is None:
            self._timer = self._loop.call_later(self.resolution, self._sweep)

    def forget(self, item: Expiring) -> None:
        self._armed.pop(item, None)

    def close(self) -> None:
        self._armed.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _sweep(self) -> None:
        now = self._loop.time()
        due = []
        for item in self._armed:
            deadline = item.deadline
            if deadline is None or deadline <= now:
                due.append(item)
        for item in due:
            # Unwatched first: what it does when told may arm it again (a 408's grace period).
            del self._armed[item]
        for item in due:
            if item.deadline is not None:
                item.expired()
        self._timer = self._loop.call_later(self.resolution, self._sweep) if self._armed else None
