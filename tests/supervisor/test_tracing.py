"""Runs traceable across agents: every delegation carries the run id and, in a nested supervisor,
the parent run id (message metadata); one contextId per agent within a run, parallel first
delegations included."""

from __future__ import annotations

import asyncio

from supervisor import Supervisor
from supervisor.agent import supervisor_agent
from supervisor.delegation import PARENT_RUN_KEY, RUN_KEY
from tests.supervisor.agents import WAIT, Probe, serving, worker


async def test_a_nested_supervisors_delegations_carry_its_run_and_its_parent() -> None:
    probe = Probe()
    inner = Supervisor([worker("Leaf", probe)], offline=True, checkpoint={"backend": "memory"})
    async with serving(supervisor_agent(inner, name="Inner")) as (url,):
        outer = Supervisor([{"name": "Inner", "url": url}], offline=True, checkpoint={"backend": "memory"})
        events = [e async for e in outer.stream("work on apples")]
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed", result.final
    (seen,) = probe.metadata
    assert seen[PARENT_RUN_KEY] == result.run_id  # the leaf knows the outer run ...
    assert seen[RUN_KEY] not in (None, result.run_id)  # ... and the inner one, which delegated to it
    assert seen["a2a-net/depth"] == 2
    assert all(e.parent_run_id is None for e in events)  # the outer run has no parent
    assert all(e.to_dict()["run_id"] == result.run_id and "parent_run_id" not in e.to_dict() for e in events)


async def test_a_nested_run_records_its_parent_on_every_event() -> None:
    inner = Supervisor([worker("Leaf")], offline=True, checkpoint={"backend": "memory"})
    events = [e async for e in inner.stream("work on pears", parent_run_id="outer-run")]
    assert events[-1].result.status == "completed"  # type: ignore[attr-defined]
    assert {e.parent_run_id for e in events} == {"outer-run"}
    assert events[0].to_dict()["parent_run_id"] == "outer-run"


async def test_parallel_first_delegations_to_one_agent_share_its_context() -> None:
    probe = Probe(hold=True)
    sup = Supervisor([worker("A", probe)], offline=True, strategy="parallel", checkpoint={"backend": "memory"})
    run = asyncio.create_task(sup.run("work on apples\nwork on pears\nwork on plums"))
    await probe.wait_until(lambda p: p.in_flight == 3)  # all three sent before any answered
    probe.release()
    result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed", result.final
    contexts = {d.context_id for d in result.delegations}
    assert len(contexts) == 1 and None not in contexts
    assert {m[RUN_KEY] for m in probe.metadata} == {result.run_id}
