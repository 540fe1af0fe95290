"""The deadline sweep: one timer tells connections whose deadline has passed."""

from __future__ import annotations

import asyncio

import pytest

from a2a.server.engine.limits import HttpLimits
from a2a.server.hosts.deadline_sweep import DeadlineSweep, resolution_for


class _Conn:
    def __init__(self, sweep: DeadlineSweep, loop: asyncio.AbstractEventLoop) -> None:
        self.sweep, self.loop = sweep, loop
        self.deadline: float | None = None
        self.told = 0
        self.rearm: float | None = None

    def arm(self, seconds: float) -> None:
        self.deadline = self.loop.time() + seconds
        self.sweep.watch(self)

    def expired(self) -> None:
        self.told += 1
        self.deadline = None
        if self.rearm is not None:
            seconds, self.rearm = self.rearm, None
            self.arm(seconds)


async def test_only_connections_past_their_deadline_are_told_once() -> None:
    loop = asyncio.get_running_loop()
    sweep = DeadlineSweep(loop, 0.01)
    soon, later, moved, forgotten = (_Conn(sweep, loop) for _ in range(4))
    soon.arm(0.03)
    later.arm(10.0)
    moved.arm(0.03)
    moved.arm(10.0)  # a later deadline replaces the earlier one
    forgotten.arm(0.03)
    sweep.forget(forgotten)
    await asyncio.sleep(0.2)
    assert (soon.told, later.told, moved.told, forgotten.told) == (1, 0, 0, 0)
    assert len(sweep) == 2
    sweep.close()


async def test_a_connection_told_may_arm_again_and_is_told_again() -> None:
    loop = asyncio.get_running_loop()
    sweep = DeadlineSweep(loop, 0.01)
    conn = _Conn(sweep, loop)
    conn.rearm = 0.03  # as a 408 gives its handler a grace period
    conn.arm(0.02)
    await asyncio.sleep(0.25)
    assert conn.told == 2
    assert len(sweep) == 0


async def test_the_timer_stops_when_nothing_is_armed_and_starts_again() -> None:
    loop = asyncio.get_running_loop()
    sweep = DeadlineSweep(loop, 0.01)
    conn = _Conn(sweep, loop)
    conn.arm(0.02)
    await asyncio.sleep(0.1)
    assert conn.told == 1 and sweep._timer is None
    conn.arm(0.02)
    assert sweep._timer is not None
    await asyncio.sleep(0.1)
    assert conn.told == 2 and sweep._timer is None


async def test_a_deadline_cleared_before_the_sweep_is_not_told() -> None:
    loop = asyncio.get_running_loop()
    sweep = DeadlineSweep(loop, 0.01)
    conn = _Conn(sweep, loop)
    conn.arm(0.0)
    conn.deadline = None  # serving now: no deadline
    await asyncio.sleep(0.05)
    assert conn.told == 0 and len(sweep) == 0


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        (HttpLimits(), 0.625),  # the 5 s drain timeout / 8
        (HttpLimits(drain_timeout=0, header_timeout=30, body_timeout=30, idle_timeout=30), 1.0),
        (HttpLimits(header_timeout=0.4, body_timeout=0.4, idle_timeout=0.4, drain_timeout=0.4), 0.05),
    ],
)
def test_the_resolution_is_a_small_part_of_the_shortest_timeout(limits: HttpLimits, expected: float) -> None:
    assert resolution_for(limits) == pytest.approx(expected)
