"""Replicas sharing one Redis tell each other about cancel requests and the tasks they run.

- Liveness and leases: each replica has a hash ``{ns}:replica:{replicaId}`` with one field per
  task it runs (and ``.``, so that it exists while the replica runs none). It lives
  ``lease_ttl`` seconds (3 s by default) and the replica extends it every ``heartbeat`` seconds
  (1 s): a replica that dies loses all its leases at once, ``lease_ttl`` after its last beat,
  and a lease costs no Redis command per task per beat (only one when the run starts, one when
  it ends, in the batched round trip of whatever else is sent then: ``RedisBatch``).
  ``{ns}:replicas`` is the set of replica ids.
- Noticing a death: each heartbeat also takes out of ``{ns}:replicas`` every replica whose hash
  is gone, atomically (one Lua script), so exactly one survivor notices each death; it then
  runs the recovery at once (the handler marks FAILED the unfinished tasks no live replica
  runs). A replica is thus found dead between ``lease_ttl - heartbeat`` and
  ``lease_ttl + heartbeat`` seconds after it died. Every replica also sweeps every
  ``sweep_every`` seconds (30 s), the safety net for what a recovery could miss (the survivor
  that noticed died too, say).
- Ending an orphan: ``claim_orphan`` sets ``{ns}:ending:{taskId}`` (``SET NX``, in the same
  script that checks that no live replica holds the task), so that a recovery and a
  ``CancelTask`` racing for a dead replica's task end it once.
- Cancel: ``PUBLISH {ns}:cancel <taskId>`` when a live replica holds the task; every replica
  listens and cancels the task if it runs it.

A replica that stops in good order deletes its hash and leaves the set at once.

A replica whose event loop stalls longer than ``lease_ttl - heartbeat`` seconds (2 s) is taken
for dead and its tasks are failed by another; when it comes back it says so in its log and
takes its leases again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from ....extras import needs_extra
from ...engine.coordination import RECOVERY_SWEEP_SECONDS, CancelHandler, Coordination, RecoverHandler
from .batch import RedisBatch

with needs_extra("the Redis backend", "redis"):
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError

__all__ = ["HEARTBEAT_SECONDS", "LEASE_TTL_SECONDS", "RedisCoordination"]

log = logging.getLogger("a2a.server")

#: How long a replica counts as alive after its last heartbeat (its leases lapse then).
LEASE_TTL_SECONDS = 3.0
#: How often a replica renews its liveness and looks for replicas that died.
HEARTBEAT_SECONDS = 1.0
#: How long ``close`` lets lease writes in flight finish (a lease not given back lapses anyway).
_WRITES_GRACE = 2.0
#: How long an orphan's end is reserved for the replica that claimed it (ending takes a save and
#: a publish; a replica that dies meanwhile leaves it to the next recovery after this).
_CLAIM_TTL_MS = 10_000

# KEYS: registry, own hash. ARGV: own id, ttl in ms, hash prefix.
# Returns {1 if the own hash still existed, the ids of replicas found dead (taken out here)}.
_HEARTBEAT = """
local existed = redis.call('PEXPIRE', KEYS[2], ARGV[2])
if existed == 0 then
  redis.call('HSET', KEYS[2], '.', '1')
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
redis.call('SADD', KEYS[1], ARGV[1])
local dead = {}
for _, replica in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[3] .. replica) == 0 then
    redis.call('SREM', KEYS[1], replica)
    dead[#dead + 1] = replica
  end
end
return {existed, dead}
"""

# Whether another live replica holds the task: {ns}:replica:* hashes are named from the
# registry (a replica's hash is gone once it is dead). KEYS: registry. ARGV: own id, prefix, task.
# Returns the holder's hash's time to live in ms (when it lapses unless renewed), -1 for none.
_HELD_ELSEWHERE = """
for _, replica in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local hash = ARGV[2] .. replica
  if replica ~= ARGV[1] and redis.call('HEXISTS', hash, ARGV[3]) == 1 then
    return math.max(0, redis.call('PTTL', hash))
  end
end
return -1
"""

# KEYS: registry, claim. ARGV: own id, prefix, task, claim ttl in ms. 1: claimed.
_CLAIM = """
for _, replica in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if replica ~= ARGV[1] and redis.call('HEXISTS', ARGV[2] .. replica, ARGV[3]) == 1 then return 0 end
end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[4]) then return 1 end
return 0
"""

# KEYS: own hash. ARGV: task, ttl in ms. One command: never a hash without a TTL, even if it
# had lapsed (a replica that died right after would otherwise look alive for ever).
_HOLD = """
redis.call('HSET', KEYS[1], ARGV[1], '1')
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# KEYS: claim. ARGV: own id.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisCoordination(Coordination):
    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        namespace: str = "a2a",
        lease_ttl: float = LEASE_TTL_SECONDS,
        heartbeat: float = HEARTBEAT_SECONDS,
        sweep_every: float = RECOVERY_SWEEP_SECONDS,
    ) -> None:
        if heartbeat <= 0 or lease_ttl < 2 * heartbeat:
            raise ValueError(
                f"lease_ttl ({lease_ttl}s) must be at least 2 x heartbeat ({heartbeat}s), "
                "so that one late heartbeat does not make a live replica look dead"
            )
        if sweep_every <= 0:
            raise ValueError(f"the recovery sweep interval must be positive, got {sweep_every}s")
        self.redis = redis
        self.ns = namespace
        self.lease_ttl = lease_ttl
        self.heartbeat = heartbeat
        self.sweep_every = sweep_every
        self.replica_id = uuid.uuid4().hex
        self._registry = f"{namespace}:replicas"
        self._prefix = f"{namespace}:replica:"
        self._own = self._prefix + self.replica_id
        self._ttl_ms = max(1, int(lease_ttl * 1000))
        self._beat = redis.register_script(_HEARTBEAT)
        self._held = redis.register_script(_HELD_ELSEWHERE)
        self._claim = redis.register_script(_CLAIM)
        self._release = redis.register_script(_RELEASE)
        self._hold = redis.register_script(_HOLD)
        self._leases: set[str] = set()
        self._batch = RedisBatch.of(redis)
        self._writes: set[asyncio.Future[Any]] = set()
        self._background: list[asyncio.Task[None]] = []
        self._recovering: asyncio.Task[None] | None = None
        self._recover_again = False
        self._beat_failing = False
        self._closed = False

    def _ending(self, task_id: str) -> str:
        return f"{self.ns}:ending:{task_id}"

    async def start(self, *, cancel: CancelHandler, recover: RecoverHandler) -> None:
        # Registered before serving: a run started here is never held by an unknown replica.
        # The deaths this first beat finds are recovered by the handler's own start-up recovery.
        await self._heartbeat_once()
        self._background = [
            asyncio.create_task(self._listen_for_cancels(cancel), name="a2a-redis-cancel-listener"),
            asyncio.create_task(self._heartbeats(recover), name="a2a-redis-heartbeat"),
            asyncio.create_task(self._sweep(recover), name="a2a-recovery-sweep"),
        ]

    # ---- liveness and leases -----------------------------------------------------------

    def run_started(self, task_id: str) -> None:
        self._leases.add(task_id)
        self._write(self._batch.script(self._hold, [self._own], [task_id, self._ttl_ms]))

    def run_finished(self, task_id: str) -> None:
        self._leases.discard(task_id)
        own = self._own
        self._write(self._batch.run(lambda pipe: pipe.hdel(own, task_id)))

    def _write(self, written: asyncio.Future[Any]) -> None:
        """A lease write that must not delay the run: queued in the batch now (so before
        anything the run issues next), its answer not awaited (errors are logged)."""
        self._writes.add(written)
        written.add_done_callback(self._written)

    def _written(self, written: asyncio.Future[Any]) -> None:
        self._writes.discard(written)
        if not written.cancelled() and (error := written.exception()) is not None:
            log.error("could not write a task lease: %s", error)

    async def _heartbeat_once(self) -> list[str]:
        """Extend this replica's liveness; the ids of the replicas this beat found dead."""
        args: list[str | int] = [self.replica_id, self._ttl_ms, self._prefix]
        existed, dead = await self._beat(keys=[self._registry, self._own], args=args)
        if not existed and self._leases:
            # Our hash lapsed (the event loop stalled, or Redis was unreachable): the other
            # replicas took us for dead and may have failed our tasks. Hold what still runs.
            log.warning(
                "this replica missed its heartbeats for over %gs: other replicas may have marked "
                "its %d running task(s) FAILED",
                self.lease_ttl,
                len(self._leases),
            )
            pipe = self.redis.pipeline(transaction=True)
            pipe.hset(self._own, mapping=dict.fromkeys(self._leases, "1"))
            pipe.pexpire(self._own, self._ttl_ms)
            await pipe.execute()
        return [r.decode() if isinstance(r, bytes) else str(r) for r in dead]

    async def _heartbeats(self, recover: RecoverHandler) -> None:
        while not self._closed:
            await asyncio.sleep(self.heartbeat)
            try:
                dead = await self._heartbeat_once()
            except (RedisError, OSError, TimeoutError) as exc:
                if not self._beat_failing:  # one line per outage, not one per beat
                    log.warning("could not renew this replica's liveness in Redis: %s", exc)
                self._beat_failing = True
                continue
            if self._beat_failing:
                log.warning("renewing this replica's liveness in Redis again")
                self._beat_failing = False
            if dead:
                log.warning("replica(s) %s stopped renewing their liveness: ending their tasks", ", ".join(dead))
                self._recover_soon(recover)

    def _recover_soon(self, recover: RecoverHandler) -> None:
        """Run the recovery beside the heartbeats (a long one must not stop them); a death
        found while one runs is recovered by one more run after it."""
        if self._recovering is not None and not self._recovering.done():
            self._recover_again = True
            return

        async def run() -> None:
            again = True
            while again and not self._closed:
                self._recover_again = False
                try:
                    await recover()
                except Exception:
                    log.exception("recovery of a dead replica's tasks failed")
                again = self._recover_again

        self._recovering = asyncio.create_task(run(), name="a2a-recovery")

    async def is_running_elsewhere(self, task_id: str) -> bool:
        return await self.lease_left(task_id) is not None

    async def lease_left(self, task_id: str) -> float | None:
        left: Any = await self._held(keys=[self._registry], args=[self.replica_id, self._prefix, task_id])
        return None if int(left) < 0 else int(left) / 1000

    async def claim_orphan(self, task_id: str) -> bool:
        claimed: Any = await self._claim(
            keys=[self._registry, self._ending(task_id)],
            args=[self.replica_id, self._prefix, task_id, _CLAIM_TTL_MS],
        )
        return bool(claimed)

    async def release_orphan(self, task_id: str) -> None:
        await self._release(keys=[self._ending(task_id)], args=[self.replica_id])

    async def _sweep(self, recover: RecoverHandler) -> None:
        while not self._closed:
            await asyncio.sleep(self.sweep_every)
            try:
                await recover()
            except Exception:
                log.exception("recovery sweep failed")

    # ---- cancel requests ---------------------------------------------------------------

    async def request_cancel(self, task_id: str) -> bool:
        if not await self.is_running_elsewhere(task_id):
            return False  # nobody to ask: its replica died (or it runs nowhere)
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
        background = [*self._background, *([self._recovering] if self._recovering is not None else [])]
        for task in background:
            task.cancel()
        for task in background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background = []
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=_WRITES_GRACE)
        # Leaving in good order: the others need not wait for our hash to lapse. If some run
        # did not end (its agent ignored the cancel), we stay in the registry, so the next
        # heartbeat of another replica finds us gone and fails that task at once.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_WRITES_GRACE):
                pipe = self.redis.pipeline(transaction=True)
                pipe.delete(self._own)
                if not self._leases:
                    pipe.srem(self._registry, self.replica_id)
                await pipe.execute()
