"""Retries as a policy: capped exponential backoff with full jitter, a deadline, and a budget.

``RetryPolicy.run`` is the one retry loop of the client (calls, card discovery, opening and
resuming streams) and of the supervisor's delegations; ``on_retry`` tells a caller about each
retry (the supervisor turns them into progress events).

Only failures that are safe to retry are retried: the connection was refused, reset or
broke; the peer said 429, 502, 503 or 504. SendMessage is safe to retry because the client
resends the same ``messageId`` and the server answers a repeat with the original task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..backoff import Backoff
from ..errors import HTTPStatusError, RequestTimeoutError, TransportError

__all__ = ["RetryBudget", "RetryHook", "RetryPolicy", "is_retryable"]

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


#: Told of every retry before its wait: the attempt that failed (1 for the first), its error, and
#: the seconds until the next attempt. A progress display uses it; it must not raise.
RetryHook = Callable[[int, Exception, float], None]


@dataclass
class RetryPolicy:
    """When and how often a call is tried again: waits that grow (``schedule``), an overall
    deadline, a limit on ``Retry-After``, a budget, and a hook told of each retry."""

    max_attempts: int = 4
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    multiplier: float = 2.0
    #: Longest a call may take, all attempts and waits included (``None``: no limit).
    deadline: float | None = 60.0
    #: Longest ``Retry-After`` the client will honour; longer ones end the retries.
    max_retry_after: float = 30.0
    budget: RetryBudget | None = field(default_factory=RetryBudget)
    #: ``False``: every wait is its ceiling exactly, for runs that must be reproducible.
    jitter: bool = True
    on_retry: RetryHook | None = None

    def __post_init__(self) -> None:
        self.schedule  # noqa: B018 - refuses nonsense numbers now rather than at the first retry

    @property
    def schedule(self) -> Backoff:
        """The waits between attempts (defaults: 4 attempts, up to ``min(5 s, 0.2 s x 2^(n-1))``)."""
        return Backoff(self.max_attempts, self.initial_backoff, self.max_backoff, self.multiplier, self.jitter)

    @classmethod
    def none(cls) -> RetryPolicy:
        return cls(max_attempts=1, budget=None)

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (from ``schedule``; a subclass may change it)."""
        return self.schedule.delay(attempt)

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
                    if previous is not None:
                        # A retry cut short by the deadline: as above, the failure that led to
                        # it says more than "timed out" (whatever the machine's load).
                        raise previous from exc
                    raise RequestTimeoutError(f"{what}: deadline of {self.deadline}s exceeded") from exc
            except Exception as exc:
                delay = self._next_delay(exc, attempt, started)
                if delay is None:
                    raise
                log.info("retrying %s in %.2fs after attempt %d failed: %s", what, delay, attempt, exc)
                if self.on_retry is not None:
                    self.on_retry(attempt, exc, delay)
                previous = exc
                await asyncio.sleep(delay)

    def _next_delay(self, exc: Exception, attempt: int, started: float) -> float | None:
        if not is_retryable(exc) or self.schedule.exhausted(attempt):
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
