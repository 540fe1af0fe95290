"""The operation table: every operation carries each binding's mapping, REST framing round-trips
through ``build`` and ``match``, and an alias or a new operation is one edit to the table."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from collections.abc import AsyncIterator
from typing import Any, get_type_hints
from urllib.parse import unquote

import msgspec
import pytest

from a2a import errors as e
from a2a import types as t
from a2a.protocol import rest
from a2a.protocol.codec import encode
from a2a.protocol.jsonrpc import decode_call, encode_request
from a2a.protocol.methods import METHODS, OPERATIONS, WHOLE_REQUEST, MethodSpec, RestRoute, index, with_tenant
from a2a.server import Agent, CallContext, RequestHandler
from a2a.server.engine.events import LoggedEvent

_MESSAGE = t.Message(message_id="m1", role=t.Role.USER, parts=[t.Part(text="hi")])
_SEND = t.SendMessageRequest(
    message=_MESSAGE,
    configuration=t.SendMessageConfiguration(history_length=2, accepted_output_modes=["text/plain"]),
    metadata={"k": "v"},
)
#: One request per operation with every field set (ids with a space and a non-ASCII letter, so
#: that percent-encoding is exercised). A new operation needs a sample here.
SAMPLES: dict[str, Any] = {
    "SendMessage": _SEND,
    "SendStreamingMessage": _SEND,
    "GetTask": t.GetTaskRequest(id="task 1ü", history_length=0),
    "ListTasks": t.ListTasksRequest(
        context_id="c1",
        status=t.TaskState.WORKING,
        page_size=2,
        page_token="p1",
        history_length=3,
        status_timestamp_after="2026-01-01T00:00:00Z",
        include_artifacts=False,
    ),
    "CancelTask": t.CancelTaskRequest(id="task 1ü", metadata={"why": "done"}),
    "SubscribeToTask": t.SubscribeToTaskRequest(id="task 1ü"),
    "CreateTaskPushNotificationConfig": t.TaskPushNotificationConfig(
        url="https://hooks.example/a2a", id="c1", task_id="task 1ü", token="tok"
    ),
    "GetTaskPushNotificationConfig": t.GetTaskPushNotificationConfigRequest(task_id="task 1ü", id="c 1"),
    "ListTaskPushNotificationConfigs": t.ListTaskPushNotificationConfigsRequest(
        task_id="task 1ü", page_size=5, page_token="p2"
    ),
    "DeleteTaskPushNotificationConfig": t.DeleteTaskPushNotificationConfigRequest(task_id="task 1ü", id="c 1"),
    "GetExtendedAgentCard": t.GetExtendedAgentCardRequest(),
}

NAMES = [spec.name for spec in OPERATIONS]


def _fields(request_type: type) -> set[str]:
    return {f.name for f in msgspec.structs.fields(request_type)}


# ---- the table ---------------------------------------------------------------------------------


def test_every_operation_has_a_sample() -> None:
    assert sorted(SAMPLES) == sorted(NAMES)
    for spec in OPERATIONS:
        assert isinstance(SAMPLES[spec.name], spec.request_type)


@pytest.mark.parametrize("spec", OPERATIONS, ids=NAMES)
def test_every_operation_is_a_json_rpc_method(spec: MethodSpec) -> None:
    assert METHODS[spec.name] is spec
    call = decode_call(encode_request(7, spec.name, SAMPLES[spec.name]))
    assert call.method is spec and call.params == SAMPLES[spec.name]


@pytest.mark.parametrize("spec", OPERATIONS, ids=NAMES)
def test_every_operation_is_served_by_a_handler_method(spec: MethodSpec) -> None:
    method = getattr(RequestHandler, spec.handler)
    if spec.streaming:
        # An async generator, or a plain method returning an async iterator (an object that
        # an open stream holds instead of a generator's frames).
        assert spec.result_type is t.StreamResponse
        assert inspect.isasyncgenfunction(method) or get_type_hints(method)["return"] == AsyncIterator[LoggedEvent]
    else:
        assert inspect.iscoroutinefunction(method)


@pytest.mark.parametrize("spec", OPERATIONS, ids=NAMES)
def test_every_request_field_has_one_place_in_the_rest_route(spec: MethodSpec) -> None:
    route = spec.rest
    assert route.http_method in ("GET", "POST", "DELETE") and not route.path.startswith("/")
    fields = _fields(spec.request_type) - {"tenant"}  # the tenant is the optional first segment
    in_path = re.findall(r"\{(\w+)\}", route.path)
    assert set(in_path) <= fields and len(in_path) == len(set(in_path))
    if route.body == WHOLE_REQUEST:
        assert not route.query  # everything else travels in the body
        return
    placed = [*in_path, *route.body, *route.query]
    assert sorted(placed) == sorted(fields), f"{spec.name}: each field once in path, body or query"


def test_every_operation_has_its_own_rest_route() -> None:
    routes = [(method, spec.rest.path) for spec in OPERATIONS for method in spec.rest.http_methods]
    assert len(routes) == len(set(routes))


# ---- REST: build and match are inverses ---------------------------------------------------------


def _round_trip(spec: MethodSpec, params: Any) -> Any:
    wire = rest.build(spec, params)
    found, path_fields = rest.match(unquote(wire.path), wire.http_method)  # the server sees it decoded
    assert found is spec
    return rest.decode_params(spec, path_fields, wire.query, wire.body or b"")


@pytest.mark.parametrize("tenant", [None, "acme corp"])
@pytest.mark.parametrize("spec", OPERATIONS, ids=NAMES)
def test_rest_route_round_trips_through_build_and_match(spec: MethodSpec, tenant: str | None) -> None:
    params = msgspec.structs.replace(SAMPLES[spec.name], tenant=tenant)
    assert _round_trip(spec, params) == params


@pytest.mark.parametrize("spec", OPERATIONS, ids=NAMES)
def test_rest_route_round_trips_with_only_required_fields(spec: MethodSpec) -> None:
    sample = SAMPLES[spec.name]
    in_path = re.findall(r"\{(\w+)\}", spec.rest.path)
    required = {
        f.name: getattr(sample, f.name) for f in msgspec.structs.fields(sample) if f.required or f.name in in_path
    }
    params = spec.request_type(**required)
    assert _round_trip(spec, params) == params


def test_a_path_field_must_be_given() -> None:
    with pytest.raises(e.InvalidParamsError, match="taskId"):
        rest.build(METHODS["CreateTaskPushNotificationConfig"], t.TaskPushNotificationConfig(url="http://x"))


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("SendMessage", msgspec.structs.replace(_SEND, tenant="acme"), ("POST", "acme/message:send", {}, "body")),
        (
            "ListTasks",
            t.ListTasksRequest(status=t.TaskState.WORKING, page_size=2, include_artifacts=False),
            ("GET", "tasks", {"status": "TASK_STATE_WORKING", "pageSize": "2", "includeArtifacts": "false"}, None),
        ),
        (
            "GetTask",
            t.GetTaskRequest(id="a b/c", history_length=0),
            ("GET", "tasks/a%20b%2Fc", {"historyLength": "0"}, None),
        ),
        ("CancelTask", t.CancelTaskRequest(id="t1"), ("POST", "tasks/t1:cancel", {}, b"{}")),
        (
            "CancelTask",
            t.CancelTaskRequest(id="t1", metadata={"m": 1}),
            ("POST", "tasks/t1:cancel", {}, b'{"metadata":{"m":1}}'),
        ),
        ("SubscribeToTask", t.SubscribeToTaskRequest(id="t1"), ("GET", "tasks/t1:subscribe", {}, None)),
        (
            "CreateTaskPushNotificationConfig",
            t.TaskPushNotificationConfig(url="http://x", task_id="t1", tenant="acme"),
            ("POST", "acme/tasks/t1/pushNotificationConfigs", {}, b'{"url":"http://x","taskId":"t1"}'),
        ),
        (
            "ListTaskPushNotificationConfigs",
            t.ListTaskPushNotificationConfigsRequest(task_id="t1", page_size=5),
            ("GET", "tasks/t1/pushNotificationConfigs", {"pageSize": "5"}, None),
        ),
        (
            "GetTaskPushNotificationConfig",
            t.GetTaskPushNotificationConfigRequest(task_id="t1", id="c1"),
            ("GET", "tasks/t1/pushNotificationConfigs/c1", {}, None),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            t.DeleteTaskPushNotificationConfigRequest(task_id="t1", id="c1"),
            ("DELETE", "tasks/t1/pushNotificationConfigs/c1", {}, None),
        ),
        ("GetExtendedAgentCard", t.GetExtendedAgentCardRequest(), ("GET", "extendedAgentCard", {}, None)),
    ],
)
def test_rest_requests_on_the_wire(name: str, params: Any, expected: tuple[str, str, dict[str, str], Any]) -> None:
    http_method, path, query, body = expected
    if body == "body":  # the request itself, its tenant in the path instead
        body = encode(msgspec.structs.replace(params, tenant=None))
    assert rest.build(METHODS[name], params) == rest.RestRequest(http_method, path, query, body)


def test_a_task_id_is_never_read_as_a_tenant() -> None:
    assert rest.match("tasks/tasks", "GET") == (METHODS["GetTask"], {"id": "tasks"})
    assert rest.match("tasks/tasks/pushNotificationConfigs", "GET")[0] is METHODS["ListTaskPushNotificationConfigs"]
    assert rest.match("acme/tasks", "GET") == (METHODS["ListTasks"], {"tenant": "acme"})


def test_one_trailing_slash_names_the_same_operation() -> None:
    assert rest.match("tasks/", "GET") == (METHODS["ListTasks"], {})
    assert rest.match("message:send/", "POST") == (METHODS["SendMessage"], {})
    assert rest.match("tasks/t1/", "GET") == (METHODS["GetTask"], {"id": "t1"})
    assert rest.match("acme/tasks/t1:cancel/", "POST") == (METHODS["CancelTask"], {"tenant": "acme", "id": "t1"})
    with pytest.raises(e.MethodNotFoundError, match=re.escape("No A2A operation at /tasks//")):
        rest.match("tasks//", "GET")


def test_subscribe_also_accepts_post() -> None:
    assert rest.match("tasks/t1:subscribe", "POST")[0] is METHODS["SubscribeToTask"]


@pytest.mark.parametrize(
    ("path", "http_method", "message"),
    [
        ("tasks/t1", "DELETE", "HTTP DELETE is not allowed on /tasks/t1"),
        ("nothing/here/at/all", "GET", "No A2A operation at /nothing/here/at/all"),
        ("tasks/t1:explode", "POST", "No A2A operation at /tasks/t1:explode"),
    ],
)
def test_no_route_is_method_not_found(path: str, http_method: str, message: str) -> None:
    with pytest.raises(e.MethodNotFoundError, match=re.escape(message)):
        rest.match(path, http_method)


def test_rest_params_errors() -> None:
    spec = METHODS["CancelTask"]
    with pytest.raises(e.ParseError):
        rest.decode_params(spec, {"id": "t1"}, {}, b"{not json")
    with pytest.raises(e.InvalidParamsError, match="JSON object"):
        rest.decode_params(spec, {"id": "t1"}, {}, b"[1]")
    with pytest.raises(e.InvalidParamsError):
        rest.decode_params(METHODS["GetTask"], {"id": "t1"}, {"historyLength": "many"}, b"")
    with pytest.raises(e.InvalidParamsError):
        rest.decode_params(METHODS["SendMessage"], {}, {}, b'{"message": 1}')
    with pytest.raises(e.ParseError):  # a string that is not UTF-8
        rest.decode_params(spec, {"id": "t1"}, {}, b'{"metadata": {"a": "\xff"}}')
    with pytest.raises(e.InvalidParamsError):  # a query that was not UTF-8 (kept as surrogates)
        rest.decode_params(METHODS["ListTasks"], {}, {"status": "\udcff"}, b"")
    # The version may come as a query parameter; it is no field of the request.
    assert rest.decode_params(METHODS["ListTasks"], {}, {"A2A-Version": "1.0"}, b"") == t.ListTasksRequest()


# ---- REST: results and errors ---------------------------------------------------------------------

ERRORS = [*e.ERROR_TABLE.values(), e.PayloadTooLargeError]


@pytest.mark.parametrize("cls", ERRORS, ids=[c.__name__ for c in ERRORS])
def test_rest_error_body_round_trips(cls: type[e.ProtocolError]) -> None:
    body = rest.encode_error(cls("what went wrong"))
    wire = json.loads(body)["error"]
    assert (wire["code"], wire["status"], wire["message"]) == (cls.http_status, cls.grpc_status, "what went wrong")
    decoded = rest.decode_error(body)
    assert type(decoded) is cls and decoded.message == "what went wrong"


@pytest.mark.parametrize("body", [b"", b"<html>502</html>", b'{"error": "x"}', b"[]", b"\xff"])
def test_a_body_that_is_no_rest_error_decodes_to_none(body: bytes) -> None:
    assert rest.decode_error(body) is None


def test_rest_error_without_a_reason_is_internal() -> None:
    error = rest.decode_error(b'{"error": {"code": 500, "message": "boom"}}')
    assert type(error) is e.InternalError and error.message == "boom"


def test_rest_results() -> None:
    assert rest.encode_result(None) == b"{}"
    assert rest.decode_result(b"{}", None) is None
    task = t.Task(id="t1", status=t.TaskStatus(state=t.TaskState.WORKING))
    assert rest.decode_result(rest.encode_result(task), t.Task) == task
    with pytest.raises(e.InvalidResponseError, match="Task"):
        rest.decode_result(b'{"id": 1}', t.Task)


# ---- the tenant fill --------------------------------------------------------------------------------


def test_the_interface_tenant_fills_only_an_empty_one() -> None:
    assert with_tenant(t.GetTaskRequest(id="t1"), "acme").tenant == "acme"
    assert with_tenant(t.GetTaskRequest(id="t1", tenant=""), "acme").tenant == "acme"
    assert with_tenant(t.GetTaskRequest(id="t1", tenant="own"), "acme").tenant == "own"
    plain = t.GetTaskRequest(id="t1")
    assert with_tenant(plain, None) is plain
    assert with_tenant({"no": "tenant field"}, "acme") == {"no": "tenant field"}


# ---- one edit: an alias, a new operation ---------------------------------------------------------


def _with_alias(name: str, alias: str) -> list[MethodSpec]:
    """A copy of the table where ``name`` is also called ``alias`` (e.g. A2A 0.3's method name)."""
    return [dataclasses.replace(s, aliases=(*s.aliases, alias)) if s.name == name else s for s in OPERATIONS]


async def test_an_alias_is_one_edit_and_the_handler_serves_it(echo_agent: Agent) -> None:
    methods = index(_with_alias("SendMessage", "message/send"))
    call = decode_call(encode_request(1, "message/send", _SEND), methods)
    assert call.method.name == "SendMessage" and call.params == _SEND
    assert decode_call(encode_request(2, "SendMessage", _SEND), methods).method is call.method
    handler = RequestHandler(echo_agent)
    try:
        answer = await handler.call(call.method.name, call.params, CallContext())
    finally:
        await handler.shutdown()
    assert isinstance(answer, t.SendMessageResponse) and answer.message is not t.UNSET
    assert answer.message.text == "hi"


def test_a_name_used_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'SendMessage' names both SendMessage and GetTask"):
        index(_with_alias("GetTask", "SendMessage"))


def test_a_new_operation_is_one_edit() -> None:
    title = MethodSpec("GetTaskTitle", t.GetTaskRequest, t.Task, "get_task", RestRoute("GET", "tasks/{id}:title"))
    table = (*OPERATIONS, title)
    assert decode_call(encode_request(1, "GetTaskTitle", t.GetTaskRequest(id="t1")), index(table)).method is title
    router = rest.Router(table)
    assert router.match("acme/tasks/t1:title", "GET") == (title, {"tenant": "acme", "id": "t1"})
    assert rest.build(title, t.GetTaskRequest(id="t1", tenant="acme")).path == "acme/tasks/t1:title"
    with pytest.raises(e.MethodNotFoundError):
        rest.match("tasks/t1:title", "GET")  # the A2A table itself is unchanged


# 0.3's HTTP+JSON errors: a2a-sdk 0.3 sends {"message"} with a status of its own table; the JS
# SDK 0.3 sends {"code", "message", "data"} with the JSON-RPC code. One reading of both.
@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, e.InvalidRequestError),
        (401, e.AuthenticationRequiredError),
        (404, e.TaskNotFoundError),
        (409, e.TaskNotCancelableError),
        (415, e.ContentTypeNotSupportedError),
        (422, e.InvalidParamsError),
        (500, e.InternalError),
        (501, e.UnsupportedOperationError),
        (502, e.InvalidAgentResponseError),
    ],
)
def test_a_0_3_rest_error_is_typed_by_its_status(status: int, cls: type[e.ProtocolError]) -> None:
    error = rest.decode_error(b'{"message": "what went wrong"}', status)
    assert type(error) is cls and error.message == "what went wrong"


