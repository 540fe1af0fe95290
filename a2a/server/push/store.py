"""Where push notification configs and pending deliveries live: ``PushStore`` and its in-memory form.

A push store keeps, per task:

- the task's webhook configs (``PushConfigRecord``: the config as registered, its owner and
  tenant, and the delivery state: consecutive failed attempts, and whether it was declared
  failed);
- per config, a queue of pending deliveries (``seq`` → the event's JSON), lowest ``seq`` first,
  capped at ``max_pending`` entries (the oldest go first past the cap);
- per config, a short *lease*: which notifier (process) delivers that queue now, so that
  several replicas sharing one store never deliver one queue at the same time (which would
  break the order).

Every method is a coroutine, so that I/O-bound stores fit; the SQLite and Redis stores keep the
same contract, checked by one test suite (``tests/push/test_push_store_suite.py``).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...types import TaskPushNotificationConfig

__all__ = ["Enqueued", "InMemoryPushStore", "PendingDelivery", "PushConfigRecord", "PushStore"]

#: (task id, config id): one delivery queue.
QueueKey = tuple[str, str]


@dataclass(slots=True)
class PushConfigRecord:
    """One registered webhook of a task, with its delivery state."""

    #: As registered, with ``id`` and ``task_id`` always set.
    config: TaskPushNotificationConfig
    owner: str = ""
    tenant: str = ""
    #: Consecutive failed delivery attempts (reset by a delivered event).
    failures: int = 0
    #: Declared failed: nothing more is queued or sent for it until it is registered again.
    failed: bool = False
    #: The protocol version it was registered in (``""``: 1.0, ``"0.3"``): what its webhook
    #: is sent (``PushNotifier``). Configs stored before this field existed are 1.0's.
    dialect: str = ""

    @property
    def task_id(self) -> str:
        return self.config.task_id or ""

    @property
    def config_id(self) -> str:
        return self.config.id or ""

    def __repr__(self) -> str:
        # Never the token or the credentials: records end up in logs and tracebacks.
        return (
            f"PushConfigRecord(task_id={self.task_id!r}, config_id={self.config_id!r}, owner={self.owner!r}, "
            f"tenant={self.tenant!r}, failures={self.failures}, failed={self.failed}, dialect={self.dialect!r})"
        )


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    """The next event to deliver to one config, with the config as it is now."""

    record: PushConfigRecord
    seq: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Enqueued:
    """One config an event was queued for, and how many older deliveries the cap pushed out."""

    config_id: str
    dropped: int = 0


class PushStore(abc.ABC):
    """Persistence for push configs, their pending deliveries and delivery leases."""

    # ---- configs ----------------------------------------------------------------------

    @abc.abstractmethod
    async def put_config(self, record: PushConfigRecord, *, max_configs: int) -> bool:
        """Insert, or replace the config with the same task and id (which resets ``failures``
        and ``failed``; pending deliveries stay and go to the new URL).

        Returns ``False``, storing nothing, when the task already has ``max_configs`` other configs.
        """

    @abc.abstractmethod
    async def get_config(self, task_id: str, config_id: str) -> PushConfigRecord | None: ...

    @abc.abstractmethod
    async def list_configs(self, task_id: str) -> list[PushConfigRecord]:
        """The task's configs, ordered by config id."""

    @abc.abstractmethod
    async def delete_config(self, task_id: str, config_id: str) -> bool:
        """Remove the config and its pending deliveries; ``False`` if there was none."""

    # ---- deliveries ---------------------------------------------------------------------

    def may_have_configs(self, task_id: str) -> bool:
        """Whether the task may have a live config, answered at once (no I/O): ``False`` is
        certain, and lets the publisher skip the event's push work (and its encoding)."""
        return True

    @abc.abstractmethod
    async def enqueue(self, task_id: str, seq: int, body: bytes, *, max_pending: int) -> list[Enqueued]:
        """Queue event ``seq`` for every config of the task that is not failed, atomically per
        config; the same ``seq`` queued twice is kept once. Past ``max_pending`` a queue drops
        its oldest entries. Returns the configs the event was queued for."""

    @abc.abstractmethod
    async def next_delivery(self, task_id: str, config_id: str) -> PendingDelivery | None:
        """The queue's lowest ``seq``, with the config. ``None`` when the queue is empty, or
        when the config is gone or failed (its queue is then cleared)."""

    @abc.abstractmethod
    async def ack(self, task_id: str, config_id: str, seq: int) -> None:
        """Event ``seq`` was delivered: remove it, and reset the config's ``failures``."""

    @abc.abstractmethod
    async def record_failure(self, task_id: str, config_id: str) -> int:
        """Count one more failed attempt; the consecutive count now (0 if the config is gone)."""

    @abc.abstractmethod
    async def fail_config(self, task_id: str, config_id: str) -> int:
        """Declare the config failed and clear its queue; returns how many deliveries were dropped."""

    @abc.abstractmethod
    async def pending(self) -> list[QueueKey]:
        """Every ``(task_id, config_id)`` whose queue is not empty (any task, any owner)."""

    # ---- leases -------------------------------------------------------------------------

    @abc.abstractmethod
    async def acquire_lease(self, task_id: str, config_id: str, holder: str, ttl: float) -> bool:
        """Take or extend the queue's lease for ``ttl`` seconds. ``True`` if it was free,
        expired, or already ``holder``'s; ``False`` if another holder has it."""

    @abc.abstractmethod
    async def release_lease(self, task_id: str, config_id: str, holder: str) -> None:
        """Give the lease up, if ``holder`` has it."""

    async def close(self) -> None:  # noqa: B027  (optional hook: stores without resources skip it)
        """Release connections and files."""


