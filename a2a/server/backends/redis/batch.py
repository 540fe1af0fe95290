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

Commands are queued when they are issued, not when their caller first awaits: a write issued
and not awaited (a lease) still goes before whatever its caller issues next.

Lua scripts go by their digest (``EVALSHA``); a Redis that no longer has one (restarted,
flushed) is given it and the calls that failed are sent again at once, before anything queued
after them.

A blocking command (``XREAD BLOCK``) must never go through here: it would hold every other
caller's commands behind it.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ....extras import needs_extra

with needs_extra("the Redis backend", "redis"):
    import redis.asyncio as aioredis
    from redis.commands.core import AsyncScript
    from redis.exceptions import NoScriptError

__all__ = ["RedisBatch"]

#: One caller's commands: adds them to the pipeline it is given.
Build = Callable[[Any], object]

_batches: weakref.WeakKeyDictionary[aioredis.Redis, RedisBatch] = weakref.WeakKeyDictionary()


@dataclass(slots=True)
class _Call:
    build: Build
    #: Its replies (a list), or for a script its one reply.
    future: asyncio.Future[Any]
    #: The script it calls by digest (loaded and sent again if Redis lacks it).
    script: AsyncScript | None = None


class RedisBatch:
    """The batch of one client (one connection pool): ``RedisBatch.of(client)``."""

    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._queue: list[_Call] = []
        self._sender: asyncio.Task[None] | None = None

    @classmethod
    def of(cls, redis: aioredis.Redis) -> RedisBatch:
        """The one batch of ``redis``, so that the task store, the bus, the push store and the
        coordination sharing a client also share round trips."""
        batch = _batches.get(redis)
        if batch is None:
            batch = _batches[redis] = cls(redis)
        return batch

    def run(self, build: Build) -> asyncio.Future[list[Any]]:
        """Queue the commands ``build`` adds to a pipeline; the future is their replies, in
        order (or the first error among them)."""
        return self._queue_call(build, None)

    def script(self, script: AsyncScript, keys: Sequence[Any], args: Sequence[Any]) -> asyncio.Future[Any]:
        """Queue a call of a Lua script; the future is its reply."""
        sha, count = script.sha, len(keys)
        return self._queue_call(lambda pipe: pipe.evalsha(sha, count, *keys, *args), script)

    def _queue_call(self, build: Build, script: AsyncScript | None) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        sender = self._sender
        if sender is not None and (sender.done() or sender.get_loop() is not loop):
            # Left by an event loop that was closed with it pending (tests run several loops).
            self._queue = [c for c in self._queue if c.future.get_loop() is loop]
            sender = None
        self._queue.append(_Call(build, future, script))
        if sender is None:
            self._sender = loop.create_task(self._send_all(), name="a2a-redis-batch")
        return future

    async def _send_all(self) -> None:
        try:
            # The rest of this turn of the loop: callers that issue commands now join the batch.
            await asyncio.sleep(0)
            while self._queue:
                batch, self._queue = self._queue, []
                retry = await self._send(batch)
                if retry:
                    await self._reload(retry)
        except BaseException:
            # Cancelled (the loop is stopping): nobody must wait for ever.
            for call in self._queue:
                call.future.cancel()
            self._queue = []
            raise
        finally:
            self._sender = None

    async def _reload(self, retry: list[_Call]) -> None:
        """Redis lost these calls' scripts: give them again, and resend the calls before
        anything queued after them."""
        try:
            for script in {id(c.script): c.script for c in retry if c.script is not None}.values():
                await self.redis.script_load(script.script)
        except Exception as exc:  # noqa: BLE001 - handed to the callers
            for call in retry:
                if not call.future.done():
                    call.future.set_exception(exc)
            return
        except BaseException:
            for call in retry:
                call.future.cancel()
            raise
        await self._send(retry, retrying=True)

    async def _send(self, batch: list[_Call], *, retrying: bool = False) -> list[_Call]:
        """Send one pipeline and answer its callers; the script calls to send again."""
        pipe = self.redis.pipeline(transaction=False)
        spans: list[tuple[int, int, _Call]] = []
        for call in batch:
            start = len(pipe.command_stack)
            try:
                call.build(pipe)
            except Exception as exc:  # noqa: BLE001 - a caller's bad arguments fail that caller only
                del pipe.command_stack[start:]
                call.future.set_exception(exc)
                continue
            spans.append((start, len(pipe.command_stack), call))
        if not spans:
            return []
        try:
            replies = await pipe.execute(raise_on_error=False)
        except asyncio.CancelledError:
            for _start, _end, call in spans:
                call.future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the pipeline
            for _start, _end, call in spans:
                if not call.future.done():
                    call.future.set_exception(exc)
            return []
        retry: list[_Call] = []
        for start, end, call in spans:
            mine = replies[start:end]
            error = next((reply for reply in mine if isinstance(reply, Exception)), None)
            if isinstance(error, NoScriptError) and call.script is not None and not retrying:
                retry.append(call)
            elif call.future.done():
                continue  # its caller stopped waiting (the commands were applied all the same)
            elif error is not None:
                call.future.set_exception(error)
            else:
                call.future.set_result(mine[0] if call.script is not None else mine)
        return retry
