"""The seam between the HTTP bindings and the hosts: a request in, an answer out, no web framework.

A host (aiohttp, ASGI) turns what its framework hands it into an ``HttpRequest``: the method, the
path under the mount point, the query, the headers, where the server is mounted and a bounded
byte source for the body. The bindings answer with one of three things, which the host writes in
its framework's terms:

- ``Reply``: a status, a content type, a body and any extra header (every unary answer);
- ``Streamed``: a status and headers, then bytes written as they come (an SSE stream);
- ``Upgrade``: the request becomes a WebSocket, served over a ``WebSocketChannel``.

The body is read here, the same for every host: the size limit applies as it arrives (and to the
decoded size of a ``Content-Encoding`` we inflate ourselves, in bounded steps), and the whole body
must arrive within ``HttpLimits.body_timeout``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol
from urllib.parse import parse_qsl, unquote

from ...errors import PayloadTooLargeError
from ..engine.limits import BodyDecodingError, BodyTimeoutError, HttpLimits, UnsupportedEncodingError

__all__ = [
    "JSON",
    "Answer",
    "Body",
    "Headers",
    "HttpRequest",
    "Reply",
    "Streamed",
    "Upgrade",
    "WebSocketChannel",
    "Write",
    "read_body",
    "server_software",
]

log = logging.getLogger("a2a.server")

JSON = "application/json"
#: Inflated bytes always allowed, whatever the ratio: small bodies compress very well.
_RATIO_FLOOR = 64 * 1024
#: The most inflated by one step, between two checks of the limit and the ratio.
_STEP = 64 * 1024


@functools.cache
def server_software() -> str:
    """The ``Server`` header of every answer: ``a2a-net/<version>``."""
    import a2a  # by the time anything is answered the package is imported

    return f"a2a-net/{a2a.__version__}"


class Headers(dict[str, str]):
    """Request headers, looked up case-insensitively (stored with lower-case names).

    A repeated header keeps its values joined with ``", "`` (RFC 9110 §5.3), and its name in
    ``repeated``: a credential sent twice is refused rather than one of them read."""

    __slots__ = ("repeated",)

    def __init__(self, pairs: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.repeated: frozenset[str] = frozenset()
        if pairs is not None:
            for name, value in pairs.items():
                dict.__setitem__(self, name.lower(), value)
            if isinstance(pairs, Headers):
                self.repeated = pairs.repeated

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, str]]) -> Headers:
        made = cls()
        repeated: set[str] = set()
        for name, value in pairs:
            key = name.lower()
            known = dict.get(made, key)
            if known is None:
                dict.__setitem__(made, key, value)
            else:
                dict.__setitem__(made, key, f"{known}, {value}")
                repeated.add(key)
        if repeated:
            made.repeated = frozenset(repeated)
        return made

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __setitem__(self, name: str, value: str) -> None:
        dict.__setitem__(self, name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return dict.get(self, name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


class Body(Protocol):
    """A request body as its host receives it: raw bytes (still encoded), chunk by chunk."""

    #: ``Content-Length``, when the request has one.
    length: int | None
    #: Whether the request has a body at all (a length, or chunked).
    exists: bool

    def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; ends with the body."""
        ...


@dataclass(slots=True)
class HttpRequest:
    """One HTTP request, as a host hands it to the bindings."""

    method: str
    #: The path under the mount point, still percent-encoded (what a log line shows).
    raw_path: str
    query_string: str
    headers: Headers
    body: Body
    #: The client's address (``None``: not known).
    remote: str | None
    #: ``http`` or ``https``, and the ``Host`` the request was sent to: the card's URLs follow them.
    scheme: str
    host: str
    #: Where the server is mounted in its host's application (``""``: at the root).
    mount: str = ""
    #: Whether the host inflated an encoded body already: ``False`` (it never does), ``None``
    #: (it may: a server of someone else's, such as the application we are mounted in).
    body_decoded: bool | None = False
    _query: Mapping[str, str] | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        """The path under the mount point, percent-decoded."""
        return unquote(self.raw_path)

    @property
    def route_path(self) -> str:
        """The path as it is routed: decoded, but for an encoded slash (``%2F`` never makes
        another endpoint's path)."""
        if "%" not in self.raw_path:
            return self.raw_path
        return unquote(self.raw_path.replace("%2F", "%252F").replace("%2f", "%252f"))

    @property
    def query(self) -> Mapping[str, str]:
        """The query parameters (the first of a repeated one)."""
        if self._query is None:
            parsed: dict[str, str] = {}
            for name, value in parse_qsl(self.query_string, keep_blank_values=True):
                parsed.setdefault(name, value)
            self._query = parsed
        return self._query

    @property
    def base_url(self) -> str:
        """The server's URL as this request reached it: scheme, host and mount point."""
        return f"{self.scheme}://{self.host}{self.mount}"


class Reply(NamedTuple):
    """A whole answer: status, content type, body, and any header beyond those (a challenge)."""

    status: int
    content_type: str
    body: bytes
    headers: Mapping[str, str] | None = None


