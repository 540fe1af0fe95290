"""The in-memory bus keeps a finished task's events ``retention`` seconds (and at most
``max_finished`` finished tasks), then lets them go: what a resume finds, and what it no longer
finds. The bus looks at the oldest deadline only once it is due, so these check that a log is
dropped exactly when it is due, in order, whatever finished in between."""

from __future__ import annotations

import pytest

from a2a import types as t
from a2a.server.engine.bus import InMemoryEventBus
from a2a.server.engine.events import LoggedEvent


def _status(task_id: str, seq: int, state: t.TaskState) -> LoggedEvent:
    status = t.TaskStatus(state=state)
    event = t.StreamResponse(status_update=t.TaskStatusUpdateEvent(task_id=task_id, context_id="c", status=status))
    return LoggedEvent(seq, event, b"{}")


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_finished_logs_expire_after_retention_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("a2a.server.engine.bus.time.monotonic", clock.monotonic)
    bus = InMemoryEventBus(retention=10.0)
    await bus.publish("a", _status("a", 1, t.TaskState.WORKING))
    await bus.publish("a", _status("a", 2, t.TaskState.COMPLETED))  # due at 1010
    clock.now = 1005.0
    await bus.publish("b", _status("b", 1, t.TaskState.COMPLETED))  # due at 1015
    await bus.publish("c", _status("c", 1, t.TaskState.WORKING))  # never finished: kept
    assert await bus.retained_from("a") == 1 and await bus.retained_from("b") == 1
    clock.now = 1009.9
    await bus.publish("d", _status("d", 1, t.TaskState.FAILED))  # due at 1019.9; nothing due yet
    assert await bus.retained_from("a") == 1
    clock.now = 1010.5
    await bus.publish("e", _status("e", 1, t.TaskState.COMPLETED))  # a is due now, b not yet
    assert await bus.retained_from("a") is None
    assert await bus.retained_from("b") == 1
    clock.now = 1016.0
    await bus.publish("f", _status("f", 1, t.TaskState.CANCELED))
    assert await bus.retained_from("b") is None
    assert await bus.retained_from("d") == 1 and await bus.retained_from("e") == 1
    assert await bus.retained_from("c") == 1
    clock.now = 5000.0
    await bus.publish("g", _status("g", 1, t.TaskState.COMPLETED))  # every one before is due
    assert [await bus.retained_from(x) for x in "cdefg"] == [1, None, None, None, 1]
    # After all of them expired, the next finished task sets the next deadline again.
    clock.now = 5011.0
    await bus.publish("h", _status("h", 1, t.TaskState.COMPLETED))
    assert await bus.retained_from("g") is None and await bus.retained_from("h") == 1


async def test_at_most_max_finished_logs_are_kept_before_their_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("a2a.server.engine.bus.time.monotonic", clock.monotonic)
    bus = InMemoryEventBus(retention=300.0, max_finished=3)
    for i in range(5):
        await bus.publish(f"t{i}", _status(f"t{i}", 1, t.TaskState.COMPLETED))
    assert [await bus.retained_from(f"t{i}") for i in range(5)] == [None, None, 1, 1, 1]


async def test_a_closed_bus_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("a2a.server.engine.bus.time.monotonic", clock.monotonic)
    bus = InMemoryEventBus(retention=10.0)
    await bus.publish("a", _status("a", 1, t.TaskState.COMPLETED))
    await bus.close()
    clock.now = 2000.0
    await bus.publish("b", _status("b", 1, t.TaskState.COMPLETED))
    clock.now = 2011.0
    await bus.publish("c", _status("c", 1, t.TaskState.COMPLETED))
    assert await bus.retained_from("b") is None and await bus.retained_from("c") == 1
