"""JSON-RPC 2.0 framing (no I/O): every way a request can be wrong, and errors both ways."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from a2a import errors as e
from a2a import types as t
from a2a.protocol.jsonrpc import (
    RequestError,
    decode_call,
    decode_response,
    encode_error,
    encode_request,
    encode_result,
    request_id_of,
)
from a2a.protocol.methods import METHODS

GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t1"}}


def _call_error(body: bytes | str | dict[str, Any]) -> RequestError:
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    with pytest.raises(RequestError) as info:
        decode_call(raw)
    return info.value


# ---- decode_call: the happy path ------------------------------------------------------------------


@pytest.mark.parametrize("request_id", [1, 0, -5, 2**40, "abc", "", None])
def test_valid_ids_are_kept(request_id: t.RequestId) -> None:
    call = decode_call(json.dumps({**GET_TASK, "id": request_id}))
    assert call.id == request_id
    assert call.method.name == "GetTask"
    assert call.params == t.GetTaskRequest(id="t1")


def test_params_are_decoded_into_the_methods_type() -> None:
    body = {
        "jsonrpc": "2.0",
        "id": "r1",
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"historyLength": 2, "returnImmediately": True},
            "unknownFutureField": 1,
        },
    }
    call = decode_call(json.dumps(body).encode())
    assert isinstance(call.params, t.SendMessageRequest)
    assert call.params.message.parts[0].text == "hi"
    assert call.params.configuration is not None and call.params.configuration.return_immediately is True


def test_params_may_be_left_out_when_nothing_is_required() -> None:
    call = decode_call(b'{"jsonrpc":"2.0","id":6,"method":"GetExtendedAgentCard"}')
    assert call.params == t.GetExtendedAgentCardRequest()
    assert decode_call(b'{"jsonrpc":"2.0","id":6,"method":"ListTasks"}').params == t.ListTasksRequest()


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_is_known(name: str) -> None:
    spec = METHODS[name]
    assert spec.name == name
    assert spec.streaming == (name in ("SendStreamingMessage", "SubscribeToTask"))


def test_method_table_is_the_eleven_operations() -> None:
    assert set(METHODS) == {
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
    }


# ---- decode_call: every error path ----------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{", b"", b"not json", b'{"jsonrpc": "2.0",}', b"\xff\xfe{}", "{'a': 1}"])
def test_parse_error(body: bytes | str) -> None:
    err = _call_error(body)
    assert type(err.error) is e.ParseError and err.error.code == -32700
    assert err.request_id is None


@pytest.mark.parametrize("body", [b"[]", json.dumps([GET_TASK, GET_TASK]).encode(), json.dumps([GET_TASK]).encode()])
def test_batches_are_refused(body: bytes) -> None:
    err = _call_error(body)
    assert type(err.error) is e.InvalidRequestError and err.error.code == -32600
    assert err.request_id is None


@pytest.mark.parametrize("body", [b"1", b'"GetTask"', b"null", b"true"])
def test_a_scalar_is_not_a_request(body: bytes) -> None:
    assert type(_call_error(body).error) is e.InvalidRequestError


@pytest.mark.parametrize("version", ["1.0", "2", 2.0, 2, None, ""])
def test_wrong_jsonrpc_version(version: Any) -> None:
    err = _call_error({**GET_TASK, "jsonrpc": version, "id": 9})
    assert type(err.error) is e.InvalidRequestError
    assert "jsonrpc" in err.error.message
    assert err.request_id == 9  # the id is still answered when it could be read


def test_missing_jsonrpc_member() -> None:
    body = {k: v for k, v in GET_TASK.items() if k != "jsonrpc"}
    assert type(_call_error(body).error) is e.InvalidRequestError


@pytest.mark.parametrize(
    "bad_id",
    [True, False, 1.5, 1.0, {"a": 1}, [1], [], {}],
    ids=["true", "false", "float", "float-int", "object", "list", "empty-list", "empty-object"],
)
def test_bad_id_types(bad_id: Any) -> None:
    err = _call_error({**GET_TASK, "id": bad_id})
    assert type(err.error) is e.InvalidRequestError
    assert '"id"' in err.error.message
    assert err.request_id is None  # never echo an id of the wrong type


def test_missing_id_is_refused() -> None:
    # A notification (no id) gets no answer in JSON-RPC; A2A has no notifications.
    body = {k: v for k, v in GET_TASK.items() if k != "id"}
    assert type(_call_error(body).error) is e.InvalidRequestError


@pytest.mark.parametrize("method", [5, None, ["GetTask"], {"name": "GetTask"}, True])
def test_non_string_method(method: Any) -> None:
    err = _call_error({**GET_TASK, "method": method, "id": "x"})
    assert type(err.error) is e.InvalidRequestError
    assert '"method"' in err.error.message
    assert err.request_id == "x"


def test_missing_method() -> None:
    body = {k: v for k, v in GET_TASK.items() if k != "method"}
    assert type(_call_error(body).error) is e.InvalidRequestError


@pytest.mark.parametrize("method", ["message/send", "tasks/get", "getTask", "GETTASK", "", "SendMessage "])
def test_unknown_method(method: str) -> None:
    err = _call_error({**GET_TASK, "method": method, "id": 3})
    assert type(err.error) is e.MethodNotFoundError and err.error.code == -32601
    assert repr(method) in err.error.message
    assert err.request_id == 3


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("GetTask", {"id": 5}, "$.id"),
        ("GetTask", {}, "`id`"),
        ("GetTask", {"id": "t", "historyLength": "ten"}, "$.historyLength"),
        ("ListTasks", {"status": "working"}, "$.status"),
        ("ListTasks", {"pageSize": 1.5}, "$.pageSize"),
        ("CancelTask", {"id": ["t"]}, "$.id"),
        ("SendMessage", {}, "`message`"),
        ("SendMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}, "`messageId`"),
        ("SendMessage", {"message": {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}}, "$.message.role"),
        (
            "SendMessage",
            {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x", "url": "u"}]}},
            "$.message.parts[0]",
        ),
        (
            "SendMessage",
            {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
                "configuration": {"historyLength": "all"},
            },
            "$.configuration.historyLength",
        ),
        ("GetTaskPushNotificationConfig", {"taskId": "t"}, "`id`"),
    ],
)
def test_invalid_params_name_the_field(method: str, params: dict[str, Any], field: str) -> None:
    err = _call_error({"jsonrpc": "2.0", "id": 11, "method": method, "params": params})
    assert type(err.error) is e.InvalidParamsError and err.error.code == -32602
    assert field in err.error.message
    assert err.request_id == 11


@pytest.mark.parametrize("params", [[], [1, 2], "id", 5, None])
def test_params_must_be_an_object(params: Any) -> None:
    err = _call_error({**GET_TASK, "params": params})
    assert type(err.error) is e.InvalidParamsError


# ---- encode_error / encode_result -----------------------------------------------------------------

PROTOCOL_ERRORS = [*e.ERROR_TABLE.values(), e.PayloadTooLargeError]


@pytest.mark.parametrize("cls", PROTOCOL_ERRORS, ids=[c.__name__ for c in PROTOCOL_ERRORS])
@pytest.mark.parametrize("request_id", [7, "req-7", None])
def test_encode_error_carries_error_info(cls: type[e.ProtocolError], request_id: t.RequestId) -> None:
    wire = json.loads(encode_error(request_id, cls("something went wrong")))
    assert wire == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": cls.code,
            "message": "something went wrong",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": cls.reason,
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }
            ],
        },
    }


def test_encode_result_wraps_a_struct_in_wire_form() -> None:
    task = t.Task(id="t1", status=t.TaskStatus(state=t.TaskState.COMPLETED), context_id="c1")
    wire = json.loads(encode_result("r", task))
    assert wire == {
        "jsonrpc": "2.0",
        "id": "r",
        "result": {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}, "contextId": "c1"},
    }
    assert json.loads(encode_result(1, None)) == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert json.loads(encode_result(1, msgspec.Raw(b'{"a":1}')))["result"] == {"a": 1}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("GetTask", t.GetTaskRequest(id="t1", history_length=3)),
        ("ListTasks", t.ListTasksRequest(status=t.TaskState.WORKING, page_size=10, include_artifacts=True)),
        ("CancelTask", t.CancelTaskRequest(id="t1", metadata={"why": "user"})),
        ("SubscribeToTask", t.SubscribeToTaskRequest(id="t1", tenant="acme")),
        (
            "SendMessage",
            t.SendMessageRequest(
                message=t.Message(message_id="m", role=t.Role.USER, parts=[t.Part(data={"k": [1, None]})]),
                configuration=t.SendMessageConfiguration(return_immediately=True),
            ),
        ),
        ("GetExtendedAgentCard", t.GetExtendedAgentCardRequest()),
    ],
)
def test_encode_request_then_decode_call(method: str, params: Any) -> None:
    body = encode_request(42, method, params)
    wire = json.loads(body)
    assert wire["jsonrpc"] == "2.0" and wire["id"] == 42 and wire["method"] == method
    call = decode_call(body)
    assert call.id == 42 and call.method.name == method and call.params == params


# ---- decode_response (client side) ----------------------------------------------------------------


def _error_body(code: int, message: str = "m", data: Any = None, request_id: t.RequestId = 1) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


@pytest.mark.parametrize("code", sorted(e.ERROR_TABLE))
def test_decode_response_raises_the_class_for_the_code(code: int) -> None:
    with pytest.raises(e.ERROR_TABLE[code]) as info:
        decode_response(_error_body(code, "peer said no"), t.Task)
    assert type(info.value) is e.ERROR_TABLE[code]
    assert info.value.message == "peer said no"


@pytest.mark.parametrize("cls", PROTOCOL_ERRORS, ids=[c.__name__ for c in PROTOCOL_ERRORS])
def test_our_own_errors_decode_to_the_same_class(cls: type[e.ProtocolError]) -> None:
    with pytest.raises(cls) as info:
        decode_response(encode_error(3, cls("x")), t.Task)
    assert type(info.value) is cls
    assert info.value.data == [cls("x").error_info()]


def test_decode_response_uses_the_error_info_reason() -> None:
    data = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_CANCELABLE", "metadata": {}}]
    with pytest.raises(e.TaskNotCancelableError):
        decode_response(_error_body(-32603, data=data), t.Task)
    with pytest.raises(e.TaskNotFoundError):  # data that is not a list of ErrorInfo: the code decides
        decode_response(_error_body(-32001, data={"taskId": "nonexistent-task-id"}), t.Task)


def test_decode_response_keeps_an_unknown_code() -> None:
    with pytest.raises(e.ProtocolError) as info:
        decode_response(_error_body(-32050, "vendor error", data={"x": 1}), t.Task)
    assert type(info.value) is e.ProtocolError
    assert info.value.code == -32050 and info.value.data == {"x": 1}


def test_decode_response_returns_the_typed_result() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{"id":"t1","status":{"state":"TASK_STATE_WORKING"},"extra":1}}'
    assert decode_response(body, t.Task) == t.Task(id="t1", status=t.TaskStatus(state=t.TaskState.WORKING))
    assert decode_response(b'{"jsonrpc":"2.0","id":1,"result":{"a":[1]}}', None) == {"a": [1]}
    assert decode_response(b'{"jsonrpc":"2.0","id":1,"result":null}', None) is None


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<html>502 Bad Gateway</html>",
        b"[]",
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}',
        b'{"jsonrpc":"2.0","id":1,"error":{"message":"no code"}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"id":"t1"}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t","status":{"state":"x"}}}}',
    ],
)
def test_decode_response_refuses_what_is_not_a2a(body: bytes) -> None:
    result_type = t.SendMessageResponse if b"task" in body else t.Task
    with pytest.raises(e.InvalidResponseError):
        decode_response(body, result_type)


def test_decode_response_refuses_a_result_breaking_a_oneof() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    with pytest.raises(e.InvalidResponseError, match="SendMessageResponse"):
        decode_response(body, t.SendMessageResponse)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"jsonrpc": "2.0", "id": "r-1", "method": "ListTasks"}', "r-1"),
        (b'{"id": 7}', 7),
        ('{"id": 0, "method": 3}', 0),  # read even from an envelope decode_call would refuse
        (b'{"jsonrpc": "2.0", "id": true, "method": "ListTasks"}', None),
        (b'{"id": {"a": 1}}', None),
        (b'{"id": 1.5}', None),
        (b'{"method": "ListTasks"}', None),
        (b"[1]", None),
        (b"{not json", None),
        (b'{"id": "\xff', None),
        (b"", None),
    ],
)
def test_request_id_of_reads_a_valid_id_or_none(body: bytes | str, expected: object) -> None:
    """The id an early refusal answers with: the request's own when it is readable and valid."""
    assert request_id_of(body) == expected
