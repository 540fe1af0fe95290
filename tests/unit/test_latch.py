"""The run's one-way flags (``Latch``) and the server's timestamps."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import UTC, datetime

from a2a.server.engine.execution import now_iso
from a2a.server.engine.latch import Latch


async def test_a_set_latch_does_not_suspend() -> None:
    latch = Latch()
    latch.set()
    latch.set()  # idempotent
    assert latch.is_set()
    await asyncio.wait_for(latch.wait(), 1)


async def test_every_waiter_wakes_when_it_is_set() -> None:
    latch = Latch()
    waiters = [asyncio.ensure_future(latch.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(w.done() for w in waiters)
    latch.set()
    await asyncio.wait_for(asyncio.gather(*waiters), 1)


async def test_a_cancelled_waiter_leaves_and_the_others_still_wake() -> None:
    latch = Latch()
    gone: asyncio.Future[None] = asyncio.ensure_future(latch.wait())
    stays = asyncio.ensure_future(latch.wait())
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    late = asyncio.ensure_future(latch.wait())  # a new waiter prunes the cancelled one
    await asyncio.sleep(0)
    assert latch._waiters is not None and len(latch._waiters) == 2
    latch.set()
    await asyncio.wait_for(asyncio.gather(stays, late), 1)
    assert gone.cancelled()


def test_now_iso_is_fixed_width_utc_with_microseconds() -> None:
    stamps = []
    for _ in range(2000):
        stamps.append(now_iso())
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", s) for s in stamps)
    assert stamps == sorted(stamps), "timestamps sort as strings, in time order"
    parsed = datetime.strptime(stamps[-1], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs(parsed.timestamp() - time.time()) < 5


def test_now_iso_follows_the_clock_across_seconds() -> None:
    first = now_iso()
    time.sleep(1.05)
    second = now_iso()
    assert second[:19] != first[:19], "the cached second must move on"
    assert second > first