#: Writes bytes to an open answer (a stream); raises ``ConnectionError`` once the client is gone.
Write = Callable[[bytes], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Streamed:
    """An answer whose body is written as it is made: ``produce`` writes it, then returns."""

    headers: Mapping[str, str]
    produce: Callable[[Write], Awaitable[None]]
    status: int = 200


class WebSocketChannel(Protocol):
    """One WebSocket connection as a host carries it."""

    async def receive(self) -> str | bytes | None:
        """The next message (text or binary); ``None`` once the connection is closed."""
        ...

    async def send(self, data: bytes) -> None:
        """Send ``data`` (UTF-8 JSON) as a text message."""
        ...

    async def close(self, code: int, reason: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Upgrade:
    """The request becomes a WebSocket (when it asks for one: else ``refusal`` answers it)."""

    headers: Mapping[str, str]
    #: The largest message accepted (the host refuses a larger one with close code 1009).
    max_message_bytes: int
    #: Seconds between pings the host sends, where it can (``None``: none).
    heartbeat: float | None
    serve: Callable[[WebSocketChannel], Awaitable[None]]
    #: The answer to a request for this path that is not a WebSocket handshake (426).
    refusal: Reply


Answer = Reply | Streamed | Upgrade


async def read_body(request: HttpRequest, limit: int, limits: HttpLimits) -> bytes:
    """The body, decoded: 413 as soon as it (or its decoded form) passes ``limit`` bytes; 415 for
    an encoding not inflated; 400 for one that does not decode; 408 when it did not arrive
    within ``limits.body_timeout``."""
    length = request.body.length
    if length is not None and length > limit:
        raise PayloadTooLargeError(f"Request body of {length} bytes is over the limit of {limit} bytes")
    if not request.body.exists:
        return b""
    encoding = (request.headers.get("Content-Encoding") or "").strip().lower()
    if encoding and encoding != "identity" and encoding not in limits.request_encodings:
        accepted = ", ".join(limits.request_encodings) or "none"
        raise UnsupportedEncodingError(
            f"Content-Encoding {encoding[:40]!r} is not accepted on requests (accepted: {accepted})"
        )
    try:
        async with asyncio.timeout(limits.body_timeout):
            if not encoding or encoding == "identity" or request.body_decoded:
                return await _read_plain(request.body, limit)
            return await _inflate(request, encoding, limit, limits.max_inflate_ratio)
    except TimeoutError:
        raise BodyTimeoutError(f"The request body did not arrive within {limits.body_timeout:g} s") from None


async def _read_plain(body: Body, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for chunk in body.chunks():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes")
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _looks_encoded(encoding: str, first: bytes) -> bool:
    """Whether ``first`` starts a gzip stream (its magic number) or a deflate one (a zlib header,
    or raw deflate: anything but the start of a JSON text)."""
    if encoding in ("gzip", "x-gzip"):
        return first[:2] == b"\x1f\x8b"
    return first[:1] not in (b"{", b"[", b" ", b"\n", b"\r", b"\t", b'"')


def _decompressor(encoding: str, first: bytes) -> zlib._Decompress:
    if encoding == "deflate" and first and first[0] & 0x0F != 8:
        # "deflate" is meant to be zlib-wrapped (RFC 9110), but some clients send it raw.
        return zlib.decompressobj(-zlib.MAX_WBITS)
    # gzip: exactly the gzip wrapper (16 + ...); deflate: the zlib wrapper.
    return zlib.decompressobj(16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS)


async def _inflate(request: HttpRequest, encoding: str, limit: int, ratio: int) -> bytes:
    inflater: zlib._Decompress | None = None
    out = bytearray()
    raw = consumed = 0
    try:
        async for chunk in request.body.chunks():
            raw += len(chunk)
            if raw > limit:
                raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes")
            if inflater is None:
                if request.body_decoded is None and not _looks_encoded(encoding, chunk):
                    # The host's server inflated it already (its own limit applied to that).
                    return chunk + await _read_plain(request.body, limit - len(chunk))
                inflater = _decompressor(encoding, chunk)
            data = chunk
            while data:
                if inflater.eof:
                    raise BodyDecodingError(f"Request body has data after the end of its {encoding} stream")
                # In small steps, each checked: a bomb is found after at most one step more
                # than its ratio allows, and never inflates past one byte over the limit.
                out += inflater.decompress(data, min(_STEP, limit + 1 - len(out)))
                consumed += len(data) - len(inflater.unconsumed_tail)
                data = inflater.unconsumed_tail or inflater.unused_data
                if len(out) > limit:
                    raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes once decoded")
                if len(out) > max(_RATIO_FLOOR, ratio * consumed):
                    raise PayloadTooLargeError(
                        f"Request body inflates over {ratio} times its size: refused as a compression bomb"
                    )
    except zlib.error as exc:
        raise _undecodable(request, encoding, str(exc)) from None
    if inflater is not None and not inflater.eof:
        raise _undecodable(request, encoding, "truncated")
    return bytes(out)


def _undecodable(request: HttpRequest, encoding: str, why: str) -> BodyDecodingError:
    log.warning("request body from %s is not valid %s: %s", request.remote, encoding, why)
    return BodyDecodingError(f"Request body is not valid {encoding} ({why})")
