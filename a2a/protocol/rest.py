"""HTTP+JSON (REST) framing for A2A, shared by the server's binding and the client's transport (no I/O).

The routes are the operation table's (``methods.RestRoute``). A server finds the operation of a
request with ``match`` and its typed params with ``decode_params``; a client frames a call with
``build``, the inverse. Results are the bare JSON object; errors are a ``google.rpc.Status``
with an ``ErrorInfo`` detail (``encode_error`` / ``decode_error``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import msgspec

from ..errors import (
    InternalError,
    InvalidParamsError,
    InvalidResponseError,
    MethodNotFoundError,
    ParseError,
    ProtocolError,
    error_for_code,
)
from .codec import convert_as, decode_as, decoder_for, encode
from .methods import OPERATIONS, WHOLE_REQUEST, MethodSpec
from .version import VERSION_HEADER

__all__ = [
    "MEDIA_TYPE",
    "ROUTER",
    "RestRequest",
    "Router",
    "build",
    "decode_error",
    "decode_params",
    "decode_result",
    "encode_error",
    "encode_result",
    "match",
]

MEDIA_TYPE = "application/a2a+json"

#: One path segment: a resource id never holds "/" or ":" (":" starts a custom verb).
_SEGMENT = r"[^/:]+"
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


# ---- routes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Route:
    spec: MethodSpec
    http_methods: frozenset[str]
    pattern: re.Pattern[str]


def _patterns(path: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The path template as a regex, without and with a tenant segment before it."""
    escaped = re.escape(path).replace(r"\{", "{").replace(r"\}", "}")
    regex = _PLACEHOLDER.sub(lambda m: f"(?P<{m.group(1)}>{_SEGMENT})", escaped)
    return re.compile(f"^{regex}$"), re.compile(f"^(?P<tenant>{_SEGMENT})/{regex}$")


class Router:
    """The REST routes of a table of operations (``ROUTER`` holds the A2A ones)."""

    def __init__(self, operations: Iterable[MethodSpec]) -> None:
        plain: list[_Route] = []
        tenanted: list[_Route] = []
        for spec in operations:
            methods = frozenset(spec.rest.http_methods)
            without, with_tenant = _patterns(spec.rest.path)
            plain.append(_Route(spec, methods, without))
            tenanted.append(_Route(spec, methods, with_tenant))
        # Without-tenant forms are tried first, so "tasks/x" is a task id, never a tenant called "tasks".
        self._routes = (*plain, *tenanted)

    def match(self, path: str, http_method: str) -> tuple[MethodSpec, dict[str, str]]:
        """The operation at ``path`` (relative to the interface URL, decoded) and its path fields;
        one trailing slash names the same operation (``tasks/`` is ``tasks``)."""
        allowed = False
        routed = path[:-1] if path.endswith("/") else path
        for route in self._routes:
            found = route.pattern.match(routed)
            if found is None:
                continue
            if http_method in route.http_methods:
                return route.spec, {k: v for k, v in found.groupdict().items() if v is not None}
            allowed = True
        if allowed:
            raise MethodNotFoundError(f"HTTP {http_method} is not allowed on /{path}")
        raise MethodNotFoundError(f"No A2A operation at /{path}")


ROUTER = Router(OPERATIONS)
match = ROUTER.match


# ---- server side: params -------------------------------------------------------------------


@functools.cache
def _wire_names(request_type: type) -> dict[str, str]:
    """Attribute name -> wire (camelCase) name of each field of a request type."""
    return {f.name: f.encode_name for f in msgspec.structs.fields(request_type)}


def decode_params(spec: MethodSpec, path_fields: Mapping[str, str], query: Mapping[str, str], body: bytes) -> Any:
    """The operation's typed params from the path fields (``match``), the query and the body."""
    request_type = spec.request_type
    if spec.rest.body == WHOLE_REQUEST:
        params: Any = decode_as(body or b"{}", request_type)
        return msgspec.structs.replace(params, **path_fields) if path_fields else params
    fields: dict[str, Any] = {}
    if body.strip():
        try:
            decoded = msgspec.json.decode(body)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise ParseError(f"Request body is not valid JSON (UTF-8): {exc}") from exc
        if not isinstance(decoded, dict):
            raise InvalidParamsError("Request body must be a JSON object")
        fields.update(decoded)
    fields.update(query)
    fields.pop(VERSION_HEADER, None)
    names = _wire_names(request_type)
    for name in path_fields:  # the path overrides the body, under either name
        fields.pop(name, None)
    fields.update({names.get(k, k): v for k, v in path_fields.items()})
    return convert_as(fields, request_type)


def encode_result(result: Any) -> bytes:
    """A unary result as the response body (an empty result is ``{}``)."""
    return encode(result if result is not None else {})


