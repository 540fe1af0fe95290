"""The one delegation record and its views: the checkpointed state, the result, the progress events."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from supervisor import Delegation, events
from supervisor.delegation_record import delegations_in
from supervisor.result import result_from_state


def record(**changes: Any) -> Delegation:
    base = Delegation(
        id="2.1.1",
        item_id="2",
        agent="B",
        skill="work",
        message_id="m1",
        text="work on pears",
        arguments={"n": 1},
        failover_from="A",
        started_at=100.0,
    )
    return dataclasses.replace(base, **changes)


def test_the_state_form_is_plain_json_and_reads_back_as_the_same_record() -> None:
    finished = record(
        state="completed", task_id="t1", attempts=2, events=5, input_tokens=3, artifacts=[{"artifactId": "a"}]
    )
    data = finished.as_state()
    assert json.loads(json.dumps(data)) == data
    assert Delegation.from_state(data) == finished
    assert delegations_in({"delegations": {finished.id: data}}) == [finished]
    assert delegations_in({}) == []


def test_a_new_record_starts_empty_and_active() -> None:
    fresh = record()
    assert (fresh.state, fresh.attempts, fresh.artifacts, fresh.result) == ("starting", 0, [], None)
    assert fresh.active and fresh.hop == 1
    assert not record(state="completed").active


def test_the_events_are_views_of_the_record() -> None:
    working = record(state="working", task_id="t1", status_text="halfway", attempts=1, events=3)
    assert working.progress_event("r").to_dict() | {"at": 0} == {
        "event": "delegation_progress",
        "run_id": "r",
        "at": 0,
        "delegation_id": "2.1.1",
        "item_id": "2",
        "agent": "B",
        "state": "working",
        "task_id": "t1",
        "text": "halfway",
        "events": 3,
        "attempts": 1,
    }
    started = record().started_event("r", "pears")
    assert (started.description, started.failover_from, started.reattached) == ("pears", "A", False)
    assert working.started_event("r", "pears").reattached  # a resumed run follows its task again
    retrying = working.retrying_event("r", ConnectionResetError("reset"), 0.5)
    assert (retrying.attempt, retrying.error, retrying.delay) == (1, "reset", 0.5)
    done = record(state="failed", duration=1.5, cost_usd=0.25, error="no")
    finished = done.finished_event("r")
    assert isinstance(finished, events.DelegationFinished)
    assert (finished.state, finished.duration, finished.cost_usd, finished.error) == ("failed", 1.5, 0.25, "no")


def test_the_result_lists_the_records_themselves() -> None:
    first, second = record(id="1.1.0", agent="A", state="timeout"), record(state="completed", output_tokens=4)
    state = {"run_id": "r", "delegations": {r.id: r.as_state() for r in (first, second)}}
    result = result_from_state(state)
    assert result.delegations == [first, second]
    assert result.metrics.failovers == 2 and result.metrics.agent_output_tokens == 4
