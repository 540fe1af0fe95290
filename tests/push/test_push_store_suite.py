"""The contract every PushStore keeps (memory, SQLite, Redis): one suite, run over each."""

from __future__ import annotations

import asyncio

from a2a.server.push import PushConfigRecord, PushStore
from a2a.types import AuthenticationInfo, TaskPushNotificationConfig
from tests.push.conftest import StoreFactory


def _record(
    task_id: str, config_id: str, *, url: str = "https://hooks.example/a2a", owner: str = "alice"
) -> PushConfigRecord:
    config = TaskPushNotificationConfig(
        url=url,
        id=config_id,
        task_id=task_id,
        token="tok-secret",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="cred-secret"),
    )
    return PushConfigRecord(config, owner=owner, tenant="acme")


async def _put(store: PushStore, *records: PushConfigRecord, max_configs: int = 16) -> None:
    for record in records:
        assert await store.put_config(record, max_configs=max_configs)


# ---- configs --------------------------------------------------------------------------------


async def test_config_reads_back_equal(push_store: PushStore) -> None:
    record = _record("t1", "c1")
    await _put(push_store, record)
    got = await push_store.get_config("t1", "c1")
    assert got is not None
    assert got.config == record.config
    assert (got.owner, got.tenant, got.failures, got.failed) == ("alice", "acme", 0, False)
    assert await push_store.get_config("t1", "nope") is None
    assert await push_store.get_config("nope", "c1") is None


async def test_list_is_per_task_and_ordered_by_id(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "b"), _record("t1", "a"), _record("t1", "c"), _record("t2", "z"))
    assert [r.config_id for r in await push_store.list_configs("t1")] == ["a", "b", "c"]
    assert [r.config_id for r in await push_store.list_configs("t2")] == ["z"]
    assert await push_store.list_configs("t3") == []


async def test_put_replaces_and_clears_the_failure_state(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "c1"))
    await push_store.record_failure("t1", "c1")
    await push_store.fail_config("t1", "c1")
    failed = await push_store.get_config("t1", "c1")
    assert failed is not None and failed.failed
    await _put(push_store, _record("t1", "c1", url="https://other.example/hook"))
    got = await push_store.get_config("t1", "c1")
    assert got is not None
    assert got.config.url == "https://other.example/hook"
    assert (got.failures, got.failed) == (0, False)
    assert len(await push_store.list_configs("t1")) == 1


