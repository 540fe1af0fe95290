"""A step's checkpoint holds what the step changed, not the whole run again.

With the TODO list and the delegation log saved whole at every step, a run of n items stores
O(n) per step, O(n²) in all (and costs as much time to serialise). With ``DeltaChannel`` maps the
stored bytes grow with the number of items, not with its square. Bytes, not seconds: no timing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from supervisor import Supervisor
from supervisor.graph import build_graph
from tests.supervisor.agents import WAIT, worker


def stored_bytes(saver: InMemorySaver) -> int:
    blobs = sum(len(value[1]) for value in saver.blobs.values())
    writes = sum(len(w[2][1]) for per_task in saver.writes.values() for w in per_task.values())
    return blobs + writes


async def run_items(n: int) -> tuple[int, Any]:
    saver = InMemorySaver()
    sup = Supervisor([worker("W", usage=None)], strategy="sequential", max_steps=10 * n, checkpointer=saver)
    result = await asyncio.wait_for(sup.run("\n".join(f"work on item {i}" for i in range(n))), WAIT)
    assert result.status == "completed", result.final
    return stored_bytes(saver), result


async def test_checkpoint_bytes_grow_linearly_with_the_items() -> None:
    small, _ = await run_items(10)
    large, result = await run_items(40)
    assert len(result.items) == 40
    # Linear: about 4 times as much. Saving every map whole at every step: about 16 times.
    assert large < 6 * small, (small, large)


async def test_a_run_is_rebuilt_from_its_deltas() -> None:
    saver = InMemorySaver()
    sup = Supervisor([worker("W", usage=None)], strategy="sequential", checkpointer=saver)
    result = await asyncio.wait_for(sup.run("work on a\nwork on b\nwork on c", run_id="r1"), WAIT)
    assert result.status == "completed"
    config: Any = {"configurable": {"thread_id": "r1"}}
    state = (await build_graph().compile(checkpointer=saver).aget_state(config)).values
    assert sorted(state["items"]) == ["1", "2", "3"]
    assert all(item["status"] == "done" for item in state["items"].values())
    assert len(state["delegations"]) == 3


async def test_without_a_model_an_item_costs_one_step() -> None:
    """The fixed rules judge an item as it finishes, in the delegate step: no reflect step (and
    checkpoint) of its own (before: two steps, two checkpoints per item)."""
    saver = InMemorySaver()
    sup = Supervisor([worker("W", usage=None)], strategy="sequential", max_steps=400, checkpointer=saver)
    result = await asyncio.wait_for(sup.run("\n".join(f"work on item {i}" for i in range(40)), run_id="r40"), WAIT)
    assert result.status == "completed", result.final
    checkpoints = [c async for c in saver.alist({"configurable": {"thread_id": "r40"}})]
    assert len(checkpoints) <= 40 + 8, len(checkpoints)  # one per item, plus start, plan, answer
    assert [e for e in result.items if e.note != "completed"] == []  # each was judged by the rules


async def checkpoints_of(interval: float, n: int, **settings: Any) -> tuple[int, Any, Any]:
    """A run of n items with ``checkpoint.interval``: its checkpoints, its result, its state as saved."""
    saver = InMemorySaver()
    sup = Supervisor(
        [worker("W", usage=None)],
        strategy="sequential",
        checkpointer=saver,
        checkpoint={"backend": "memory", "interval": interval},
        **settings,
    )
    result = await asyncio.wait_for(sup.run("\n".join(f"work on item {i}" for i in range(n)), run_id="r"), WAIT)
    config: Any = {"configurable": {"thread_id": "r"}}
    checkpoints = [c async for c in saver.alist(config)]
    state = (await build_graph().compile(checkpointer=saver).aget_state(config)).values
    return len(checkpoints), result, state


async def test_one_step_saves_every_change_of_its_interval() -> None:
    """With a long interval the delegate step runs the whole list before it is saved: a handful of
    checkpoints for 40 items (one per item when every change was a step), and the state as saved
    holds every item and delegation."""
    count, result, state = await checkpoints_of(60.0, 40, max_steps=400)
    assert result.status == "completed", result.final
    assert count <= 10, count
    assert all(item["status"] == "done" for item in state["items"].values()) and len(state["items"]) == 40
    assert len(state["delegations"]) == 40
    assert sorted(state["variables"]["W"]) == sorted(state["items"])


async def test_interval_zero_saves_every_change() -> None:
    count, result, _ = await checkpoints_of(0.0, 20, max_steps=400)
    assert result.status == "completed", result.final
    assert count >= 20, count


async def test_a_budget_stops_a_batched_step_where_it_runs_out() -> None:
    """Budgets are checked at every round of a batched step, not only when the step starts."""
    _, result, state = await checkpoints_of(60.0, 20, max_steps=5)
    assert result.status == "partial" and result.stopped == "budget:max_steps"
    assert len(state["delegations"]) == 5
    assert [i["status"] for i in state["items"].values()].count("done") == 5
