"""Outbound-request guard (SSRF): requests from the server go to public addresses only.

Anything that makes a request to a URL chosen by a caller (push-notification webhooks, the web
agent's ``fetch``) goes through this module. The guard is **on by default**; an allow-list
(``OutboundPolicy.from_allow_list``) admits private targets where a deployment needs them.

Check a URL when it is registered (a clear error at once)::

    target = await check_url("https://hooks.example.com/a2a")

and make the request with a ``GuardedClient``, which checks again at the moment of connection::

    async with GuardedClient(policy) as client:
        response = await client.post(url, json=payload)

What the guard enforces:

- the scheme is ``http`` or ``https``; URLs with userinfo (``user:pass@``) are refused;
- the host is canonicalised: IPv6 literals, and IPv4 literals in every form ``inet_aton``
  accepts (``2130706433``, ``0x7f.1``, ``017700000001``, ``127.1``) are parsed here, never
  handed to a resolver; ``localhost`` names mean loopback (RFC 6761) without asking one;
- *every* address the host resolves to (``getaddrinfo`` through the event loop, all families)
  must be outside ``FORBIDDEN_IPV4`` / ``FORBIDDEN_IPV6`` (IPv6 forms that embed an IPv4
  address, ``EMBEDDING_IPV6``, are judged by the embedded address; IPv6 outside global unicast
  ``2000::/3`` is refused too) unless the policy's allow-list admits it. The list is ours, not
  ``ipaddress``'s ``is_private``/``is_global`` flags, which miss several of these on 3.11;
- the connection goes to an address that was checked, by IP: the name is resolved once per
  connection, by the guard. TLS still verifies the certificate for the name in the URL, and
  the ``Host`` header is the URL's (the name goes to TLS and HTTP untouched; only the TCP
  connect is redirected to the checked address);
- redirects are never followed automatically. ``stream_following_redirects`` follows them by
  hand, re-checking every hop, up to a limit.

Exceptions::

    GuardError(Exception)                     every refusal by the guard
    ├── InvalidTargetError(GuardError, ValueError)    the URL itself: scheme, userinfo, host syntax
    ├── ForbiddenTargetError(GuardError, ValueError)  an address in a forbidden range
    ├── UnresolvableTargetError(GuardError)           the name has no address
    └── TooManyRedirectsError(GuardError)             the redirect limit was reached
"""

from __future__ import annotations

import asyncio
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address, ip_network
from typing import Any

import httpcore
import httpx

__all__ = [
    "EMBEDDING_IPV6",
    "FORBIDDEN_IPV4",
    "FORBIDDEN_IPV6",
    "CheckedTarget",
    "EmbeddingRange",
    "ForbiddenRange",
    "ForbiddenTargetError",
    "GuardError",
    "GuardedClient",
    "GuardedNetworkBackend",
    "GuardedTransport",
    "InvalidTargetError",
    "OutboundPolicy",
    "Refusal",
    "Resolver",
    "TooManyRedirectsError",
    "UnresolvableTargetError",
    "check_address",
    "check_url",
    "parse_ip_literal",
    "resolve_target",
    "stream_following_redirects",
    "system_resolver",
]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network

#: Resolves ``(host, port)`` to address strings. The default asks the event loop's getaddrinfo.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

ALLOWED_SCHEMES = frozenset({"http", "https"})
DEFAULT_PORTS = {"http": 80, "https": 443}
DEFAULT_RESOLVE_TIMEOUT = 10.0
DEFAULT_MAX_REDIRECTS = 5
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20)

# ---- the forbidden ranges ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ForbiddenRange:
    network: IPNetwork
    name: str
    reference: str

    def __str__(self) -> str:
        return f"{self.network} ({self.name}, {self.reference})"


def _range(cidr: str, name: str, reference: str) -> ForbiddenRange:
    return ForbiddenRange(ip_network(cidr), name, reference)


