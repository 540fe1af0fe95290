"""Redis task store: several server replicas share tasks through one Redis.

Keys (all under a namespace prefix, so several agents can share one Redis):

- ``{ns}:task:{id}``: a hash ``owner, tenant, context, state, ts, last_seq, body`` (body: the
  task's JSON).
- ``{ns}:idx:{h(owner, tenant)}``: a sorted set of ``"{ts}|{id}"`` members, all with score 0,
  so that lexicographic order is status-time order; moved atomically with the task by a Lua
  script.
- ``{ns}:msg:{h(owner, tenant, messageId)}``: the idempotency record (JSON), claimed with
  ``SET NX`` and kept for ``idempotency_ttl`` seconds (7 days by default).

User-supplied strings (owners, tenants, message ids) are hashed into key names, so no
separator in them can make two keys collide.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import msgspec

from ....extras import needs_extra
from ....protocol.codec import decoder_for, encode
from ....types import Message, Task
from ...engine.coordination import RECOVERY_SWEEP_SECONDS
from ..base import Backend, BackendURL
from ..store import (
    ACTIVE_STATES,
    IdempotencyRecord,
    TaskPage,
    TaskQuery,
    TaskRecord,
    TaskStore,
    decode_cursor,
    encode_cursor,
    log_failed_write,
    matches,
)
from .batch import RedisBatch
from .bus import RedisEventBus
from .coordination import HEARTBEAT_SECONDS, LEASE_TTL_SECONDS, RedisCoordination
from .push import PushProbe, RedisPushStore

with needs_extra("the Redis backend", "redis"):
    import redis.asyncio as aioredis

__all__ = ["RedisTaskStore", "open_redis_backend"]

# KEYS: task hash, index key. ARGV: owner, tenant, context, state, ts, last_seq, body, id.
_SAVE = """
local old = redis.call('HGET', KEYS[1], 'ts')
if old then redis.call('ZREM', KEYS[2], old .. '|' .. ARGV[8]) end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'tenant', ARGV[2], 'context', ARGV[3], 'state', ARGV[4],
           'ts', ARGV[5], 'last_seq', ARGV[6], 'body', ARGV[7])
