"""A circuit breaker per agent: stop sending to an agent that keeps failing.

*Closed* (normal): every delegation goes through. After ``failure_threshold`` failed
delegations in a row (unreachable after its retries, timed out, broke mid-task) it *opens*:
delegations to it are refused at once (and fail over to another agent with the same skill,
if there is one) for ``reset_after`` seconds. Then it is *half-open*: one delegation is let
through as a trial; success closes the breaker, failure opens it again. Any answer from the
agent (even a failed task) counts as success: the agent is alive.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["CircuitBreaker"]


@dataclass
class CircuitBreaker:
    failure_threshold: int = 3
    reset_after: float = 30.0
    clock: Callable[[], float] = time.monotonic
    failures: int = field(default=0, init=False)
    opened_at: float | None = field(default=None, init=False)
    _trial: bool = field(default=False, init=False)

    @property
    def state(self) -> str:
        if self.opened_at is None:
            return "closed"
        return "half_open" if self.clock() - self.opened_at >= self.reset_after else "open"

    def allow(self) -> bool:
        """May a delegation be sent now? (In half-open state, only one trial at a time.)"""
        state = self.state
        if state == "closed":
            return True
        if state == "half_open" and not self._trial:
            self._trial = True
            return True
        return False

    def record_success(self) -> None:
        self.failures = 0
        self.opened_at = None
        self._trial = False

    def record_failure(self) -> bool:
        """Count a failure; returns True when this failure opened the breaker."""
        self.failures += 1
        trial_failed, was_open = self._trial, self.opened_at is not None
        if trial_failed or self.failures >= self.failure_threshold:
            self.opened_at = self.clock()
            self._trial = False
            return trial_failed or not was_open
        return False
