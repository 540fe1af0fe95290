"""Delivery: every event, in order, at least once, with the headers; retries, give-up, restarts."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from dataclasses import replace

import pytest

from a2a.protocol.codec import decoder_for
from a2a.server.push import DeliveryPolicy, InMemoryPushStore, PushNotifier, PushStore
from a2a.types import AuthenticationInfo, StreamResponse
from tests.push.conftest import WAIT, Hit, Receiver, StoreFactory
from tests.push.helpers import FAST, LOOPBACK, config, event

pytestmark = pytest.mark.timeout(120)


def _first_seen(hits: list[Hit]) -> list[int]:
    """Sequence numbers in order of first processing, duplicates removed by event id."""
    seen: dict[str, int] = {}
    for hit in hits:
        if hit.processed:
            seen.setdefault(hit.event_id, hit.seq)
    return list(seen.values())


def _delivered(hits: list[Hit]) -> set[int]:
    return {h.seq for h in hits if 200 <= h.status < 300}


async def test_flaky_receiver_gets_every_event_in_order(open_store: StoreFactory, receiver: Receiver) -> None:
    """30% of deliveries fail at random (half before acting on the event, half after, so the
    retry is a duplicate); every event still arrives, in order, and de-duplicates by id."""
    rng = random.Random(20261122)

    async def flaky(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        roll = rng.random()
        if roll < 0.15:
            return 503, False, {}
        if roll < 0.30:
            return 500, True, {}
        return 204, True, {}

    receiver.behaviour = flaky
    store = open_store()
    tasks, events = ["task-a", "task-b"], 40
    paths = {(t, c): f"{t}/{c}" for t in tasks for c in ("one", "two")}
    async with PushNotifier(store, guard=LOOPBACK, policy=FAST) as notifier:
        for (task_id, config_id), path in paths.items():
            await notifier.create(task_id, "alice", "", config(receiver.url(path), config_id))
        for seq in range(1, events + 1):
            for task_id in tasks:
                await notifier.notify(task_id, event(task_id, seq))
        full = set(range(1, events + 1))
        await receiver.wait_for(lambda hits: all(_delivered(receiver.on(p)) == full for p in paths.values()))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
    assert await store.pending() == []

    decoder = decoder_for(StreamResponse)
    for (task_id, _), path in paths.items():
        hits = receiver.on(path)
        assert _first_seen(hits) == list(range(1, events + 1))
        arrivals = [h.seq for h in hits]
        assert arrivals == sorted(arrivals), "an event was sent before the one before it was delivered"
        assert {h.event_id for h in hits} == {f"{task_id}:{n}" for n in full}
        for hit in hits:
            assert hit.body == event(task_id, hit.seq).body
            assert decoder.decode(hit.body) == event(task_id, hit.seq).event
        assert receiver.max_in_flight[f"/{path}"] == 1
    processed = [h.event_id for h in receiver.hits if h.processed]
    assert len(processed) > len(set(processed)), "the 30% failures should have caused duplicates"
    assert any(h.status >= 500 for h in receiver.hits)


async def test_headers_carry_auth_token_and_event_identity(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    first = True

    async def fail_once(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        nonlocal first
        if first:
            first = False
            return 500, False, {}
        return 200, True, {}

    receiver.behaviour = fail_once
    store = InMemoryPushStore()
    auth = AuthenticationInfo(scheme="Bearer", credentials="cred-s3cret")
    async with PushNotifier(store, guard=LOOPBACK, policy=FAST) as notifier:
        made = await notifier.create(
            "t1", "alice", "", config(receiver.url("hook?key=url-s3cret"), token="tok-s3cret", authentication=auth)
        )
        await notifier.notify("t1", event("t1", 1))
        await notifier.notify("t1", event("t1", 2))
        await receiver.wait_for(lambda hits: _delivered(hits) == {1, 2})
    assert made.id and made.task_id == "t1"
    for hit in receiver.hits:
        assert hit.headers["Authorization"] == "Bearer cred-s3cret"
        assert hit.headers["X-A2A-Notification-Token"] == "tok-s3cret"
        assert hit.headers["Content-Type"] == "application/a2a+json"
        assert hit.headers["X-A2A-Event-Id"] == f"t1:{hit.seq}"
    assert [h.seq for h in receiver.hits] == [1, 1, 2]
    assert "failed, attempt 1" in caplog.text  # the failure was logged ...
    for secret in ("cred-s3cret", "tok-s3cret", "url-s3cret", "event 2"):
        assert secret not in caplog.text  # ... without a secret, a URL query or a body


async def test_no_authorization_header_without_credentials(receiver: Receiver) -> None:
    async with PushNotifier(InMemoryPushStore(), guard=LOOPBACK, policy=FAST) as notifier:
        await notifier.create("t1", "", "", config(receiver.url("h")))
        await notifier.notify("t1", event("t1", 1))
        await receiver.wait_for(lambda hits: len(hits) == 1)
    headers = receiver.hits[0].headers
    assert "Authorization" not in headers and "X-A2A-Notification-Token" not in headers


async def test_always_failing_receiver_gets_a_bounded_number_of_attempts(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    async def refuse(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        return 500, False, {}

    receiver.behaviour = refuse
    store = InMemoryPushStore()
    policy = replace(FAST, max_attempts=5)
    async with PushNotifier(store, guard=LOOPBACK, policy=policy) as notifier:
        await notifier.create("t1", "", "", config(receiver.url("dead"), "c1", token="tok-s3cret"))
        for seq in (1, 2, 3):
            await notifier.notify("t1", event("t1", seq))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
        assert [h.seq for h in receiver.hits] == [1] * 5  # event 2 never went before 1 was given up
        record = await store.get_config("t1", "c1")
        assert record is not None and record.failed
        assert await store.pending() == []
        # A failed config gets nothing more.
        await notifier.notify("t1", event("t1", 4))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
        assert len(receiver.hits) == 5
        assert await notifier.get("t1", "c1") is not None  # still registered
    assert "declared failed after 5 consecutive failed attempts; 3 pending deliveries dropped" in caplog.text
    assert "tok-s3cret" not in caplog.text


async def test_registering_again_revives_a_failed_config(receiver: Receiver) -> None:
    answers = iter([500, 500])

    async def fail_twice(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        return next(answers, 200), True, {}

    receiver.behaviour = fail_twice
    store = InMemoryPushStore()
    async with PushNotifier(store, guard=LOOPBACK, policy=replace(FAST, max_attempts=2)) as notifier:
        cfg = config(receiver.url("h"), "c1")
        await notifier.create("t1", "", "", cfg)
        await notifier.notify("t1", event("t1", 1))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
        record = await store.get_config("t1", "c1")
        assert record is not None and record.failed
        await notifier.create("t1", "", "", cfg)
        await notifier.notify("t1", event("t1", 2))
        await receiver.wait_for(lambda hits: _delivered(hits) == {2})


async def test_attempt_timeout_counts_as_a_failure(receiver: Receiver) -> None:
    release = asyncio.Event()

    async def hang(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        await release.wait()
        return 200, True, {}

    receiver.behaviour = hang
    store = InMemoryPushStore()
    policy = replace(FAST, max_attempts=2, attempt_timeout=0.2, lease_ttl=1.0)
    try:
        async with PushNotifier(store, guard=LOOPBACK, policy=policy) as notifier:
            await notifier.create("t1", "", "", config(receiver.url("slow"), "c1"))
            await notifier.notify("t1", event("t1", 1))
            async with asyncio.timeout(WAIT):
                await notifier.wait_idle()
            record = await store.get_config("t1", "c1")
            assert record is not None and record.failed
    finally:
        release.set()


async def test_retry_after_is_honoured(receiver: Receiver) -> None:
    """A 503 with Retry-After makes the next attempt wait at least that long (capped)."""
    loop = asyncio.get_running_loop()
    times: list[float] = []

    async def busy_once(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        times.append(loop.time())
        return (503, False, {"Retry-After": "1"}) if len(times) == 1 else (200, True, {})

    receiver.behaviour = busy_once
    policy = replace(FAST, max_backoff=0.3)  # caps the 1 s Retry-After at 0.3 s
    async with PushNotifier(InMemoryPushStore(), guard=LOOPBACK, policy=policy) as notifier:
        await notifier.create("t1", "", "", config(receiver.url("h")))
        await notifier.notify("t1", event("t1", 1))
        await receiver.wait_for(lambda hits: _delivered(hits) == {1})
    assert times[1] - times[0] >= 0.29


async def test_retry_after_as_an_http_date_is_honoured_too(receiver: Receiver) -> None:
    """The HTTP-date form of Retry-After (RFC 9110) counts like delta-seconds."""
    loop = asyncio.get_running_loop()
    times: list[float] = []
    later = email.utils.formatdate(time.time() + 30, usegmt=True)

    async def busy_once(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        times.append(loop.time())
        return (429, False, {"Retry-After": later}) if len(times) == 1 else (200, True, {})

    receiver.behaviour = busy_once
    policy = replace(FAST, max_backoff=0.3)  # caps the 30 s Retry-After at 0.3 s
    async with PushNotifier(InMemoryPushStore(), guard=LOOPBACK, policy=policy) as notifier:
        await notifier.create("t1", "", "", config(receiver.url("h")))
        await notifier.notify("t1", event("t1", 1))
        await receiver.wait_for(lambda hits: _delivered(hits) == {1})
    assert times[1] - times[0] >= 0.29


@pytest.mark.parametrize("open_store", ["sqlite", "redis", "memory"], indirect=True)
async def test_pending_deliveries_survive_a_restart(open_store: StoreFactory, receiver: Receiver) -> None:
    """The receiver is down while the first notifier runs; a new notifier on a newly opened
    store (same SQLite file, same Redis namespace) delivers everything, in order."""
    up = False

    async def down_then_up(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        return (200, True, {}) if up else (503, False, {})

    receiver.behaviour = down_then_up
    policy = replace(FAST, max_attempts=1000, initial_backoff=0.05, max_backoff=0.05)
    first_store = open_store()
    first = PushNotifier(first_store, guard=LOOPBACK, policy=policy)
    await first.start()
    await first.create("t1", "alice", "", config(receiver.url("h"), "c1"))
    for seq in range(1, 6):
        await first.notify("t1", event("t1", seq))
    await receiver.wait_for(lambda hits: len(hits) >= 2)  # it is retrying event 1
    await first.close()
    await first_store.close()
    assert {h.seq for h in receiver.hits} == {1}

    up = True
    second_store = open_store()
    assert await second_store.pending() == [("t1", "c1")]
    async with PushNotifier(second_store, guard=LOOPBACK, policy=policy) as second:
        await receiver.wait_for(lambda hits: _delivered(hits) == {1, 2, 3, 4, 5})
        async with asyncio.timeout(WAIT):
            await second.wait_idle()
    assert [h.seq for h in receiver.hits if h.processed] == [1, 2, 3, 4, 5]
    assert await second_store.pending() == []


async def test_notify_before_start_only_queues(receiver: Receiver) -> None:
    store = InMemoryPushStore()
    notifier = PushNotifier(store, guard=LOOPBACK, policy=FAST)
    await notifier.create("t1", "", "", config(receiver.url("h"), "c1"))
    await notifier.notify("t1", event("t1", 1))
    await notifier.notify("no-configs", event("no-configs", 1))
    assert receiver.hits == [] and await store.pending() == [("t1", "c1")]
    async with notifier:
        await receiver.wait_for(lambda hits: _delivered(hits) == {1})


async def test_pending_cap_keeps_the_newest(receiver: Receiver, caplog: pytest.LogCaptureFixture) -> None:
    store = InMemoryPushStore()
    notifier = PushNotifier(store, guard=LOOPBACK, policy=replace(FAST, max_pending=3))
    await notifier.create("t1", "", "", config(receiver.url("h"), "c1"))
    for seq in range(1, 11):
        await notifier.notify("t1", event("t1", seq))
    assert "1 oldest pending deliveries to config c1 of task t1 dropped" in caplog.text
    async with notifier:
        await receiver.wait_for(lambda hits: _delivered(hits) == {8, 9, 10})
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
    assert [h.seq for h in receiver.hits] == [8, 9, 10]


async def test_two_notifiers_on_one_store_never_deliver_one_queue_at_once(
    open_store: StoreFactory, receiver: Receiver
) -> None:
    """Two replicas (two notifiers, one store): the lease keeps one sender per queue, so the
    order holds even while the second one keeps sweeping for work."""
    rng = random.Random(7)

    async def flaky(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        return (500, False, {}) if rng.random() < 0.3 else (200, True, {})

    receiver.behaviour = flaky
    policy = replace(FAST, resume_interval=0.01)
    store_a, store_b = open_store(), open_store()
    async with (
        PushNotifier(store_a, guard=LOOPBACK, policy=policy) as a,
        PushNotifier(store_b, guard=LOOPBACK, policy=policy) as b,
    ):
        await a.create("t1", "", "", config(receiver.url("h"), "c1"))
        for seq in range(1, 31):
            await a.notify("t1", event("t1", seq))
        await receiver.wait_for(lambda hits: _delivered(hits) == set(range(1, 31)))
        async with asyncio.timeout(WAIT):
            await a.wait_idle()
            await b.wait_idle()
    arrivals = [h.seq for h in receiver.hits]
    assert arrivals == sorted(arrivals)
    assert receiver.max_in_flight["/h"] == 1


class _BrokenStore(InMemoryPushStore):
    async def enqueue(self, task_id: str, seq: int, body: bytes, *, max_pending: int) -> list:  # type: ignore[type-arg]
        raise OSError("disk full")


async def test_notify_never_raises_for_a_store_failure(caplog: pytest.LogCaptureFixture) -> None:
    store: PushStore = _BrokenStore()
    async with PushNotifier(store, guard=LOOPBACK, policy=FAST) as notifier:
        await notifier.notify("t1", event("t1", 1))
    assert "event 1 of task t1 not queued" in caplog.text


def test_policy_validates_its_numbers() -> None:
    with pytest.raises(ValueError, match="lease_ttl"):
        DeliveryPolicy(attempt_timeout=30, lease_ttl=60)
    with pytest.raises(ValueError):
        DeliveryPolicy(max_attempts=0)
    policy = DeliveryPolicy()
    assert all(0 <= policy.backoff(k) <= min(120.0, 2 ** (k - 1)) for k in range(1, 20) for _ in range(20))
    assert policy.backoff(1, retry_after=500) == 120.0
