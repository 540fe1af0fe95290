"""One exception tree for the whole package, server and client alike.

::

    A2AError                              anything this package raises on purpose
    ├── ProtocolError                     travels on the wire: JSON-RPC code, HTTP status, ErrorInfo
    │   ├── ParseError                    -32700  400  body is not JSON
    │   ├── InvalidRequestError           -32600  400  JSON, but not a valid request envelope
    │   │   └── PayloadTooLargeError      -32600  413  body over the server's limit
    │   ├── MethodNotFoundError           -32601  404
    │   ├── InvalidParamsError            -32602  400  wrong field, type, oneof, page size ...
    │   ├── InternalError                 -32603  500  generic text only; detail goes to the log
    │   ├── AuthenticationRequiredError   -32000  401  missing or wrong credentials
    │   ├── TaskNotFoundError             -32001  404  (also: another principal's task)
    │   ├── TaskNotCancelableError        -32002  400
    │   ├── PushNotificationNotSupportedError -32003 400
    │   ├── UnsupportedOperationError     -32004  400
    │   ├── ContentTypeNotSupportedError  -32005  400
    │   ├── InvalidAgentResponseError     -32006  500
    │   ├── ExtendedAgentCardNotConfiguredError -32007 400
    │   ├── ExtensionSupportRequiredError -32008  400
    │   └── VersionNotSupportedError      -32009  400
    └── ClientError                       raised only on the calling side
        ├── TransportError                could not talk to the peer (refused, reset, bad HTTP)
        │   └── HTTPStatusError           the peer answered with a non-A2A HTTP error (e.g. 503)
        ├── RequestTimeoutError           the call, or its overall deadline, ran out
        ├── InvalidResponseError          the peer's answer does not parse as A2A
        └── CardResolutionError           no usable agent card / interface at that address

Every ``ProtocolError`` subclass is declared once in ``ERROR_TABLE``; bindings look codes up
there (``error_for_code``) rather than hard-coding numbers. Errors from other libraries are
translated at the binding or transport boundary with ``raise ... from exc``. On the server,
only ``ProtocolError`` leaves the ``RequestHandler``: it logs any other exception once and
raises ``InternalError`` instead, so a binding catches ``ProtocolError`` and nothing else.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ERROR_DOMAIN",
    "ERROR_TABLE",
    "A2AError",
    "AuthenticationRequiredError",
    "CardResolutionError",
    "ClientError",
    "ContentTypeNotSupportedError",
    "ExtendedAgentCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "HTTPStatusError",
    "InternalError",
    "InvalidAgentResponseError",
    "InvalidParamsError",
    "InvalidRequestError",
    "InvalidResponseError",
    "MethodNotFoundError",
    "ParseError",
    "PayloadTooLargeError",
    "ProtocolError",
    "PushNotificationNotSupportedError",
    "RequestTimeoutError",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "TransportError",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "error_for_code",
]

ERROR_DOMAIN = "a2a-protocol.org"
_ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"


class A2AError(Exception):
    """Root of every error this package raises on purpose."""


class ProtocolError(A2AError):
    """An error with a defined wire form on every binding."""

    code: ClassVar[int] = -32603
    http_status: ClassVar[int] = 500
    grpc_status: ClassVar[str] = "INTERNAL"
    reason: ClassVar[str] = "INTERNAL"
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, *, data: Any = None) -> None:
        self.message = message or self.default_message
        #: Extra detail from a peer's error (JSON-RPC ``data`` / REST ``details``), if any.
        self.data = data
        super().__init__(self.message)

    def error_info(self) -> dict[str, Any]:
        """The ``google.rpc.ErrorInfo`` detail that goes with this error on the wire."""
        return {"@type": _ERROR_INFO_TYPE, "reason": self.reason, "domain": ERROR_DOMAIN, "metadata": {}}


class ParseError(ProtocolError):
    code, http_status, grpc_status, reason = -32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR"
    default_message = "Request body is not valid JSON"


class InvalidRequestError(ProtocolError):
    code, http_status, grpc_status, reason = -32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"
    default_message = "Request is not a valid JSON-RPC 2.0 request"


class PayloadTooLargeError(InvalidRequestError):
    http_status, grpc_status, reason = 413, "RESOURCE_EXHAUSTED", "PAYLOAD_TOO_LARGE"
    default_message = "Request body is larger than the server accepts"


class MethodNotFoundError(ProtocolError):
    code, http_status, grpc_status, reason = -32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"
    default_message = "Method not found"


class InvalidParamsError(ProtocolError):
    code, http_status, grpc_status, reason = -32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"
    default_message = "Invalid parameters"


class InternalError(ProtocolError):
    # The reference SDK's name for it; "INTERNAL" is accepted from peers too.
    reason = "INTERNAL_ERROR"
    default_message = "Internal error"


class AuthenticationRequiredError(ProtocolError):
    code, http_status, grpc_status, reason = -32000, 401, "UNAUTHENTICATED", "UNAUTHENTICATED"
    default_message = "Authentication required: send valid credentials as the agent card declares"


class TaskNotFoundError(ProtocolError):
    code, http_status, grpc_status, reason = -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"
    default_message = "Task not found"


class TaskNotCancelableError(ProtocolError):
    code, http_status, grpc_status, reason = -32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"
    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(ProtocolError):
    code, http_status, grpc_status = -32003, 400, "FAILED_PRECONDITION"
    reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"
    default_message = "Push notifications are not supported by this agent"


class UnsupportedOperationError(ProtocolError):
    code, http_status, grpc_status, reason = -32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"
    default_message = "This operation is not supported"


class ContentTypeNotSupportedError(ProtocolError):
    code, http_status, grpc_status, reason = -32005, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"
    default_message = "Content type not supported"


class InvalidAgentResponseError(ProtocolError):
    code, http_status, grpc_status, reason = -32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"
    default_message = "The agent produced an invalid response"


class ExtendedAgentCardNotConfiguredError(ProtocolError):
    code, http_status, grpc_status = -32007, 400, "FAILED_PRECONDITION"
    reason = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    default_message = "This agent has no extended agent card configured"


class ExtensionSupportRequiredError(ProtocolError):
    code, http_status, grpc_status, reason = -32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"
    default_message = "A required extension was not requested by the client"


class VersionNotSupportedError(ProtocolError):
    code, http_status, grpc_status, reason = -32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"
    default_message = "Protocol version not supported: send the header A2A-Version: 1.0"


# code -> class; PayloadTooLargeError shares -32600 with its parent and is not listed.
ERROR_TABLE: dict[int, type[ProtocolError]] = {
    cls.code: cls
    for cls in (
        ParseError,
        InvalidRequestError,
        MethodNotFoundError,
        InvalidParamsError,
        InternalError,
        AuthenticationRequiredError,
        TaskNotFoundError,
        TaskNotCancelableError,
        PushNotificationNotSupportedError,
        UnsupportedOperationError,
        ContentTypeNotSupportedError,
        InvalidAgentResponseError,
        ExtendedAgentCardNotConfiguredError,
        ExtensionSupportRequiredError,
        VersionNotSupportedError,
    )
}
_BY_REASON: dict[str, type[ProtocolError]] = {cls.reason: cls for cls in ERROR_TABLE.values()}
_BY_REASON[PayloadTooLargeError.reason] = PayloadTooLargeError
_BY_REASON["INTERNAL"] = InternalError


#: What an HTTP status alone says, for a peer whose error body has no code and no reason: the
#: HTTP+JSON binding of A2A 0.3 answers ``{"message": ...}`` with a status (a2a-sdk 0.3 maps
#: each error to one, ``-32602`` to 422, ``-32002`` to 409, ``-32004`` to 501...). 404 is also
#: a missing method or extended card, but an A2A error body on 404 from an operation on a task
#: (every 0.3 REST path but the card's) is the task; 400 says nothing more than "invalid".
_BY_HTTP_STATUS: dict[int, type[ProtocolError]] = {
    400: InvalidRequestError,
    401: AuthenticationRequiredError,
    404: TaskNotFoundError,
    409: TaskNotCancelableError,
    413: PayloadTooLargeError,
    415: ContentTypeNotSupportedError,
    422: InvalidParamsError,
    500: InternalError,
    501: UnsupportedOperationError,
    502: InvalidAgentResponseError,
}


def error_for_code(
    code: int | None, message: str, data: Any = None, *, reason: str | None = None, http_status: int | None = None
) -> ProtocolError:
    """Rebuild the exception a peer sent, from its ErrorInfo ``reason``, its JSON-RPC code, or
    (for a body that has neither) the HTTP status it came with, in that order."""
    cls = (
        (_BY_REASON.get(reason) if reason else None)
        or ERROR_TABLE.get(code or 0)
        or (_BY_HTTP_STATUS.get(http_status) if http_status is not None else None)
    )
    if cls is None:
        error = ProtocolError(message, data=data)
        if code is not None:
            error.code = code  # type: ignore[misc]  # keep an unknown peer code visible
        return error
    return cls(message, data=data)


class ClientError(A2AError):
    """Raised on the calling side only; never sent over the wire."""


class TransportError(ClientError):
    """The peer could not be reached or spoke broken HTTP. ``retryable`` says if a retry may help.

    On the error that ends a task's stream (one the client could not resume), ``task_id`` and
    ``last_event_id`` say where it stood: ``A2AClient.follow(task_id, after_event_id=...)`` picks
    it up from there later.
    """

    task_id: str | None = None
    last_event_id: str | None = None

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class HTTPStatusError(TransportError):
    """The peer answered with an HTTP error that carries no A2A error body."""

    def __init__(self, message: str, *, status: int, retry_after: float | None = None) -> None:
        super().__init__(message, retryable=status in (429, 502, 503, 504))
        self.status = status
        self.retry_after = retry_after


class RequestTimeoutError(ClientError):
    """The call or its overall deadline ran out."""


class InvalidResponseError(ClientError):
    """The peer's answer is not valid A2A."""


class CardResolutionError(ClientError):
    """No agent card, or no interface this client can use, at the given address.
    ``unsupported_version``: the A2A version the agent speaks, when that is the problem."""

    def __init__(self, message: str, *, unsupported_version: str | None = None) -> None:
        super().__init__(message)
        self.unsupported_version = unsupported_version
