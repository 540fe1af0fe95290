"""The per-task event log that every stream of a task reads from.

Events are appended once, numbered (a per-task sequence, the SSE ``id``) and encoded at most once;
any number of readers follow the log at their own pace, so several subscribers of one task
each get every event, in order, without per-subscriber queues. A reader that starts late
(or reconnects) simply starts at an earlier index.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ..protocol.codec import encode
from ..types import StreamResponse, TaskState, UnsetType

__all__ = ["EventLog", "LoggedEvent", "ends_stream"]


class LoggedEvent:
    """One numbered event, and its JSON (what bindings splice into their frames and push
    sends). Encoded at most once, when first asked for: a task's events are logged whether
    or not anybody reads them, and most tasks (a blocking SendMessage, no webhook) have no
    reader. The event must not change once logged (the handler logs copies it owns)."""

    __slots__ = ("_body", "event", "seq")

    def __init__(self, seq: int, event: StreamResponse, body: bytes | None = None) -> None:
        self.seq = seq
        self.event = event
        self._body = body

    @property
    def body(self) -> bytes:
        body = self._body
        if body is None:
            body = self._body = encode(self.event)
        return body

    def __repr__(self) -> str:
        return f"LoggedEvent(seq={self.seq}, event={self.event!r})"


def ends_stream(event: StreamResponse, *, until_terminal: bool = False) -> bool:
    """A stream closes after a Message, or a status that is terminal or interrupted (with
    ``until_terminal``, as a subscription does: terminal only)."""
    if not isinstance(event.message, UnsetType):
        return True
    state: TaskState | None = None
    if not isinstance(event.status_update, UnsetType):
        state = event.status_update.status.state
    elif not isinstance(event.task, UnsetType):
        state = event.task.status.state
    return state is not None and (state.is_terminal or (state.is_interrupted and not until_terminal))


class EventLog:
    def __init__(self, first_seq: int = 1) -> None:
        self._events: list[LoggedEvent] = []
        self._first_seq = first_seq
        self._waiters: list[asyncio.Future[None]] = []
        self.closed = False

    @property
    def next_seq(self) -> int:
        return self._first_seq + len(self._events)

    @property
    def first_seq(self) -> int:
        return self._first_seq

    def append(self, logged: LoggedEvent) -> None:
        """Add an event numbered elsewhere; numbering must continue without a gap."""
        if not self._events:
            self._first_seq = logged.seq
        elif logged.seq != self.next_seq:
            raise ValueError(f"event seq {logged.seq} does not follow {self.next_seq - 1}")
        self._events.append(logged)
        self._wake()

    def close(self) -> None:
        """No more events will come (server shutdown, or the task is gone): readers finish."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def follow(self, from_seq: int, *, until_terminal: bool = False) -> AsyncIterator[LoggedEvent]:
        """Every event with ``seq >= from_seq``, then new ones as they come, until the stream ends
        (``ends_stream``)."""
        index = max(0, from_seq - self._first_seq)
        while True:
            while index < len(self._events):
                logged = self._events[index]
                index += 1
                yield logged
                if ends_stream(logged.event, until_terminal=until_terminal):
                    return
            if self.closed:
                return
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            await fut
