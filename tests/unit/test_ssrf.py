"""The outbound-request guard: forbidden targets in every form are refused, before any connection.

Network rule for this file: no real DNS lookup (``no_real_dns`` fails any lookup of a name) and
no traffic to non-loopback addresses (connection-time tests use ``LoopbackOnlyBackend``, which
opens connections to loopback only and records anything else instead of connecting). A loopback
canary listener must see no connection during any refusal.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from a2a.ssrf import (
    EMBEDDING_IPV6,
    FORBIDDEN_IPV4,
    FORBIDDEN_IPV6,
    ForbiddenTargetError,
    GuardedClient,
    GuardedNetworkBackend,
    GuardError,
    InvalidTargetError,
    OutboundPolicy,
    TooManyRedirectsError,
    UnresolvableTargetError,
    check_address,
    check_url,
    parse_ip_literal,
    stream_following_redirects,
    system_resolver,
)

PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"

NAMES: dict[str, list[str]] = {
    "internal.test": ["10.0.0.5"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": [PUBLIC_V4, "10.0.0.1"],
    "mixed6.test": [PUBLIC_V6, "::1"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "nat64.test": ["64:ff9b::a9fe:a9fe"],
    "cgnat.test": ["100.100.100.100"],
    "ula.test": ["fd00::1234"],
    "public.test": [PUBLIC_V4, PUBLIC_V6],
    "allowed.test": ["127.0.0.1"],
    "other.test": ["127.0.0.1"],
    "tls.test": ["127.0.0.1"],
    "wrong.test": ["127.0.0.1"],
}


# ---- fixtures: no DNS, a canary, a backend that only connects to loopback ----------------


@pytest.fixture(autouse=True)
def no_real_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any getaddrinfo of a name (not an IP literal) fails the test instead of reaching DNS."""
    real = socket.getaddrinfo

    def only_literals(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            name = host.decode() if isinstance(host, bytes) else str(host)
            try:
                ip_address(name.split("%", 1)[0])
            except ValueError:
                raise AssertionError(f"the test tried a real DNS lookup of {name!r}") from None
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", only_literals)


class Canary:
    """Listening sockets on 127.0.0.1 and ::1 that record every connection made to them."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.v4 = self._listen(socket.AF_INET, "127.0.0.1")
        try:
            self.v6 = self._listen(socket.AF_INET6, "::1")
        except OSError:  # no IPv6 loopback here; ::1 targets then have nothing to reach
            self.v6 = 9

    def _listen(self, family: socket.AddressFamily, host: str) -> int:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.bind((host, 0))
        sock.listen(64)
        sock.setblocking(False)
        self.sockets.append(sock)
        return int(sock.getsockname()[1])

    def drain(self) -> list[Any]:
        """Connections accepted since the last call. A TCP connect on loopback completes in the
        kernel before connect() returns, so a connection made earlier is already queued here."""
        seen = []
        for sock in self.sockets:
            while True:
                try:
                    conn, peer = sock.accept()
                except BlockingIOError:
                    break
                conn.close()
                seen.append(peer)
        return seen

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


@pytest.fixture(scope="module")
def canary() -> Iterator[Canary]:
    listener = Canary()
    yield listener
    listener.close()


@pytest.fixture(autouse=True)
def canary_stays_silent(canary: Canary) -> Iterator[None]:
    canary.drain()
    yield
    assert canary.drain() == [], "a refused target was connected to"


class LoopbackOnlyBackend(httpcore.AsyncNetworkBackend):
    """The connector behind the guard in these tests: real connections to loopback IPs only.

    It also proves that the guard hands over IP addresses, never names (``ip_address`` fails).
    """

    def __init__(self) -> None:
        self.real = httpcore.AnyIOBackend()
        self.attempts: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.attempts.append((host, port))
        if ip_address(host).is_loopback:
            return await self.real.connect_tcp(host, port, timeout, local_address, socket_options)
        raise httpcore.ConnectError(f"test backend: not connecting to non-loopback {host}")

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise AssertionError("unix socket")

    async def sleep(self, seconds: float) -> None:
        await self.real.sleep(seconds)


class FakeResolver:
    def __init__(self, table: dict[str, list[str]] | None = None) -> None:
        self.table = NAMES if table is None else table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        try:
            return self.table[host.lower().rstrip(".")]
        except KeyError:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None


class RebindingResolver:
    """Answers with a public address first, then with loopback (DNS rebinding)."""

    def __init__(self) -> None:
        self.answers = [[PUBLIC_V4], ["127.0.0.1"]]

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver()


@pytest.fixture
def policy(resolver: FakeResolver) -> OutboundPolicy:
    return OutboundPolicy(resolver=resolver)


@pytest.fixture
def backend() -> LoopbackOnlyBackend:
    return LoopbackOnlyBackend()


def fill(template: str, canary: Canary) -> str:
    return template.format(p4=canary.v4, p6=canary.v6)


# ---- the forbidden targets ---------------------------------------------------------------

#: (URL, the range the refusal must name). {p4}/{p6}: the canary's ports on 127.0.0.1 / ::1.
FORBIDDEN: list[tuple[str, str]] = [
    # IPv4 loopback in every literal form
    ("http://127.0.0.1:{p4}/", "127.0.0.0/8"),
    ("https://127.0.0.1:{p4}/", "127.0.0.0/8"),
    ("http://127.1:{p4}/", "127.0.0.0/8"),
    ("http://127.0.1:{p4}/", "127.0.0.0/8"),
    ("http://2130706433:{p4}/", "127.0.0.0/8"),
    ("http://0x7f000001:{p4}/", "127.0.0.0/8"),
    ("http://0x7f.1:{p4}/", "127.0.0.0/8"),
    ("http://0X7F.0.0.1:{p4}/", "127.0.0.0/8"),
    ("http://017700000001:{p4}/", "127.0.0.0/8"),
    ("http://0177.1:{p4}/", "127.0.0.0/8"),
    ("http://0177.0x0.00.0x1:{p4}/", "127.0.0.0/8"),
    ("http://127.0.0.1.:{p4}/", "127.0.0.0/8"),
    ("http://127.255.255.254:{p4}/", "127.0.0.0/8"),
    # 'this network'
    ("http://0.0.0.0:{p4}/", "0.0.0.0/8"),
    ("http://0:{p4}/", "0.0.0.0/8"),
    ("http://0.1.2.3/", "0.0.0.0/8"),
    # private-use
    ("http://10.0.0.1/", "10.0.0.0/8"),
    ("http://10.255.255.255/", "10.0.0.0/8"),
    ("http://167772161/", "10.0.0.0/8"),
    ("http://172.16.0.1/", "172.16.0.0/12"),
    ("http://172.31.255.254/", "172.16.0.0/12"),
    ("http://192.168.1.1/", "192.168.0.0/16"),
    ("http://0xc0a80101/", "192.168.0.0/16"),
    ("http://0300.0250.0401/", "192.168.0.0/16"),
    # carrier-grade NAT, link-local / metadata
    ("http://100.64.0.1/", "100.64.0.0/10"),
    ("http://100.127.255.254/", "100.64.0.0/10"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.0.0/16"),
    ("http://2852039166/", "169.254.0.0/16"),
    ("http://169.254.0.1/", "169.254.0.0/16"),
    # IETF, TEST-NETs, benchmarking, 6to4 relay
    ("http://192.0.0.8/", "192.0.0.0/24"),
    ("http://192.0.2.1/", "192.0.2.0/24"),
    ("http://198.51.100.1/", "198.51.100.0/24"),
    ("http://203.0.113.1/", "203.0.113.0/24"),
    ("http://198.18.0.1/", "198.18.0.0/15"),
    ("http://198.19.255.255/", "198.18.0.0/15"),
    ("http://192.88.99.1/", "192.88.99.0/24"),
    # multicast, reserved, broadcast
    ("http://224.0.0.1/", "224.0.0.0/4"),
    ("http://239.255.255.250/", "224.0.0.0/4"),
    ("http://240.0.0.1/", "240.0.0.0/4"),
    ("http://255.255.255.254/", "240.0.0.0/4"),
    ("http://255.255.255.255/", "255.255.255.255/32"),
    ("http://0xffffffff/", "255.255.255.255/32"),
    # IPv6 unspecified and loopback
    ("http://[::1]:{p6}/", "::1/128"),
    ("http://[0:0:0:0:0:0:0:1]:{p6}/", "::1/128"),
    ("http://[::]:{p6}/", "::/128"),
    # IPv4-mapped, -compatible, -translated: the embedded IPv4 decides
    ("http://[::ffff:127.0.0.1]:{p4}/", "127.0.0.0/8"),
    ("http://[::ffff:7f00:1]:{p4}/", "127.0.0.0/8"),
    ("http://[0:0:0:0:0:ffff:127.0.0.1]:{p4}/", "127.0.0.0/8"),
    ("http://[::ffff:10.0.0.1]/", "10.0.0.0/8"),
    ("http://[::ffff:169.254.169.254]/", "169.254.0.0/16"),
    ("http://[::ffff:100.64.0.1]/", "100.64.0.0/10"),
    ("http://[::127.0.0.1]/", "::/96"),
    ("http://[::10.1.2.3]/", "10.0.0.0/8"),
    ("http://[::ffff:0:7f00:1]/", "::ffff:0:0:0/96"),
    # NAT64 (well-known and local-use) and 6to4
    ("http://[64:ff9b::7f00:1]/", "64:ff9b::/96"),
    ("http://[64:ff9b::127.0.0.1]/", "127.0.0.0/8"),
    ("http://[64:ff9b::a9fe:a9fe]/", "169.254.0.0/16"),
    ("http://[64:ff9b::c0a8:101]/", "192.168.0.0/16"),
    ("http://[64:ff9b:1::a00:1]/", "64:ff9b:1::/48"),
    ("http://[64:ff9b:1:7f00:0:100::]/", "127.0.0.0/8"),
    ("http://[2002:7f00:1::]/", "2002::/16"),
    ("http://[2002:c0a8:101::1]/", "192.168.0.0/16"),
    ("http://[2002:a9fe:a9fe::]/", "169.254.0.0/16"),
    # Teredo, ULA, link-local, site-local, multicast, documentation, discard, IETF
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "2001::/32"),
    ("http://[2001::1]/", "2001::/32"),
    ("http://[fc00::1]/", "fc00::/7"),
    ("http://[fd12:3456:789a::1]/", "fc00::/7"),
    ("http://[fe80::1]/", "fe80::/10"),
    ("http://[febf:ffff::1]/", "fe80::/10"),
    ("http://[fec0::1]/", "fec0::/10"),
    ("http://[ff02::1]/", "ff00::/8"),
    ("http://[ff05::1:3]/", "ff00::/8"),
    ("http://[2001:db8::1]/", "2001:db8::/32"),
    ("http://[2001:db8:ffff::1]/", "2001:db8::/32"),
    ("http://[100::1]/", "100::/64"),
    ("http://[2001:2::1]/", "2001:2::/48"),
    ("http://[3fff::1]/", "3fff::/20"),
    ("http://[5f00::1]/", "outside global unicast"),
    # names: localhost (RFC 6761, never asked of a resolver) and names resolving to forbidden addresses
    ("http://localhost:{p4}/", "127.0.0.0/8"),
    ("http://LOCALHOST.:{p4}/", "127.0.0.0/8"),
    ("http://api.localhost:{p4}/", "127.0.0.0/8"),
    ("http://internal.test/", "10.0.0.0/8"),
    ("http://metadata.test/", "169.254.0.0/16"),
    ("http://mixed.test/", "10.0.0.0/8"),
    ("http://mixed6.test:{p6}/", "::1/128"),
    ("http://mapped.test:{p4}/", "127.0.0.0/8"),
    ("http://nat64.test/", "169.254.0.0/16"),
    ("http://cgnat.test/", "100.64.0.0/10"),
    ("http://ula.test/", "fc00::/7"),
]

INVALID: list[str] = [
    "ftp://example.com/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:70/",
    "ws://public.test/",
    "http://user:secret@public.test/",
    "http://user@public.test/",
    "http:///nohost",
    "http://1.2.3.4.5/",
    "http://08.0.0.1/",
    "http://0x7g.0.0.1/",
    "http://4294967296/",
    "http://256.0.0.1/",
    "http://127..1/",
    "http://0177.0.0.1/",  # four parts, one with a leading zero: httpx's parser refuses it
    "http://0300.0250.1.1/",
    "http://example.123/",
    "http://[fe80::1%25eth0]/",
    "http://%31%32%37.0.0.1/",
    "http://a b/",
    "http://-bad-.test/",
    "not a url",
    "http://user:secret@[::1/",
]


@pytest.mark.parametrize(("template", "named_range"), FORBIDDEN)
async def test_check_url_refuses_forbidden_target(
    template: str, named_range: str, policy: OutboundPolicy, canary: Canary
) -> None:
    url = fill(template, canary)
    with pytest.raises(ForbiddenTargetError) as caught:
        await check_url(url, policy)
    message = str(caught.value)
    assert named_range in message
    assert "allow-list" in message
    assert str(caught.value.address) in message


@pytest.mark.parametrize(("template", "named_range"), FORBIDDEN)
async def test_connection_to_forbidden_target_is_refused(
    template: str, named_range: str, policy: OutboundPolicy, backend: LoopbackOnlyBackend, canary: Canary
) -> None:
    """The same targets through GuardedClient: refused at connection time, nothing opened."""
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises(ForbiddenTargetError, match=named_range.replace(".", r"\.")):
            await client.get(fill(template, canary))
    assert backend.attempts == []


@pytest.mark.parametrize("url", INVALID)
async def test_check_url_refuses_invalid_target(url: str, policy: OutboundPolicy, resolver: FakeResolver) -> None:
    with pytest.raises(InvalidTargetError) as caught:
        await check_url(url, policy)
    assert "secret" not in str(caught.value)
    assert resolver.calls == []


@pytest.mark.parametrize(
    "url", ["http://user:secret@public.test/", "http://0x7g.0.0.1/", "http://[fe80::1%25eth0]/", "http://1.2.3.4.5/"]
)
async def test_client_refuses_invalid_target(url: str, policy: OutboundPolicy, backend: LoopbackOnlyBackend) -> None:
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises((InvalidTargetError, httpx.InvalidURL)) as caught:
            await client.get(url)
    assert "secret" not in str(caught.value)
    assert backend.attempts == []


@pytest.mark.parametrize("url", ["ftp://public.test/", "file:///etc/passwd"])
async def test_client_refuses_other_schemes(url: str, policy: OutboundPolicy, backend: LoopbackOnlyBackend) -> None:
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises((InvalidTargetError, httpx.UnsupportedProtocol)):
            await client.get(url)
    assert backend.attempts == []


def test_there_are_at_least_40_forbidden_targets() -> None:
    assert len(FORBIDDEN) >= 40


# ---- the table itself --------------------------------------------------------------------

#: The ranges the issue lists; each must be refused at its first and last address.
REQUIRED_RANGES = [
    "127.0.0.0/8", "0.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",
    "169.254.0.0/16", "192.0.0.0/24", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",
    "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
    "::/128", "::1/128", "2001::/32", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    "2001:db8::/32", "100::/64",
]  # fmt: skip


@pytest.mark.parametrize("cidr", REQUIRED_RANGES)
def test_required_range_is_refused_at_both_ends(cidr: str) -> None:
    network = ip_network(cidr)
    for address in (network.network_address, network.broadcast_address):
        refusal = check_address(address)
        assert refusal is not None, address
        assert refusal.range.network.overlaps(network)


def test_every_table_entry_is_a_network_with_a_reason() -> None:
    for forbidden in (*FORBIDDEN_IPV4, *FORBIDDEN_IPV6, *(e.range for e in EMBEDDING_IPV6)):
        assert forbidden.name
        assert forbidden.reference.startswith("RFC ")
    # compared as networks: their text differs across versions (3.13 writes ::ffff:0.0.0.0/96)
    assert {e.range.network for e in EMBEDDING_IPV6} >= {
        ip_network(n) for n in ("::ffff:0:0/96", "::/96", "64:ff9b::/96", "64:ff9b:1::/48", "2002::/16")
    }


@pytest.mark.parametrize(
    "address",
    # where Python 3.11's ipaddress flags are wrong or silent for our purpose
    ["::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:7f00:1::", "fec0::1", "100.64.0.1", "192.88.99.1", "ff02::1"],
)
def test_refused_whatever_ipaddress_flags_say(address: str) -> None:
    assert check_address(ip_address(address)) is not None


PUBLIC = [
    "8.8.8.8", "1.1.1.1", PUBLIC_V4, "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
    "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255", "11.0.0.1",
    "2001:4860:4860::8888", PUBLIC_V6, "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
]  # fmt: skip


@pytest.mark.parametrize("address", PUBLIC)
def test_public_address_passes(address: str) -> None:
    assert check_address(ip_address(address)) is None


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_ipv4_allowed_only_if_ipaddress_agrees_it_is_global(value: int) -> None:
    address = IPv4Address(value)
    if check_address(address) is None:
        assert address.is_global and not address.is_multicast


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_embedded_forms_share_the_ipv4_verdict(value: int) -> None:
    verdict = check_address(IPv4Address(value)) is None
    for prefix in (0xFFFF << 32, 0x64FF9B << 96, 0):
        embedded = IPv6Address(prefix | value)
        if prefix == 0 and value <= 1:
            continue  # :: and ::1 are refused as themselves
        assert (check_address(embedded) is None) == verdict, embedded
    assert (check_address(IPv6Address((0x2002 << 112) | (value << 80))) is None) == verdict


@given(st.integers(min_value=0, max_value=2**128 - 1))
def test_ipv6_allowed_only_if_global_unicast(value: int) -> None:
    address = IPv6Address(value)
    embedded = any(address in e.range.network for e in EMBEDDING_IPV6)
    if check_address(address) is None and not embedded:
        assert address in ip_network("2000::/3")
        assert address.is_global and not (address.is_multicast or address.is_site_local or address.is_reserved)


@st.composite
def ipv4_spellings(draw: st.DrawFn) -> tuple[str, int]:
    """An address and one of the ways inet_aton accepts to write it (1 to 4 parts, any base)."""
    value = draw(st.integers(min_value=0, max_value=2**32 - 1))
    count = draw(st.integers(min_value=1, max_value=4))
    shifts = {1: [], 2: [24], 3: [24, 16], 4: [24, 16, 8]}[count]
    numbers = [(value >> s) & 0xFF for s in shifts] + [value & ((1 << (32 - 8 * (count - 1))) - 1)]
    parts = []
    for number in numbers:
        style = draw(st.sampled_from(["dec", "oct", "hex", "HEX"]))
        parts.append(
            {"dec": str(number), "oct": "0" + format(number, "o"), "hex": f"0x{number:x}", "HEX": f"0X{number:X}"}[
                style
            ]
        )
    return ".".join(parts), value


@given(ipv4_spellings())
def test_ipv4_literal_parser_agrees_with_inet_aton(spelling: tuple[str, int]) -> None:
    text, value = spelling
    assert parse_ip_literal(text) == IPv4Address(value)
    assert socket.inet_aton(text) == IPv4Address(value).packed


# ---- public targets pass; the connection goes to the checked address ---------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://public.test/",
        "https://public.test:8443/path?q=1",
        "http://8.8.8.8/",
        "http://134744072/",
        "http://0x8.0x8.0x8.0x8/",
        "http://[2001:4860:4860::8888]/",
        "http://[::ffff:8.8.8.8]/",
        "http://[64:ff9b::808:808]/",
        "http://[2002:808:808::1]/",
    ],
)
async def test_public_target_passes_the_check(url: str, policy: OutboundPolicy) -> None:
    target = await check_url(url, policy)
    assert target.addresses
    assert all(check_address(a) is None for a in target.addresses)


async def test_connection_goes_to_the_checked_addresses_after_one_lookup(
    policy: OutboundPolicy, resolver: FakeResolver, backend: LoopbackOnlyBackend
) -> None:
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises(httpx.ConnectError, match="test backend"):
            await client.get("http://public.test/")
    assert resolver.calls == ["public.test"]
    assert backend.attempts == [(PUBLIC_V4, 80), (PUBLIC_V6, 80)]


async def test_dns_rebinding_is_caught_at_connection(backend: LoopbackOnlyBackend, canary: Canary) -> None:
    policy = OutboundPolicy(resolver=RebindingResolver())
    url = f"http://rebind.test:{canary.v4}/"
    await check_url(url, policy)  # at registration the name looked public
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises(ForbiddenTargetError, match=r"127\.0\.0\.0/8"):
            await client.get(url)
    assert backend.attempts == []


async def test_unresolvable_names(policy: OutboundPolicy) -> None:
    with pytest.raises(UnresolvableTargetError, match=r"nowhere\.test"):
        await check_url("http://nowhere.test/", policy)
    empty = OutboundPolicy(resolver=FakeResolver({"empty.test": []}))
    with pytest.raises(UnresolvableTargetError, match="no addresses"):
        await check_url("http://empty.test/", empty)
    garbage = OutboundPolicy(resolver=FakeResolver({"bad.test": ["not-an-ip"]}))
    with pytest.raises(UnresolvableTargetError, match="not an address"):
        await check_url("http://bad.test/", garbage)


async def test_resolver_time_limit() -> None:
    async def never(host: str, port: int) -> Sequence[str]:
        import asyncio

        await asyncio.Event().wait()
        return []

    policy = OutboundPolicy(resolver=never, resolve_timeout=0.05)
    with pytest.raises(UnresolvableTargetError, match="no answer"):
        await check_url("http://slow.test/", policy)


async def test_unix_sockets_are_refused() -> None:
    with pytest.raises(InvalidTargetError):
        await GuardedNetworkBackend().connect_unix_socket("/var/run/docker.sock")


def test_canary_sees_connections(canary: Canary) -> None:
    """The control: a connection to the canary is seen (so its silence elsewhere means something)."""
    with socket.create_connection(("127.0.0.1", canary.v4), timeout=5):
        pass
    assert len(canary.drain()) == 1


# ---- the allow-list ----------------------------------------------------------------------


@pytest.fixture
async def local_site() -> AsyncIterator[tuple[int, list[dict[str, str | None]]]]:
    """A loopback HTTP server: /hello, /echo, POST /count, /redirect?to=URL, /chain/N; records each request."""
    seen: list[dict[str, str | None]] = []

    async def record(request: web.Request) -> None:
        seen.append({"path": request.path, "host": request.host, "authorization": request.headers.get("Authorization")})

    async def hello(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(text="hello")

    async def count(request: web.Request) -> web.Response:
        await record(request)
        return web.Response(text=f"{len(await request.read())} bytes", headers={"X-Seen": "yes"})

    async def redirect(request: web.Request) -> web.Response:
        await record(request)
        raise web.HTTPFound(request.query["to"])

    async def chain(request: web.Request) -> web.Response:
        await record(request)
        left = int(request.match_info["n"])
        if left > 0:
            raise web.HTTPFound(f"/chain/{left - 1}")
        return web.Response(text="end of chain")

    app = web.Application()
    app.router.add_get("/hello", hello)
    app.router.add_get("/echo", hello)
    app.router.add_post("/count", count)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/chain/{n}", chain)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = int(runner.addresses[0][1])
    try:
        yield port, seen
    finally:
        await runner.cleanup()


def test_allow_list_parsing() -> None:
    policy = OutboundPolicy.from_allow_list(" 10.0.0.0/8, 127.0.0.1 ,Svc.Internal.,::1, bücher.test")
    assert [str(n) for n in policy.allow_networks] == ["10.0.0.0/8", "127.0.0.1/32", "::1/128"]
    assert policy.allow_hosts == frozenset({"svc.internal", "xn--bcher-kva.test"})
    assert OutboundPolicy.from_allow_list(None) == OutboundPolicy()
    with pytest.raises(ValueError, match="not a host"):
        OutboundPolicy.from_allow_list("10.0.0.0/8,not a host")


async def test_allow_list_admits_a_loopback_target(local_site: tuple[int, Any], resolver: FakeResolver) -> None:
    port, seen = local_site
    policy = OutboundPolicy.from_allow_list("127.0.0.1/32", resolver=resolver)
    async with GuardedClient(policy, timeout=5) as client:
        response = await client.get(f"http://127.0.0.1:{port}/hello")
    assert response.text == "hello"
    assert len(seen) == 1


async def test_allow_list_by_name_keeps_the_host_header(
    local_site: tuple[int, Any], resolver: FakeResolver, backend: LoopbackOnlyBackend
) -> None:
    port, seen = local_site
    policy = OutboundPolicy.from_allow_list("allowed.test", resolver=resolver)
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        response = await client.get(f"http://allowed.test:{port}/echo")
    assert response.status_code == 200
    assert seen[0]["host"] == f"allowed.test:{port}"
    assert resolver.calls == ["allowed.test"]  # one lookup, by the guard
    assert backend.attempts == [("127.0.0.1", port)]  # then a connection to the checked IP


@pytest.mark.parametrize(
    ("allow", "template"),
    [
        ("127.0.0.1/32", "http://[::1]:{p6}/"),
        ("127.0.0.1/32", "http://127.0.0.2:{p4}/"),
        ("127.0.0.1/32", "http://10.0.0.1/"),
        ("allowed.test", "http://other.test:{p4}/"),
        ("allowed.test", "http://127.0.0.1:{p4}/"),
        ("10.0.0.0/8", "http://[64:ff9b::a00:1]/"),
    ],
)
async def test_allow_list_admits_only_what_it_lists(
    allow: str, template: str, resolver: FakeResolver, backend: LoopbackOnlyBackend, canary: Canary
) -> None:
    policy = OutboundPolicy.from_allow_list(allow, resolver=resolver)
    with pytest.raises(ForbiddenTargetError):
        await check_url(fill(template, canary), policy)
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises(ForbiddenTargetError):
            await client.get(fill(template, canary))
    assert backend.attempts == []


async def test_localhost_allowed_by_name(local_site: tuple[int, Any], backend: LoopbackOnlyBackend) -> None:
    port, _ = local_site
    policy = OutboundPolicy.from_allow_list("localhost", resolver=FakeResolver({}))
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        response = await client.get(f"http://localhost:{port}/hello")
    assert response.text == "hello"
    assert backend.attempts[0] == ("127.0.0.1", port)


# ---- redirects ---------------------------------------------------------------------------

REDIRECT_TARGETS: list[tuple[str, type[GuardError]]] = [
    ("http://127.0.0.1:{p4}/", ForbiddenTargetError),
    ("http://[::1]:{p6}/", ForbiddenTargetError),
    ("http://localhost:{p4}/", ForbiddenTargetError),
    ("http://2130706433:{p4}/", ForbiddenTargetError),
    ("http://0x7f.1:{p4}/", ForbiddenTargetError),
    ("http://[::ffff:127.0.0.1]:{p4}/", ForbiddenTargetError),
    ("http://169.254.169.254/latest/meta-data/", ForbiddenTargetError),
    ("http://10.0.0.1/", ForbiddenTargetError),
    ("http://internal.test/", ForbiddenTargetError),
    ("http://[fd00::1]/", ForbiddenTargetError),
    ("file:///etc/passwd", InvalidTargetError),
    ("gopher://127.0.0.1:{p4}/", InvalidTargetError),
    ("http://user:pw@public.test/", InvalidTargetError),
]


@pytest.mark.parametrize(("template", "error"), REDIRECT_TARGETS)
async def test_redirect_to_forbidden_target_is_refused(
    template: str,
    error: type[GuardError],
    local_site: tuple[int, Any],
    resolver: FakeResolver,
    backend: LoopbackOnlyBackend,
    canary: Canary,
) -> None:
    port, seen = local_site
    policy = OutboundPolicy.from_allow_list("allowed.test", resolver=resolver)
    start = f"http://allowed.test:{port}/redirect"
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        with pytest.raises(error) as caught:
            async with stream_following_redirects(
                client, httpx.URL(start, params={"to": fill(template, canary)})
            ) as response:
                raise AssertionError(f"followed to {response.url}")
    if isinstance(caught.value, ForbiddenTargetError):
        assert caught.value.redirected_from is not None
        assert "redirected from" in str(caught.value)
    assert [s["path"] for s in seen] == ["/redirect"]
    assert backend.attempts == [("127.0.0.1", port)]


async def test_redirects_are_not_followed_automatically(local_site: tuple[int, Any], resolver: FakeResolver) -> None:
    port, seen = local_site
    policy = OutboundPolicy.from_allow_list("127.0.0.1/32", resolver=resolver)
    async with GuardedClient(policy, timeout=5) as client:
        response = await client.get(f"http://127.0.0.1:{port}/chain/1")
        assert response.status_code == 302
        with pytest.raises(ValueError, match="does not follow redirects"):
            await client.get(f"http://127.0.0.1:{port}/chain/1", follow_redirects=True)
    assert len(seen) == 1


async def test_redirect_chain_is_followed_up_to_the_limit(local_site: tuple[int, Any], resolver: FakeResolver) -> None:
    port, _ = local_site
    policy = OutboundPolicy.from_allow_list("127.0.0.1/32", resolver=resolver)
    async with GuardedClient(policy, timeout=5) as client:
        async with stream_following_redirects(client, f"http://127.0.0.1:{port}/chain/5", max_redirects=5) as response:
            assert (await response.aread()) == b"end of chain"
            assert [str(r.url).rsplit("/", 1)[1] for r in response.history] == ["5", "4", "3", "2", "1"]
        with pytest.raises(TooManyRedirectsError, match="more than 5 redirects"):
            async with stream_following_redirects(client, f"http://127.0.0.1:{port}/chain/6", max_redirects=5):
                pass


async def test_cross_origin_redirect_drops_credentials(local_site: tuple[int, Any], resolver: FakeResolver) -> None:
    port, seen = local_site
    policy = OutboundPolicy.from_allow_list("allowed.test,other.test", resolver=resolver)
    target = f"http://other.test:{port}/echo"
    async with GuardedClient(policy, timeout=5) as client:
        start = httpx.URL(f"http://allowed.test:{port}/redirect", params={"to": target})
        async with stream_following_redirects(client, start, headers={"Authorization": "Bearer s3cret"}) as response:
            assert response.status_code == 200
    assert [(s["host"], s["authorization"]) for s in seen] == [
        (f"allowed.test:{port}", "Bearer s3cret"),
        (f"other.test:{port}", None),
    ]


# ---- TLS: connected by IP, verified by name ----------------------------------------------


def _make_certificate(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.pem", directory / f"{name}.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
            "-addext", f"subjectAltName=DNS:{name}",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return cert, key


@pytest.fixture
async def tls_site(tmp_path: Path) -> AsyncIterator[tuple[int, Path, list[str | None]]]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a test certificate")
    cert, key = _make_certificate(tmp_path, "tls.test")
    server_names: list[str | None] = []
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _ctx: server_names.append(name)

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text=f"hello {request.host}")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield int(runner.addresses[0][1]), cert, server_names
    finally:
        await runner.cleanup()


async def test_tls_sends_the_name_and_verifies_the_certificate_for_it(
    tls_site: tuple[int, Path, list[str | None]], resolver: FakeResolver, backend: LoopbackOnlyBackend
) -> None:
    port, cert, server_names = tls_site
    trust = ssl.create_default_context(cafile=str(cert))
    policy = OutboundPolicy.from_allow_list("tls.test,wrong.test,127.0.0.1", resolver=resolver)
    async with GuardedClient(policy, verify=trust, inner_backend=backend, timeout=5) as client:
        response = await client.get(f"https://tls.test:{port}/")
        assert response.text == f"hello tls.test:{port}"
        assert server_names == ["tls.test"]
        assert backend.attempts == [("127.0.0.1", port)]
        # the same server reached under another name, or by IP: the certificate does not match
        for url in (f"https://wrong.test:{port}/", f"https://127.0.0.1:{port}/"):
            with pytest.raises(httpx.ConnectError, match=r"CERTIFICATE_VERIFY_FAILED|match"):
                await client.get(url)


# ---- the transport: one lookup per connection, connections kept per name, errors as httpx's ----


async def test_a_kept_alive_connection_is_reused_for_its_name_only(
    local_site: tuple[int, Any], resolver: FakeResolver, backend: LoopbackOnlyBackend
) -> None:
    """The pool keys connections by name: a second request to the same name needs neither a
    lookup nor a connection; another name on the same address gets its own of both."""
    port, seen = local_site
    policy = OutboundPolicy.from_allow_list("allowed.test,other.test", resolver=resolver)
    async with GuardedClient(policy, inner_backend=backend, timeout=5) as client:
        for _ in range(2):
            assert (await client.get(f"http://allowed.test:{port}/hello")).text == "hello"
        assert resolver.calls == ["allowed.test"]
        assert backend.attempts == [("127.0.0.1", port)]
        assert (await client.get(f"http://other.test:{port}/hello")).text == "hello"
    assert resolver.calls == ["allowed.test", "other.test"]
    assert backend.attempts == [("127.0.0.1", port), ("127.0.0.1", port)]
    assert [s["host"] for s in seen] == [f"allowed.test:{port}"] * 2 + [f"other.test:{port}"]


async def test_the_body_goes_out_and_the_response_keeps_status_line_and_headers(local_site: tuple[int, Any]) -> None:
    port, _ = local_site
    policy = OutboundPolicy.from_allow_list("127.0.0.1/32", resolver=FakeResolver({}))
    async with GuardedClient(policy, timeout=5) as client:
        response = await client.post(f"http://127.0.0.1:{port}/count", content=b"x" * 100_000)
    assert (response.status_code, response.reason_phrase, response.http_version) == (200, "OK", "HTTP/1.1")
    assert response.headers["x-seen"] == "yes"
    assert response.text == "100000 bytes"
    assert str(response.url) == f"http://127.0.0.1:{port}/count"


@pytest.fixture
async def truncating_server() -> AsyncIterator[int]:
    """Answers every request with a body shorter than its Content-Length, then hangs up."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        await server.wait_closed()


async def test_errors_while_reading_the_body_are_httpx_errors(truncating_server: int) -> None:
    policy = OutboundPolicy.from_allow_list("127.0.0.1/32", resolver=FakeResolver({}))
    async with GuardedClient(policy, timeout=5) as client:
        with pytest.raises(httpx.RemoteProtocolError) as caught:
            await client.get(f"http://127.0.0.1:{truncating_server}/")
    assert isinstance(caught.value.__cause__, httpcore.RemoteProtocolError)
    assert caught.value.request.url.port == truncating_server


async def test_a_connect_timeout_is_an_httpx_timeout(policy: OutboundPolicy) -> None:
    class NeverConnects(LoopbackOnlyBackend):
        async def connect_tcp(self, host: str, port: int, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
            raise httpcore.ConnectTimeout("test backend: no answer")

    async with GuardedClient(policy, inner_backend=NeverConnects(), timeout=5) as client:
        with pytest.raises(httpx.ConnectTimeout, match="no answer"):
            await client.get("http://public.test/")


async def test_the_system_resolver_does_not_block_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup waits for a callback of the event loop: it would never come (and the lookup
    would fail after 5 s) if the lookup ran on the loop's thread."""
    loop_ran = threading.Event()

    def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        assert loop_ran.wait(5), "getaddrinfo ran on the event loop's thread"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC_V4, port))]

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    asyncio.get_running_loop().call_soon(loop_ran.set)
    assert await system_resolver("public.test", 80) == [PUBLIC_V4]


async def test_a_name_resolving_to_a_private_address_is_refused_before_any_connection(
    backend: LoopbackOnlyBackend, canary: Canary
) -> None:
    """The whole path with the system resolver (its getaddrinfo answering for the name)."""
    answers = {"intranet.test": "127.0.0.1"}
    real = socket.getaddrinfo

    def lookup(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        return real(answers.get(host, host), port, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "getaddrinfo", lookup)
        async with GuardedClient(OutboundPolicy(), inner_backend=backend, timeout=5) as client:
            with pytest.raises(ForbiddenTargetError, match=r"'intranet\.test' \(127\.0\.0\.1\).*127\.0\.0\.0/8"):
                await client.get(f"http://intranet.test:{canary.v4}/")
    assert backend.attempts == []
