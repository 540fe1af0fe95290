"""Task streams shared by several replicas through Redis.

One Redis Stream per task, ``{ns}:ev:{taskId}``, entry id ``0-{seq}`` (so the stream's own
order is the task's sequence), field ``b`` = the event's JSON. Followers block on ``XREAD``
from the last id they saw, so a reader on any replica gets every event, in order, live, and a
reconnecting reader resumes exactly after its ``Last-Event-ID``. A finished task's stream
expires after ``retention`` seconds; an unfinished one after a day without events; each is
capped at ``max_events`` entries.

Cancel requests and leases go through Redis too, but are not events: see ``coordination``.

A publish is one command (a Lua script: ``XADD``, ``EXPIRE`` and, when push notifications are
on, ``EXISTS`` of the task's push configs) in a batched round trip (``RedisBatch``); the
``EXISTS`` answer (``PushProbe``) spares the push store a command of its own for the event of a
task without webhooks.

**Followers in the publishing process** are handed its events directly (a relay per followed
task, an ``EventLog`` of what this process published since), without an ``XREAD`` and a decode
per event: a follower reads Redis until it has caught up with the relay, then the relay. Only
the process that runs a task publishes its events, until the task ends or is interrupted (the
next message may go to another replica); so the relay starts a new log after an event that
ends a stream, after a gap in the seqs and after a publish that failed, and a follower whose
relay cannot continue where it is goes back to Redis; so does a relay that has not moved for a
second while Redis has a newer event (another replica ended the task: a cancel its run here
ignored, or a replica taken for dead). An event reaches the relay only once
Redis has it, so a local reader never sees an event a reader elsewhere could not.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ....extras import needs_extra
from ....protocol.codec import decoder_for
from ....types import UNSET, StreamResponse
from ...engine.bus import DEFAULT_RETENTION_SECONDS, EventBus, is_final
from ...engine.events import EventLog, LoggedEvent, ends_stream
from .batch import RedisBatch
from .push import PushProbe

with needs_extra("the Redis backend", "redis"):
    import redis.asyncio as aioredis

__all__ = ["RedisEventBus"]

_log = logging.getLogger("a2a.server")

_UNFINISHED_TTL = 24 * 3600
_BLOCK_MS = 1000

# KEYS: the stream, then (when probed) the task's push config hash. ARGV: seq, body, max
# events, ttl. One command rather than three: each command costs the server its own packing
# and reply parsing, which is most of what a publish costs it.
_PUBLISH = """
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '0-' .. ARGV[1], 'b', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if KEYS[2] then return redis.call('EXISTS', KEYS[2]) end
return 0
"""


@dataclass(slots=True)
class _Relay:
    """The events this process published for one task while it has followers here."""

    log: EventLog = field(default_factory=EventLog)
    followers: int = 0

    def restart(self) -> None:
        """What this process publishes next may not follow on: a new log (its readers go
        back to Redis for what they miss)."""
        self.log.close()
        self.log = EventLog()


def _holds(log: EventLog) -> bool:
    return log.next_seq > log.first_seq


class RedisEventBus(EventBus):
    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        namespace: str = "a2a",
        retention: float = DEFAULT_RETENTION_SECONDS,
        max_events: int = 100_000,
        push_probe: PushProbe | None = None,
    ) -> None:
        self.redis = redis
        self._batch = RedisBatch.of(redis)
        self._publish = redis.register_script(_PUBLISH)
        self._probe = push_probe
        self._relays: dict[str, _Relay] = {}
        self._watchdog: asyncio.Task[None] | None = None
        self.ns = namespace
        self.retention = retention
        self.max_events = max_events
        self._decoder = decoder_for(StreamResponse)
        self._closed = False

    def _stream(self, task_id: str) -> str:
        return f"{self.ns}:ev:{task_id}"

    async def publish(self, task_id: str, logged: LoggedEvent) -> None:
        key = self._stream(task_id)
        ttl = int(self.retention) if is_final(logged) else _UNFINISHED_TTL
        probe = self._probe
        # A reply (a message, no task) has no webhooks: only task events are probed.
        probed = probe is not None and probe.armed and logged.event.message is UNSET
        # The probe runs after the XADD, in Redis's order: a config registered (on any replica)
        # before this event was appended is seen.
        keys = [key, probe.key(task_id)] if probe is not None and probed else [key]
        relay = self._relays.get(task_id)
        try:
            found = await self._batch.script(self._publish, keys, [logged.seq, logged.body, self.max_events, ttl])
        except BaseException:
            if relay is not None:
                relay.restart()
            raise
        if probe is not None and probed:
            probe.observe(task_id, logged.seq, bool(found))
        relay = self._relays.get(task_id)
        if relay is not None:
            log = relay.log
            if _holds(log) and logged.seq != log.next_seq:
                relay.restart()  # published elsewhere in between
                log = relay.log
            log.append(logged)
            if ends_stream(logged.event):
                relay.restart()  # ended or interrupted: what comes next may come from elsewhere

    async def follow(self, task_id: str, from_seq: int, *, until_terminal: bool = False) -> AsyncIterator[LoggedEvent]:
        relay = self._relays.get(task_id)
        if relay is None:
            relay = self._relays[task_id] = _Relay()
            if self._watchdog is None or self._watchdog.done():
                self._watchdog = asyncio.get_running_loop().create_task(self._watch(), name="a2a-redis-relays")
        relay.followers += 1
        try:
            key = self._stream(task_id)
            next_seq = max(1, from_seq)
            while not self._closed:
                log = relay.log
                if _holds(log) and log.first_seq <= next_seq:
                    # Caught up with what this process publishes: no Redis read per event. (Redis
                    # may have answered with an event before its publisher here heard back: the
                    # relay's log skips what this reader has.)
                    async for logged in log.follow(next_seq, until_terminal=until_terminal):
                        next_seq = logged.seq + 1
                        yield logged
                        if ends_stream(logged.event, until_terminal=until_terminal):
                            return
                    continue  # the log was restarted (or closed): look again
                answer: Any = await self.redis.xread({key: f"0-{next_seq - 1}"}, block=_BLOCK_MS, count=500)
                for _stream, entries in answer or []:
                    for entry_id, fields in entries:
                        text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                        seq = int(text.partition("-")[2])
                        if seq < next_seq:
                            continue
                        next_seq = seq + 1
                        body = fields[b"b"]
                        event = self._decoder.decode(body)
                        yield LoggedEvent(seq, event, bytes(body))
                        if ends_stream(event, until_terminal=until_terminal):
                            return
        finally:
            relay.followers -= 1
            if not relay.followers and self._relays.get(task_id) is relay:
                del self._relays[task_id]
                relay.log.close()

    async def _watch(self) -> None:
        """Every second, a relay whose log has not moved since the last look, while Redis has
        a newer event, is restarted: its readers go to Redis for what another replica published
        (it ended the task: a cancel its run here ignored, or a replica taken for dead). One
        look per idle relay per second, all in one round trip; none per event."""
        marks: dict[str, tuple[_Relay, int]] = {}
        while self._relays and not self._closed:
            await asyncio.sleep(_BLOCK_MS / 1000)
            idle = [
                (task_id, relay, relay.log.next_seq)
                for task_id, relay in self._relays.items()
                if _holds(relay.log) and marks.get(task_id) == (relay, relay.log.next_seq)
            ]
            marks = {task_id: (relay, relay.log.next_seq) for task_id, relay in self._relays.items()}
            if not idle:
                continue
            try:
                ahead = await asyncio.gather(*(self._ahead(self._stream(t), seq) for t, _r, seq in idle))
            except Exception:  # noqa: BLE001 - Redis unreachable: the next look tries again
                _log.warning("could not compare the local relays with Redis; trying again", exc_info=True)
                continue
            for (_task_id, relay, seq), newer in zip(idle, ahead, strict=True):
                if newer and relay.log.next_seq == seq:
                    relay.restart()

    async def _ahead(self, key: str, seq: int) -> bool:
        """Whether the stream has an event numbered ``seq`` or later."""
        (found,) = await self._batch.run(lambda pipe: pipe.xrange(key, f"0-{seq}", "+", count=1))
        return bool(found)

    async def retained_from(self, task_id: str) -> int | None:
        key = self._stream(task_id)
        (first,) = await self._batch.run(lambda pipe: pipe.xrange(key, "-", "+", count=1))
        if not first:
            return None
        entry_id = first[0][0]
        return int((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)).partition("-")[2])

    async def last_published(self, task_id: str) -> int | None:
        key = self._stream(task_id)
        (last,) = await self._batch.run(lambda pipe: pipe.xrevrange(key, "+", "-", count=1))
        if not last:
            return None
        entry_id = last[0][0]
        return int((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)).partition("-")[2])

    async def close(self) -> None:
        self._closed = True
        for relay in self._relays.values():
            relay.log.close()
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watchdog
