"""How many of one connection's calls run at once: the rest wait their turn, in arrival order.

A WebSocket or stdio peer may have many calls in flight (``ConnectionLimits.max_in_flight``).
Were they all started at once, a peer flooding cheap calls (``GetTask`` after ``GetTask``, each a
store lookup) would put hundreds of ready coroutines on the event loop, and every other client of
the process (an HTTP request, another connection) would wait behind them. So a call runs only in
one of a few *slots*; the others queue, and the loop holds a handful of ready calls per
connection whatever the peer sends.

A connection cannot tell a call that works from one that waits (a blocking ``SendMessage``
waiting for its task, a ``CancelTask`` waiting for the run to stop, a stream following its
task), and a waiting call must not hold back the same connection's quick ones. So a slot
returns when the call is answered (a stream: when it sends its first event) or ``hold`` seconds
after it was taken, whichever comes first: a call that outlives ``hold`` is waiting, not working,
and it goes on without its slot. What is bounded is the work started in the last ``hold``
seconds, which is what competes for the loop.
"""

from __future__ import annotations

import asyncio

__all__ = ["CallSlots", "Slot"]


class Slot:
    """One call's place; ``release`` is idempotent (the call's end, its first event, the timer)."""

    __slots__ = ("_free", "_timer")

    def __init__(self, free: asyncio.Semaphore, hold: float) -> None:
        self._free = free
        self._timer: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(hold, self.release)

    def release(self) -> None:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()
            self._free.release()


class CallSlots:
    """``size`` slots served in arrival order (``asyncio.Semaphore`` wakes its waiters first in,
    first out, and does not let a newcomer overtake them)."""

    __slots__ = ("_free", "_hold")

    def __init__(self, size: int, hold: float) -> None:
        if size < 1:
            raise ValueError("a connection needs at least one call slot")
        if hold <= 0:
            raise ValueError("a call slot's hold must be positive")
        self._free = asyncio.Semaphore(size)
        self._hold = hold

    async def take(self) -> Slot:
        """Wait for a slot (at once when one is free and nobody queues); cancellable."""
        await self._free.acquire()
        return Slot(self._free, self._hold)
