"""What the processes serving one agent tell each other: cancel requests, leases, recovery.

A task runs in the process that accepted its message. When several replicas share a backend,
a ``CancelTask`` may arrive at another replica, and a replica may die with tasks running; a
``Coordination`` carries those facts between them:

- ``request_cancel``: ask whichever process runs a task to cancel it;
- ``run_started`` / ``run_finished``: this process holds (gives back) the task's lease;
- ``is_running_elsewhere``: another live process holds the task's lease (``lease_left``: and
  when that lease lapses unless renewed, so a wait for the task looks again just then);
- ``claim_orphan`` / ``release_orphan``: this process ends a task nobody runs any more (its
  process died), and no other process does the same at the same moment;
- ``start(cancel=..., recover=...)``: listen for cancel requests, and call ``recover`` (mark
  FAILED the tasks no live process runs) when another process is found dead, and now and then.

``SingleProcessCoordination`` is the one-process case: there is nobody to tell, so it does
nothing, and a task is never running elsewhere. ``RedisCoordination`` (in
``backends/redis/coordination``) serves replicas sharing one Redis. The request handler calls the
same methods in both cases, and never asks which one it has.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable

__all__ = [
    "LIVENESS_POLL_SECONDS",
    "RECOVERY_SWEEP_SECONDS",
    "CancelHandler",
    "Coordination",
    "RecoverHandler",
    "SingleProcessCoordination",
]

#: How often a replica looks at every unfinished task for ones whose replica died, besides
#: the recovery that follows at once when a replica is found dead (this sweep is the safety
#: net: for a replica that died while recovering another, say).
RECOVERY_SWEEP_SECONDS = 30.0
#: How often a wait for a task running elsewhere checks that its process is still alive, when
#: the coordination cannot say when the process's lease lapses.
LIVENESS_POLL_SECONDS = 1.0

#: Cancel ``task_id`` if this process runs it.
CancelHandler = Callable[[str], Awaitable[None]]
#: Mark FAILED the unfinished tasks no live process runs; returns how many.
RecoverHandler = Callable[[], Awaitable[int]]


class Coordination(abc.ABC):
    @abc.abstractmethod
    async def start(self, *, cancel: CancelHandler, recover: RecoverHandler) -> None:
        """Start listening: ``cancel`` is called when another process asks to cancel a task,
        ``recover`` now and then while other processes may die (not at once: the handler
        recovers once itself before serving)."""

    @abc.abstractmethod
    def run_started(self, task_id: str) -> None:
        """This process now runs ``task_id``. Not a coroutine: it is on every run's path, and
        what a shared coordination writes for it is written in the background."""

    @abc.abstractmethod
    def run_finished(self, task_id: str) -> None:
        """This process no longer runs ``task_id``."""

    @abc.abstractmethod
    async def request_cancel(self, task_id: str) -> bool:
        """Ask whichever other process runs ``task_id`` to cancel it. ``False``: there is no
        other process to ask (the caller cancels the task itself at once)."""

    @abc.abstractmethod
    async def is_running_elsewhere(self, task_id: str) -> bool:
        """Whether another live process runs ``task_id``."""

    async def lease_left(self, task_id: str) -> float | None:
        """Seconds until the lease of the live process running ``task_id`` lapses unless it is
        renewed (``None``: no other live process runs it). A wait for a task running elsewhere
        looks again then, so it ends about when the process is found dead, not later."""
        return LIVENESS_POLL_SECONDS if await self.is_running_elsewhere(task_id) else None

    async def claim_orphan(self, task_id: str) -> bool:
        """No live process runs ``task_id`` and no other process is ending it: ``True`` means
        this process ends it now (then calls ``release_orphan``). At most one process at a time
        gets ``True``, so a dead replica's task is ended once, not by every replica that noticed."""
        return not await self.is_running_elsewhere(task_id)

    async def release_orphan(self, task_id: str) -> None:
        """This process is done ending ``task_id`` (claimed with ``claim_orphan``)."""
        return None

    @abc.abstractmethod
    async def close(self) -> None:
        """Stop listening (leases this process holds lapse on their own)."""


class SingleProcessCoordination(Coordination):
    """One process serves the agent: every task runs here, so there is nothing to tell."""

    async def start(self, *, cancel: CancelHandler, recover: RecoverHandler) -> None:
        return None

    def run_started(self, task_id: str) -> None:
        return None

    def run_finished(self, task_id: str) -> None:
        return None

    async def request_cancel(self, task_id: str) -> bool:
        return False

    async def is_running_elsewhere(self, task_id: str) -> bool:
        return False

    async def close(self) -> None:
        return None
