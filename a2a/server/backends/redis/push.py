"""Redis push store: configs and pending deliveries shared by every replica on one Redis.

Keys (under the same namespace as the task store, ``{ns}:push:...``, so they never meet its
``{ns}:task:`` / ``{ns}:idx:`` / ``{ns}:msg:`` / ``{ns}:ev:`` / ``{ns}:lease:`` keys):

- ``{ns}:push:cfg:{taskId}``: a hash, config id → ``{"config", "owner", "tenant", "dialect"}`` (JSON);
- ``{ns}:push:st:{taskId}``: a hash, config id → consecutive failed attempts, ``-1`` once the
  config is declared failed (absent: 0);
- ``{ns}:push:q:{h(taskId, configId)}``: a sorted set of pending deliveries, score = the event's
  ``seq``, member = ``"{seq}:"`` + the event's JSON; trimmed to ``max_pending`` (lowest first);
- ``{ns}:push:pending``: a set of ``[taskId, configId]`` (JSON) whose queue is not empty, so a
  restarted replica finds them without scanning;
- ``{ns}:push:lease:{h(taskId, configId)}``: which notifier delivers that queue now
  (``SET ... PX``), so two replicas never deliver one queue at once.

User-supplied config ids are hashed into key names (``h``: SHA-256 of both ids), so no
separator in them can make two keys collide. Multi-key updates are Lua scripts or MULTI
pipelines, so each operation is atomic.

**No round trip per event of a task without a webhook** (most tasks), and no cache to go stale:
the event bus appends each event with one batched round trip that also asks ``EXISTS`` of the
task's config hash (``PushProbe``), right after the ``XADD`` in Redis's own order. ``enqueue``
of that event then knows, without asking again, that the task had no config when the event was
appended: a config registered on any replica before that is seen, and nothing is kept between
events, so restarts and other replicas cannot make it wrong. Without that answer (a bus that does
not probe, or an event it did not see) ``enqueue`` reads the configs as before.
"""

from __future__ import annotations

import builtins
import hashlib
from typing import Any

import msgspec

from ....extras import needs_extra
from ....protocol.codec import decoder_for, encode
from ....types import TaskPushNotificationConfig
from ...push.store import Enqueued, PendingDelivery, PushConfigRecord, PushStore, QueueKey, queue_keys
from .batch import RedisBatch

with needs_extra("the Redis backend", "redis"):
    import redis.asyncio as aioredis

__all__ = ["PushProbe", "RedisPushStore"]

_FAILED = -1
#: Answers kept for events whose ``enqueue`` has not come (yet): past it the oldest are
#: forgotten, which costs those events one read of the configs, nothing else.
_MAX_PROBED = 4096

# KEYS: cfg, st. ARGV: config id, config JSON, max configs.
_PUT = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""

# KEYS: cfg, st, queue, pending. ARGV: config id, pending member.
_NEXT = """
local cfg = redis.call('HGET', KEYS[1], ARGV[1])
local st = redis.call('HGET', KEYS[2], ARGV[1])
if (not cfg) or st == '-1' then
  redis.call('DEL', KEYS[3])
  redis.call('SREM', KEYS[4], ARGV[2])
  return false
end
local head = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
if #head == 0 then
  redis.call('SREM', KEYS[4], ARGV[2])
  return false
end
return {cfg, st or '0', head[1], head[2]}
"""

# KEYS: cfg, st, queue, pending. ARGV: seq, config id, pending member.
_ACK = """
redis.call('ZREMRANGEBYSCORE', KEYS[3], ARGV[1], ARGV[1])
if redis.call('ZCARD', KEYS[3]) == 0 then redis.call('SREM', KEYS[4], ARGV[3]) end
local st = redis.call('HGET', KEYS[2], ARGV[2])
if st and st ~= '-1' then redis.call('HDEL', KEYS[2], ARGV[2]) end
return 1
"""

# KEYS: cfg, st. ARGV: config id.
_FAILURE = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('HGET', KEYS[2], ARGV[1]) == '-1' then return -1 end
return redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
"""

# KEYS: cfg, st, queue, pending. ARGV: config id, pending member.
_FAIL = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then redis.call('HSET', KEYS[2], ARGV[1], '-1') end
local dropped = redis.call('ZCARD', KEYS[3])
redis.call('DEL', KEYS[3])
redis.call('SREM', KEYS[4], ARGV[2])
return dropped
"""

