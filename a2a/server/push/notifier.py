"""``PushNotifier``: registers webhooks (SSRF-checked) and delivers every task event to them.

The delivery rules are written out in the package docstring (``a2a.server.push``); the numbers
are the defaults of ``DeliveryPolicy``.

How it works: ``notify`` writes the event into the store's queue of every config of the task
(one store operation) and wakes one worker per ``(task, config)`` queue. A worker takes the
queue's lease, then delivers the lowest ``seq`` until it is delivered (2xx) or the config is
declared failed, and only then looks at the next one; so deliveries to one config are
strictly in order, and across replicas the lease keeps one worker per queue. A background
sweep (at ``start`` and every ``resume_interval`` seconds) starts workers for queues that have
none: deliveries left by a previous run, or by a replica that died.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import builtins
import logging
import re
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx
import msgspec

from ...backoff import Backoff, parse_retry_after
from ...errors import InvalidParamsError
from ...protocol import v03
from ...protocol.codec import encode
from ...protocol.rest import MEDIA_TYPE
from ...ssrf import (
    ForbiddenTargetError,
    GuardedTransport,
    GuardError,
    InvalidTargetError,
    OutboundPolicy,
    UnresolvableTargetError,
    check_url,
)
from ...types import ListTaskPushNotificationConfigsResponse, Task, TaskPushNotificationConfig
from ..engine.events import LoggedEvent
from .store import PendingDelivery, PushConfigRecord, PushStore, QueueKey

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_PAGE_SIZE", "DeliveryPolicy", "PushNotifier"]

log = logging.getLogger("a2a.server.push")

TOKEN_HEADER = "X-A2A-Notification-Token"
EVENT_ID_HEADER = "X-A2A-Event-Id"
SEQUENCE_HEADER = "X-A2A-Sequence"
USER_AGENT = "a2a-net push notifier"

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100
MAX_URL_LENGTH = 2048
MAX_ID_LENGTH = 128
MAX_SECRET_LENGTH = 8192
#: How much of a receiver's answer is read (and thrown away) before the connection is let go.
MAX_RESPONSE_BYTES = 64 * 1024

# RFC 9110 token (an auth-scheme), and what may appear in a header value.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_SAFE = re.compile(r"[\x20-\x7e]*")
_ID_SAFE = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    """Retry, timeout and capacity settings of a ``PushNotifier`` (defaults are the documented ones)."""

    #: Consecutive failed attempts after which a config is declared failed.
    max_attempts: int = 10
    #: Backoff after the k-th consecutive failure: uniform in [0, min(max_backoff, initial * multiplier**(k-1))].
    initial_backoff: float = 1.0
    max_backoff: float = 120.0
    multiplier: float = 2.0
    #: One attempt (resolve, connect, send, response headers) must end within this.
    attempt_timeout: float = 10.0
    #: Pending deliveries kept per (task, config); past it the oldest are dropped.
    max_pending: int = 1000
    max_configs_per_task: int = 16
    #: Attempts in flight at once, all configs together.
    max_concurrency: int = 64
    #: A queue's lease: at least 3 attempt timeouts (renewed when a third of it has passed).
    lease_ttl: float = 60.0
    #: How often queues without a worker (left by a restart, or a dead replica) are looked for.
    resume_interval: float = 30.0
    #: ``False``: every wait is its ceiling exactly.
    jitter: bool = True

    def __post_init__(self) -> None:
        self.schedule  # noqa: B018 - the backoff refuses nonsense numbers
        if self.max_pending < 1 or self.max_configs_per_task < 1 or self.max_concurrency < 1:
            raise ValueError("max_pending, max_configs_per_task and max_concurrency must be at least 1")
        if self.attempt_timeout <= 0 or self.lease_ttl < 3 * self.attempt_timeout:
            raise ValueError(
                f"lease_ttl ({self.lease_ttl}s) must be at least 3 x attempt_timeout ({self.attempt_timeout}s), "
                "so a lease cannot run out during an attempt"
            )
        if self.resume_interval <= 0:
            raise ValueError("resume_interval must be > 0")

    @property
    def schedule(self) -> Backoff:
        """The waits between failed attempts to one config."""
        return Backoff(self.max_attempts, self.initial_backoff, self.max_backoff, self.multiplier, self.jitter)

    def backoff(self, failures: int, retry_after: float | None = None) -> float:
        """The wait after ``failures`` consecutive failures; a receiver's ``Retry-After`` (capped
        at ``max_backoff``) is a lower bound."""
        delay = self.schedule.delay(failures)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff))
        return delay


@dataclass(slots=True)
class _Worker:
    #: Bumped by ``notify`` while the worker runs: it must look at its queue again before ending.
    pokes: int = 0
    task: asyncio.Task[None] | None = None


@dataclass(frozen=True, slots=True)
class _Outcome:
    delivered: bool
    detail: str = ""
    retry_after: float | None = None


class PushNotifier:
    """Webhook registration and at-least-once, in-order delivery of task events.

    ``guard`` is the outbound policy (default: public addresses only); pass
    ``OutboundPolicy.from_allow_list([...])`` to admit private networks or hosts.
    The store's lifetime is the caller's: ``close`` does not close it.
    """

    def __init__(
        self,
        store: PushStore,
        guard: OutboundPolicy | None = None,
        policy: DeliveryPolicy | None = None,
        *,
        verify: ssl.SSLContext | bool | str = True,
    ) -> None:
        self.store = store
        self.guard = guard if guard is not None else OutboundPolicy()
        self.policy = policy if policy is not None else DeliveryPolicy()
        self._verify = verify
        #: This notifier's name in leases: unique per process (and per notifier).
        self.holder = uuid.uuid4().hex
        self._workers: dict[QueueKey, _Worker] = {}
        #: When this notifier last took or extended each queue's lease (monotonic clock).
        self._renewed_at: dict[QueueKey, float] = {}
        self._transport: GuardedTransport | None = None
        self._timeout = httpx.Timeout(self.policy.attempt_timeout).as_dict()
        self._slots = asyncio.Semaphore(self.policy.max_concurrency)
        self._sweeper: asyncio.Task[None] | None = None
        self._running = False
        #: Told the outcome of every delivery attempt (``True``: delivered), e.g. for metrics.
        self.on_attempt: Callable[[bool], None] | None = None
        #: The task as stored now, for the webhooks of configs registered in A2A 0.3 (sent the
        #: whole task, as 0.3 servers push it); the request handler sets it.
        self.task_view: Callable[[str], Awaitable[Task | None]] | None = None

    # ---- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start delivering: resumes every pending delivery in the store (raises if the store
        cannot be read), then looks again every ``resume_interval`` seconds."""
        if self._running:
            return
        limits = httpx.Limits(max_connections=self.policy.max_concurrency, max_keepalive_connections=20)
        # The transport, not an httpx client: a client logs every request's full URL (query
        # included, which may hold a secret) at INFO, and has redirect machinery we never want.
        self._transport = GuardedTransport(self.guard, verify=self._verify, limits=limits)
        self._running = True
        try:
            await self._resume()
        except BaseException:
            await self.close()
            raise
        self._sweeper = asyncio.create_task(self._sweep(), name="a2a-push-sweep")

    async def close(self) -> None:
        """Stop the workers (an attempt in flight is abandoned and will be sent again) and give
        their leases up; pending deliveries stay in the store for the next ``start``."""
        self._running = False
        tasks = [w.task for w in self._workers.values() if w.task is not None]
        if self._sweeper is not None:
            tasks.append(self._sweeper)
            self._sweeper = None
        keys = builtins.list(self._workers)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._workers.clear()
        for key in keys:
            try:
                await self.store.release_lease(*key, self.holder)
            except Exception:
                log.exception("could not release the push lease of task %s config %s", *key)
        self._renewed_at.clear()
        if self._transport is not None:
            await self._transport.aclose()
            self._transport = None

    async def __aenter__(self) -> PushNotifier:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @property
    def active_queues(self) -> int:
        """Queues with a running worker in this process."""
        return len(self._workers)

    async def wait_idle(self) -> None:
        """Return once no worker runs here: every queue this process knows of is delivered,
        failed, or held by another replica. Put a time limit around it; cancelling it stops no
        delivery. (For tests, and for a graceful shutdown that lets deliveries finish first.)"""
        while self._workers:
            tasks = {w.task for w in self._workers.values() if w.task is not None}
            if tasks:
                await asyncio.wait(tasks)

    # ---- the four config operations ------------------------------------------------------

    async def create(
        self, task_id: str, owner: str, tenant: str, config: TaskPushNotificationConfig, *, dialect: str = ""
    ) -> TaskPushNotificationConfig:
        """Register (or, with an existing id, replace) a webhook of ``task_id``; returns it with
        ``id`` (assigned if missing) and ``taskId`` set. ``dialect``: the protocol version the
        registration came in (``""``: 1.0; ``"0.3"``: the webhook is sent 0.3 ``Task`` objects).

        Raises ``InvalidParamsError`` for a URL the guard refuses, bad header values, a
        ``taskId`` that is not ``task_id``, or a task that has ``max_configs_per_task`` already.
        The caller has checked that the task exists and belongs to ``owner``.
        """
        if config.task_id and config.task_id != task_id:
            raise InvalidParamsError(
                f"taskId {config.task_id!r} in the push notification config does not match the task {task_id!r}"
            )
        config_id = config.id or uuid.uuid4().hex
        _check_fields(config_id, config)
        await self._check_target(config.url)
        stored = msgspec.structs.replace(config, id=config_id, task_id=task_id, tenant=tenant or config.tenant)
        record = PushConfigRecord(stored, owner=owner, tenant=tenant, dialect=dialect)
        if not await self.store.put_config(record, max_configs=self.policy.max_configs_per_task):
            raise InvalidParamsError(
                f"task {task_id!r} already has {self.policy.max_configs_per_task} push notification configs, "
                "the most allowed: delete one first"
            )
        log.info("push config %s registered for task %s: %s", config_id, task_id, _origin(config.url))
        return stored

    async def get(self, task_id: str, config_id: str) -> TaskPushNotificationConfig | None:
        """The config, or ``None`` if the task has none with that id."""
        record = await self.store.get_config(task_id, config_id)
        return None if record is None else record.config

    async def list(
        self, task_id: str, page_size: int | None = None, page_token: str | None = None
    ) -> ListTaskPushNotificationConfigsResponse:
        """The task's configs ordered by id, one page (``pageSize`` 1-100, default 50; 0 is the
        default, as in proto3); ``nextPageToken`` is ``""`` on the last page."""
        size = page_size or DEFAULT_PAGE_SIZE
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise InvalidParamsError(f"pageSize must be between 1 and {MAX_PAGE_SIZE}, got {page_size}")
        records = await self.store.list_configs(task_id)
        if page_token:
            after = _decode_token(page_token)
            records = [r for r in records if r.config_id > after]
        page = records[:size]
        token = _encode_token(page[-1].config_id) if len(records) > size else ""
        return ListTaskPushNotificationConfigsResponse(configs=[r.config for r in page], next_page_token=token)

    async def delete(self, task_id: str, config_id: str) -> bool:
        """Remove the config and its pending deliveries; ``False`` if there was none."""
        deleted = await self.store.delete_config(task_id, config_id)
        if deleted:
            log.info("push config %s of task %s deleted", config_id, task_id)
        return deleted

    # ---- events -------------------------------------------------------------------------

    def wants(self, task_id: str) -> bool:
        """Whether ``notify`` may have work for the task's events (``False`` is certain: the
        publisher then skips the call, and the event need not be encoded for push)."""
        return self.store.may_have_configs(task_id)

    async def notify(self, task_id: str, event: LoggedEvent) -> None:
        """Queue ``event`` (durably, in the store) for every live config of the task and wake
        their workers. Call it once per event, in ``seq`` order, awaiting each call (as the
        publisher does). Never raises for a store failure: that is logged, since a push
        problem must not fail the task."""
        try:
            queued = await self.store.enqueue(task_id, event.seq, event.body, max_pending=self.policy.max_pending)
        except Exception:
            log.exception("push: event %d of task %s not queued; its webhooks will miss it", event.seq, task_id)
            return
        for item in queued:
            if item.dropped:
                log.warning(
                    "push: %d oldest pending deliveries to config %s of task %s dropped (more than %d pending)",
                    item.dropped,
                    item.config_id,
                    task_id,
                    self.policy.max_pending,
                )
            self._wake((task_id, item.config_id))

    # ---- workers --------------------------------------------------------------------------

    def _wake(self, key: QueueKey) -> None:
        if not self._running:
            return
        worker = self._workers.get(key)
        if worker is not None:
            worker.pokes += 1
            return
        worker = self._workers[key] = _Worker()
        worker.task = asyncio.create_task(self._run(key, worker), name=f"a2a-push {key[0]} {key[1]}")

    async def _resume(self) -> None:
        keys = await self.store.pending()
        fresh = [key for key in keys if key not in self._workers]
        if fresh:
            log.info("push: resuming deliveries to %d webhook(s)", len(fresh))
        for key in fresh:
            self._wake(key)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.policy.resume_interval)
            try:
                await self._resume()
            except Exception:
                log.exception("push: could not look for pending deliveries; trying again later")

    async def _run(self, key: QueueKey, worker: _Worker) -> None:
        try:
            while self._running:
                seen = worker.pokes
                if await self._renew(key, force=True):
                    await self._drain(key)
                    self._renewed_at.pop(key, None)
                    await self.store.release_lease(*key, self.holder)
                if worker.pokes == seen:
                    return  # nothing was queued meanwhile (the check and the removal below are atomic)
        except Exception:
            # A store failure: the sweep starts this queue again later.
            log.exception("push: worker for task %s config %s stopped", *key)
        finally:
            if self._workers.get(key) is worker:
                del self._workers[key]

    async def _renew(self, key: QueueKey, *, force: bool = False) -> bool:
        """Hold the queue's lease; renewed when a third of it has passed, so that an attempt
        (at most ``attempt_timeout``, a third of the lease at most) never outlives it."""
        now = time.monotonic()
        last = self._renewed_at.get(key)
        if not force and last is not None and now - last < self.policy.lease_ttl / 3:
            return True
        if await self.store.acquire_lease(*key, self.holder, self.policy.lease_ttl):
            self._renewed_at[key] = now
            return True
        self._renewed_at.pop(key, None)
        return False

    async def _drain(self, key: QueueKey) -> None:
        """Deliver the queue, lowest seq first, until it is empty, failed, or another replica has it."""
        while self._running:
            item = await self.store.next_delivery(*key)
            if item is None:
                return
            async with self._slots:
                if not await self._renew(key):
                    return
                outcome = await self._attempt(item)
            if self.on_attempt is not None:
                self.on_attempt(outcome.delivered)
            if outcome.delivered:
                await self.store.ack(*key, item.seq)
                continue
            failures = await self.store.record_failure(*key)
            log.info(
                "push: event %d of task %s to %s (config %s) failed, attempt %d of %d: %s",
                item.seq,
                key[0],
                _origin(item.record.config.url),
                key[1],
                failures,
                self.policy.max_attempts,
                outcome.detail,
            )
            if self.policy.schedule.exhausted(failures):
                dropped = await self.store.fail_config(*key)
                log.warning(
                    "push: config %s of task %s (%s) declared failed after %d consecutive failed attempts; "
                    "%d pending deliveries dropped, nothing more is sent to it until it is registered again",
                    key[1],
                    key[0],
                    _origin(item.record.config.url),
                    failures,
                    dropped,
                )
                return
            await asyncio.sleep(self.policy.backoff(failures, outcome.retry_after))

    async def _body(self, item: PendingDelivery) -> tuple[bytes, str]:
        """The request body and its media type: the event as stored (1.0), or for a config
        registered in 0.3 the whole task in 0.3's shape (``v03.push_task_to_v03``)."""
        if item.record.dialect != v03.LEGACY_VERSION:
            return item.body, MEDIA_TYPE  # a push body is a StreamResponse, as REST frames it
        event = msgspec.json.decode(item.body)
        current = None
        if "task" not in event and self.task_view is not None:
            task = await self.task_view(item.record.task_id)
            current = None if task is None else msgspec.to_builtins(task)
        return encode(v03.push_task_to_v03(event, current)), "application/json"

    async def _attempt(self, item: PendingDelivery) -> _Outcome:
        assert self._transport is not None
        config = item.record.config
        try:
            async with asyncio.timeout(self.policy.attempt_timeout):
                body, media_type = await self._body(item)
                request = httpx.Request(
                    "POST",
                    config.url,
                    content=body,
                    headers=_headers(item.record, item.seq, media_type),
                    extensions={"timeout": self._timeout},
                )
                response = await self._transport.handle_async_request(request)
                try:
                    await _discard_body(response)
                finally:
                    await response.aclose()
        except TimeoutError:
            return _Outcome(False, f"no answer within {self.policy.attempt_timeout:g}s")
        except ForbiddenTargetError as exc:
            return _Outcome(False, f"refused by the outbound guard: {exc.refusal}")
        except GuardError as exc:
            return _Outcome(False, f"refused by the outbound guard ({type(exc).__name__})")
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            return _Outcome(False, f"{type(exc).__name__}: {str(exc)[:200]}")
        except (v03.V03Error, msgspec.DecodeError) as exc:  # an event 0.3 has no task for
            return _Outcome(False, f"cannot be sent in A2A 0.3: {str(exc)[:200]}")
        status = response.status_code
        if 200 <= status < 300:
            return _Outcome(True)
        retry_after = parse_retry_after(response.headers.get("retry-after")) if status in (429, 503) else None
        return _Outcome(False, f"HTTP {status}", retry_after)

    async def _check_target(self, url: str) -> None:
        if len(url) > MAX_URL_LENGTH:
            raise InvalidParamsError(f"push notification url is longer than {MAX_URL_LENGTH} characters")
        try:
            await check_url(url, self.guard)
        except InvalidTargetError as exc:
            raise InvalidParamsError(f"push notification url refused: {exc.problem}") from exc
        except ForbiddenTargetError as exc:
            # The caller learns the range, not the address its name resolved to.
            log.info("push: registration of %s refused: %s", _origin(url), exc.refusal)
            raise InvalidParamsError(
                f"push notification url refused: its host is, or resolves to, an address in a forbidden range "
                f"({exc.refusal.range.name}); the server's operator can admit it with the push allow-list "
                "(a2a serve --push-allow CIDR,HOST; push_allow= in Python)"
            ) from exc
        except UnresolvableTargetError as exc:
            raise InvalidParamsError("push notification url refused: its host name does not resolve") from exc


