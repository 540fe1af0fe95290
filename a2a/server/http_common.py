"""What the HTTP bindings share: the request gate (version, credentials, body size) and SSE output."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping

from aiohttp import web

from ..errors import InternalError, InvalidParamsError, PayloadTooLargeError, ProtocolError
from ..protocol.sse import encode_event
from ..protocol.version import EXTENSIONS_HEADER, VERSION_HEADER, check_version
from .auth import Authenticator
from .events import LoggedEvent
from .handler import CallContext

__all__ = ["SSE_HEADERS", "admit", "first_event", "gate", "internal_error", "read_body", "write_sse"]

log = logging.getLogger("a2a.server")

LAST_EVENT_ID_HEADER = "Last-Event-ID"

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-store", "X-Accel-Buffering": "no"}


_NO_QUERY: Mapping[str, str] = {}
_ANONYMOUS = CallContext()


def gate(request: web.BaseRequest, authenticator: Authenticator) -> CallContext:
    """Check the protocol version and the credentials of an HTTP request (see ``admit``)."""
    # Parsing the query costs more than the rest of the gate: only when there is one.
    return admit(request.headers, request.query if request.query_string else _NO_QUERY, authenticator)


def admit(headers: Mapping[str, str], query: Mapping[str, str], authenticator: Authenticator) -> CallContext:
    """Check the protocol version and the credentials; the same code serves every binding.

    ``headers`` must look names up case-insensitively (aiohttp's headers, or a ``CIMultiDict``
    for service parameters that arrive another way, e.g. stdio's ``initialize``). The version
    and the extensions may also come as query parameters; credentials only as headers.
    """
    check_version(headers.get(VERSION_HEADER) or query.get(VERSION_HEADER))
    principal = authenticator.authenticate(headers)
    extensions = headers.get(EXTENSIONS_HEADER) or query.get(EXTENSIONS_HEADER)
    resume = headers.get(LAST_EVENT_ID_HEADER)
    if principal is None and not extensions and resume is None:
        return _ANONYMOUS  # the common case: nothing to carry, and the context is immutable
    requested = frozenset(e.strip() for e in extensions.split(",") if e.strip()) if extensions else frozenset()
    return CallContext(principal, requested, last_event_id(resume))


def last_event_id(value: str | None) -> int | None:
    """The SSE ``Last-Event-ID`` a reconnecting client sends: one of our event ids (a number)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isdigit():
        raise InvalidParamsError(f"Last-Event-ID {text!r} is not an event id of this server (a whole number)")
    return int(text)


async def read_body(request: web.BaseRequest, limit: int) -> bytes:
    """The body, refused with 413 before it is read whole when it is over ``limit`` bytes."""
    length = request.content_length
    if length is not None and length > limit:
        raise PayloadTooLargeError(f"Request body of {length} bytes is over the limit of {limit} bytes")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes") from exc


async def first_event(events: AsyncIterator[LoggedEvent]) -> LoggedEvent:
    """The stream's first event, fetched before any SSE header is sent, so that an error
    (task not found, streaming off ...) is answered as an ordinary error response."""
    try:
        return await events.__anext__()
    except StopAsyncIteration:
        raise InternalError("The stream ended before its first event") from None


def internal_error(exc: BaseException) -> ProtocolError:
    """An unexpected fault: the detail goes to the log, the caller gets a generic error."""
    log.error("internal error while serving a request", exc_info=exc)
    return InternalError()


async def write_sse(
    request: web.BaseRequest,
    first: LoggedEvent,
    rest: AsyncIterator[LoggedEvent],
    frame: Callable[[LoggedEvent], bytes],
    error_frame: Callable[[ProtocolError], bytes],
) -> web.StreamResponse:
    """Send events as SSE, each with its sequence number as ``id``; ends when the stream ends.

    A client that goes away stops only its own stream; the task goes on.
    """
    response = web.StreamResponse(headers=SSE_HEADERS)
    try:
        await response.prepare(request)
        await response.write(_sse(first, frame))
        async for logged in rest:
            await response.write(_sse(logged, frame))
    except (ConnectionResetError, ConnectionError):
        return response
    except ProtocolError as exc:
        await _try_write(response, encode_event(error_frame(exc), event="error"))
    except Exception as exc:  # noqa: BLE001 - the one boundary: never a traceback to the peer
        await _try_write(response, encode_event(error_frame(internal_error(exc)), event="error"))
    finally:
        await rest.aclose()  # type: ignore[attr-defined]
    with contextlib.suppress(ConnectionError):
        await response.write_eof()
    return response


def _sse(logged: LoggedEvent, frame: Callable[[LoggedEvent], bytes]) -> bytes:
    return encode_event(frame(logged), event_id=str(logged.seq) if logged.seq else None)


async def _try_write(response: web.StreamResponse, data: bytes) -> None:
    with contextlib.suppress(ConnectionError):
        await response.write(data)
