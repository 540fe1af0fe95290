"""JSON-RPC 2.0 framing for A2A, shared by every binding that carries JSON-RPC (no I/O)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import msgspec

from .. import types as t
from ..errors import (
    InvalidParamsError,
    InvalidRequestError,
    InvalidResponseError,
    MethodNotFoundError,
    ParseError,
    ProtocolError,
    error_for_code,
)
from . import v03
from .codec import decode_as, decoder_for, encode
from .methods import METHODS, MethodSpec
from .nesting import DEFAULT_MAX_JSON_DEPTH, NestingTooDeepError, check_depth, too_deep_id

__all__ = [
    "Call",
    "RequestIdCounter",
    "decode_call",
    "decode_response",
    "decode_result",
    "encode_error",
    "encode_request",
    "encode_result",
    "request_id_of",
]

_envelope_decoder = msgspec.json.Decoder(t.JSONRPCRequest)


class Call(msgspec.Struct, gc=False):
    """A decoded request: the id to answer with, the method, and its typed params."""

    id: t.RequestId
    method: MethodSpec
    params: Any
    #: Resume a stream after this sequence number (the envelope's ``lastEventId``).
    last_event_id: int | None = None
    #: The caller's W3C trace context (the envelope's ``traceparent`` and ``tracestate``).
    traceparent: str | None = None
    tracestate: str | None = None


class RequestError(Exception):
    """A ``ProtocolError`` plus the request id it answers (``None`` when none could be read).

    ``notification``: the request is a JSON object without ``id`` (a JSON-RPC notification),
    which a connection never answers. ``decodable``: the body may be decoded again (e.g. as a
    connection-level call); ``False`` when it nests too deeply to be decoded at all.
    """

    def __init__(
        self,
        error: ProtocolError,
        request_id: t.RequestId = None,
        *,
        notification: bool = False,
        decodable: bool = True,
    ) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id
        self.notification = notification
        self.decodable = decodable


def decode_call(
    body: bytes | str, methods: Mapping[str, MethodSpec] = METHODS, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH
) -> Call:
    """Decode and validate one request; raises ``RequestError`` with the id when it is known.

    ``methods``: the operations by method name (``methods.index`` of a table; the A2A ones).
    ``max_depth``: the deepest nesting of objects and arrays accepted (measured first, so
    that no decoder ever recurses deeper).
    """
    data = body if isinstance(body, bytes) else body.encode()
    env = _decode_envelope(data, max_depth)
    request_id = _valid_id(env.id)
    notification = env.id is t.UNSET
    if env.jsonrpc != "2.0":
        raise RequestError(
            InvalidRequestError('"jsonrpc" must be exactly "2.0"'), request_id, notification=notification
        )
    if notification or not (env.id is None or request_id is not None):
        raise RequestError(
            InvalidRequestError('"id" must be a string or an integer'), request_id, notification=notification
        )
    if not isinstance(env.method, str):
        raise RequestError(InvalidRequestError('"method" must be a string'), request_id)
    spec = methods.get(env.method)
    if spec is None:
        raise RequestError(MethodNotFoundError(f"Method not found: {env.method!r}"), request_id)
    resume = env.last_event_id
    if resume is not t.UNSET and (isinstance(resume, bool) or not isinstance(resume, int) or resume < 0):
        # The same answer as a bad SSE ``Last-Event-ID`` header (``server.admission``): a bad
        # resume point is a bad argument of the call, on every binding.
        raise RequestError(
            InvalidParamsError(f'"lastEventId" {resume!r} is not an event id of this server (a whole number)'),
            request_id,
        )
    raw = env.params if isinstance(env.params, msgspec.Raw) else b"{}"
    try:
        params: Any = decode_as(raw, spec.request_type)
    except ProtocolError as exc:  # invalid params, or invalid UTF-8 inside them
        raise RequestError(exc, request_id) from exc
    resume = None if resume is t.UNSET else resume
    if env.traceparent is t.UNSET:  # the usual case
        return Call(request_id, spec, params, resume)
    return Call(request_id, spec, params, resume, _text(env.traceparent), _text(env.tracestate))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _decode_envelope(data: bytes, max_depth: int) -> t.JSONRPCRequest:
    """The envelope (``params`` left raw), or ``RequestError``: too deep, not JSON, not an object."""
    try:
        check_depth(data, max_depth)
    except NestingTooDeepError as exc:
        raise RequestError(exc, too_deep_id(data), decodable=False) from None
    try:
        return _envelope_decoder.decode(data)
    except msgspec.ValidationError as exc:
        # Valid JSON of the wrong shape: an array (a batch, which A2A does not use) or a scalar.
        what = "a batch (a JSON array) is not supported" if data.lstrip()[:1] == b"[" else str(exc)
        raise RequestError(InvalidRequestError(f"Request must be one JSON-RPC 2.0 object: {what}")) from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise RequestError(ParseError(f"Request body is not valid JSON (UTF-8): {exc}")) from None
    except RecursionError:  # not reached after the depth check: a last guard, never a crash
        raise RequestError(NestingTooDeepError("JSON nested too deeply to decode"), decodable=False) from None


def _valid_id(value: Any) -> t.RequestId:
    """An envelope's ``id`` when it is one a request may have (a string or an integer), else ``None``."""
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def request_id_of(body: bytes | str, *, max_depth: int = DEFAULT_MAX_JSON_DEPTH) -> t.RequestId:
    """The id of a request refused before it is decoded (its version, its credentials), to
    answer it with: ``None`` when the body is no JSON-RPC object or holds no valid id."""
    try:
        env = _decode_envelope(body if isinstance(body, bytes) else body.encode(), max_depth)
    except RequestError as exc:
        return exc.request_id
    return _valid_id(env.id)