# ---- helpers ------------------------------------------------------------------------------


def _headers(record: PushConfigRecord, seq: int, media_type: str) -> dict[str, str]:
    config = record.config
    headers = {
        "Content-Type": media_type,
        "User-Agent": USER_AGENT,
        EVENT_ID_HEADER: f"{record.task_id}:{seq}",
        SEQUENCE_HEADER: str(seq),
    }
    if config.token:
        headers[TOKEN_HEADER] = config.token
    auth = config.authentication
    if auth is not None and auth.credentials:
        headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
    return headers


def _check_fields(config_id: str, config: TaskPushNotificationConfig) -> None:
    """Everything that ends up in a header or a key must be safe there (no CR/LF smuggling)."""
    if len(config_id) > MAX_ID_LENGTH or not _ID_SAFE.fullmatch(config_id):
        raise InvalidParamsError(f"push notification config id must be 1-{MAX_ID_LENGTH} visible ASCII characters")
    if config.token is not None and (len(config.token) > MAX_SECRET_LENGTH or not _HEADER_SAFE.fullmatch(config.token)):
        raise InvalidParamsError(
            f"push notification token must be at most {MAX_SECRET_LENGTH} printable ASCII characters"
        )
    auth = config.authentication
    if auth is None:
        return
    if not _TOKEN.fullmatch(auth.scheme):
        raise InvalidParamsError("authentication.scheme must be an HTTP auth scheme name, such as Bearer or Basic")
    if auth.credentials is not None and (
        len(auth.credentials) > MAX_SECRET_LENGTH or not _HEADER_SAFE.fullmatch(auth.credentials)
    ):
        raise InvalidParamsError(
            f"authentication.credentials must be at most {MAX_SECRET_LENGTH} printable ASCII characters"
        )


async def _discard_body(response: httpx.Response) -> None:
    read = 0
    async for chunk in response.aiter_raw():
        read += len(chunk)
        if read > MAX_RESPONSE_BYTES:
            return


def _origin(url: str) -> str:
    """Scheme, host and port only: paths and queries may carry secrets, so logs never show them."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        return "<invalid url>"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}"


def _encode_token(config_id: str) -> str:
    return base64.urlsafe_b64encode(config_id.encode()).decode().rstrip("=")


def _decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise InvalidParamsError(
            f"Invalid pageToken {token!r}: pass a nextPageToken from ListTaskPushNotificationConfigs"
        ) from exc
