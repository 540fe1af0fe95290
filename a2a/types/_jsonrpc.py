"""JSON-RPC 2.0 envelopes as they travel on every binding."""

from __future__ import annotations

from typing import Any

import msgspec

from ._base import UNSET, UnsetType

__all__ = ["JSONRPCError", "JSONRPCErrorResponse", "JSONRPCRequest", "JSONRPCResponse", "RequestId"]

RequestId = str | int | None


class JSONRPCRequest(msgspec.Struct, omit_defaults=True, kw_only=True):
    """An incoming call; ``params`` stays raw so it is decoded once, by the method's own type."""

    jsonrpc: Any = UNSET
    method: Any = UNSET
    id: Any = UNSET
    params: msgspec.Raw | UnsetType = UNSET
    #: a2a-net: resume a stream after this event sequence number (WebSocket and stdio; over
    #: HTTP the SSE ``Last-Event-ID`` header says the same).
    last_event_id: Any = msgspec.field(default=UNSET, name="lastEventId")
    #: a2a-net: the caller's W3C trace context (WebSocket and stdio; over HTTP the headers of
    #: the same names say it). Read as given: a value that is no string is ignored.
    traceparent: Any = UNSET
    tracestate: Any = UNSET


class JSONRPCError(msgspec.Struct, omit_defaults=True, kw_only=True):
    code: int
    message: str
    data: Any = UNSET


class JSONRPCErrorResponse(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: RequestId
    error: JSONRPCError


class JSONRPCResponse(msgspec.Struct, kw_only=True):
    """A result envelope; ``result`` may be pre-encoded (``msgspec.Raw``) or any Struct."""

    jsonrpc: str = "2.0"
    id: RequestId
    result: Any
