"""Task streams shared by several replicas through Redis.

- Events: one Redis Stream per task, ``{ns}:ev:{taskId}``, entry id ``0-{seq}`` (so the stream's
  own order is the task's sequence), field ``b`` = the event's JSON. Followers block on
  ``XREAD`` from the last id they saw, so a reader on any replica gets every event, in order,
  live, and a reconnecting reader resumes exactly after its ``Last-Event-ID``. A finished task's
  stream expires after ``retention`` seconds; an unfinished one after a day without events;
  each is capped at ``max_events`` entries.
- Cancel: ``PUBLISH {ns}:cancel <taskId>``; every replica listens and cancels the task if it
  runs it.
- Leases: a replica that runs a task holds ``{ns}:lease:{taskId}`` = its id, with a TTL of
  ``lease_ttl`` seconds, renewed every third of that. A task that is WORKING without a lease
  belongs to a dead replica, and the next recovery sweep marks it FAILED.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as aioredis

from ...protocol.codec import decoder_for
from ...types import StreamResponse
from ..bus import DEFAULT_RETENTION_SECONDS, CancelHandler, EventBus, is_final
from ..events import LoggedEvent, ends_stream

__all__ = ["RedisEventBus"]

log = logging.getLogger("a2a.server")

_UNFINISHED_TTL = 24 * 3600
_BLOCK_MS = 1000


class RedisEventBus(EventBus):
    shared = True

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        namespace: str = "a2a",
        retention: float = DEFAULT_RETENTION_SECONDS,
        max_events: int = 100_000,
        lease_ttl: float = 15.0,
    ) -> None:
        self.redis = redis
        self.ns = namespace
        self.retention = retention
        self.max_events = max_events
        self.lease_ttl = lease_ttl
        self.replica_id = uuid.uuid4().hex
        self._decoder = decoder_for(StreamResponse)
        self._cancel_handlers: list[CancelHandler] = []
        self._leases: set[str] = set()
        self._background: list[asyncio.Task[None]] = []
        self._closed = False

    def _stream(self, task_id: str) -> str:
        return f"{self.ns}:ev:{task_id}"

    def _lease(self, task_id: str) -> str:
        return f"{self.ns}:lease:{task_id}"

    # ---- events ------------------------------------------------------------------------

    async def publish(self, task_id: str, logged: LoggedEvent) -> None:
        key = self._stream(task_id)
        pipe = self.redis.pipeline(transaction=True)
        pipe.xadd(key, {"b": logged.body}, id=f"0-{logged.seq}", maxlen=self.max_events, approximate=True)
        pipe.expire(key, int(self.retention) if is_final(logged) else _UNFINISHED_TTL)
        await pipe.execute()

    async def follow(self, task_id: str, from_seq: int) -> AsyncIterator[LoggedEvent]:
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
                    if ends_stream(event):
                        return

    async def retained_from(self, task_id: str) -> int | None:
        first: Any = await self.redis.xrange(self._stream(task_id), "-", "+", count=1)
        if not first:
            return None
        entry_id = first[0][0]
        return int((entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)).partition("-")[2])

    # ---- cancel requests and leases ----------------------------------------------------

    async def request_cancel(self, task_id: str) -> None:
        await self.redis.publish(f"{self.ns}:cancel", task_id)

    def on_cancel_request(self, handler: CancelHandler) -> None:
        self._cancel_handlers.append(handler)

    async def run_started(self, task_id: str) -> None:
        self._leases.add(task_id)
        await self.redis.set(self._lease(task_id), self.replica_id, px=int(self.lease_ttl * 1000))

    async def run_finished(self, task_id: str) -> None:
        self._leases.discard(task_id)
        await self.redis.delete(self._lease(task_id))

    async def is_running_elsewhere(self, task_id: str) -> bool:
        holder: Any = await self.redis.get(self._lease(task_id))
        return holder is not None and holder.decode() != self.replica_id

    async def start(self) -> None:
        self._background = [
            asyncio.create_task(self._listen_for_cancels(), name="a2a-redis-cancel-listener"),
            asyncio.create_task(self._renew_leases(), name="a2a-redis-leases"),
        ]

    async def _listen_for_cancels(self) -> None:
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(f"{self.ns}:cancel")
        try:
            while not self._closed:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is None:
                    continue
                task_id = message["data"].decode() if isinstance(message["data"], bytes) else str(message["data"])
                for handler in self._cancel_handlers:
                    try:
                        await handler(task_id)
                    except Exception:
                        log.exception("cancel request for task %s failed", task_id)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _renew_leases(self) -> None:
        while not self._closed:
            await asyncio.sleep(self.lease_ttl / 3)
            if not self._leases:
                continue
            pipe = self.redis.pipeline(transaction=False)
            for task_id in self._leases:
                pipe.set(self._lease(task_id), self.replica_id, px=int(self.lease_ttl * 1000))
            try:
                await pipe.execute()
            except Exception:
                log.exception("could not renew task leases")

    async def close(self) -> None:
        self._closed = True
        for task in self._background:
            task.cancel()
        for task in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background = []