redis.call('ZADD', KEYS[2], 0, ARGV[5] .. '|' .. ARGV[8])
return 1
"""


class _Idem(msgspec.Struct, omit_defaults=True):
    fingerprint: str
    task_id: str | None = None
    message: Message | None = None


def _h(*parts: str) -> str:
    return hashlib.sha256(encode(list(parts))).hexdigest()[:32]


class RedisTaskStore(TaskStore):
    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        namespace: str = "a2a",
        idempotency_ttl: int = 7 * 24 * 3600,
        client: aioredis.Redis | None = None,
    ) -> None:
        self.redis: aioredis.Redis = client or aioredis.Redis.from_url(url)
        self.ns = namespace
        self.idempotency_ttl = idempotency_ttl
        self._save = self.redis.register_script(_SAVE)
        #: Point reads and writes share round trips with every other caller of this client.
        self._batch = RedisBatch.of(self.redis)
        self._task_decoder = decoder_for(Task)
        self._idem_decoder = decoder_for(_Idem)

    def _task_key(self, task_id: str) -> str:
        return f"{self.ns}:task:{task_id}"

    def _index_key(self, owner: str, tenant: str) -> str:
        return f"{self.ns}:idx:{_h(owner, tenant)}"

    def _record(self, fields: Mapping[Any, Any]) -> TaskRecord:
        return TaskRecord(
            self._task_decoder.decode(fields[b"body"]),
            owner=fields[b"owner"].decode(),
            tenant=fields[b"tenant"].decode(),
            last_seq=int(fields[b"last_seq"]),
        )

    async def get(self, task_id: str) -> TaskRecord | None:
        key = self._task_key(task_id)
        (fields,) = await self._batch.run(lambda pipe: pipe.hgetall(key))
        return self._record(fields) if fields else None

    async def save(self, record: TaskRecord) -> None:
        task = record.task
        await self._batch.script(
            self._save,
            [self._task_key(task.id), self._index_key(record.owner, record.tenant)],
            [
                record.owner,
                record.tenant,
                task.context_id or "",
                task.status.state.value,
                task.status.timestamp or "",
                record.last_seq,
                encode(task),
                task.id,
            ],
        )

    async def list(self, query: TaskQuery) -> TaskPage:
        index = self._index_key(query.owner, query.tenant)
        upper = "+"
        if query.page_token:
            stamp, task_id = decode_cursor(query.page_token)
            upper = f"({stamp}|{task_id}"
        filtered = bool(query.context_id or query.state or query.status_timestamp_after)
        records: builtins.list[TaskRecord] = []
        more = False
        batch = max(query.page_size * 2, 50)
        offset = 0
        while len(records) <= query.page_size:
            members = await self.redis.zrevrangebylex(index, upper, "-", start=offset, num=batch)
            if not members:
                break
            offset += len(members)
            for record in await self._load(members):
                if record is not None and matches(record, query):
                    records.append(record)
            if len(members) < batch:
                break
        more = len(records) > query.page_size
        records = records[: query.page_size]
        total = await self._count(index, query) if filtered else int(await self.redis.zcard(index))
        return TaskPage(records, encode_cursor(records[-1].task) if more and records else "", total)

    async def _load(self, members: Sequence[bytes | str]) -> Sequence[TaskRecord | None]:
        pipe = self.redis.pipeline(transaction=False)
        for member in members:
            text = member.decode() if isinstance(member, bytes) else member
            pipe.hgetall(self._task_key(text.rpartition("|")[2]))
        return [self._record(fields) if fields else None for fields in await pipe.execute()]

    async def _count(self, index: str, query: TaskQuery) -> int:
        """Matches of a filtered query: every task of the owner is looked at (O(n))."""
        total = 0
        offset = 0
        while True:
            members = await self.redis.zrangebylex(index, "-", "+", start=offset, num=500)
            if not members:
                return total
            offset += len(members)
            loaded = await self._load(members)
            total += len([r for r in loaded if r is not None and matches(r, query)])

    async def unfinished(self) -> Sequence[TaskRecord]:
        """Scans the namespace's task hashes (SCAN, not KEYS, so Redis is never blocked), a
        page at a time: one round trip for the states of a page, one for its active tasks (a
        recovery after a replica died waits for this scan)."""
        active = {state.value.encode() for state in ACTIVE_STATES}
        found: builtins.list[TaskRecord] = []
        cursor: Any = 0
        while True:
            cursor, keys = await self.redis.scan(cursor, match=f"{self.ns}:task:*", count=500)
            if keys:
                states = self.redis.pipeline(transaction=False)
                for key in keys:
                    states.hget(key, "state")
                loads = self.redis.pipeline(transaction=False)
                for key, state in zip(keys, await states.execute(), strict=True):
                    if state in active:
                        loads.hgetall(key)
                found.extend(self._record(fields) for fields in await loads.execute() if fields)
            if not cursor:
                return found

    def _message_key(self, key: tuple[str, str, str]) -> str:
        return f"{self.ns}:msg:{_h(*key)}"

    async def claim_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        value = encode(_Idem(record.fingerprint, record.task_id, record.message))
        name = self._message_key(key)
        (claimed,) = await self._batch.run(lambda pipe: pipe.set(name, value, nx=True, ex=self.idempotency_ttl))
        if claimed:
            return None
        found = await self.get_message(key)
        if found is None:  # expired in between: claim again
            return await self.claim_message(key, record)
        return found

    async def get_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        name = self._message_key(key)
        (raw,) = await self._batch.run(lambda pipe: pipe.get(name))
        if raw is None:
            return None
        found = self._idem_decoder.decode(raw)
        return IdempotencyRecord(found.fingerprint, found.task_id, found.message)

    async def update_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> None:
        value = encode(_Idem(record.fingerprint, record.task_id, record.message))
        name = self._message_key(key)
        await self._batch.run(lambda pipe: pipe.set(name, value, ex=self.idempotency_ttl))

    def record_reply(self, key: tuple[str, str, str], record: IdempotencyRecord) -> Awaitable[object]:
        value = encode(_Idem(record.fingerprint, record.task_id, record.message))
        name = self._message_key(key)
        # Queued in this turn's pipeline now; done once Redis has applied it.
        written = self._batch.run(lambda pipe: pipe.set(name, value, ex=self.idempotency_ttl))
        written.add_done_callback(log_failed_write)
        return written

    async def close(self) -> None:
        await self.redis.aclose()


def open_redis_backend(url: BackendURL) -> Backend:
    """``redis://host:port/db`` (``rediss://`` for TLS), ``?namespace=``: tasks, event streams,
    push configs and the replicas' coordination in one Redis, over one connection pool, every
    key under the namespace. Replicas given the same URL behave as one service.

    How fast a dead replica is noticed: ``?lease_ttl=`` (seconds a replica counts as alive
    after its last heartbeat, 3), ``?heartbeat=`` (1) and ``?recovery_sweep=`` (the safety-net
    sweep, 30); see ``coordination``."""
    namespace = url.option("namespace", url.namespace)
    timings = {
        "lease_ttl": _seconds(url, "lease_ttl", LEASE_TTL_SECONDS),
        "heartbeat": _seconds(url, "heartbeat", HEARTBEAT_SECONDS),
        "sweep_every": _seconds(url, "recovery_sweep", RECOVERY_SWEEP_SECONDS),
    }
    tasks = RedisTaskStore(url.without_query(), namespace=namespace)
    try:
        coordination = RedisCoordination(tasks.redis, namespace=namespace, **timings)
    except ValueError as exc:
        raise url.error(str(exc)) from None
    # The bus's publish round trip tells the push store whether the task has webhooks.
    probe = PushProbe(namespace)
    return Backend(
        tasks,
        RedisEventBus(tasks.redis, namespace=namespace, push_probe=probe),
        RedisPushStore(client=tasks.redis, namespace=namespace, probe=probe),
        coordination,
    )


def _seconds(url: BackendURL, name: str, default: float) -> float:
    text = url.option(name, str(default))
    try:
        value = float(text)
    except ValueError:
        raise url.error(f"?{name}= must be a number of seconds, got {text!r}") from None
    if not 0 < value < 86_400:
        raise url.error(f"?{name}= must be between 0 and 86400 seconds, got {text!r}")
    return value
