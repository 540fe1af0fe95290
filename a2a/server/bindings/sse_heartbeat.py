"""Heartbeat comments on open SSE streams: one timer per event loop and interval beats them all.

A task of its own per stream (a coroutine, its sleep's future and timer) cost about 1.7 KB of
every open stream, and an open stream is mostly idle: one timer that writes a comment to each
registered stream every ``interval`` seconds costs one dictionary entry per stream. A write
that must wait (the client reads slowly) runs as a short task; the next beat skips that
stream while it is still pending, as the per-stream loop did. A write's task is let go once it
is done, not kept until the next beat: else every open stream would hold a finished task (and
its coroutine) most of its life.

A stream registered just before a beat gets its first comment sooner than ``interval``: the
promise is only that a stream is never silent longer than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools

from ...protocol.sse import HEARTBEAT
from .messages import Write

__all__ = ["Heartbeat", "start_heartbeat"]


class _Beats:
    """The streams beaten on one loop at one interval; gone once the last one leaves."""

    __slots__ = ("interval", "key", "loop", "streams", "timer")

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float, key: tuple[int, float]) -> None:
        self.loop = loop
        self.interval = interval
        self.key = key
        #: Each stream and its heartbeat write still pending, if any.
        self.streams: dict[Write, asyncio.Task[None] | None] = {}
        self.timer = loop.call_later(interval, self._beat)

    def _beat(self) -> None:
        for response, pending in self.streams.items():
            if pending is None or pending.done():
                task = self.streams[response] = self.loop.create_task(_write(response))
                task.add_done_callback(functools.partial(self._written, response))
        self.timer = self.loop.call_later(self.interval, self._beat)

    def _written(self, response: Write, task: asyncio.Task[None]) -> None:
        # A finished write is not kept until the next beat (a task and its coroutine for
        # every open stream, all idle long).
        if self.streams.get(response) is task:
            self.streams[response] = None

    def remove(self, response: Write) -> asyncio.Task[None] | None:
        pending = self.streams.pop(response, None)
        if not self.streams:
            self.timer.cancel()
            if _shared.get(self.key) is self:
                del _shared[self.key]
        return pending


async def _write(response: Write) -> None:
    # Each write puts its bytes on the connection whole before it waits, so a heartbeat never
    # splits an event.
    with contextlib.suppress(ConnectionError):
        await response(HEARTBEAT)


_shared: dict[tuple[int, float], _Beats] = {}


class Heartbeat:
    """One stream's place in the shared beat; ``stop`` before the stream's last write."""

    __slots__ = ("_beats", "_response")

    def __init__(self, beats: _Beats, response: Write) -> None:
        self._beats, self._response = beats, response

    async def stop(self) -> None:
        pending = self._beats.remove(self._response)
        if pending is not None and not pending.done():
            pending.cancel()
            await asyncio.wait([pending])


def start_heartbeat(response: Write, interval: float) -> Heartbeat:
    """A heartbeat comment on ``response`` every ``interval`` seconds until ``stop``."""
    loop = asyncio.get_running_loop()
    key = (id(loop), interval)
    beats = _shared.get(key)
    if beats is None or beats.loop is not loop:  # none yet, or left by a loop closed since
        beats = _shared[key] = _Beats(loop, interval, key)
    beats.streams[response] = None
    return Heartbeat(beats, response)
