"""Admission, the same for every binding: the protocol version, the credentials, the extensions
and the event id to resume after, checked and turned into the caller's ``CallContext``."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import InvalidParamsError
from ...protocol.v03 import LEGACY_VERSION
from ...protocol.version import EXTENSIONS_HEADER, VERSION_HEADER, check_version
from ...telemetry import TRACEPARENT, TRACESTATE
from .auth import Authenticator
from .handler import CallContext

__all__ = ["LAST_EVENT_ID_HEADER", "admit", "last_event_id"]

LAST_EVENT_ID_HEADER = "Last-Event-ID"

_ANONYMOUS = CallContext()
_ANONYMOUS_V03 = CallContext(dialect=LEGACY_VERSION)


def admit(
    headers: Mapping[str, str], query: Mapping[str, str], authenticator: Authenticator, *, legacy: bool = False
) -> CallContext:
    """Check the protocol version and the credentials; the same code serves every binding.
    The caller's W3C trace context (``traceparent``, ``tracestate``) is carried along.

    ``headers`` must look names up case-insensitively (``bindings.messages.Headers``
    for service parameters that arrive another way, e.g. stdio's ``initialize``). The version
    and the extensions may also come as query parameters; credentials only as headers.
    """
    if not legacy:  # ``legacy``: the binding serves this request in 0.3 (``v03``), having checked so
        check_version(headers.get(VERSION_HEADER) or query.get(VERSION_HEADER))
    principal = authenticator.authenticate(headers)
    extensions = headers.get(EXTENSIONS_HEADER) or query.get(EXTENSIONS_HEADER)
    resume = headers.get(LAST_EVENT_ID_HEADER)
    traceparent = headers.get(TRACEPARENT)
    if principal is None and not extensions and resume is None and traceparent is None:
        # The common case: nothing to carry, and the context is immutable.
        return _ANONYMOUS_V03 if legacy else _ANONYMOUS
    requested = frozenset(e.strip() for e in extensions.split(",") if e.strip()) if extensions else frozenset()
    tracestate = headers.get(TRACESTATE) if traceparent is not None else None
    dialect = LEGACY_VERSION if legacy else ""
    return CallContext(principal, requested, last_event_id(resume), traceparent, tracestate, dialect)


def last_event_id(value: str | None) -> int | None:
    """The SSE ``Last-Event-ID`` a reconnecting client sends: one of our event ids (a number)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not (text.isascii() and text.isdigit()):  # "²" is a digit to isdigit, not to int
        raise InvalidParamsError(f"Last-Event-ID {text!r} is not an event id of this server (a whole number)")
    return int(text)
