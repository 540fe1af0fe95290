"""Retries as a policy: capped exponential backoff with full jitter, a deadline, and a budget.

Only failures that are safe to retry are retried: the connection was refused, reset or
broke; the peer said 429, 502, 503 or 504. SendMessage is safe to retry because the client
resends the same ``messageId`` and the server answers a repeat with the original task.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import HTTPStatusError, RequestTimeoutError, TransportError

__all__ = ["RetryBudget", "RetryPolicy", "is_retryable"]

log = logging.getLogger("a2a.client")

T = TypeVar("T")


def is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, TransportError) and exc.retryable


@dataclass
class RetryBudget:
    """Caps retries at a share of calls, so that a dead agent is not hammered.

    Every call deposits ``ratio`` tokens (up to ``max_tokens``); every retry spends one. It
    starts with ``initial_tokens`` so a fresh client can ride out a brief outage.
    """

    ratio: float = 0.2
    initial_tokens: float = 10.0
    max_tokens: float = 20.0
    _tokens: float = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = self.initial_tokens

    def on_call(self) -> None:
        self._tokens = min(self.max_tokens, self._tokens + self.ratio)

    def try_spend(self) -> bool:
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    @property
    def tokens(self) -> float:
        return self._tokens


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    multiplier: float = 2.0
    #: Longest a call may take, all attempts and waits included (``None``: no limit).
    deadline: float | None = 60.0
    #: Longest ``Retry-After`` the client will honour; longer ones end the retries.
    max_retry_after: float = 30.0
    budget: RetryBudget | None = field(default_factory=RetryBudget)

    @classmethod
    def none(cls) -> RetryPolicy:
        return cls(max_attempts=1, budget=None)

    def backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max_backoff, initial * multiplier**(attempt-1))]."""
        cap = min(self.max_backoff, self.initial_backoff * self.multiplier ** (attempt - 1))
        return random.uniform(0.0, cap)

    async def run(self, attempt_fn: Callable[[], Awaitable[T]], *, what: str) -> T:
        """Run ``attempt_fn`` until it succeeds, fails for good, or the policy says stop."""
        if self.budget is not None:
            self.budget.on_call()
        started = time.monotonic()
        attempt = 0
        previous: Exception | None = None
        while True:
            attempt += 1
            if previous is not None and self.deadline is not None and time.monotonic() - started >= self.deadline:
                # The wait before this retry used up the deadline: the real failure says more
                # than "timed out".
                raise previous
            try:
                left = self.remaining(started)  # raises RequestTimeoutError once spent
                if left is None:
                    return await attempt_fn()
                try:
                    async with asyncio.timeout(left):
                        return await attempt_fn()
                except TimeoutError as exc:
                    raise RequestTimeoutError(f"{what}: deadline of {self.deadline}s exceeded") from exc
            except Exception as exc:
                delay = self._next_delay(exc, attempt, started)
                if delay is None:
                    raise
                log.info("retrying %s in %.2fs after attempt %d failed: %s", what, delay, attempt, exc)
                previous = exc
                await asyncio.sleep(delay)

    def _next_delay(self, exc: Exception, attempt: int, started: float) -> float | None:
        if not is_retryable(exc) or attempt >= self.max_attempts:
            return None
        delay = self.backoff(attempt)
        if isinstance(exc, HTTPStatusError) and exc.retry_after is not None:
            if exc.retry_after > self.max_retry_after:
                return None
            delay = max(delay, exc.retry_after)
        if self.deadline is not None and time.monotonic() - started + delay > self.deadline:
            return None
        if self.budget is not None and not self.budget.try_spend():
            log.warning("retry budget exhausted; not retrying: %s", exc)
            return None
        return delay

    def remaining(self, started: float) -> float | None:
        if self.deadline is None:
            return None
        left = self.deadline - (time.monotonic() - started)
        if left <= 0:
            raise RequestTimeoutError(f"deadline of {self.deadline}s exceeded")
        return left
