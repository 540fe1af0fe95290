"""How long to wait before trying again: one backoff schedule, and the peer's ``Retry-After``.

Every retry loop of a2a-net waits the same way: the client's ``RetryPolicy`` (and the supervisor,
which retries through it) and the push notifier's ``DeliveryPolicy`` each keep their settings
(with their own defaults) and wait by their ``schedule``, a ``Backoff``. ``parse_retry_after``
reads the header for the client transports and the notifier alike. Nothing here does I/O, so
every layer may import it.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from dataclasses import dataclass
from datetime import UTC

__all__ = ["MAX_RETRY_AFTER", "Backoff", "parse_retry_after"]

#: The longest ``Retry-After`` taken as said (one day): a larger one, or a date further ahead,
#: reads as this, so that no arithmetic on it can overflow. Each policy caps it lower.
MAX_RETRY_AFTER = 86_400.0

# delta-seconds is 1*DIGIT, ASCII only (``str.isdigit`` would let "²" through).
_DELTA_SECONDS = re.compile(r"[0-9]+")


@dataclass(frozen=True, slots=True)
class Backoff:
    """Capped exponential backoff with full jitter, for at most ``max_attempts`` attempts.

    After the n-th failed attempt the wait is drawn uniformly from ``[0, ceiling(n)]``, where
    ``ceiling(n) = min(max_backoff, initial_backoff * multiplier ** (n - 1))``; with
    ``jitter=False`` it is ``ceiling(n)`` exactly (reproducible runs, tests). Full jitter keeps
    clients that failed together from retrying together.
    """

    max_attempts: int = 4
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    multiplier: float = 2.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {self.max_attempts}")
        if self.initial_backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError(
                f"backoffs must be >= 0 and the multiplier >= 1, got initial_backoff={self.initial_backoff}, "
                f"max_backoff={self.max_backoff}, multiplier={self.multiplier}"
            )

    def ceiling(self, attempt: int) -> float:
        """The longest wait after failed attempt number ``attempt`` (1 for the first)."""
        exponent = max(attempt - 1, 0)
        try:
            return min(self.max_backoff, self.initial_backoff * self.multiplier**exponent)
        except OverflowError:  # a huge attempt number: the cap has long been reached
            return self.max_backoff

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt``."""
        ceiling = self.ceiling(attempt)
        return random.uniform(0.0, ceiling) if self.jitter else ceiling

    def exhausted(self, attempt: int) -> bool:
        """True once ``attempt`` attempts have been made: no more may follow."""
        return attempt >= self.max_attempts


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (RFC 9110, section 10.2.3), or ``None``.

    Both forms are read: delta-seconds (``"120"``) and an HTTP date (``"Wed, 21 Oct 2015 07:28:00
    GMT"``, and the obsolete RFC 850 and asctime forms). A date in the past means now (0); a wait
    above ``MAX_RETRY_AFTER`` is clamped to it; anything else (empty, negative, fractional, not
    a date) is ignored. ``now`` (a ``time.time()`` value) is for tests.
    """
    if value is None:
        return None
    text = value.strip()
    if _DELTA_SECONDS.fullmatch(text):
        return min(float(text), MAX_RETRY_AFTER)  # float(): no digit limit, a long one is inf
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # the asctime form has no zone; HTTP dates are GMT
    wait = when.timestamp() - (time.time() if now is None else now)
    return min(max(0.0, wait), MAX_RETRY_AFTER)
