"""A one-way flag coroutines can wait for.

Like ``asyncio.Event`` without ``clear``, and cheaper where it matters: every run of an agent
has two of these, and most are set before anybody waits (an agent that answers at once), so
nothing is allocated for waiting until a waiter actually has to suspend, and the flag is not
bound to an event loop (``asyncio.Event`` takes a process-wide lock on its first wait).
"""

from __future__ import annotations

import asyncio

__all__ = ["Latch"]


class Latch:
    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Set the flag (idempotent) and wake every waiter."""
        if self._set:
            return
        self._set = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    async def wait(self) -> None:
        """Return once the flag is set (at once if it is)."""
        if self._set:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            # A cancelled waiter leaves the list (a set latch has already dropped it).
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)
