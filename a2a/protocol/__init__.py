"""The wire, without I/O: the operation table, JSON-RPC and REST framing, SSE framing, versions."""

from . import rest
from .codec import decode_as, encode
from .jsonrpc import (
    Call,
    RequestError,
    decode_call,
    decode_response,
    decode_result,
    encode_error,
    encode_request,
    encode_result,
)
from .methods import METHODS, OPERATIONS, MethodSpec, RestRoute, with_tenant
from .sse import SSEDecoder, SSEEvent, encode_event
from .version import EXTENSIONS_HEADER, PROTOCOL_VERSION, VERSION_HEADER, check_version

__all__ = [
    "EXTENSIONS_HEADER",
    "METHODS",
    "OPERATIONS",
    "PROTOCOL_VERSION",
    "VERSION_HEADER",
    "Call",
    "MethodSpec",
    "RequestError",
    "RestRoute",
    "SSEDecoder",
    "SSEEvent",
    "check_version",
    "decode_as",
    "decode_call",
    "decode_response",
    "decode_result",
    "encode",
    "encode_error",
    "encode_event",
    "encode_request",
    "encode_result",
    "rest",
    "with_tenant",
]