#: Checked in order; the first match names the reason (broadcast before the reserved /4).
FORBIDDEN_IPV4: tuple[ForbiddenRange, ...] = (
    _range("0.0.0.0/8", "'this network'", "RFC 791"),
    _range("10.0.0.0/8", "private-use", "RFC 1918"),
    _range("100.64.0.0/10", "shared address space, carrier-grade NAT", "RFC 6598"),
    _range("127.0.0.0/8", "loopback", "RFC 1122"),
    _range("169.254.0.0/16", "link-local, where cloud metadata services answer", "RFC 3927"),
    _range("172.16.0.0/12", "private-use", "RFC 1918"),
    _range("192.0.0.0/24", "IETF protocol assignments", "RFC 6890"),
    _range("192.0.2.0/24", "documentation, TEST-NET-1", "RFC 5737"),
    _range("192.88.99.0/24", "6to4 relay anycast, deprecated", "RFC 7526"),
    _range("192.168.0.0/16", "private-use", "RFC 1918"),
    _range("198.18.0.0/15", "benchmarking", "RFC 2544"),
    _range("198.51.100.0/24", "documentation, TEST-NET-2", "RFC 5737"),
    _range("203.0.113.0/24", "documentation, TEST-NET-3", "RFC 5737"),
    _range("224.0.0.0/4", "multicast", "RFC 5771"),
    _range("255.255.255.255/32", "limited broadcast", "RFC 919"),
    _range("240.0.0.0/4", "reserved", "RFC 1112"),
)

#: Checked before the embedding forms (``::`` and ``::1`` lie inside ``::/96``), in order.
FORBIDDEN_IPV6: tuple[ForbiddenRange, ...] = (
    _range("::/128", "unspecified", "RFC 4291"),
    _range("::1/128", "loopback", "RFC 4291"),
    _range("100::/64", "discard-only", "RFC 6666"),
    _range("2001::/32", "Teredo", "RFC 4380"),
    _range("2001:2::/48", "benchmarking", "RFC 5180"),
    _range("2001:10::/28", "ORCHID, deprecated", "RFC 4843"),
    _range("2001:db8::/32", "documentation", "RFC 3849"),
    _range("2001::/23", "IETF protocol assignments", "RFC 2928"),
    _range("3fff::/20", "documentation", "RFC 9637"),
    _range("fc00::/7", "unique local", "RFC 4193"),
    _range("fe80::/10", "link-local", "RFC 4291"),
    _range("fec0::/10", "site-local, deprecated", "RFC 3879"),
    _range("ff00::/8", "multicast", "RFC 4291"),
)

_GLOBAL_UNICAST_IPV6 = ip_network("2000::/3")
_NOT_GLOBAL_UNICAST = _range("::/0", "outside global unicast 2000::/3, not assigned for public use", "RFC 4291")


@dataclass(frozen=True, slots=True)
class EmbeddingRange:
    """An IPv6 range whose addresses carry an IPv4 address; that address decides."""

    range: ForbiddenRange
    #: Bit offsets (from the most significant bit) of the IPv4 address; several for a prefix
    #: that may be used at several lengths: every position is checked.
    positions: tuple[tuple[tuple[int, int], ...], ...]

    def embedded(self, address: IPv6Address) -> list[IPv4Address]:
        value = int(address)
        found = []
        for spans in self.positions:
            bits = 0
            for start, length in spans:
                bits = (bits << length) | ((value >> (128 - start - length)) & ((1 << length) - 1))
            found.append(IPv4Address(bits))
        return found


_LAST_32 = (((96, 32),),)
# RFC 6052 section 2.2: the IPv4 address skips bits 64..71 (the "u" octet) for prefixes < /96.
_RFC6052_48_TO_96 = (
    ((48, 16), (72, 16)),  # /48
    ((56, 8), (72, 24)),  # /56
    ((72, 32),),  # /64
    ((96, 32),),  # /96
)

