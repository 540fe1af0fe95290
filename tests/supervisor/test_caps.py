"""Caps keep work: ``max_steps`` and the token and cost budgets stop new delegations, let those in
flight finish (within ``budget.wall_time``), and the final answer names the cap."""

from __future__ import annotations

import asyncio

from supervisor import Supervisor
from tests.supervisor.agents import WAIT, Probe, worker

OBJECTIVE = "\n".join(f"work on part {n}" for n in range(1, 6))


async def test_max_steps_lets_the_delegations_in_flight_finish() -> None:
    probe = Probe(hold=True)
    sup = Supervisor([worker("A", probe)], offline=True, max_steps=3, strategy="parallel", max_concurrency=5)
    run = asyncio.create_task(sup.run(OBJECTIVE))
    await probe.wait_until(lambda p: p.in_flight == 3)
    probe.release()
    result = await asyncio.wait_for(run, WAIT)
    assert [i.status for i in result.items] == ["done", "done", "done", "pending", "pending"]
    assert all(d.state == "completed" for d in result.delegations) and len(result.delegations) == 3
    assert len(probe.finished) == 3  # each agent finished its task: none was cancelled
    assert result.stopped == "budget:max_steps" and result.status == "partial"
    assert "The run stopped early: the step cap was reached (supervisor.max_steps: 3)." in result.final
    assert "- 4. work on part 4 (A): pending: not started before the run ended" in result.final


async def test_a_cap_that_left_nothing_undone_stops_nothing() -> None:
    sup = Supervisor([worker("A")], offline=True, max_steps=3, strategy="parallel")
    result = await asyncio.wait_for(sup.run("work on a\nwork on b\nwork on c"), WAIT)
    assert result.status == "completed" and result.stopped is None, result.final


async def test_work_in_flight_past_the_wall_time_is_canceled_naming_it() -> None:
    probe = Probe(hold=True)  # never released: the wall time ends the wait
    sup = Supervisor([worker("A", probe)], offline=True, max_steps=2, strategy="parallel", budget={"wall_time": 1.0})
    result = await asyncio.wait_for(sup.run(OBJECTIVE), WAIT)
    assert result.stopped == "budget:wall_time"
    canceled = [d for d in result.delegations if d.state == "canceled"]
    assert len(canceled) == 2
    assert all(
        "the wall-time limit was reached (supervisor.budget.wall_time: 1.0s)" in (d.error or "") for d in canceled
    )
    assert "The run stopped early: the wall-time limit was reached" in result.final
