"""End to end without a model: the offline planner, real agents, all three strategies."""

from __future__ import annotations

import asyncio

from supervisor import Supervisor, events
from tests.supervisor.agents import WAIT, Probe, serving, worker


async def test_in_process_agents_complete_a_plan() -> None:
    probe = Probe()
    sup = Supervisor([worker("A", probe), worker("B", probe)], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on apples; work on pears; work on plums"), WAIT)
    assert result.status == "completed", result.final
    assert [i.status for i in result.items] == ["done", "done", "done"]
    assert probe.by_agent == {"A": 2, "B": 1}  # identical agents share the work
    assert "A did: work on apples" in result.final


async def test_http_agents_complete_a_plan() -> None:
    probe = Probe()
    async with serving(worker("A", probe), worker("B", probe)) as urls:
        sup = Supervisor(urls, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples; work on pears"), WAIT)
    assert result.status == "completed", result.final
    assert result.metrics.delegations == 2
    assert result.metrics.agent_input_tokens == 20
    seen = list(result.delegations)
    assert all(d.task_id for d in seen)
    assert all(d.input_tokens == 10 and d.output_tokens == 5 for d in seen)


async def test_the_concurrency_cap_is_honoured_as_a_sliding_pool() -> None:
    probe = Probe(hold=True)
    async with serving(*(worker(f"W{i}", probe) for i in range(4))) as urls:
        sup = Supervisor(urls, max_concurrency=3, strategy="parallel", checkpoint={"backend": "memory"})
        run = asyncio.create_task(sup.run("\n".join(f"work on item {i}" for i in range(8))))
        await probe.wait_until(lambda p: p.in_flight == 3)
        assert len(probe.started) == 3  # every item was ready, yet only three were sent
        probe.release()
        result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed"
    assert probe.max_in_flight == 3
    assert sum(probe.executions.values()) == 8 and set(probe.executions.values()) == {1}


async def test_sequential_runs_one_at_a_time_in_order() -> None:
    probe = Probe()
    async with serving(worker("A", probe), worker("B", probe)) as urls:
        sup = Supervisor(urls, strategy="sequential", max_concurrency=8, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on one; work on two; work on three; work on four"), WAIT)
    assert result.status == "completed"
    assert probe.max_in_flight == 1
    assert probe.started == ["work on one", "work on two", "work on three", "work on four"]


async def test_adaptive_overlaps_independent_items_and_orders_dependent_ones() -> None:
    probe = Probe(hold=True)
    async with serving(worker("A", probe), worker("B", probe), worker("C", probe)) as urls:
        sup = Supervisor(urls, strategy="adaptive", checkpoint={"backend": "memory"})
        objective = "work on apples\nwork on pears\nthen work on the result of both"
        stream = sup.stream(objective)
        finished: events.RunFinished | None = None

        async def consume() -> None:
            nonlocal finished
            async for event in stream:
                if isinstance(event, events.RunFinished):
                    finished = event

        consumer = asyncio.create_task(consume())
        await probe.wait_until(lambda p: p.in_flight == 2)  # the two independent items overlap
        assert "work on the result of both" not in probe.started  # the dependent one waits
        probe.release()
        await asyncio.wait_for(consumer, WAIT)
    assert finished is not None and finished.result is not None
    result = finished.result
    assert result.status == "completed"
    assert result.item("3").depends_on == ["1", "2"]  # "both": the two steps before
    assert probe.started.index("work on the result of both") > probe.finished.index("work on pears")
    third = next(t for t in probe.texts if t.startswith("work on the result of both"))
    assert "<peer-data" in third and "did: work on pears" in third  # the dependency's result, quoted as data


async def test_parallel_ignores_dependencies() -> None:
    probe = Probe(hold=True)
    async with serving(worker("A", probe), worker("B", probe)) as urls:
        sup = Supervisor(urls, strategy="parallel", checkpoint={"backend": "memory"})
        run = asyncio.create_task(sup.run("work on apples. Then work on pears"))
        await probe.wait_until(lambda p: p.in_flight == 2)
        probe.release()
        result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed"
    assert all(i.depends_on == [] for i in result.items)


async def test_the_result_object_carries_items_delegations_variables_artifacts_and_metrics() -> None:
    sup = Supervisor([worker("A", answer=lambda text: {"answer": 42})], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on the answer"), WAIT)
    assert result.ok and result.run_id
    (item,) = result.items
    assert item.agent == "A" and item.status == "done" and item.data == {"answer": 42}
    assert result.variables == {"A": {"1": {"answer": 42}}}
    (artifact,) = result.artifacts["A"]
    assert artifact["name"] == "result" and artifact["parts"][0]["data"] == {"answer": 42}
    (delegation,) = result.delegations
    assert delegation.state == "completed" and delegation.attempts == 1 and delegation.events >= 3
    assert delegation.duration > 0 and delegation.cost_usd == 0.001
    metrics = result.metrics
    assert metrics.delegations == 1 and metrics.total_tokens == 15 and metrics.per_agent["A"].completed == 1
    assert metrics.model_calls == 0
