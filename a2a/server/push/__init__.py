"""Push notifications: webhook configs per task, and at-least-once, in-order delivery of task events.

Wiring::

    store = open_backend("sqlite:///tasks.db").push   # beside the tasks; or InMemoryPushStore()
    notifier = PushNotifier(store, guard=OutboundPolicy.from_allow_list(allow))  # guard: public targets only
    await notifier.start()                      # resumes deliveries left pending by the last run
    cfg = await notifier.create(task_id, owner, tenant, config)   # SSRF-checked; id assigned if missing
    await notifier.get(task_id, config_id)      # None if absent
    await notifier.list(task_id, page_size, page_token)           # ListTaskPushNotificationConfigsResponse
    await notifier.delete(task_id, config_id)   # False if absent
    await notifier.notify(task_id, logged_event)  # after each event is published, in seq order
    await notifier.close()                      # pending deliveries stay in the store

Delivery semantics (the numbers are ``DeliveryPolicy``'s defaults)
--------------------------------------------------------------------

**What is sent.** Every event of a task (the ``StreamResponse`` that streams carry: ``task``,
``statusUpdate``, ``artifactUpdate`` or ``message``) published after a config was registered is
sent to that config's ``url`` as ``POST``, body = the ``StreamResponse`` JSON, byte for byte the
SSE ``data``. Headers:

- ``Content-Type: application/a2a+json``
- ``X-A2A-Event-Id: <taskId>:<seq>``, unique per event across tasks: the de-duplication key;
- ``X-A2A-Sequence: <seq>``, the task's event sequence number (the SSE ``id``, from 1, one per
  event);
- ``Authorization: <scheme> <credentials>`` when the config has ``authentication`` with
  ``credentials`` (no header without credentials);
- ``X-A2A-Notification-Token: <token>`` when the config has a ``token``;
- ``User-Agent: a2a-net push notifier``.

A config registered in A2A 0.3 (``PushConfigRecord.dialect``) is sent, for each event, the
whole task in 0.3's shape instead (what 0.3 servers push), ``Content-Type: application/json``,
with the same headers, order and retries: see ``v03.push_task_to_v03``.

**Delivered** means a 2xx answer. Anything else is a failed attempt: 3xx (redirects are never
followed), 4xx, 5xx, a connection error, no answer within the attempt timeout, or a refusal by
the outbound guard. At most 64 KiB of the answer's body is read, then dropped.

**At least once, in order.** Each ``(task, config)`` has its own queue in the store. Event
``n+1`` is not sent to a config before event ``n`` was delivered to it or given up. An event may
arrive more than once (an attempt whose answer was lost, a server stopped mid-attempt, a replica
that took over): receivers de-duplicate by ``X-A2A-Event-Id`` (or ``taskId`` + ``X-A2A-Sequence``).

**Retries.** One attempt (name resolution, connection, request, answer headers) has 10 s. After
the k-th consecutive failed attempt to a config, the next waits a random time, uniform in
``[0, min(120 s, 1 s x 2^(k-1))]`` (capped exponential backoff with full jitter); on 429 or 503 a
``Retry-After`` (seconds or an HTTP date) raises that wait, up to 120 s. The count of consecutive
failures is kept in the store (a restart does not reset it) and goes back to 0 on a delivery.

**Failed configs.** After 10 consecutive failed attempts (so a dead receiver gets 10 attempts,
over at most about 6 minutes of waits plus 10 timeouts) the config is declared failed: its
pending deliveries are dropped, a WARNING names the task, the config and the target's origin, and
no later event is queued for it. ``get``/``list`` still show it; registering it again (same id)
clears the failure.

**Bounded.** At most 1000 pending deliveries per ``(task, config)``: past that, the oldest are
dropped (WARNING with the count), so the newest 1000 (the final status among them) are kept; the
receiver sees the gap in ``X-A2A-Sequence`` and can call GetTask for the full state. At most 16
configs per task (more: InvalidParams), 64 attempts in flight at once.

**Restarts.** Deliveries are written to the store before ``notify`` returns (if the store
fails, ``notify`` logs an ERROR and returns: a push problem never fails the task). ``close`` abandons
attempts in flight (they will be sent again) and keeps every pending delivery; ``start`` resumes
them, in order. With the in-memory store they last as long as the process.

**Several replicas** (one Redis). Each queue has a lease (60 s, renewed while delivering): only
its holder delivers it, so order holds across replicas. Every 30 s each replica looks for
queues without a worker, so the deliveries of a replica that died are taken over once its lease
has run out.

**SSRF guard, on by default** (``a2a.ssrf``). At registration: the URL must be ``http`` or
``https``, without ``user:password@``, at most 2048 characters, and its host must resolve, with
*every* address outside the forbidden ranges (loopback, private, link-local, CGNAT, multicast,
IPv6 loopback/ULA/link-local, and IPv4-mapped, NAT64 and 6to4 forms of them), else
InvalidParams (-32602) naming the range, not the address. At every delivery again: the name is
resolved once per connection by the guard, every address is checked, the TCP connection goes to
a checked address (TLS still verifies the certificate for the URL's name), no proxy, no
redirect. An allow-list (``OutboundPolicy.from_allow_list``: CIDRs, addresses, host names)
admits private targets for deployments and tests. Header values are checked at registration
(printable ASCII, auth scheme an RFC 9110 token), so nothing can be smuggled into the request.

**Logs** never contain tokens, credentials, event bodies or URL paths and queries (only
``scheme://host:port``).
"""

from __future__ import annotations

from .notifier import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, DeliveryPolicy, PushNotifier
from .store import Enqueued, InMemoryPushStore, PendingDelivery, PushConfigRecord, PushStore

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "DeliveryPolicy",
    "Enqueued",
    "InMemoryPushStore",
    "PendingDelivery",
    "PushConfigRecord",
    "PushNotifier",
    "PushStore",
]
