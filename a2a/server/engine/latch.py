"""A one-way flag coroutines can wait for.

Like ``asyncio.Event`` without ``clear``, and cheaper where it matters: every run of an agent
has two of these, and most are set before anybody waits (an agent that answers at once), so
nothing is allocated for waiting until a waiter actually has to suspend, and the flag is not
bound to an event loop (``asyncio.Event`` takes a process-wide lock on its first wait).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from typing import Any

__all__ = ["READY", "Latch", "done"]


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

    def wait(self) -> Awaitable[None]:
        """Something to await that returns once the flag is set (at once if it is).

        Not a coroutine: the caller awaits the future itself, so a request waiting for its
        agent resumes through one frame fewer. A waiter that is cancelled stays in the list
        until the next waiter prunes it or the flag is set (setting skips it).
        """
        if self._set:
            return READY
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = [waiter]
        else:
            self._waiters = [w for w in self._waiters if not w.done()]
            self._waiters.append(waiter)
        return waiter


class _Ready:
    """An awaitable that is already done."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield


#: An awaitable that is already done (returned where nothing needs to wait).
READY = _Ready()

_done: asyncio.Future[None] | None = None


def done() -> asyncio.Future[None]:
    """A future that is already done, for a method that is not a coroutine to return where
    nothing needs to wait. Awaiting it runs no Python frame at all (``READY`` runs one, a
    coroutine two) and never touches its loop, so one serves every loop; it is made on the
    first call, which must come from a running loop."""
    global _done
    if _done is None:
        made: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        made.set_result(None)
        _done = made
    return _done