class InMemoryPushStore(PushStore):
    """Everything in dicts: for tests and embedded agents; gone when the process ends."""

    def __init__(self) -> None:
        self._configs: dict[str, dict[str, PushConfigRecord]] = {}
        #: Per queue, seq -> body, kept in ascending seq order.
        self._queues: dict[QueueKey, dict[int, bytes]] = {}
        self._leases: dict[QueueKey, tuple[str, float]] = {}

    async def put_config(self, record: PushConfigRecord, *, max_configs: int) -> bool:
        configs = self._configs.setdefault(record.task_id, {})
        if record.config_id not in configs and len(configs) >= max_configs:
            if not configs:
                del self._configs[record.task_id]
            return False
        configs[record.config_id] = replace(record, failures=0, failed=False)
        return True

    async def get_config(self, task_id: str, config_id: str) -> PushConfigRecord | None:
        found = self._configs.get(task_id, {}).get(config_id)
        return None if found is None else replace(found)

    async def list_configs(self, task_id: str) -> list[PushConfigRecord]:
        configs = self._configs.get(task_id, {})
        return [replace(configs[key]) for key in sorted(configs)]

    async def delete_config(self, task_id: str, config_id: str) -> bool:
        configs = self._configs.get(task_id, {})
        found = configs.pop(config_id, None)
        if not configs:
            self._configs.pop(task_id, None)
        self._queues.pop((task_id, config_id), None)
        return found is not None

    def may_have_configs(self, task_id: str) -> bool:
        return task_id in self._configs

    async def enqueue(self, task_id: str, seq: int, body: bytes, *, max_pending: int) -> list[Enqueued]:
        queued: list[Enqueued] = []
        for config_id, record in sorted(self._configs.get(task_id, {}).items()):
            if record.failed:
                continue
            queue = self._queues.setdefault((task_id, config_id), {})
            if seq not in queue:
                in_order = not queue or seq > next(reversed(queue))
                queue[seq] = body
                if not in_order:
                    ordered = dict(sorted(queue.items()))
                    queue.clear()
                    queue.update(ordered)
            dropped = 0
            while len(queue) > max_pending:
                del queue[next(iter(queue))]
                dropped += 1
            queued.append(Enqueued(config_id, dropped))
        return queued

    async def next_delivery(self, task_id: str, config_id: str) -> PendingDelivery | None:
        key = (task_id, config_id)
        queue = self._queues.get(key)
        if not queue:
            self._queues.pop(key, None)
            return None
        record = self._configs.get(task_id, {}).get(config_id)
        if record is None or record.failed:
            del self._queues[key]
            return None
        seq = next(iter(queue))
        return PendingDelivery(replace(record), seq, queue[seq])

    async def ack(self, task_id: str, config_id: str, seq: int) -> None:
        key = (task_id, config_id)
        queue = self._queues.get(key)
        if queue is not None:
            queue.pop(seq, None)
            if not queue:
                del self._queues[key]
        record = self._configs.get(task_id, {}).get(config_id)
        if record is not None:
            record.failures = 0

    async def record_failure(self, task_id: str, config_id: str) -> int:
        record = self._configs.get(task_id, {}).get(config_id)
        if record is None:
            return 0
        record.failures += 1
        return record.failures

    async def fail_config(self, task_id: str, config_id: str) -> int:
        record = self._configs.get(task_id, {}).get(config_id)
        if record is not None:
            record.failed = True
        return len(self._queues.pop((task_id, config_id), {}))

    async def pending(self) -> list[QueueKey]:
        return [key for key, queue in self._queues.items() if queue]

    async def acquire_lease(self, task_id: str, config_id: str, holder: str, ttl: float) -> bool:
        key = (task_id, config_id)
        now = time.monotonic()
        current = self._leases.get(key)
        if current is not None and current[0] != holder and current[1] > now:
            return False
        self._leases[key] = (holder, now + ttl)
        return True

    async def release_lease(self, task_id: str, config_id: str, holder: str) -> None:
        key = (task_id, config_id)
        current = self._leases.get(key)
        if current is not None and current[0] == holder:
            del self._leases[key]


def queue_keys(keys: Sequence[QueueKey]) -> list[QueueKey]:
    """Distinct keys in a stable order (for stores whose scans may repeat a key)."""
    return sorted(set(keys))
