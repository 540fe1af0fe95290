"""The idempotency key filter of an exclusive SQLite store: a new messageId is known new
without a read, and no key on disk is ever reported absent (a retry must find its record:
after a restart, while the filter is being built, and after a rebuild)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from a2a.server.backends.sqlite.key_filter import KeyFilter
from a2a.server.backends.sqlite.tasks import SQLiteTaskStore
from a2a.server.backends.store import IdempotencyRecord
from a2a.types import Message, Part, Role


def test_a_key_added_is_always_found_and_most_others_are_not() -> None:
    keys = KeyFilter(bits_log2=20)
    added = [("alice", "", f"m{i}#f") for i in range(20_000)]
    keys.update(added)
    assert all(keys.may_contain(key) for key in added)
    others = [("alice", "", f"other{i}#f") for i in range(20_000)]
    false_positives = sum(keys.may_contain(key) for key in others)
    # Two bits of 2**20 per key, 20,000 keys: about 0.14% expected; far below 2% whatever the seed.
    assert false_positives < 400
    assert not keys.crowded


def test_crowded_past_one_key_per_eight_bits() -> None:
    keys = KeyFilter(bits_log2=8)
    keys.update(range(32))
    assert not keys.crowded
    keys.add(32)
    assert keys.crowded


def test_size_is_checked() -> None:
    with pytest.raises(ValueError, match="bits_log2"):
        KeyFilter(bits_log2=2)


def _count_reads(store: SQLiteTaskStore) -> list[int]:
    reads = [0]
    real = store._db.read_now

    def counting(fn: Any) -> Any:
        reads[0] += 1
        return real(fn)

    store._db.read_now = counting  # type: ignore[method-assign]
    return reads


async def _filter_ready(store: SQLiteTaskStore) -> None:
    for _ in range(500):
        if store._keys is not None:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the key filter was never built")


async def test_new_keys_are_claimed_without_a_read_once_the_filter_is_built(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        assert await store.claim_message(("a", "", "first#f"), IdempotencyRecord("f", task_id="t0")) is None
        await _filter_ready(store)
        reads = _count_reads(store)
        for i in range(200):
            assert await store.claim_message(("a", "", f"m{i}#f"), IdempotencyRecord("f", task_id=f"t{i}")) is None
        # 2**24 bits hold these 201 keys with a false positive about once in a billion claims.
        assert reads[0] == 0
        assert await store.get_message(("a", "", "never#f")) is None
        assert reads[0] == 0
        # A key written since the build is in the filter: found on disk once it left memory.
        await store.update_message(("a", "", "m7#f"), IdempotencyRecord("f", task_id="t7"))
        store._pending_claims.clear()
        found = await store.claim_message(("a", "", "m7#f"), IdempotencyRecord("f", task_id="x"))
        assert found is not None and found.task_id == "t7"
    finally:
        await store.close()


async def test_a_retry_after_a_restart_finds_its_record(tmp_path: Path) -> None:
    reply = Message(message_id="r1", role=Role.AGENT, parts=[Part(text="hi")])
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        for i in range(300):
            key = ("a", "", f"m{i}#f")
            assert await store.claim_message(key, IdempotencyRecord("f", task_id=f"t{i}")) is None
            await store.update_message(key, IdempotencyRecord("f", task_id=f"t{i}", message=reply))
    finally:
        await store.close()
    reopened = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        # The first claim starts the build; the others run before and after it is done.
        assert await reopened.claim_message(("a", "", "new#f"), IdempotencyRecord("f", task_id="n")) is None
        found = await reopened.claim_message(("a", "", "m0#f"), IdempotencyRecord("f", task_id="x"))
        assert found is not None and found.message == reply
        await _filter_ready(reopened)
        for i in range(300):
            found = await reopened.claim_message(("a", "", f"m{i}#f"), IdempotencyRecord("f", task_id="x"))
            assert found is not None and found.task_id == f"t{i}", i
            seen = await reopened.get_message(("a", "", f"m{i}#f"))
            assert seen is not None and seen.message == reply
    finally:
        await reopened.close()


async def test_keys_written_while_the_filter_is_built_are_in_it(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    release = asyncio.Event()

    async def slow_read(fn: Any) -> KeyFilter:
        await release.wait()
        return KeyFilter()  # the scan's snapshot, taken before any of the writes below

    store._db.read = slow_read  # type: ignore[method-assign]
    try:
        for i in range(50):
            key = ("a", "", f"during{i}#f")
            assert await store.claim_message(key, IdempotencyRecord("f", task_id=f"t{i}")) is None
            await store.update_message(key, IdempotencyRecord("f", task_id=f"t{i}"))
        assert store._keys is None
        release.set()
        await _filter_ready(store)
        store._pending_claims.clear()  # nothing is left in memory but the filter and the file
        for i in range(50):
            found = await store.claim_message(("a", "", f"during{i}#f"), IdempotencyRecord("f", task_id="x"))
            assert found is not None and found.task_id == f"t{i}"
    finally:
        await store.close()


async def _rebuilt(store: SQLiteTaskStore, old: KeyFilter) -> KeyFilter:
    for _ in range(500):
        if store._keys is not old and store._keys is not None:
            return store._keys
        await asyncio.sleep(0.01)
    raise AssertionError("the key filter was never rebuilt")


async def test_a_crowded_filter_is_rebuilt_by_the_sweep_without_losing_a_kept_key(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True, idempotency_retention=60, task_retention=120)
    try:
        for i in range(20):
            key = ("a", "", f"k{i}#f")
            assert await store.claim_message(key, IdempotencyRecord("f", task_id=f"t{i}")) is None
            await store.update_message(key, IdempotencyRecord("f", task_id=f"t{i}"))
        await _filter_ready(store)
        old = store._keys
        assert old is not None
        old.added = old.capacity  # as if millions of keys had passed through it
        assert await store.sweep(now=time.time()) == 0
        rebuilt = await _rebuilt(store, old)
        assert not rebuilt.crowded
        store._pending_claims.clear()
        for i in range(20):
            found = await store.claim_message(("a", "", f"k{i}#f"), IdempotencyRecord("f", task_id="x"))
            assert found is not None and found.task_id == f"t{i}"
    finally:
        await store.close()


async def test_a_claim_queued_when_a_rebuild_starts_is_in_the_new_filter(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db", exclusive=True)
    try:
        assert await store.claim_message(("a", "", "first#f"), IdempotencyRecord("f", task_id="t0")) is None
        await _filter_ready(store)
        old = store._keys
        assert old is not None
        queued = ("a", "", "queued#f")
        assert await store.claim_message(queued, IdempotencyRecord("f", task_id="q")) is None
        written = store.record_reply(queued, IdempotencyRecord("f", task_id="q"))  # queued, not committed

        async def stale_scan(fn: Any) -> KeyFilter:
            return KeyFilter()  # a snapshot taken before the queued claim was committed

        store._db.read = stale_scan  # type: ignore[assignment,method-assign]
        store._build_keys()  # in the same turn of the loop: the claim is not committed yet
        await _rebuilt(store, old)
        await written
        assert queued not in store._pending_claims, "committed meanwhile; no later write adds it to the filter"
        found = await store.claim_message(queued, IdempotencyRecord("f", task_id="x"))
        assert found is not None and found.task_id == "q"
    finally:
        await store.close()