EMBEDDING_IPV6: tuple[EmbeddingRange, ...] = (
    EmbeddingRange(_range("::ffff:0:0/96", "IPv4-mapped", "RFC 4291"), _LAST_32),
    EmbeddingRange(_range("::ffff:0:0:0/96", "IPv4-translated", "RFC 2765"), _LAST_32),
    EmbeddingRange(_range("::/96", "IPv4-compatible, deprecated", "RFC 4291"), _LAST_32),
    EmbeddingRange(_range("64:ff9b::/96", "NAT64 well-known prefix", "RFC 6052"), _LAST_32),
    EmbeddingRange(_range("64:ff9b:1::/48", "NAT64 local-use prefix", "RFC 8215"), _RFC6052_48_TO_96),
    EmbeddingRange(_range("2002::/16", "6to4", "RFC 3056"), (((16, 32),),)),
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an address is forbidden: its range, and for IPv6 forms the embedding range."""

    address: IPAddress
    range: ForbiddenRange
    via: ForbiddenRange | None = None
    embedded: IPv4Address | None = None

    def __str__(self) -> str:
        if self.via is None:
            return str(self.range)
        return f"{self.via} embedding {self.embedded}, which is in {self.range}"


def _check_ipv4(address: IPv4Address) -> ForbiddenRange | None:
    for forbidden in FORBIDDEN_IPV4:
        if address in forbidden.network:
            return forbidden
    return None


def check_address(address: IPAddress) -> Refusal | None:
    """The reason ``address`` is forbidden, or ``None`` if it is a public address."""
    if isinstance(address, IPv4Address):
        found = _check_ipv4(address)
        return None if found is None else Refusal(address, found)
    address = _without_scope(address)
    for forbidden in FORBIDDEN_IPV6:
        if address in forbidden.network:
            return Refusal(address, forbidden)
    for embedding in EMBEDDING_IPV6:
        if address in embedding.range.network:
            for inner in embedding.embedded(address):
                found = _check_ipv4(inner)
                if found is not None:
                    return Refusal(address, found, via=embedding.range, embedded=inner)
            return None
    if address not in _GLOBAL_UNICAST_IPV6:
        return Refusal(address, _NOT_GLOBAL_UNICAST)
    return None


def _without_scope(address: IPv6Address) -> IPv6Address:
    return IPv6Address(int(address)) if address.scope_id else address


def _connectable(address: IPAddress) -> IPAddress:
    """The address to connect to and to match against the allow-list (IPv4-mapped → IPv4)."""
    if isinstance(address, IPv6Address):
        mapped = address.ipv4_mapped
        return mapped if mapped is not None else _without_scope(address)
    return address


# ---- exceptions --------------------------------------------------------------------------


class GuardError(Exception):
    """The outbound-request guard refused a target."""


class InvalidTargetError(GuardError, ValueError):
    """The URL cannot be a target: wrong scheme, userinfo, or a host that is not well formed."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        self.problem = problem
        super().__init__(f"refusing outbound request to {url!r}: {problem}")


class ForbiddenTargetError(GuardError, ValueError):
    """The host resolves to (or is) an address in a forbidden range."""

    def __init__(self, host: str, refusal: Refusal, *, redirected_from: str | None = None) -> None:
        self.host = host
        self.address = refusal.address
        self.refusal = refusal
        self.redirected_from = redirected_from
        via = f" (redirected from {redirected_from})" if redirected_from else ""
        shown = f"{host!r} ({refusal.address})" if host != str(refusal.address) else str(refusal.address)
        super().__init__(
            f"refusing outbound request to {shown}{via}: {refusal} is a forbidden range; "
            "if this deployment must reach it, add the network or the host name to the allow-list"
        )


class UnresolvableTargetError(GuardError):
    def __init__(self, host: str, detail: str) -> None:
        self.host = host
        super().__init__(f"cannot resolve {host!r}: {detail}")


class TooManyRedirectsError(GuardError):
    def __init__(self, url: str, limit: int) -> None:
        self.url = url
        self.limit = limit
        super().__init__(f"more than {limit} redirects starting at {url!r}; stopped")


# ---- host names and literals -------------------------------------------------------------

_NAME_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")


def _ipv4_number(part: str) -> int | None:
    """One part of an ``inet_aton`` address: decimal, octal (leading 0) or hex (0x)."""
    if part.startswith("0x"):
        digits, base = part[2:], 16
        if not digits:
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits.isalnum() and digits.isascii() else None
    except ValueError:
        return None


def _parse_ipv4(host: str) -> IPv4Address | None:
    """``inet_aton`` / WHATWG semantics: 1-4 parts; the last part fills the remaining bytes."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    *leading, last = values
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(values)):
        return None
    result = last
    for index, number in enumerate(leading):
        result += number << (8 * (3 - index))
    return IPv4Address(result)


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address if ``host`` is an IP literal in any form; ``None`` if it is a name.

    Raises ``ValueError`` for hosts that look numeric but are not a valid address (a resolver
    might still turn them into one).
    """
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        if "%" in host:
            raise ValueError("IPv6 zone identifiers are not allowed")
        return IPv6Address(host)
    labels = host.rstrip(".").split(".") if host not in ("", ".") else [""]
    if not _NUMERIC_LABEL.fullmatch(labels[-1]):
        return None
    parsed = _parse_ipv4(host)
    if parsed is None:
        raise ValueError("the host ends in a number but is not a valid IPv4 address")
    return parsed


def _normalise_name(host: str) -> str:
    name = host.lower()
    return name[:-1] if name.endswith(".") else name


def _valid_name(name: str) -> bool:
    return 0 < len(name) <= 253 and all(_NAME_LABEL.fullmatch(label) for label in name.split("."))


def _is_localhost(name: str) -> bool:
    return name == "localhost" or name.endswith(".localhost")


# ---- the policy --------------------------------------------------------------------------


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address of ``host`` (all families), from getaddrinfo through the event loop."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _parse_allow_entry(entry: str) -> IPNetwork | str:
    try:
        return ip_network(entry, strict=False)
    except ValueError:
        pass
    if not entry.isascii():  # match names the way they are connected to: IDNA-encoded by httpx
        with suppress(httpx.InvalidURL, UnicodeError, ValueError):
            entry = httpx.URL(f"http://{entry}/").raw_host.decode("ascii")
    name = _normalise_name(entry)
    if not _valid_name(name):
        raise ValueError(f"allow-list entry {entry!r} is neither a network (CIDR or address) nor a host name")
    return name


@dataclass(frozen=True, slots=True)
class OutboundPolicy:
    """What the guard admits besides public addresses, and how it resolves names.

    The default (no allow-list) admits public addresses only. ``allow_networks`` admits
    addresses in those networks; ``allow_hosts`` admits every address of those names (exact
    names, no wildcards). An IPv4-mapped address is matched as the IPv4 address it is; other
    IPv6 forms (NAT64, 6to4) must be listed as IPv6. ``localhost`` is admitted by its name, or
    by listing both ``127.0.0.1`` and ``::1``. Listing ``0.0.0.0/0`` and ``::/0`` admits every
    address (the scheme, credentials and connect-to-the-checked-address rules still hold).
    """

    allow_networks: tuple[IPNetwork, ...] = ()
    allow_hosts: frozenset[str] = frozenset()
    resolver: Resolver = field(default=system_resolver)
    resolve_timeout: float = DEFAULT_RESOLVE_TIMEOUT

    @classmethod
    def from_allow_list(
        cls, entries: str | Iterable[str] | None, *, resolver: Resolver = system_resolver
    ) -> OutboundPolicy:
        """Build a policy from CIDRs, addresses and host names (a comma-separated string or a list).

        Raises ``ValueError`` naming the entry that is neither a network nor a host name.
        """
        if entries is None:
            entries = ()
        elif isinstance(entries, str):
            entries = entries.split(",")
        networks: list[IPNetwork] = []
        hosts: set[str] = set()
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            parsed = _parse_allow_entry(entry)
            if isinstance(parsed, str):
                hosts.add(parsed)
            else:
                networks.append(parsed)
        return cls(tuple(networks), frozenset(hosts), resolver)

    def admits(self, host: str, address: IPAddress) -> bool:
        """True if the allow-list admits ``address`` (reached through ``host``)."""
        if _normalise_name(host) in self.allow_hosts:
            return True
        return any(address in network for network in self.allow_networks)


DEFAULT_POLICY = OutboundPolicy()


# ---- checking ----------------------------------------------------------------------------


async def _addresses_of(host: str, port: int, policy: OutboundPolicy) -> list[IPAddress]:
    try:
        literal = parse_ip_literal(host)
    except ValueError as exc:
        raise InvalidTargetError(host, str(exc)) from exc
    if literal is not None:
        return [literal]
    name = _normalise_name(host)
    if not _valid_name(name):
        raise InvalidTargetError(host, "the host is not a well-formed name (letters, digits, '-', '_', '.')")
    if _is_localhost(name):  # RFC 6761: always loopback, whatever a resolver would say
        return [IPv4Address("127.0.0.1"), IPv6Address("::1")]
    try:
        async with asyncio.timeout(policy.resolve_timeout):
            raw = await policy.resolver(host, port)
    except TimeoutError as exc:
        raise UnresolvableTargetError(host, f"no answer within {policy.resolve_timeout:g}s") from exc
    except OSError as exc:  # socket.gaierror
        raise UnresolvableTargetError(host, str(exc)) from exc
    addresses: list[IPAddress] = []
    for text in raw:
        try:
            addresses.append(ip_address(text.split("%", 1)[0]))
        except ValueError as exc:
            raise UnresolvableTargetError(host, f"the resolver returned {text!r}, not an address") from exc
    return addresses


async def resolve_target(
    host: str, port: int, policy: OutboundPolicy = DEFAULT_POLICY, *, redirected_from: str | None = None
) -> tuple[IPAddress, ...]:
    """Resolve ``host`` and check every address; return them, ready to connect to.

    Raises ``ForbiddenTargetError`` if any address is forbidden and not admitted: one bad
    address is enough, since a resolver (or an attacker's DNS) chooses which one we would get.
    """
    found = await _addresses_of(host, port, policy)
    if not found:
        raise UnresolvableTargetError(host, "the resolver returned no addresses")
    checked: list[IPAddress] = []
    for original in found:
        address = _connectable(original)
        if not policy.admits(host, address):
            refusal = check_address(original)
            if refusal is not None:
                raise ForbiddenTargetError(host, refusal, redirected_from=redirected_from)
        if address not in checked:
            checked.append(address)
    return tuple(checked)


@dataclass(frozen=True, slots=True)
class CheckedTarget:
    url: str
    host: str
    port: int
    addresses: tuple[IPAddress, ...]


_USERINFO = re.compile(r"(//)[^/?#]*@")


def _parse_url(url: str | httpx.URL) -> httpx.URL:
    try:
        return url if isinstance(url, httpx.URL) else httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        shown = _USERINFO.sub(r"\1***@", str(url))  # never echo a password
        raise InvalidTargetError(shown, "not a valid URL") from exc


def _check_url_form(parsed: httpx.URL) -> str:
    """The URL's host (IDNA-encoded, as it will be connected to) if its form is acceptable."""
    shown = str(parsed.copy_with(userinfo=b"")) if parsed.userinfo else str(parsed)  # never echo a password
    if parsed.scheme not in ALLOWED_SCHEMES:
        raise InvalidTargetError(shown, f"the scheme must be http or https, not {parsed.scheme!r}")
    if parsed.userinfo:
        raise InvalidTargetError(shown, "credentials in the URL (user:password@) are not allowed")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise InvalidTargetError(shown, "the URL has no host")
    return host


async def check_url(
    url: str | httpx.URL, policy: OutboundPolicy = DEFAULT_POLICY, *, redirected_from: str | None = None
) -> CheckedTarget:
    """Check a URL now (e.g. when a webhook is registered); the connection is checked again.

    Raises ``InvalidTargetError``, ``ForbiddenTargetError`` or ``UnresolvableTargetError``.
    """
    parsed = _parse_url(url)
    host = _check_url_form(parsed)
    port = parsed.port or DEFAULT_PORTS[parsed.scheme]
    addresses = await resolve_target(host, port, policy, redirected_from=redirected_from)
    return CheckedTarget(str(parsed), host, port, addresses)


# ---- connecting --------------------------------------------------------------------------
#
# The seam is httpcore's network backend: ``AsyncConnectionPool(network_backend=...)`` asks it
# for every new TCP connection, by name, and it returns a stream already connected to a checked
# address. Everything above the socket (TLS with SNI and certificate checks for the name, the
# Host header, the pool keyed by name, HTTP/2) stays httpcore's, so a connection made for one
# name is never reused for another, and a name is resolved once per connection, not per request.
# httpx offers no way to hand its transport a network backend, so ``GuardedTransport`` is an
# ``httpx.AsyncBaseTransport`` of its own over a public httpcore pool.


class GuardedNetworkBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that resolves and checks the host, then connects by IP.

    httpcore still believes it connects to the name, so TLS sends that name (SNI) and verifies
    the certificate against it, and the connection pool keys connections by name.
    """

    def __init__(self, policy: OutboundPolicy = DEFAULT_POLICY, inner: httpcore.AsyncNetworkBackend | None = None):
        self.policy = policy
        self._inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                addresses = await resolve_target(host, port, self.policy)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host!r} took longer than {timeout}s") from exc
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        if last is None:  # resolve_target never returns an empty tuple; kept for -O runs
            raise UnresolvableTargetError(host, "no address to connect to")
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise InvalidTargetError(path, "Unix sockets are not allowed for outbound requests")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


#: httpcore's errors as httpx's (what callers of an httpx transport catch); the first match wins,
#: so subclasses come before their bases.
_HTTPX_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextmanager
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _HTTPX_ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc), request=request) from exc
        raise


class _ResponseBody(httpx.AsyncByteStream):
    """An httpcore response's body as an httpx stream (its errors as httpx's)."""

    def __init__(self, response: httpcore.Response, request: httpx.Request) -> None:
        self.response = response
        self.request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors(self.request):
            async for chunk in self.response.aiter_stream():
                yield chunk

    async def aclose(self) -> None:
        with _as_httpx_errors(self.request):
            await self.response.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose every connection goes through ``GuardedNetworkBackend``.

    No proxies (a proxy would connect on our behalf, unchecked) and no Unix sockets.
    ``inner_backend`` opens the connections once they are checked (default: httpcore's anyio
    backend; the tests pass one that records instead of connecting).
    """

    def __init__(
        self,
        policy: OutboundPolicy = DEFAULT_POLICY,
        *,
        verify: ssl.SSLContext | bool | str = True,
        limits: httpx.Limits = DEFAULT_LIMITS,
        http2: bool = False,
        inner_backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self.policy = policy
        self._connections = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=http2,
            network_backend=GuardedNetworkBackend(policy, inner_backend),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        _check_url_form(request.url)
        if not isinstance(request.stream, httpx.AsyncByteStream):
            raise TypeError("GuardedTransport sends requests with an async body only")
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors(request):
            response = await self._connections.handle_async_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseBody(response, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._connections.aclose()


class GuardedClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` for caller-chosen URLs: guarded connections, no redirects, no
    environment proxies or ``.netrc``. Follow redirects with ``stream_following_redirects``."""

    def __init__(
        self,
        policy: OutboundPolicy = DEFAULT_POLICY,
        *,
        timeout: float | httpx.Timeout = 30.0,
        headers: Mapping[str, str] | None = None,
        verify: ssl.SSLContext | bool | str = True,
        limits: httpx.Limits = DEFAULT_LIMITS,
        inner_backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self.policy = policy
        super().__init__(
            transport=GuardedTransport(policy, verify=verify, limits=limits, inner_backend=inner_backend),
            follow_redirects=False,
            trust_env=False,
            timeout=timeout,
            headers=headers,
        )

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        wanted = kwargs.get("follow_redirects")
        if (wanted if isinstance(wanted, bool) else self.follow_redirects) is True:
            raise ValueError(
                "GuardedClient does not follow redirects by itself; use stream_following_redirects(), "
                "which re-checks every hop"
            )
        return await super().send(request, **kwargs)


_SENSITIVE_HEADERS = ("authorization", "cookie", "proxy-authorization")


def _redirect(response: httpx.Response, method: str) -> tuple[httpx.URL, str]:
    location = response.headers["location"]
    try:
        target = response.url.join(location)
    except (httpx.InvalidURL, ValueError) as exc:
        raise InvalidTargetError(location, f"bad redirect Location from {response.url} ({exc})") from exc
    status = response.status_code
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method = "GET"
    return target, method


@asynccontextmanager
async def stream_following_redirects(
    client: GuardedClient,
    url: str | httpx.URL,
    *,
    method: str = "GET",
    headers: Mapping[str, str] | None = None,
    content: bytes | None = None,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
) -> AsyncIterator[httpx.Response]:
    """Send a request and follow up to ``max_redirects`` redirects, checking every hop.

    Yields the final response, open for streaming (``response.history`` holds the redirect
    responses, closed). Credentials headers are dropped when a redirect changes origin;
    a method changed to GET drops the body. Raises ``TooManyRedirectsError`` past the limit.
    """
    response = await _follow(client, _parse_url(url), method.upper(), dict(headers or {}), content, max_redirects)
    try:
        yield response
    finally:
        await response.aclose()


async def _follow(
    client: GuardedClient,
    url: httpx.URL,
    method: str,
    headers: dict[str, str],
    content: bytes | None,
    max_redirects: int,
) -> httpx.Response:
    start = url
    await check_url(url, client.policy)
    history: list[httpx.Response] = []
    for hop in range(max_redirects + 1):
        request = client.build_request(method, url, headers=headers, content=content)
        response = await client.send(request, stream=True)
        if not response.has_redirect_location:
            response.history = history
            return response
        await response.aclose()
        history.append(response)
        if hop == max_redirects:
            break
        target, new_method = _redirect(response, method)
        await check_url(target, client.policy, redirected_from=str(url))
        if new_method != method:
            method, content = new_method, None
        if (target.scheme, target.host, target.port) != (url.scheme, url.host, url.port):
            headers = {k: v for k, v in headers.items() if k.lower() not in _SENSITIVE_HEADERS}
        url = target
    raise TooManyRedirectsError(str(start), max_redirects)