# KEYS: lease. ARGV: holder, ttl in ms.
_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

# KEYS: lease. ARGV: holder.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""


class PushProbe:
    """What the event bus learnt, in an event's own publish round trip, about whether its
    task had push configs; shared by the bus and the push store of one Redis backend.

    ``armed`` once the push store queues events (push notifications are on): until then the
    bus asks nothing. Each answer is for one event (task id and seq) and is used once.
    """

    def __init__(self, namespace: str = "a2a") -> None:
        self.ns = namespace
        self.armed = False
        self._seen: dict[str, tuple[int, bool]] = {}

    def key(self, task_id: str) -> str:
        """The task's config hash: it exists exactly while the task has a config."""
        return f"{self.ns}:push:cfg:{task_id}"

    def observe(self, task_id: str, seq: int, exists: bool) -> None:
        seen = self._seen
        seen.pop(task_id, None)
        if len(seen) >= _MAX_PROBED:
            del seen[next(iter(seen))]
        seen[task_id] = (seq, exists)

    def without_configs(self, task_id: str, seq: int) -> bool:
        """``True`` when event ``seq``'s publish found no config (certain); ``False`` when it
        found one, or was not probed."""
        seen = self._seen.pop(task_id, None)
        return seen is not None and seen == (seq, False)


class _Stored(msgspec.Struct):
    config: TaskPushNotificationConfig
    owner: str = ""
    tenant: str = ""
    #: Absent in configs stored before it existed: 1.0's.
    dialect: str = ""


