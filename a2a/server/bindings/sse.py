"""What the two HTTP bindings share: admission of an HTTP request, the body limit, SSE output."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Protocol

from ...errors import InternalError, ProtocolError
from ...protocol.sse import encode_event
from ...protocol.version import VERSION_HEADER
from ..engine.admission import admit
from ..engine.auth import Authenticator
from ..engine.events import LoggedEvent
from ..engine.handler import CallContext
from .messages import HttpRequest, Streamed, Write
from .sse_heartbeat import Heartbeat, start_heartbeat

__all__ = [
    "DEFAULT_SSE_HEARTBEAT",
    "SSE_HEADERS",
    "first_event",
    "gate",
    "requested_version",
    "Frames",
    "SseFrames",
    "sse_error",
    "sse_stream",
]

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}
#: Seconds between two heartbeat comments on an event stream: well inside the client's idle
#: timeout (60 s by default) and the idle timeouts of common proxies.
DEFAULT_SSE_HEARTBEAT = 15.0


_NO_QUERY: Mapping[str, str] = {}


def gate(request: HttpRequest, authenticator: Authenticator, *, legacy: bool = False) -> CallContext:
    """Admit an HTTP request (see ``admit``): its headers, and its query when it has one."""
    # Parsing the query costs more than the rest of the gate: only when there is one.
    return admit(request.headers, request.query if request.query_string else _NO_QUERY, authenticator, legacy=legacy)


def requested_version(request: HttpRequest) -> str | None:
    """The ``A2A-Version`` a request asks for (header or query parameter), if any."""
    return request.headers.get(VERSION_HEADER) or (request.query.get(VERSION_HEADER) if request.query_string else None)


def sse_error(body: bytes) -> Streamed:
    """A stream that fails before its first event, as an SSE stream of that one error: what a
    0.3 client reads (it refuses any other content type, hiding the error)."""

    async def produce(write: Write) -> None:
        with contextlib.suppress(ConnectionError):
            await write(encode_event(body))

    return Streamed(SSE_HEADERS, produce)


async def first_event(events: AsyncIterator[LoggedEvent]) -> LoggedEvent:
    """The stream's first event, fetched before any SSE header is sent, so that an error
    (task not found, streaming off ...) is answered as an ordinary error response."""
    try:
        return await events.__anext__()
    except StopAsyncIteration:
        raise InternalError("The stream ended before its first event") from None


class SseFrames(Protocol):
    """How a binding frames a stream: each event's ``data``, and the error that ends it."""

    def event(self, logged: LoggedEvent) -> bytes: ...

    def error(self, error: ProtocolError) -> bytes: ...


class Frames:
    """``SseFrames`` from two functions."""

    __slots__ = ("error", "event")

    def __init__(self, event: Callable[[LoggedEvent], bytes], error: Callable[[ProtocolError], bytes]) -> None:
        self.event = event
        self.error = error


async def sse_stream(
    events: AsyncIterator[LoggedEvent],
    frames: SseFrames,
    heartbeat: float | None = DEFAULT_SSE_HEARTBEAT,
) -> Streamed:
    """``events`` as SSE, each with its sequence number as ``id``; ends when the stream ends.

    The first event is fetched here, before any header: an error then (task not found,
    streaming off ...) is raised as is, and answered as an ordinary error response. A stream
    that fails later ends with its error as an ``error`` event (the handler raises only
    ``ProtocolError``). A client that goes away stops only its own stream; the task goes on.
    Every ``heartbeat`` seconds a comment goes out too, so that a client (or a proxy) that
    bounds a stream's silence does not cut a quiet but live one.
    """
    # Closed whatever happens (a client gone while its run had not shown a task id: the run
    # stops, as nobody else can reach it).
    try:
        first = await first_event(events)
    except BaseException:
        await events.aclose()  # type: ignore[attr-defined]
        raise

    async def produce(write: Write) -> None:
        beating: Heartbeat | None = None
        try:
            await write(_sse(first, frames))
            if heartbeat is not None:
                beating = start_heartbeat(write, heartbeat)
            async for logged in events:
                await write(_sse(logged, frames))
        except ConnectionError:
            return
        except ProtocolError as exc:
            with contextlib.suppress(ConnectionError):
                await write(encode_event(frames.error(exc), event="error"))
        finally:
            if beating is not None:
                await beating.stop()
            await events.aclose()  # type: ignore[attr-defined]

    return Streamed(SSE_HEADERS, produce)


def _sse(logged: LoggedEvent, frames: SseFrames) -> bytes:
    return encode_event(frames.event(logged), event_id=str(logged.seq) if logged.seq else None)