# ---- client side: requests and results ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestRequest:
    """One call as HTTP: ``path`` is relative to the interface URL and percent-encoded."""

    http_method: str
    path: str
    query: dict[str, str]
    body: bytes | None


def _query_value(value: Any) -> str:
    plain = msgspec.to_builtins(value)
    return str(plain).lower() if isinstance(plain, bool) else str(plain)


def _path_value(spec: MethodSpec, params: Any, field: str) -> str:
    value = getattr(params, field)
    if value is None:
        raise InvalidParamsError(
            f"{spec.name} over HTTP+JSON needs {_wire_names(spec.request_type)[field]}: it is in the path"
        )
    return str(value)


def build(spec: MethodSpec, params: Any) -> RestRequest:
    """The HTTP request that carries ``params`` to the operation (the inverse of ``match`` and
    ``decode_params``); the params' tenant, if any, is the first path segment."""
    route = spec.rest
    names = _wire_names(spec.request_type)
    path = _PLACEHOLDER.sub(lambda m: quote(_path_value(spec, params, m.group(1)), safe=""), route.path)
    tenant = getattr(params, "tenant", None)
    if tenant:
        path = f"{quote(tenant, safe='')}/{path}"
    query = {names[f]: _query_value(v) for f in route.query if (v := getattr(params, f)) is not None}
    body: bytes | None = None
    if route.body == WHOLE_REQUEST:
        body = encode(msgspec.structs.replace(params, tenant=None))
    elif route.body:
        body = encode({names[f]: v for f in route.body if (v := getattr(params, f)) is not None})
    return RestRequest(route.http_method, path, query, body)


def decode_result(body: bytes | str, result_type: type | None) -> Any:
    """A response body as the operation's result type (``None`` for an empty result)."""
    if result_type is None:
        return None
    try:
        return decoder_for(result_type).decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise InvalidResponseError(f"Peer sent an invalid {result_type.__name__}: {exc}") from exc


# ---- errors --------------------------------------------------------------------------------


def encode_error(error: ProtocolError) -> bytes:
    """The error body: HTTP status as ``code``, the gRPC status name, the message, the ErrorInfo."""
    return encode(
        {
            "error": {
                "code": error.http_status,
                "status": error.grpc_status,
                "message": error.message,
                "details": [error.error_info()],
            }
        }
    )


class _ErrorBody(msgspec.Struct):
    class _Status(msgspec.Struct):
        message: str = ""
        code: int | None = None
        details: list[Any] = []

    error: _Status


class _FlatErrorBody(msgspec.Struct):
    """A2A 0.3's HTTP+JSON error: ``{"message"}`` (a2a-sdk 0.3) or ``{"code", "message", "data"}``
    with the JSON-RPC code (``@a2a-js/sdk`` 0.3), beside the HTTP status."""

    message: str
    code: int | None = None
    data: Any = None


_error_decoder = msgspec.json.Decoder(_ErrorBody)
_flat_error_decoder = msgspec.json.Decoder(_FlatErrorBody)


def decode_error(body: bytes | str, http_status: int | None = None) -> ProtocolError | None:
    """The peer's error from an error body, or ``None`` when the body is not an A2A error.

    Read: 1.0's ``google.rpc.Status`` (by its ErrorInfo ``reason``, else its ``code``, an HTTP
    status), and 0.3's flat ``{"message"}`` / ``{"code", "message"}`` (by the JSON-RPC code, else
    ``http_status``, the status the body came with). A stream's error event has no status."""
    try:
        status = _error_decoder.decode(body).error
    except (msgspec.DecodeError, UnicodeDecodeError):
        return _decode_flat_error(body, http_status)
    reason = next((d["reason"] for d in status.details if isinstance(d, dict) and "reason" in d), None)
    data = status.details or None
    if reason is None:  # no ErrorInfo: the status code says what it can, else it is internal
        error = error_for_code(None, status.message, data, http_status=status.code)
        return error if type(error) is not ProtocolError else InternalError(status.message, data=data)
    return error_for_code(None, status.message, data, reason=reason)


def _decode_flat_error(body: bytes | str, http_status: int | None) -> ProtocolError | None:
    try:
        flat = _flat_error_decoder.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    code = flat.code
    if code is not None and 100 <= code <= 599:  # an HTTP status in the body, not a JSON-RPC code
        http_status, code = code, None
    if code is None and http_status is None:
        return None  # a bare {"message"} with nothing to say what it is
    error = error_for_code(code, flat.message, flat.data, http_status=http_status)
    if type(error) is ProtocolError and code is None:
        return None  # a status that names no A2A error (a proxy's 503): ``http_error`` reports it
    return error
