"""Task ids sort by the time they were made (a store's index of them grows at its end)."""

from __future__ import annotations

import time

from a2a.server.engine.ids import new_id, new_task_id


def test_task_ids_are_hex_unique_and_sort_by_creation_time() -> None:
    made: list[str] = []
    for _ in range(5):
        made += [new_task_id() for _ in range(200)]
        time.sleep(0.002)  # the time part counts milliseconds
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in made)
    assert len(set(made)) == len(made)
    # Ids of different milliseconds are in the order they were made.
    stamps = [int(i[:12], 16) for i in made]
    assert stamps == sorted(stamps)
    assert abs(stamps[-1] - time.time_ns() // 1_000_000) < 60_000
    assert made[0][:12] < made[-1][:12]
    assert len(new_id()) == 32
