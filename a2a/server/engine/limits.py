"""The HTTP server's resource bounds: how long a peer may take, how many connections it may hold,
which request encodings are inflated and how far; and the errors that refuse a request for them.

Every limit has a default that is safe on a machine with the usual 1,024 file descriptors; see
``protocol.md`` §11. ``A2AServer`` enforces them through ``connections`` (timeouts and caps, at
the connection) and ``bindings.messages.read_body`` (the decoded size of a body, and its deadline).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

from ...errors import InvalidRequestError, ParseError

__all__ = [
    "BODY_REFUSALS",
    "BodyDecodingError",
    "BodyTimeoutError",
    "HttpLimits",
    "UnsupportedEncodingError",
    "default_max_connections",
]

#: The most connections a server holds by default, however many descriptors it may open.
_MAX_CONNECTIONS_CEILING = 4096


def default_max_connections() -> int:
    """Connections held at once by default: a quarter of the process's descriptors (at least 64)
    stay free for the store, the log, push notifications and the listening socket, so that a
    flood of connections is refused with 503 before ``accept`` fails for want of a descriptor."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return _MAX_CONNECTIONS_CEILING
    return max(16, min(_MAX_CONNECTIONS_CEILING, soft - max(64, soft // 4)))


@dataclass
class HttpLimits:
    """Per-connection time limits, connection caps, and request encodings (``ServerConfig.limits``)."""

    #: Seconds from a connection's start, or from the first byte of a following request, to the
    #: end of the request's headers (slowloris): over it the connection is closed.
    header_timeout: float = 10.0
    #: Seconds from the end of the headers to the end of the body (a body that trickles or never
    #: ends): over it the request is answered 408 and the connection closed.
    body_timeout: float = 60.0
    #: Seconds a kept-alive connection may wait for its next request before it is closed.
    idle_timeout: float = 60.0
    #: A request answered before its body was read whole (413, 401, 415 ...): seconds during
    #: which the rest is read and thrown away (never inflated), at most as many bytes as the
    #: body limit (at least 1 MiB), so that a client that sends its whole body before it reads (most do) gets
    #: the answer instead of a reset connection; then, or at once with ``0``, the connection
    #: is closed.
    drain_timeout: float = 5.0
    #: Connections held at once; ``None``: ``default_max_connections()`` (below the process's
    #: descriptor limit). At the cap the connection idle the longest (waiting for a request, not
    #: serving one) is closed to make room; when none is idle, the newcomer is answered 503.
    max_connections: int | None = None
    #: Connections one client address may hold at once; the same eviction, then 503.
    max_connections_per_client: int = 256
    #: The ``Retry-After`` (seconds) of a 503 for too many connections.
    retry_after: int = 1
    #: ``Content-Encoding``s of request bodies that are inflated (under the body limit, which
    #: applies to the inflated size); any other encoding is refused with 415. Empty: none.
    request_encodings: tuple[str, ...] = ("gzip", "deflate")
    #: An encoded body may inflate to at most this many times its size (its first 64 KiB
    #: inflated aside): beyond, 413 (a compression bomb).
    max_inflate_ratio: int = 100

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout", "idle_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"HttpLimits.{name} must be positive")
        if self.drain_timeout < 0:
            raise ValueError("HttpLimits.drain_timeout must not be negative")
        if self.max_connections is not None and self.max_connections < 1:
            raise ValueError("HttpLimits.max_connections must be at least 1")
        if self.max_connections_per_client < 1:
            raise ValueError("HttpLimits.max_connections_per_client must be at least 1")
        self.request_encodings = tuple(e.strip().lower() for e in self.request_encodings if e.strip())
        unknown = set(self.request_encodings) - {"gzip", "x-gzip", "deflate"}
        if unknown:
            raise ValueError(f"HttpLimits.request_encodings: only gzip and deflate can be inflated, not {unknown}")

    @property
    def connection_cap(self) -> int:
        return self.max_connections if self.max_connections is not None else default_max_connections()


class UnsupportedEncodingError(InvalidRequestError):
    """A request body in a ``Content-Encoding`` the server does not inflate."""

    http_status, reason = 415, "UNSUPPORTED_CONTENT_ENCODING"


class BodyDecodingError(ParseError):
    """A request body that its ``Content-Encoding`` does not decode (not gzip, truncated)."""


class BodyTimeoutError(InvalidRequestError):
    """A request body that did not arrive within ``HttpLimits.body_timeout``."""

    http_status, grpc_status, reason = 408, "DEADLINE_EXCEEDED", "REQUEST_TIMEOUT"


#: Refusals of a body as HTTP carried it (its encoding, its pace): answered with their own HTTP
#: status on every binding, JSON-RPC's included (where errors otherwise travel with 200).
BODY_REFUSALS = (UnsupportedEncodingError, BodyDecodingError, BodyTimeoutError)
