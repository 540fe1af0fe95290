"""The per-task event log that every stream of a task reads from.

Events are appended once, numbered (a per-task sequence, the SSE ``id``) and encoded at most once;
any number of readers follow the log at their own pace, so several subscribers of one task
each get every event, in order, without per-subscriber queues. A reader that starts late
(or reconnects) simply starts at an earlier index.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable

from ...protocol.codec import encode, encode_kept
from ...types import INTERRUPTED_STATES, TERMINAL_STATES, StreamResponse, TaskState, UnsetType

__all__ = ["EventLog", "LogReader", "LoggedEvent", "ends_stream"]


class LoggedEvent:
    """One numbered event, and its JSON (what bindings splice into their frames and push
    sends). Encoded when first asked for: a task's events are logged whether or not anybody
    reads them, and most tasks (a blocking SendMessage, no webhook) have no reader. The event
    must not change once logged (the handler logs copies it owns), so encoding it again gives
    the same JSON.

    The JSON is kept while the event is its log's latest (``EventLog.append`` lets go of it
    once a newer one is there): the readers of a live task read the latest event, all of them
    in the same turn, and share one encoding; an older one is wanted again only by a reader
    that resumes or lags, which encodes it again. So a task's retained events (an open
    stream's whole life, and a while after the end) do not each keep their JSON beside the
    event itself."""

    __slots__ = ("_body", "_keep", "event", "seq")

    def __init__(self, seq: int, event: StreamResponse, body: bytes | None = None) -> None:
        self.seq = seq
        self.event = event
        self._body = body
        self._keep = True

    @property
    def body(self) -> bytes:
        body = self._body
        if body is None:
            if not self._keep:
                return encode(self.event)  # read once more (a resume): not kept
            body = self._body = encode_kept(self.event)  # kept a while: at its exact size
        return body

    def let_go(self) -> None:
        """Keep no JSON from now on (a newer event is its log's latest)."""
        self._keep = False
        self._body = None

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
    # Set lookups rather than the enum's properties (a call each): every event is judged here.
    return state is not None and (state in TERMINAL_STATES or (not until_terminal and state in INTERRUPTED_STATES))


class EventLog:
    __slots__ = ("_events", "_first_seq", "_waiters", "closed")

    def __init__(self, first_seq: int = 1) -> None:
        self._events: list[LoggedEvent] = []
        self._first_seq = first_seq
        #: Readers waiting for an event, each with the future it handed out.
        self._waiters: list[tuple[LogReader, asyncio.Future[LoggedEvent]]] = []
        self.closed = False

    @property
    def next_seq(self) -> int:
        return self._first_seq + len(self._events)

    @property
    def first_seq(self) -> int:
        return self._first_seq

    def append(self, logged: LoggedEvent) -> None:
        """Add an event numbered elsewhere; numbering must continue without a gap."""
        events = self._events
        if not events:
            self._first_seq = logged.seq
        elif logged.seq != self._first_seq + len(events):
            raise ValueError(f"event seq {logged.seq} does not follow {self.next_seq - 1}")
        else:
            events[-1].let_go()  # see ``LoggedEvent``
        events.append(logged)
        if self._waiters:  # most logs have no reader (a blocking send): no call for them
            self._wake()

    def close(self) -> None:
        """No more events will come (server shutdown, or the task is gone): readers finish."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for reader, fut in waiters:
            if not fut.done():  # else its reader was cancelled: the event stays for its next call
                reader.resolve(fut)

    def follow(self, from_seq: int, *, until_terminal: bool = False) -> AsyncIterator[LoggedEvent]:
        """Every event with ``seq >= from_seq``, then new ones as they come, until the stream ends
        (``ends_stream``)."""
        return LogReader(self, from_seq, until_terminal)


class LogReader:
    """One reader's place in an ``EventLog``, an async iterator. When the next event is there
    (a reader behind the log), ``__anext__`` hands it out in a trivial coroutine, the cheapest
    awaitable; else (caught up) a future that the next append (or the log's close) resolves.
    Either holds an event or ends the iteration (``StopAsyncIteration``), never another error.

    Not an async generator: an open stream holds its reader for its whole life, and a
    generator costs a frame, the object that awaits it and an entry in the loop's set of async
    generators besides; a caught-up reader holds only its future.
    """

    __slots__ = ("_ended", "_index", "_log", "_until_terminal")

    def __init__(self, log: EventLog, from_seq: int, until_terminal: bool) -> None:
        self._log = log
        # A start seq until the first call (the log's first seq may still be set by its first
        # event), then an index into the log.
        self._index = from_seq
        self._until_terminal = until_terminal
        self._ended: bool | None = None  # None: not started

    def __aiter__(self) -> LogReader:
        return self

    def __anext__(self) -> Awaitable[LoggedEvent]:
        log = self._log
        if self._ended is None:
            self._ended = False
            self._index = max(0, self._index - log.first_seq)
        if self._ended:
            return _end()
        if self._index < len(log._events):
            return _now(self._take())
        if log.closed:
            return _end()
        fut: asyncio.Future[LoggedEvent] = asyncio.get_running_loop().create_future()
        log._waiters.append((self, fut))
        return fut

    def _take(self) -> LoggedEvent:
        logged = self._log._events[self._index]
        self._index += 1
        self._ended = ends_stream(logged.event, until_terminal=self._until_terminal)
        return logged

    def resolve(self, fut: asyncio.Future[LoggedEvent]) -> None:
        """Hand a waiting reader its next event, or end its iteration (the log closed)."""
        if self._ended or self._index >= len(self._log._events):
            fut.set_exception(StopAsyncIteration())
        else:
            fut.set_result(self._take())

    async def aclose(self) -> None:
        self._ended = True


async def _now(logged: LoggedEvent) -> LoggedEvent:
    return logged


async def _end() -> LoggedEvent:
    raise StopAsyncIteration
