"""The SSRF guard around push: forbidden webhooks are refused at registration and at delivery,
redirects are not followed, and a loopback canary never sees a connection.

(The full battery of 40+ forbidden forms is tests/unit/test_ssrf.py; here, a few of each kind,
through the notifier.) No real DNS: names go through a fake resolver.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Sequence
from dataclasses import replace

import pytest

from a2a.errors import InvalidParamsError
from a2a.server.push import InMemoryPushStore, PushConfigRecord, PushNotifier
from a2a.ssrf import OutboundPolicy
from a2a.types import TaskPushNotificationConfig
from tests.push.conftest import WAIT, Canary, Hit, Receiver
from tests.push.helpers import FAST, LOOPBACK, config, event

PUBLIC = "93.184.215.14"
NAMES = {
    "internal.test": ["10.0.0.5"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": [PUBLIC, "127.0.0.1"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "nat64.test": ["64:ff9b::7f00:1"],
}


async def fake_resolver(host: str, port: int) -> Sequence[str]:
    try:
        return NAMES[host.lower().rstrip(".")]
    except KeyError:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None


#: The guard as deployed (no allow-list), with the fake resolver.
GUARDED = OutboundPolicy(resolver=fake_resolver)

FORBIDDEN = [
    "http://127.0.0.1:{port}/hook",
    "http://127.1:{port}/hook",
    "http://2130706433:{port}/hook",
    "http://0x7f.0.0.1:{port}/hook",
    "http://localhost:{port}/hook",
    "http://[::1]:{port}/hook",
    "http://[::ffff:127.0.0.1]:{port}/hook",
    "http://10.0.0.1/hook",
    "http://192.168.1.10/hook",
    "http://100.64.0.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00::1]/hook",
    "http://[fe80::1]/hook",
    "http://0.0.0.0:{port}/hook",
    "http://internal.test/hook",
    "http://metadata.test/hook",
    "http://mixed.test:{port}/hook",
    "http://mapped.test:{port}/hook",
    "http://nat64.test:{port}/hook",
]

INVALID = [
    "ftp://example.test/hook",
    "file:///etc/passwd",
    "gopher://127.0.0.1:{port}/",
    "http://user:pw-s3cret@example.test/hook",
    "not a url",
    "http:///no-host",
    "http://unknown.test/hook",
    "https://example.test/" + "a" * 2100,
]


@pytest.mark.parametrize("template", FORBIDDEN + INVALID)
async def test_registration_refuses_forbidden_targets(template: str, canary: Canary) -> None:
    store = InMemoryPushStore()
    notifier = PushNotifier(store, guard=GUARDED)
    with pytest.raises(InvalidParamsError) as caught:
        await notifier.create("t1", "alice", "", config(template.format(port=canary.port), "c1"))
    message = str(caught.value)
    assert "push notification url" in message
    assert "s3cret" not in message
    for private in ("10.0.0.5", "169.254.169.254"):  # a caller never learns what a name resolves to
        assert private not in message or private in template
    assert await store.list_configs("t1") == []
    assert canary.drain() == []


async def test_forbidden_range_is_named(canary: Canary) -> None:
    notifier = PushNotifier(InMemoryPushStore(), guard=GUARDED)
    with pytest.raises(InvalidParamsError, match=r"loopback.*allow-list"):
        await notifier.create("t1", "", "", config(f"http://127.0.0.1:{canary.port}/"))


async def test_the_allow_list_admits_and_the_canary_would_notice(canary: Canary) -> None:
    """The positive control: with loopback allowed, a delivery does reach the canary. So the
    silence of the canary in the other tests means something."""
    policy = replace(FAST, max_attempts=1, attempt_timeout=0.2, lease_ttl=1.0)
    async with PushNotifier(InMemoryPushStore(), guard=LOOPBACK, policy=policy) as notifier:
        await notifier.create("t1", "", "", config(f"http://127.0.0.1:{canary.port}/hook"))
        await notifier.notify("t1", event("t1", 1))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
    assert canary.drain() != []


async def test_delivery_is_checked_again(canary: Canary, caplog: pytest.LogCaptureFixture) -> None:
    """A config that got into the store without the guard (an older policy, a hand-edited
    database) is refused at delivery: no connection, and after N attempts the config fails."""
    caplog.set_level(logging.INFO)
    store = InMemoryPushStore()
    planted = TaskPushNotificationConfig(url=f"http://127.0.0.1:{canary.port}/hook", id="c1", task_id="t1")
    assert await store.put_config(PushConfigRecord(planted), max_configs=16)
    async with PushNotifier(store, guard=GUARDED, policy=replace(FAST, max_attempts=3)) as notifier:
        await notifier.notify("t1", event("t1", 1))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
    record = await store.get_config("t1", "c1")
    assert record is not None and record.failed
    assert "refused by the outbound guard" in caplog.text and "loopback" in caplog.text
    assert canary.drain() == []


async def test_dns_rebinding_is_caught_at_delivery(canary: Canary) -> None:
    """The name is public when registered, loopback when delivering: refused, nothing connects."""
    answers = [[PUBLIC]]

    async def rebinding(host: str, port: int) -> Sequence[str]:
        return answers.pop() if answers else ["127.0.0.1"]

    guard = OutboundPolicy(resolver=rebinding)
    store = InMemoryPushStore()
    async with PushNotifier(store, guard=guard, policy=replace(FAST, max_attempts=3)) as notifier:
        await notifier.create("t1", "", "", config(f"http://rebind.test:{canary.port}/hook", "c1"))
        await notifier.notify("t1", event("t1", 1))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
    record = await store.get_config("t1", "c1")
    assert record is not None and record.failed
    assert canary.drain() == []


async def test_redirects_are_not_followed(receiver: Receiver, canary: Canary) -> None:
    """The receiver (allowed) redirects to the canary (allowed too, so only the no-redirect
    rule stands between them): the canary sees nothing and the redirect counts as a failure."""
    target = f"http://127.0.0.1:{canary.port}/stolen"

    async def redirect(_hit: Hit) -> tuple[int, bool, dict[str, str]]:
        return 307, False, {"Location": target}

    receiver.behaviour = redirect
    store = InMemoryPushStore()
    async with PushNotifier(store, guard=LOOPBACK, policy=replace(FAST, max_attempts=3)) as notifier:
        await notifier.create("t1", "", "", config(receiver.url("hook"), "c1"))
        await notifier.notify("t1", event("t1", 1))
        async with asyncio.timeout(WAIT):
            await notifier.wait_idle()
    assert [h.status for h in receiver.hits] == [307, 307, 307]
    record = await store.get_config("t1", "c1")
    assert record is not None and record.failed
    assert canary.drain() == []