def encode_result(request_id: t.RequestId, result: Any) -> bytes:
    return encode(t.JSONRPCResponse(id=request_id, result=result))


def encode_error(request_id: t.RequestId, error: ProtocolError) -> bytes:
    body = t.JSONRPCError(code=error.code, message=error.message, data=[error.error_info()])
    return encode(t.JSONRPCErrorResponse(id=request_id, error=body))


# ---- client side -------------------------------------------------------------------------


class RequestIdCounter:
    """Monotonic integer ids for one client or connection."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def __call__(self) -> int:
        return next(self._next)


def encode_request(
    request_id: t.RequestId,
    method: str,
    params: Any,
    *,
    last_event_id: int | None = None,
    trace: dict[str, str] | None = None,
) -> bytes:
    """A request envelope; ``trace``: the W3C trace context members (``traceparent``, ``tracestate``)."""
    envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    if last_event_id is not None:
        envelope["lastEventId"] = last_event_id
    if trace:
        envelope.update(trace)
    return encode(envelope)


class _Response(msgspec.Struct):
    jsonrpc: Any = None
    id: Any = None
    result: msgspec.Raw | t.UnsetType = t.UNSET
    error: t.JSONRPCError | t.UnsetType = t.UNSET


_response_decoder = msgspec.json.Decoder(_Response)


def _reason(data: Any) -> str | None:
    """The ``ErrorInfo.reason`` of an error's ``data``, which names the error more exactly than its code."""
    for item in data if isinstance(data, list) else ():
        reason = item.get("reason") if isinstance(item, dict) else None
        if isinstance(reason, str):
            return reason
    return None


def decode_result(
    error: t.JSONRPCError | t.UnsetType, result: msgspec.Raw | t.UnsetType, result_type: type | None
) -> Any:
    """A response's typed ``result``, or its ``error`` raised as the matching exception.

    Every client of JSON-RPC uses it: over HTTP through ``decode_response``, over a connection
    (WebSocket, stdio) with the fields of each answer frame.
    """
    if isinstance(error, t.JSONRPCError):
        data = None if isinstance(error.data, t.UnsetType) else error.data
        raise error_for_code(error.code, error.message, data, reason=_reason(data))
    if isinstance(result, t.UnsetType):
        raise InvalidResponseError("Peer sent a JSON-RPC response with neither result nor error")
    try:
        return msgspec.json.decode(result) if result_type is None else decoder_for(result_type).decode(result)
    except msgspec.ValidationError as exc:
        if result_type in _V03_SHAPED:
            return _from_v03(result, result_type, exc)
        what = "result" if result_type is None else result_type.__name__
        raise InvalidResponseError(f"Peer sent an invalid {what}: {exc}") from exc
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        what = "result" if result_type is None else result_type.__name__
        raise InvalidResponseError(f"Peer sent an invalid {what}: {exc}") from exc


#: Results a peer may send in 0.3's shape (``kind``, kebab-case states) although it says 1.0:
#: LangGraph's endpoint does, for every streamed event. Read through ``v03`` when 1.0 refuses them.
_V03_SHAPED = (t.StreamResponse, t.SendMessageResponse, t.Task)


def _from_v03(result: msgspec.Raw, result_type: type, refused: msgspec.ValidationError) -> Any:
    """A result that is not 1.0, read as the 0.3 object it may be (by its ``kind``); the error
    names the field that is wrong, in whichever version it claims to be."""
    try:
        plain = msgspec.json.decode(result)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise InvalidResponseError(f"Peer sent an invalid {result_type.__name__}: {exc}") from exc
    if not (isinstance(plain, dict) and "kind" in plain):
        raise InvalidResponseError(f"Peer sent an invalid {result_type.__name__}: {refused}") from refused
    try:
        event = v03.event_from_v03(plain, "result")
        if result_type is t.Task:
            if "task" not in event:
                raise v03.V03Error(f"result.kind {plain.get('kind')!r} is not 'task'")
            return decoder_for(t.Task).decode(encode(event["task"]))
        return decoder_for(result_type).decode(encode(event))
    except (v03.V03Error, msgspec.ValidationError) as exc:
        raise InvalidResponseError(f"Peer sent an invalid A2A 0.3 {result_type.__name__}: {exc}") from exc


def decode_response(body: bytes, result_type: type | None) -> Any:
    """Decode a response envelope: the typed result, or raise the peer's error as an exception."""
    try:
        resp = _response_decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise InvalidResponseError(f"Peer sent an invalid JSON-RPC response: {exc}") from exc
    return decode_result(resp.error, resp.result, result_type)
