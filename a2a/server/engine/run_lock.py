"""The mutex of one run's events: ``async with`` it costs no coroutine when it is free.

``asyncio.Lock`` enters and leaves through three coroutines and five calls. A run takes its lock
for every event the agent publishes, and finds it free almost always (an agent publishes one
event at a time; only a cancellation or the run's own end can meet it there). Here a free lock
is taken and released by one plain call each, which return an awaitable that is already done; a
busy one is waited for in arrival order, as ``asyncio.Lock`` does (a newcomer does not pass a
waiter that was woken and has not run yet).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable
from types import TracebackType

from . import latch

__all__ = ["RunLock"]


class RunLock:
    __slots__ = ("_locked", "_waiters")

    def __init__(self) -> None:
        self._locked = False
        self._waiters: deque[asyncio.Future[None]] | None = None

    def locked(self) -> bool:
        return self._locked

    def __aenter__(self) -> Awaitable[None]:
        if not self._locked and not self._waiters:
            self._locked = True
            return latch._done or latch.done()  # the made one without a call
        return self._acquire()

    def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Awaitable[None]:
        if not self._locked:
            raise RuntimeError("RunLock released while not held")
        self._locked = False
        if self._waiters:
            self._wake_first()
        return latch._done or latch.done()

    async def _acquire(self) -> None:
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = deque()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(waiter)
        try:
            try:
                await waiter
            finally:
                waiters.remove(waiter)
        except asyncio.CancelledError:
            if not self._locked:
                self._wake_first()  # woken and cancelled at once: the next one may take it
            raise
        self._locked = True

    def _wake_first(self) -> None:
        if self._waiters:
            first = self._waiters[0]
            if not first.done():
                first.set_result(None)
