"""The wire, without I/O: JSON-RPC envelopes, the method table, SSE framing, versions."""

from .codec import decode_as, encode
from .jsonrpc import Call, RequestError, decode_call, decode_response, encode_error, encode_request, encode_result
from .methods import METHODS, MethodSpec
from .sse import SSEDecoder, SSEEvent, encode_event
from .version import EXTENSIONS_HEADER, PROTOCOL_VERSION, VERSION_HEADER, check_version

__all__ = [
    "EXTENSIONS_HEADER",
    "METHODS",
    "PROTOCOL_VERSION",
    "VERSION_HEADER",
    "Call",
    "MethodSpec",
    "RequestError",
    "SSEDecoder",
    "SSEEvent",
    "check_version",
    "decode_as",
    "decode_call",
    "decode_response",
    "encode",
    "encode_error",
    "encode_event",
    "encode_request",
    "encode_result",
]