async def test_config_cap_per_task(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"), _record("t1", "b"), max_configs=2)
    assert not await push_store.put_config(_record("t1", "c"), max_configs=2)
    assert await push_store.get_config("t1", "c") is None
    assert await push_store.put_config(_record("t1", "a", url="https://x.example/"), max_configs=2)  # replace at cap
    assert await push_store.put_config(_record("t2", "c"), max_configs=2)  # other tasks unaffected


async def test_delete_removes_config_and_its_deliveries(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"), _record("t1", "b"))
    await push_store.enqueue("t1", 1, b'{"n":1}', max_pending=10)
    assert await push_store.delete_config("t1", "a")
    assert not await push_store.delete_config("t1", "a")
    assert await push_store.get_config("t1", "a") is None
    assert await push_store.next_delivery("t1", "a") is None
    assert await push_store.pending() == [("t1", "b")]


# ---- deliveries ---------------------------------------------------------------------------


async def test_enqueue_goes_to_every_live_config_in_seq_order(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"), _record("t1", "b"), _record("t2", "other"))
    for seq in (1, 2, 3):
        queued = await push_store.enqueue("t1", seq, b'{"seq":%d}' % seq, max_pending=10)
        assert sorted((q.config_id, q.dropped) for q in queued) == [("a", 0), ("b", 0)]
    assert sorted(await push_store.pending()) == [("t1", "a"), ("t1", "b")]
    for config_id in ("a", "b"):
        for seq in (1, 2, 3):
            item = await push_store.next_delivery("t1", config_id)
            assert item is not None
            assert (item.seq, item.body, item.record.config_id) == (seq, b'{"seq":%d}' % seq, config_id)
            await push_store.ack("t1", config_id, seq)
        assert await push_store.next_delivery("t1", config_id) is None
    assert await push_store.pending() == []


async def test_enqueue_without_configs_queues_nothing(push_store: PushStore) -> None:
    assert await push_store.enqueue("t1", 1, b"{}", max_pending=10) == []
    assert await push_store.pending() == []


async def test_same_seq_is_kept_once_and_late_seq_sorts_first(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    await push_store.enqueue("t1", 3, b"three", max_pending=10)
    await push_store.enqueue("t1", 3, b"three", max_pending=10)
    await push_store.enqueue("t1", 2, b"two", max_pending=10)
    seen = []
    while (item := await push_store.next_delivery("t1", "a")) is not None:
        seen.append((item.seq, item.body))
        await push_store.ack("t1", "a", item.seq)
    assert seen == [(2, b"two"), (3, b"three")]


async def test_bodies_round_trip_byte_for_byte(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    body = '{"statusUpdate":{"text":"a:b:c é ✓ \\u0000"}}'.encode()
    await push_store.enqueue("t1", 12, body, max_pending=10)
    item = await push_store.next_delivery("t1", "a")
    assert item is not None and item.body == body and item.seq == 12


async def test_cap_drops_the_oldest(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    dropped = []
    for seq in range(1, 6):
        (queued,) = await push_store.enqueue("t1", seq, b"%d" % seq, max_pending=3)
        dropped.append(queued.dropped)
    assert dropped == [0, 0, 0, 1, 1]
    item = await push_store.next_delivery("t1", "a")
    assert item is not None and item.seq == 3


async def test_ack_of_a_dropped_seq_is_harmless(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    await push_store.enqueue("t1", 1, b"1", max_pending=1)
    await push_store.enqueue("t1", 2, b"2", max_pending=1)
    await push_store.ack("t1", "a", 1)
    item = await push_store.next_delivery("t1", "a")
    assert item is not None and item.seq == 2


async def test_failures_count_and_reset_on_ack(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    await push_store.enqueue("t1", 1, b"1", max_pending=10)
    assert [await push_store.record_failure("t1", "a") for _ in range(3)] == [1, 2, 3]
    item = await push_store.next_delivery("t1", "a")
    assert item is not None and item.record.failures == 3
    await push_store.ack("t1", "a", 1)
    got = await push_store.get_config("t1", "a")
    assert got is not None and got.failures == 0
    assert await push_store.record_failure("t1", "gone") == 0


async def test_failed_config_drops_its_queue_and_gets_nothing_more(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"), _record("t1", "b"))
    for seq in (1, 2):
        await push_store.enqueue("t1", seq, b"x", max_pending=10)
    assert await push_store.fail_config("t1", "a") == 2
    got = await push_store.get_config("t1", "a")
    assert got is not None and got.failed
    assert await push_store.next_delivery("t1", "a") is None
    queued = await push_store.enqueue("t1", 3, b"x", max_pending=10)
    assert [q.config_id for q in queued] == ["b"]
    assert await push_store.pending() == [("t1", "b")]


async def test_queue_of_a_vanished_config_is_cleared(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    await push_store.enqueue("t1", 1, b"x", max_pending=10)
    await push_store.delete_config("t1", "a")
    await _put(push_store, _record("t1", "a"))  # registered again: starts with an empty queue
    assert await push_store.next_delivery("t1", "a") is None
    assert await push_store.pending() == []


# ---- leases -------------------------------------------------------------------------------


async def test_lease_is_exclusive_until_released(push_store: PushStore) -> None:
    assert await push_store.acquire_lease("t1", "a", "A", 30)
    assert not await push_store.acquire_lease("t1", "a", "B", 30)
    assert await push_store.acquire_lease("t1", "a", "A", 30)  # extend
    assert await push_store.acquire_lease("t1", "b", "B", 30)  # another queue
    await push_store.release_lease("t1", "a", "B")  # not B's: no effect
    assert not await push_store.acquire_lease("t1", "a", "B", 30)
    await push_store.release_lease("t1", "a", "A")
    assert await push_store.acquire_lease("t1", "a", "B", 30)


async def test_lease_expires(push_store: PushStore) -> None:
    assert await push_store.acquire_lease("t1", "a", "A", 0.05)
    await asyncio.sleep(0.2)  # the behaviour under test is the passing of time itself
    assert await push_store.acquire_lease("t1", "a", "B", 30)


# ---- durability and hygiene -----------------------------------------------------------------


async def test_everything_survives_reopening(open_store: StoreFactory) -> None:
    first = open_store()
    await _put(first, _record("t1", "a"))
    await first.enqueue("t1", 1, b"one", max_pending=10)
    await first.enqueue("t1", 2, b"two", max_pending=10)
    await first.record_failure("t1", "a")
    await first.close()
    second = open_store()
    got = await second.get_config("t1", "a")
    assert got is not None and got.failures == 1 and got.config.token == "tok-secret"
    assert await second.pending() == [("t1", "a")]
    item = await second.next_delivery("t1", "a")
    assert item is not None and (item.seq, item.body) == (1, b"one")


async def test_record_repr_hides_secrets(push_store: PushStore) -> None:
    await _put(push_store, _record("t1", "a"))
    got = await push_store.get_config("t1", "a")
    shown = repr(got)
    assert "t1" in shown and "tok-secret" not in shown and "cred-secret" not in shown


async def test_the_dialect_a_config_was_registered_in_is_kept(push_store: PushStore) -> None:
    """A config registered in A2A 0.3 keeps saying so (its webhook is sent 0.3 tasks); the
    default, and every config stored before the field existed, is 1.0 (``""``)."""
    old = _record("t1", "c1")
    legacy = PushConfigRecord(_record("t1", "c2").config, owner="alice", tenant="acme", dialect="0.3")
    await _put(push_store, old, legacy)
    assert [(r.config_id, r.dialect) for r in await push_store.list_configs("t1")] == [("c1", ""), ("c2", "0.3")]
    got = await push_store.get_config("t1", "c2")
    assert got is not None and got.dialect == "0.3"
    await push_store.enqueue("t1", 1, b"{}", max_pending=10)
    pending = await push_store.next_delivery("t1", "c2")
    assert pending is not None and pending.record.dialect == "0.3"