def test_a_0_3_rest_error_is_typed_by_its_json_rpc_code_first() -> None:
    body = b'{"code": -32002, "message": "Task t1 cannot be canceled", "data": {"taskId": "t1"}}'
    error = rest.decode_error(body, 409)
    assert type(error) is e.TaskNotCancelableError and error.data == {"taskId": "t1"}
    # The code wins over the status; an event of a stream has no status.
    assert type(rest.decode_error(b'{"code": -32001, "message": "gone"}', 400)) is e.TaskNotFoundError
    assert type(rest.decode_error(b'{"code": -32004, "message": "no"}')) is e.UnsupportedOperationError
    # An HTTP status put in ``code`` is read as one.
    assert type(rest.decode_error(b'{"code": 404, "message": "no task"}')) is e.TaskNotFoundError


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b'{"message": "x"}', None),  # nothing says what it is
        (b'{"message": "busy"}', 503),  # a status of no A2A error: reported as HTTP by the transport
        (b'{"detail": "Not Found"}', 404),  # a framework's own 404, not an A2A error body
        (b"Not Found", 404),
    ],
)
def test_what_is_no_0_3_rest_error_decodes_to_none(body: bytes, status: int | None) -> None:
    assert rest.decode_error(body, status) is None


def test_a_1_0_rest_error_without_a_reason_is_typed_by_its_code() -> None:
    error = rest.decode_error(b'{"error": {"code": 404, "message": "no task"}}')
    assert type(error) is e.TaskNotFoundError
    assert type(rest.decode_error(b'{"error": {"code": 503, "message": "busy"}}')) is e.InternalError
