"""The contract every TaskStore keeps (memory, SQLite, Redis): one suite, run over each."""

from __future__ import annotations

import asyncio

from a2a.server.backends.store import IdempotencyRecord, TaskQuery, TaskRecord, TaskStore
from a2a.types import Artifact, Message, Part, Role, Task, TaskState, TaskStatus


def _task(task_id: str, stamp: str, *, state: TaskState = TaskState.WORKING, context: str = "ctx") -> Task:
    return Task(
        id=task_id,
        context_id=context,
        status=TaskStatus(state=state, timestamp=stamp),
        history=[Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text="hi")])],
        artifacts=[Artifact(artifact_id="a", parts=[Part(raw=b"\x00\x01")])],
    )


def _stamp(i: int) -> str:
    return f"2026-11-22T06:00:{i:02d}.000000Z"


async def test_saved_task_reads_back_equal(store: TaskStore) -> None:
    task = _task("t1", _stamp(1))
    await store.save(TaskRecord(task, owner="alice", tenant="acme", last_seq=7))
    got = await store.get("t1")
    assert got is not None
    assert got.task == task
    assert (got.owner, got.tenant, got.last_seq) == ("alice", "acme", 7)
    assert await store.get("nope") is None


async def test_save_replaces_the_previous_state(store: TaskStore) -> None:
    await store.save(TaskRecord(_task("t1", _stamp(1)), owner="a"))
    await store.save(TaskRecord(_task("t1", _stamp(2), state=TaskState.COMPLETED), owner="a", last_seq=3))
    got = await store.get("t1")
    assert got is not None and got.task.status.state == TaskState.COMPLETED and got.last_seq == 3


async def test_list_pages_newest_first_and_only_the_owners_tasks(store: TaskStore) -> None:
    for i in range(7):
        await store.save(TaskRecord(_task(f"t{i}", _stamp(i)), owner="alice"))
    await store.save(TaskRecord(_task("bob1", _stamp(30)), owner="bob"))
    await store.save(TaskRecord(_task("other-tenant", _stamp(31)), owner="alice", tenant="x"))
    seen: list[str] = []
    token = None
    while True:
        page = await store.list(TaskQuery(owner="alice", tenant="", page_size=3, page_token=token))
        assert page.total_size == 7
        seen += [r.task.id for r in page.records]
        if not page.next_page_token:
            break
        token = page.next_page_token
    assert seen == [f"t{i}" for i in range(6, -1, -1)]


async def test_list_filters(store: TaskStore) -> None:
    await store.save(TaskRecord(_task("a", _stamp(1), context="c1"), owner="o"))
    await store.save(TaskRecord(_task("b", _stamp(2), context="c2", state=TaskState.COMPLETED), owner="o"))
    await store.save(TaskRecord(_task("c", _stamp(3), context="c1", state=TaskState.COMPLETED), owner="o"))

    async def ids(**filters: object) -> list[str]:
        page = await store.list(TaskQuery(owner="o", tenant="", **filters))  # type: ignore[arg-type]
        return [r.task.id for r in page.records]

    assert await ids(context_id="c1") == ["c", "a"]
    assert await ids(state=TaskState.COMPLETED) == ["c", "b"]
    assert await ids(status_timestamp_after=_stamp(2)) == ["c", "b"]


async def test_claim_message_is_first_come_and_update_is_kept(store: TaskStore) -> None:
    key = ("alice", "", "m-1")
    assert await store.claim_message(key, IdempotencyRecord("fp", "t1")) is None
    again = await store.claim_message(key, IdempotencyRecord("other", "t2"))
    assert again is not None and (again.fingerprint, again.task_id) == ("fp", "t1")
    reply = Message(message_id="r", role=Role.AGENT, parts=[Part(text="done")])
    await store.update_message(key, IdempotencyRecord("fp", "t1", reply))
    third = await store.claim_message(key, IdempotencyRecord("fp", "t3"))
    assert third is not None and third.message == reply
    # Scoped per owner and tenant.
    assert await store.claim_message(("bob", "", "m-1"), IdempotencyRecord("fp", "t9")) is None


async def test_a_recorded_reply_is_kept_once_its_write_is_done(store: TaskStore) -> None:
    key = ("alice", "", "m-reply")
    assert await store.claim_message(key, IdempotencyRecord("fp", "t1")) is None
    reply = Message(message_id="r", role=Role.AGENT, parts=[Part(text="done")])
    written = store.record_reply(key, IdempotencyRecord("fp", "t1", reply))
    await written
    await written  # each caller that hands the reply out awaits it
    found = await store.get_message(key)
    assert found is not None and found.message == reply
    again = await store.claim_message(key, IdempotencyRecord("fp", "t2"))
    assert again is not None and again.message == reply


async def test_concurrent_claims_admit_exactly_one(store: TaskStore) -> None:
    key = ("alice", "", "race")
    results = await asyncio.gather(*(store.claim_message(key, IdempotencyRecord("fp", f"t{i}")) for i in range(20)))
    assert sum(r is None for r in results) == 1
