"""Task streams shared by several replicas through Redis.

One Redis Stream per task, ``{ns}:ev:{taskId}``, entry id ``0-{seq}`` (so the stream's own
order is the task's sequence), field ``b`` = the event's JSON. Followers block on ``XREAD``
from the last id they saw, so a reader on any replica gets every event, in order, live, and a
reconnecting reader resumes exactly after its ``Last-Event-ID``. A finished task's stream
expires after ``retention`` seconds; an unfinished one after a day without events; each is
capped at ``max_events`` entries.

Cancel requests and leases go through Redis too, but are not events: see ``redis_coordination``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis

from ...protocol.codec import decoder_for
from ...types import StreamResponse
from ..bus import DEFAULT_RETENTION_SECONDS, EventBus, is_final
from ..events import LoggedEvent, ends_stream

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
    ) -> None:
        self.redis = redis
        self.ns = namespace
        self.retention = retention
        self.max_events = max_events
        self._decoder = decoder_for(StreamResponse)
        self._closed = False

    def _stream(self, task_id: str) -> str:
        return f"{self.ns}:ev:{task_id}"

    def is_followed(self, task_id: str) -> bool:
        return True  # a reader on another replica may be

    async def publish(self, task_id: str, logged: LoggedEvent) -> None:
        key = self._stream(task_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(key, {"b": logged.body}, id=f"0-{logged.seq}", maxlen=self.max_events, approximate=True)
        pipe.expire(key, int(self.retention) if is_final(logged) else _UNFINISHED_TTL)
        await pipe.execute()

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
        first: Any = await self.redis.xrange(self._stream(task_id), "-", "+", count=1)
        if not first:
            return None
        entry_id = first[0][0]
        return int((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)).partition("-")[2])

    async def last_published(self, task_id: str) -> int | None:
        last: Any = await self.redis.xrevrange(self._stream(task_id), "+", "-", count=1)
        if not last:
            return None
        entry_id = last[0][0]
        return int((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)).partition("-")[2])

    async def close(self) -> None:
        self._closed = True
