"""Commands issued in one turn of the event loop go to Redis in one round trip.

Every Redis operation of a request (claim, save, publish, push probe, lease) used to be its own
round trip: a connection taken from the pool, a write, a wake-up for the answer. A server
under load issues many of them in the same turn of its event loop (one per request being
served), so ``RedisBatch`` queues them and sends the queue as one pipeline (not a transaction)
at the end of the turn; while a pipeline is on the wire, what is issued meanwhile waits for
the next one. Each caller is answered when its own commands' replies are read, so nobody is
told of a write before Redis has applied it.

Commands of one caller stay together and in order; commands of different callers are sent in
the order they were issued, so a caller that awaits one operation before issuing the next (a
save before the publish of the event it saved) keeps that order in Redis too.

A blocking command (``XREAD BLOCK``) must never go through here: it would hold every other
caller's commands behind it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError

__all__ = ["RedisBatch"]

#: One caller's commands: adds them to the pipeline it is given.
Build = Callable[[Any], object]

_batches: weakref.WeakKeyDictionary[aioredis.Redis, RedisBatch] = weakref.WeakKeyDictionary()


class RedisBatch:
    """The batch of one client (one connection pool): ``RedisBatch.of(client)``."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._queue: list[tuple[Build, asyncio.Future[list[Any]]]] = []
        self._sender: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, redis: aioredis.Redis) -> RedisBatch:
        """The one batch of ``redis``, so that the task store, the bus, the push store and the
        coordination sharing a client also share round trips."""
        batch = _batches.get(redis)
        if batch is None:
            batch = _batches[redis] = cls(redis)
        return batch

    def submit(self, build: Build) -> asyncio.Future[list[Any]]:
        """Queue the commands ``build`` adds to a pipeline; the future is their replies, in
        order (or the first error among them)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Any]] = loop.create_future()
        sender = self._sender
        if sender is not None and (sender.done() or sender.get_loop() is not loop):
            # Left by an event loop that was closed with it pending (tests run several loops).
            self._queue = [(b, f) for b, f in self._queue if f.get_loop() is loop]
            sender = None
        self._queue.append((build, future))
        if sender is None:
            self._sender = loop.create_task(self._send_all(), name="a2a-redis-batch")
        return future

    async def run(self, build: Build) -> list[Any]:
        """``submit`` and wait for the replies."""
        return await self.submit(build)

    async def script(self, script: AsyncScript, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """A Lua script by its digest, in the batch; loaded (one more round trip) when Redis
        does not have it (a restarted or flushed Redis)."""
        try:
            replies = await self.run(lambda pipe: pipe.evalsha(script.sha, len(keys), *keys, *args))
        except NoScriptError:
            return await script(keys=keys, args=args)
        return replies[0]

    async def _send_all(self) -> None:
        try:
            # The rest of this turn of the loop: callers that issue commands now join the batch.
            await asyncio.sleep(0)
            while self._queue:
                batch, self._queue = self._queue, []
                await self._send(batch)
        finally:
            self._sender = None
            # Only left when this was cancelled (the loop is stopping): nobody must wait forever.
            left, self._queue = self._queue, []
            for _build, future in left:
                future.cancel()

    async def _send(self, batch: list[tuple[Build, asyncio.Future[list[Any]]]]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        spans: list[tuple[int, int, asyncio.Future[list[Any]]]] = []
        for build, future in batch:
            start = len(pipe.command_stack)
            try:
                build(pipe)
            except Exception as exc:  # noqa: BLE001 - a caller's bad arguments fail that caller only
                del pipe.command_stack[start:]
                future.set_exception(exc)
                continue
            spans.append((start, len(pipe.command_stack), future))
        if not spans:
            return
        try:
            replies = await pipe.execute(raise_on_error=False)
        except asyncio.CancelledError:
            for _start, _end, future in spans:
                future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            for _start, _end, future in spans:
                if not future.done():
                    future.set_exception(exc)
            return
        for start, end, future in spans:
            if future.done():
                continue  # its caller stopped waiting (the commands were applied all the same)
            mine = replies[start:end]
            error = next((reply for reply in mine if isinstance(reply, Exception)), None)
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(mine)
