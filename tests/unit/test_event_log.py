"""The per-task event log's readers: every event in order, from any start, none lost to a
cancelled wait, an end at the stream's last event or when the log closes."""

from __future__ import annotations

import asyncio

from a2a import types as t
from a2a.server.engine.events import EventLog, LoggedEvent


def _chunk(seq: int) -> LoggedEvent:
    event = t.StreamResponse(
        artifact_update=t.TaskArtifactUpdateEvent(
            task_id="t", context_id="c", artifact=t.Artifact(artifact_id="a", parts=[t.Part(text=str(seq))])
        )
    )
    return LoggedEvent(seq, event, b"{}")


def _done(seq: int) -> LoggedEvent:
    status = t.TaskStatus(state=t.TaskState.COMPLETED)
    event = t.StreamResponse(status_update=t.TaskStatusUpdateEvent(task_id="t", context_id="c", status=status))
    return LoggedEvent(seq, event, b"{}")


async def _read(log: EventLog, from_seq: int) -> list[int]:
    return [logged.seq async for logged in log.follow(from_seq)]


async def test_readers_get_every_event_in_order_from_their_start_and_end_with_the_stream() -> None:
    log = EventLog()
    early = asyncio.ensure_future(_read(log, 1))
    await asyncio.sleep(0)
    log.append(_chunk(1))
    log.append(_chunk(2))  # two appended before the reader runs again: both reach it
    await asyncio.sleep(0)
    late = asyncio.ensure_future(_read(log, 2))
    log.append(_chunk(3))
    log.append(_done(4))
    log.append(_chunk(5))  # after the end: no reader of this stream sees it
    assert await asyncio.wait_for(early, 5) == [1, 2, 3, 4]
    assert await asyncio.wait_for(late, 5) == [2, 3, 4]
    assert await _read(log, 4) == [4]


async def test_a_cancelled_wait_loses_no_event() -> None:
    log = EventLog()
    reader = log.follow(1)
    waiting = asyncio.ensure_future(reader.__anext__())
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    log.append(_chunk(1))
    assert (await asyncio.wait_for(reader.__anext__(), 5)).seq == 1


async def test_closing_the_log_ends_its_waiting_readers_and_aclose_ends_one() -> None:
    log = EventLog()
    waiting = asyncio.ensure_future(_read(log, 1))
    log.append(_chunk(1))
    await asyncio.sleep(0)
    log.close()
    assert await asyncio.wait_for(waiting, 5) == [1]
    other = EventLog()
    other.append(_chunk(1))
    reader = other.follow(1)
    await reader.aclose()  # type: ignore[attr-defined]
    assert [logged.seq async for logged in reader] == []


async def test_an_open_reader_is_no_async_generator() -> None:
    """A stream holds its reader for its whole life: an object, not a generator's frames."""
    loop = asyncio.get_running_loop()
    log = EventLog()
    before = len(loop._asyncgens)  # type: ignore[attr-defined]
    readers = [asyncio.ensure_future(_read_one(log)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert len(loop._asyncgens) == before  # type: ignore[attr-defined]
    log.append(_done(1))
    assert await asyncio.gather(*readers) == [1, 1, 1]


async def _read_one(log: EventLog) -> int:
    return (await log.follow(1).__anext__()).seq


def test_only_the_latest_event_keeps_its_json() -> None:
    log = EventLog()
    first, second = LoggedEvent(1, _chunk(1).event), LoggedEvent(2, _chunk(2).event)
    log.append(first)
    body = first.body
    assert first.body is body  # the latest: encoded once, shared by its readers
    log.append(second)
    # An older event keeps only the event: a reader that resumes gets the same JSON, made again.
    assert first._body is None and first.body == body and first._body is None
    assert second.body is second.body
