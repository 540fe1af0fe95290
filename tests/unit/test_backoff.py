"""The one backoff schedule and the one ``Retry-After`` parser (``a2a.backoff``)."""

from __future__ import annotations

import dataclasses
import email.utils
import random

import pytest

from a2a.backoff import MAX_RETRY_AFTER, Backoff, parse_retry_after
from a2a.client.retry import RetryPolicy
from a2a.errors import HTTPStatusError, TransportError
from a2a.server.push import DeliveryPolicy

NOW = 1_700_000_000.0  # a fixed clock for the date forms


def http_date(at: float) -> str:
    return email.utils.formatdate(at, usegmt=True)


# ---- Retry-After ------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [("0", 0.0), ("3", 3.0), (" 120 ", 120.0), ("007", 7.0)])
def test_delta_seconds(value: str, seconds: float) -> None:
    assert parse_retry_after(value) == seconds


@pytest.mark.parametrize(
    "value",
    [
        http_date(NOW + 90),  # IMF-fixdate, the preferred form
        "Tuesday, 14-Nov-23 22:14:50 GMT",  # RFC 850 (obsolete)
        "Tue Nov 14 22:14:50 2023",  # asctime (obsolete, no zone: GMT)
    ],
)
def test_http_date_forms_are_the_time_until_then(value: str) -> None:
    assert parse_retry_after(value, now=NOW) == 90.0


def test_a_date_in_the_past_means_now() -> None:
    assert parse_retry_after(http_date(NOW - 3600), now=NOW) == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


@pytest.mark.parametrize("value", ["86401", "9" * 30, "9" * 5000, http_date(NOW + 10 * 86_400)])
def test_huge_waits_are_clamped(value: str) -> None:
    assert parse_retry_after(value, now=NOW) == MAX_RETRY_AFTER


@pytest.mark.parametrize(
    "value",
    [None, "", "   ", "soon", "-1", "1.5", "+5", "1e3", "²", "٣", "12:00", "Wed, 31 Feb 2015 07:28:00 GMT", "0x10"],
)
def test_garbage_is_ignored(value: str | None) -> None:
    assert parse_retry_after(value, now=NOW) is None


# ---- the backoff schedule ---------------------------------------------------------------------------


def test_without_jitter_the_waits_double_up_to_the_cap() -> None:
    backoff = Backoff(initial_backoff=0.5, multiplier=3.0, max_backoff=10.0, jitter=False)
    assert [backoff.delay(n) for n in range(1, 6)] == [0.5, 1.5, 4.5, 10.0, 10.0]
    assert backoff.delay(10_000) == 10.0  # no overflow for an absurd attempt number


def test_full_jitter_draws_from_zero_to_the_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    bounds: list[tuple[float, float]] = []
    monkeypatch.setattr(random, "uniform", lambda a, b: bounds.append((a, b)) or b)
    backoff = Backoff(initial_backoff=0.2, max_backoff=1.0)
    assert [backoff.delay(n) for n in (1, 2, 3, 4)] == [0.2, 0.4, 0.8, 1.0]
    assert bounds == [(0.0, 0.2), (0.0, 0.4), (0.0, 0.8), (0.0, 1.0)]


def test_max_attempts_says_when_to_stop() -> None:
    backoff = Backoff(max_attempts=3)
    assert [backoff.exhausted(n) for n in (1, 2, 3, 4)] == [False, False, True, True]


@pytest.mark.parametrize(
    "fields",
    [{"max_attempts": 0}, {"initial_backoff": -1.0}, {"max_backoff": -0.1}, {"multiplier": 0.5}],
)
def test_nonsense_numbers_are_refused(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**fields)  # type: ignore[arg-type]


def test_the_client_and_the_push_notifier_wait_by_a_backoff() -> None:
    client = RetryPolicy(3, 0.1, 1.0, 2.0, jitter=False)
    assert client.schedule == Backoff(3, 0.1, 1.0, 2.0, jitter=False)
    assert [client.backoff(n) for n in (1, 2, 3, 4, 5)] == [0.1, 0.2, 0.4, 0.8, 1.0]
    push = DeliveryPolicy(jitter=False)
    assert push.schedule == Backoff(10, 1.0, 120.0, 2.0, jitter=False)
    assert [push.backoff(k) for k in (1, 2, 8)] == [1.0, 2.0, 120.0]
    assert push.backoff(1, retry_after=30.0) == 30.0
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


# ---- on_retry ---------------------------------------------------------------------------------------


async def test_on_retry_hears_of_every_retry_with_its_attempt_error_and_wait() -> None:
    heard: list[tuple[int, Exception, float]] = []
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.01, jitter=False, budget=None)
    policy = dataclasses.replace(policy, on_retry=lambda n, exc, delay: heard.append((n, exc, delay)))
    failures = [TransportError("refused", retryable=True), HTTPStatusError("busy", status=503, retry_after=0.05)]

    async def flaky() -> str:
        if failures:
            raise failures.pop(0)
        return "ok"

    assert await policy.run(flaky, what="flaky") == "ok"
    assert [(n, str(exc), delay) for n, exc, delay in heard] == [(1, "refused", 0.01), (2, "busy", 0.05)]


async def test_on_retry_is_not_told_of_a_failure_that_is_not_retried() -> None:
    heard: list[int] = []
    policy = RetryPolicy(max_attempts=2, initial_backoff=0.0, budget=None, on_retry=lambda n, *_: heard.append(n))

    async def broken() -> None:
        raise TransportError("refused", retryable=True)

    with pytest.raises(TransportError):
        await policy.run(broken, what="broken")
    assert heard == [1]  # the second failure ends the call: no retry, no hook
