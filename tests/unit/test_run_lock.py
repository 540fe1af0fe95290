"""RunLock: the run's mutex, free in one call, fair and cancellable when busy."""

from __future__ import annotations

import asyncio

import pytest

from a2a.server.engine.run_lock import RunLock


async def test_holders_do_not_overlap_and_wait_in_arrival_order() -> None:
    lock = RunLock()
    inside: list[int] = []
    order: list[int] = []

    async def hold(i: int) -> None:
        async with lock:
            inside.append(i)
            assert len(inside) == 1, "two holders at once"
            order.append(i)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            inside.remove(i)

    await asyncio.gather(*(hold(i) for i in range(5)))
    assert order == [0, 1, 2, 3, 4]
    assert not lock.locked()


async def test_a_newcomer_does_not_pass_a_woken_waiter() -> None:
    lock = RunLock()
    order: list[str] = []
    await lock.__aenter__()

    async def waiter() -> None:
        async with lock:
            order.append("waiter")

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)  # queued
    await lock.__aexit__(None, None, None)  # wakes the waiter, which has not run yet
    async with lock:  # a newcomer now queues behind it
        order.append("newcomer")
    await task
    assert order == ["waiter", "newcomer"]


async def test_a_cancelled_waiter_passes_the_lock_on() -> None:
    lock = RunLock()
    await lock.__aenter__()
    first = asyncio.ensure_future(lock.__aenter__())
    got: list[str] = []

    async def second() -> None:
        async with lock:
            got.append("second")

    other = asyncio.ensure_future(second())
    await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await lock.__aexit__(None, None, None)
    await asyncio.wait_for(other, 1.0)
    assert got == ["second"] and not lock.locked()


async def test_an_error_inside_releases_it() -> None:
    lock = RunLock()
    with pytest.raises(ValueError):
        async with lock:
            raise ValueError("boom")
    assert not lock.locked()
    async with lock:
        assert lock.locked()
