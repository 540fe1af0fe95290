"""Task streams shared by several replicas through Redis.

One Redis Stream per task, ``{ns}:ev:{taskId}``, entry id ``0-{seq}`` (so the stream's own
order is the task's sequence), field ``b`` = the event's JSON. Followers block on ``XREAD``
from the last id they saw, so a reader on any replica gets every event, in order, live, and a
reconnecting reader resumes exactly after its ``Last-Event-ID``. A finished task's stream
expires after ``retention`` seconds; an unfinished one after a day without events; each is
capped at ``max_events`` entries.

Cancel requests and leases go through Redis too, but are not events: see ``redis_coordination``.

A publish is one batched round trip (``RedisBatch``): ``XADD``, ``EXPIRE``, and, when push
notifications are on, ``EXISTS`` of the task's push configs, whose answer (``PushProbe``) spares
the push store a round trip of its own for the event of a task without webhooks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis

from ...protocol.codec import decoder_for
from ...types import UNSET, StreamResponse
from ..bus import DEFAULT_RETENTION_SECONDS, EventBus, is_final
from ..events import LoggedEvent, ends_stream
from ..push.redis import PushProbe
from .redis_batch import RedisBatch

__all__ = ["RedisEventBus"]

_UNFINISHED_TTL = 24 * 3600
_BLOCK_MS = 1000


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
        self._probe = push_probe
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
        configs = probe.key(task_id) if probe is not None and probed else ""

        def build(pipe: Any) -> None:
            pipe.xadd(key, {"b": logged.body}, id=f"0-{logged.seq}", maxlen=self.max_events, approximate=True)
            pipe.expire(key, ttl)
            if probed:
                # After the XADD, in Redis's order: a config registered (on any replica) before
                # this event was appended is seen here.
                pipe.exists(configs)

        replies = await self._batch.run(build)
        if probe is not None and probed:
            probe.observe(task_id, logged.seq, bool(replies[2]))

    async def follow(self, task_id: str, from_seq: int, *, until_terminal: bool = False) -> AsyncIterator[LoggedEvent]:
        key = self._stream(task_id)
        last = f"0-{max(0, from_seq - 1)}"
        while not self._closed:
            answer: Any = await self.redis.xread({key: last}, block=_BLOCK_MS, count=500)
            for _stream, entries in answer or []:
                for entry_id, fields in entries:
                    last = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                    seq = int(last.partition("-")[2])
                    body = fields[b"b"]
                    event = self._decoder.decode(body)
                    yield LoggedEvent(seq, event, bytes(body))
                    if ends_stream(event, until_terminal=until_terminal):
                        return

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
