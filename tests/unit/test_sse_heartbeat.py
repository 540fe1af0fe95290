"""The shared SSE heartbeat: one timer beats every open stream; a stream that leaves gets no more."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from a2a.protocol.sse import HEARTBEAT
from a2a.server.bindings import sse_heartbeat


class _Stream:
    def __init__(self, *, stall: bool = False) -> None:
        self.written: list[bytes] = []
        self.stall = stall
        self.cancelled = False

    async def write(self, data: bytes) -> None:
        self.written.append(data)
        if self.stall:  # a client that does not read: the write waits for the buffer to drain
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled = True
                raise


def _response(stream: _Stream) -> Any:
    """The stream's write: what a heartbeat is given (equal each time it is taken)."""
    return stream.write


def _shared() -> dict[Any, Any]:
    return sse_heartbeat._shared


async def test_every_open_stream_is_beaten_and_a_stopped_one_no_more() -> None:
    a, b = _Stream(), _Stream()
    beat_a = sse_heartbeat.start_heartbeat(_response(a), 0.02)
    beat_b = sse_heartbeat.start_heartbeat(_response(b), 0.02)
    assert len(_shared()) == 1  # one timer for both
    await asyncio.sleep(0.1)
    assert a.written and b.written and set(a.written + b.written) == {HEARTBEAT}
    await beat_a.stop()
    seen = len(a.written)
    await asyncio.sleep(0.08)
    assert len(a.written) == seen and len(b.written) > 1
    await beat_b.stop()
    assert _shared() == {}  # the last one out takes the timer with it


async def test_a_finished_write_is_not_held_until_the_next_beat() -> None:
    stream = _Stream()
    beat = sse_heartbeat.start_heartbeat(_response(stream), 0.05)
    beats = next(iter(_shared().values()))
    await asyncio.sleep(0.07)  # one beat, its write done long before the next
    assert stream.written == [HEARTBEAT]
    assert beats.streams[_response(stream)] is None  # no finished task kept per open stream
    await beat.stop()


async def test_a_write_that_waits_is_not_doubled_and_is_cancelled_at_stop() -> None:
    slow = _Stream(stall=True)
    beat = sse_heartbeat.start_heartbeat(_response(slow), 0.02)
    await asyncio.sleep(0.12)
    assert slow.written == [HEARTBEAT]  # the next beats skip it while its write is pending
    await beat.stop()
    assert slow.cancelled and _shared() == {}


async def test_a_new_loop_gets_its_own_timer() -> None:
    stream = _Stream()
    loop = asyncio.get_running_loop()
    # What a closed loop of an earlier test could leave under this key: replaced, not reused.
    stale = sse_heartbeat._Beats(loop, 0.02, (id(loop), 0.02))
    stale.loop = cast(asyncio.AbstractEventLoop, object())
    stale.timer.cancel()
    _shared()[(id(loop), 0.02)] = stale
    beat = sse_heartbeat.start_heartbeat(_response(stream), 0.02)
    await asyncio.sleep(0.08)
    assert stream.written
    await beat.stop()
    assert _shared() == {}
