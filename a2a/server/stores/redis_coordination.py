"""Replicas sharing one Redis tell each other about cancel requests and the tasks they run.

- Cancel: ``PUBLISH {ns}:cancel <taskId>``; every replica listens and cancels the task if it
  runs it.
- Leases: a replica that runs a task holds ``{ns}:lease:{taskId}`` = its id, with a TTL of
  ``lease_ttl`` seconds, renewed every third of that. A task that is WORKING without a lease
  belongs to a dead replica, and the next recovery sweep (every ``sweep_every`` seconds, on
  every replica) marks it FAILED.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable
from typing import Any

import redis.asyncio as aioredis

from ..coordination import RECOVERY_SWEEP_SECONDS, CancelHandler, Coordination, RecoverHandler

__all__ = ["RedisCoordination"]

log = logging.getLogger("a2a.server")

#: How long ``close`` lets lease writes in flight finish (a lease not given back lapses anyway).
_WRITES_GRACE = 2.0


class RedisCoordination(Coordination):
    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        namespace: str = "a2a",
        lease_ttl: float = 15.0,
        sweep_every: float = RECOVERY_SWEEP_SECONDS,
    ) -> None:
        self.redis = redis
        self.ns = namespace
        self.lease_ttl = lease_ttl
        self.sweep_every = sweep_every
        self.replica_id = uuid.uuid4().hex
        self._leases: set[str] = set()
        self._writes: set[asyncio.Task[None]] = set()
        self._background: list[asyncio.Task[None]] = []
        self._closed = False

    def _lease(self, task_id: str) -> str:
        return f"{self.ns}:lease:{task_id}"

    async def start(self, *, cancel: CancelHandler, recover: RecoverHandler) -> None:
        self._background = [
            asyncio.create_task(self._listen_for_cancels(cancel), name="a2a-redis-cancel-listener"),
            asyncio.create_task(self._renew_leases(), name="a2a-redis-leases"),
            asyncio.create_task(self._sweep(recover), name="a2a-recovery-sweep"),
        ]

    # ---- leases ------------------------------------------------------------------------

    def run_started(self, task_id: str) -> None:
        self._leases.add(task_id)
        self._write(self.redis.set(self._lease(task_id), self.replica_id, px=int(self.lease_ttl * 1000)))

    def run_finished(self, task_id: str) -> None:
        self._leases.discard(task_id)
        self._write(self.redis.delete(self._lease(task_id)))

    def _write(self, command: Awaitable[Any]) -> None:
        """A lease write that must not delay the run (errors are logged)."""

        async def guarded() -> None:
            try:
                await command
            except Exception:
                log.exception("could not write a task lease")

        task = asyncio.get_running_loop().create_task(guarded())
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def is_running_elsewhere(self, task_id: str) -> bool:
        holder: Any = await self.redis.get(self._lease(task_id))
        return holder is not None and holder.decode() != self.replica_id

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

    async def _sweep(self, recover: RecoverHandler) -> None:
        while not self._closed:
            await asyncio.sleep(self.sweep_every)
            try:
                await recover()
            except Exception:
                log.exception("recovery sweep failed")

    # ---- cancel requests ---------------------------------------------------------------

    async def request_cancel(self, task_id: str) -> bool:
        await self.redis.publish(f"{self.ns}:cancel", task_id)
        return True

    async def _listen_for_cancels(self, cancel: CancelHandler) -> None:
        pubsub = self.redis.pubsub()
        await pubsub.subscribe(f"{self.ns}:cancel")
        try:
            while not self._closed:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is None:
                    continue
                task_id = message["data"].decode() if isinstance(message["data"], bytes) else str(message["data"])
                try:
                    await cancel(task_id)
                except Exception:
                    log.exception("cancel request for task %s failed", task_id)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        self._closed = True
        for task in self._background:
            task.cancel()
        for task in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background = []
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=_WRITES_GRACE)
