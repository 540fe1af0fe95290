"""The exception tree and its one table: JSON-RPC code, HTTP status and ErrorInfo reason per error."""

from __future__ import annotations

import re

import pytest

from a2a import errors as e

# From the protocol notes' table (which follows the spec's error mapping), plus our two additions.
TABLE = [
    (e.ParseError, -32700, 400),
    (e.InvalidRequestError, -32600, 400),
    (e.MethodNotFoundError, -32601, 404),
    (e.InvalidParamsError, -32602, 400),
    (e.InternalError, -32603, 500),
    (e.TaskNotFoundError, -32001, 404),
    (e.TaskNotCancelableError, -32002, 400),
    (e.PushNotificationNotSupportedError, -32003, 400),
    (e.UnsupportedOperationError, -32004, 400),
    (e.ContentTypeNotSupportedError, -32005, 400),
    (e.InvalidAgentResponseError, -32006, 500),
    (e.ExtendedAgentCardNotConfiguredError, -32007, 400),
    (e.ExtensionSupportRequiredError, -32008, 400),
    (e.VersionNotSupportedError, -32009, 400),
    (e.AuthenticationRequiredError, -32000, 401),
    (e.PayloadTooLargeError, -32600, 413),
]

A2A_SPECIFIC = [cls for cls, code, _ in TABLE if -32009 <= code <= -32001]


@pytest.mark.parametrize(("cls", "code", "status"), TABLE, ids=[c.__name__ for c, _, _ in TABLE])
def test_code_and_http_status(cls: type[e.ProtocolError], code: int, status: int) -> None:
    assert cls.code == code
    assert cls.http_status == status
    err = cls()
    assert err.code == code and err.http_status == status
    assert isinstance(err, e.ProtocolError) and isinstance(err, e.A2AError)


def _upper_snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Error")).upper()


@pytest.mark.parametrize("cls", A2A_SPECIFIC, ids=[c.__name__ for c in A2A_SPECIFIC])
def test_a2a_error_reason_is_its_name_in_upper_snake_without_error(cls: type[e.ProtocolError]) -> None:
    assert cls.reason == _upper_snake(cls.__name__)


def test_reasons_of_the_other_errors() -> None:
    assert {cls.__name__: cls.reason for cls, _, _ in TABLE if cls not in A2A_SPECIFIC} == {
        "ParseError": "PARSE_ERROR",
        "InvalidRequestError": "INVALID_REQUEST",
        "MethodNotFoundError": "METHOD_NOT_FOUND",
        "InvalidParamsError": "INVALID_PARAMS",
        "InternalError": "INTERNAL_ERROR",  # the reference SDK's reason
        "AuthenticationRequiredError": "UNAUTHENTICATED",
        "PayloadTooLargeError": "PAYLOAD_TOO_LARGE",
    }


def test_reasons_are_unique() -> None:
    reasons = [cls.reason for cls, _, _ in TABLE]
    assert len(reasons) == len(set(reasons))


@pytest.mark.parametrize(("cls", "code", "status"), TABLE, ids=[c.__name__ for c, _, _ in TABLE])
def test_error_info_detail(cls: type[e.ProtocolError], code: int, status: int) -> None:
    assert cls("boom").error_info() == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": cls.reason,
        "domain": "a2a-protocol.org",
        "metadata": {},
    }


def test_error_table_maps_each_code_to_its_class() -> None:
    expected = {code: cls for cls, code, _ in TABLE if cls is not e.PayloadTooLargeError}
    assert expected == e.ERROR_TABLE


def test_message_defaults_and_data() -> None:
    assert e.TaskNotFoundError().message == "Task not found"
    err = e.TaskNotFoundError("Task not found: t1", data=[{"reason": "TASK_NOT_FOUND"}])
    assert str(err) == "Task not found: t1" and err.data == [{"reason": "TASK_NOT_FOUND"}]


@pytest.mark.parametrize(("cls", "code", "status"), TABLE, ids=[c.__name__ for c, _, _ in TABLE])
def test_error_for_code_rebuilds_the_class(cls: type[e.ProtocolError], code: int, status: int) -> None:
    by_reason = e.error_for_code(None, "m", reason=cls.reason)
    assert type(by_reason) is cls and by_reason.message == "m"
    if cls is not e.PayloadTooLargeError:
        assert type(e.error_for_code(code, "m")) is cls


def test_error_for_code_prefers_the_reason_and_keeps_unknown_codes() -> None:
    assert type(e.error_for_code(-32603, "m", reason="TASK_NOT_FOUND")) is e.TaskNotFoundError
    assert type(e.error_for_code(-32001, "m", reason="NOT_A_REASON")) is e.TaskNotFoundError
    unknown = e.error_for_code(-32099, "custom", data={"x": 1})
    assert type(unknown) is e.ProtocolError
    assert unknown.code == -32099 and unknown.message == "custom" and unknown.data == {"x": 1}
    assert e.ProtocolError.code == -32603  # the class default is untouched


def test_client_side_errors_are_not_protocol_errors() -> None:
    for cls in (e.TransportError, e.HTTPStatusError, e.RequestTimeoutError, e.InvalidResponseError):
        assert issubclass(cls, e.ClientError) and not issubclass(cls, e.ProtocolError)
    assert issubclass(e.CardResolutionError, e.ClientError)
    assert issubclass(e.HTTPStatusError, e.TransportError)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(429, True), (502, True), (503, True), (504, True)]
    + [(s, False) for s in (400, 401, 403, 404, 405, 409, 413, 500, 501)],
)
def test_http_status_error_retryable(status: int, retryable: bool) -> None:
    err = e.HTTPStatusError("x", status=status, retry_after=2.0)
    assert err.retryable is retryable and err.status == status and err.retry_after == 2.0


def test_transport_error_is_not_retryable_by_default() -> None:
    assert e.TransportError("x").retryable is False
    assert e.TransportError("x", retryable=True).retryable is True
