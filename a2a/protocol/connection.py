"""JSON-RPC over one long-lived connection: what the WebSocket and stdio bindings add (no I/O).

Both bindings carry the very same JSON-RPC 2.0 requests, results and errors as the JSON-RPC
over HTTP binding, one message per WebSocket text frame or per line. Because many calls share
one connection, they add (see ``protocol.md`` §6 for the full text):

- **stream frames**: a streaming call is answered by one frame per event, each a JSON-RPC
  response with the call's ``id``, the ``StreamResponse`` as ``result`` and the event's sequence
  number as the sibling member ``seq``; then exactly one end frame
  ``{"jsonrpc":"2.0","id":ID,"streamEnd":{"reason":"complete"|"canceled"|"closed"}}``, or
  instead an error response, which also ends the stream;
- **``$/cancel``** (client to server, a notification ``{"id": ID}``): stop that one stream;
- **``GetAgentCard``**: the agent card, since a stdio agent has no URL to fetch it from;
- **``initialize``** (stdio only, the first request): the service parameters (``A2A-Version``,
  credentials, ``A2A-Extensions``) that HTTP sends as headers.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .. import types as t
from ..errors import InvalidResponseError
from .codec import encode

__all__ = [
    "CANCEL_METHOD",
    "CONTROL_METHODS",
    "END_CANCELED",
    "END_CLOSED",
    "END_COMPLETE",
    "GET_CARD_METHOD",
    "INITIALIZE_METHOD",
    "MAX_IN_FLIGHT_HEADER",
    "MAX_MESSAGE_HEADER",
    "STDIO_BINDING",
    "WEBSOCKET_BINDING",
    "CancelParams",
    "ControlCall",
    "Frame",
    "GetAgentCardParams",
    "InitializeParams",
    "InitializeResult",
    "Limits",
    "StreamEnd",
    "decode_control",
    "decode_frame",
    "encode_cancel",
    "encode_stream_end",
    "encode_stream_event",
    "stream_prefix",
]

#: ``protocolBinding`` of our WebSocket interface in ``supportedInterfaces`` (v1 of the framing).
WEBSOCKET_BINDING = "https://a2a-net.dev/bindings/websocket/v1"
#: ``protocolBinding`` of a stdio agent's card (its interface ``url`` is ``"stdio:"``).
STDIO_BINDING = "https://a2a-net.dev/bindings/stdio/v1"

CANCEL_METHOD = "$/cancel"
INITIALIZE_METHOD = "initialize"
GET_CARD_METHOD = "GetAgentCard"
#: Methods of the connection itself, not A2A operations.
CONTROL_METHODS = frozenset({CANCEL_METHOD, INITIALIZE_METHOD, GET_CARD_METHOD})

#: ``streamEnd.reason``: the stream reached its natural end (a Message, or a terminal or
#: interrupted state); the client canceled it; the server closed it early (e.g. shutting down:
#: the task may go on, and SubscribeToTask can follow it again).
END_COMPLETE = "complete"
END_CANCELED = "canceled"
END_CLOSED = "closed"

#: Response headers of the WebSocket upgrade that announce the connection's limits.
MAX_IN_FLIGHT_HEADER = "A2A-Max-In-Flight"
MAX_MESSAGE_HEADER = "A2A-Max-Message-Bytes"


class Limits(t.Wire):
    """A connection's limits, as a server announces them."""

    max_message_bytes: int
    max_in_flight: int


class InitializeParams(t.Wire):
    """``initialize``: what HTTP sends as headers, e.g. ``{"A2A-Version": "1.0", "Authorization": ...}``."""

    service_parameters: dict[str, str] = msgspec.field(default_factory=dict)


class InitializeResult(t.Wire):
    protocol_version: str
    binding: str
    limits: Limits


class CancelParams(msgspec.Struct):
    id: str | int


class GetAgentCardParams(t.Wire):
    tenant: str | None = None


class StreamEnd(msgspec.Struct):
    reason: str = END_COMPLETE


# ---- server side -------------------------------------------------------------------------


def stream_prefix(request_id: t.RequestId) -> bytes:
    """The constant start of every event frame of one stream (computed once per stream)."""
    return b'{"jsonrpc":"2.0","id":' + encode(request_id) + b","


def encode_stream_event(prefix: bytes, seq: int, body: bytes) -> bytes:
    """An event frame: ``body`` is the already encoded ``StreamResponse``; ``seq`` 0 means unknown."""
    if seq:
        return prefix + b'"seq":' + str(seq).encode() + b',"result":' + body + b"}"
    return prefix + b'"result":' + body + b"}"


def encode_stream_end(request_id: t.RequestId, reason: str) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "streamEnd": {"reason": reason}})


class ControlCall(msgspec.Struct):
    """A connection-level request: ``id`` is ``UNSET`` for a notification."""

    method: str
    id: t.RequestId | t.UnsetType
    params: msgspec.Raw


class _Envelope(msgspec.Struct):
    jsonrpc: Any = t.UNSET
    id: Any = t.UNSET
    method: Any = t.UNSET
    params: msgspec.Raw | t.UnsetType = t.UNSET


_envelope = msgspec.json.Decoder(_Envelope)


def decode_control(frame: bytes) -> ControlCall | None:
    """The frame as a connection-level call (``$/cancel``, ``initialize``, ``GetAgentCard``), else ``None``."""
    try:
        env = _envelope.decode(frame)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
        return None
    if env.jsonrpc != "2.0" or not isinstance(env.method, str) or env.method not in CONTROL_METHODS:
        return None
    request_id = env.id
    if request_id is not t.UNSET and (isinstance(request_id, bool) or not isinstance(request_id, (str, int))):
        request_id = None  # answered, but uncorrelatable: the peer sent a null or odd id
    params = env.params if isinstance(env.params, msgspec.Raw) else msgspec.Raw(b"{}")
    return ControlCall(env.method, request_id, params)


# ---- client side -------------------------------------------------------------------------


def encode_cancel(request_id: t.RequestId) -> bytes:
    return encode({"jsonrpc": "2.0", "method": CANCEL_METHOD, "params": {"id": request_id}})


class Frame(msgspec.Struct, rename={"stream_end": "streamEnd"}):
    """One message from a server, classified by what it carries (the result stays undecoded)."""

    jsonrpc: Any = None
    id: Any = None
    method: Any = t.UNSET
    result: msgspec.Raw | t.UnsetType = t.UNSET
    error: t.JSONRPCError | t.UnsetType = t.UNSET
    seq: int | None = None
    stream_end: StreamEnd | t.UnsetType = t.UNSET


_frame = msgspec.json.Decoder(Frame)


def decode_frame(data: bytes) -> Frame:
    """Parse one server message; anything that is not a JSON-RPC 2.0 object is ``InvalidResponseError``."""
    try:
        data.decode()  # the result stays undecoded below, so check all of it here
    except UnicodeDecodeError as exc:
        raise InvalidResponseError(f"not a JSON-RPC 2.0 message (not UTF-8: {exc.reason}): {_snippet(data)}") from exc
    try:
        frame = _frame.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise InvalidResponseError(f"not a JSON-RPC 2.0 message ({exc}): {_snippet(data)}") from exc
    if frame.jsonrpc != "2.0":
        raise InvalidResponseError(f'"jsonrpc" must be "2.0": {_snippet(data)}')
    return frame


def _snippet(data: bytes, size: int = 120) -> str:
    text = repr(data[:size])
    return text + ("..." if len(data) > size else "")