def _h(task_id: str, config_id: str) -> str:
    return hashlib.sha256(encode([task_id, config_id])).hexdigest()[:32]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisPushStore(PushStore):
    """Pass ``client`` to share the task store's connection pool (it is then not closed here)."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        namespace: str = "a2a",
        client: aioredis.Redis | None = None,
        probe: PushProbe | None = None,
    ) -> None:
        self._owns_client = client is None
        self.redis: aioredis.Redis = client or aioredis.Redis.from_url(url)
        self.ns = namespace
        #: Fed by the event bus of the same backend (``open_redis_backend``); a store on its
        #: own has one that nobody feeds, so it always reads the configs.
        self.probe = probe if probe is not None else PushProbe(namespace)
        self._batch = RedisBatch.of(self.redis)
        self._decoder = decoder_for(_Stored)
        self._pending_decoder = decoder_for(tuple[str, str])
        self._put = self.redis.register_script(_PUT)
        self._next = self.redis.register_script(_NEXT)
        self._ack = self.redis.register_script(_ACK)
        self._failure = self.redis.register_script(_FAILURE)
        self._fail = self.redis.register_script(_FAIL)
        self._acquire = self.redis.register_script(_ACQUIRE)
        self._release = self.redis.register_script(_RELEASE)

    # ---- key names --------------------------------------------------------------------

    def _cfg(self, task_id: str) -> str:
        return f"{self.ns}:push:cfg:{task_id}"

    def _st(self, task_id: str) -> str:
        return f"{self.ns}:push:st:{task_id}"

    def _queue(self, task_id: str, config_id: str) -> str:
        return f"{self.ns}:push:q:{_h(task_id, config_id)}"

    def _lease(self, task_id: str, config_id: str) -> str:
        return f"{self.ns}:push:lease:{_h(task_id, config_id)}"

    @property
    def _pending(self) -> str:
        return f"{self.ns}:push:pending"

    def _keys(self, task_id: str, config_id: str) -> list[str]:
        return [self._cfg(task_id), self._st(task_id), self._queue(task_id, config_id), self._pending]

    def _record(self, raw: Any, state: Any) -> PushConfigRecord:
        stored = self._decoder.decode(raw)
        count = int(state) if state is not None else 0
        return PushConfigRecord(
            stored.config,
            owner=stored.owner,
            tenant=stored.tenant,
            dialect=stored.dialect,
            failures=max(count, 0),
            failed=count == _FAILED,
        )

    # ---- configs ----------------------------------------------------------------------

    async def put_config(self, record: PushConfigRecord, *, max_configs: int) -> bool:
        value = encode(_Stored(record.config, record.owner, record.tenant, record.dialect))
        done = await self._batch.script(
            self._put, [self._cfg(record.task_id), self._st(record.task_id)], [record.config_id, value, max_configs]
        )
        return bool(done)

    async def get_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        cfg, st = self._cfg(task_id), self._st(task_id)
        raw, state = await self._batch.run(lambda pipe: (pipe.hget(cfg, config_id), pipe.hget(st, config_id)))
        return None if raw is None else self._record(raw, state)

    async def list_configs(self, task_id: str) -> builtins.list[PushConfigRecord]:
        configs, states = await self._both(task_id)
        return [self._record(configs[key], states.get(key)) for key in sorted(configs)]

    async def _both(self, task_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        cfg, st = self._cfg(task_id), self._st(task_id)
        configs, states = await self._batch.run(lambda pipe: (pipe.hgetall(cfg), pipe.hgetall(st)))
        return (
            {_text(k): v for k, v in configs.items()},
            {_text(k): v for k, v in states.items()},
        )

    async def delete_config(self, task_id: str, config_id: str) -> bool:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hdel(self._cfg(task_id), config_id)
        pipe.hdel(self._st(task_id), config_id)
        pipe.delete(self._queue(task_id, config_id))
        pipe.srem(self._pending, encode([task_id, config_id]))
        removed, *_ = await pipe.execute()
        return bool(removed)

    # ---- deliveries ---------------------------------------------------------------------

    async def enqueue(self, task_id: str, seq: int, body: bytes, *, max_pending: int) -> builtins.list[Enqueued]:
        self.probe.armed = True
        if self.probe.without_configs(task_id, seq):
            return []  # the event's publish found no config: nothing to read, nothing to queue
        configs, states = await self._both(task_id)
        live = [key for key in sorted(configs) if states.get(key) is None or int(states[key]) != _FAILED]
        if not live:
            return []
        member = b"%d:" % seq + body
        pipe = self.redis.pipeline(transaction=True)
        for config_id in live:
            queue = self._queue(task_id, config_id)
            pipe.zadd(queue, {member: seq})
            pipe.zremrangebyrank(queue, 0, -(max_pending + 1))
            pipe.sadd(self._pending, encode([task_id, config_id]))
        results = await pipe.execute()
        # A config deleted or failed between the read and the write leaves a queue that
        # next_delivery clears, so the race costs nothing.
        return [Enqueued(config_id, int(results[3 * i + 1])) for i, config_id in enumerate(live)]

    async def next_delivery(self, task_id: str, config_id: str) -> PendingDelivery | None:
        found = await self._batch.script(
            self._next, self._keys(task_id, config_id), [config_id, encode([task_id, config_id])]
        )
        if not found:
            return None
        raw, state, member, score = found
        seq = int(float(score))
        body = bytes(member).partition(b":")[2]
        return PendingDelivery(self._record(raw, state), seq, body)

    async def ack(self, task_id: str, config_id: str, seq: int) -> None:
        await self._batch.script(
            self._ack, self._keys(task_id, config_id), [seq, config_id, encode([task_id, config_id])]
        )

    async def record_failure(self, task_id: str, config_id: str) -> int:
        count = await self._batch.script(self._failure, [self._cfg(task_id), self._st(task_id)], [config_id])
        return max(int(count), 0)

    async def fail_config(self, task_id: str, config_id: str) -> int:
        dropped = await self._batch.script(
            self._fail, self._keys(task_id, config_id), [config_id, encode([task_id, config_id])]
        )
        return int(dropped)

    async def pending(self) -> builtins.list[QueueKey]:
        """Reads the pending set with SSCAN, so a large one never blocks Redis."""
        found: builtins.list[QueueKey] = []
        async for member in self.redis.sscan_iter(self._pending, count=500):
            found.append(self._pending_decoder.decode(member))
        return queue_keys(found)

    # ---- leases -------------------------------------------------------------------------

    async def acquire_lease(self, task_id: str, config_id: str, holder: str, ttl: float) -> bool:
        done = await self._batch.script(
            self._acquire, [self._lease(task_id, config_id)], [holder, max(1, int(ttl * 1000))]
        )
        return bool(done)

    async def release_lease(self, task_id: str, config_id: str, holder: str) -> None:
        await self._batch.script(self._release, [self._lease(task_id, config_id)], [holder])

    async def close(self) -> None:
        if self._owns_client:
            await self.redis.aclose()
