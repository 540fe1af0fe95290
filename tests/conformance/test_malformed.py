"""Malformed input on each endpoint gets the right error, and the server keeps serving afterwards."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from a2a import A2AServer, BearerAuth, ServerConfig

from .conftest import OpenRaw, StartServer
from .helpers import VERSION, Outcome, Raw, bounded, expect_error, load_module, send_params, user_message


@pytest.fixture
def rpc(echo_server: A2AServer, http: httpx.AsyncClient) -> Raw:
    assert echo_server.url is not None
    return Raw(http, echo_server.url, "JSONRPC")


@pytest.fixture
def rest(echo_server: A2AServer, http: httpx.AsyncClient) -> Raw:
    assert echo_server.url is not None
    return Raw(http, echo_server.url, "HTTP+JSON")


def _send_path(raw: Raw) -> str:
    """Where a SendMessage body goes: the JSON-RPC endpoint itself, or REST ``message:send``."""
    return "" if raw.binding == "JSONRPC" else "message:send"


# ---- both bindings: bodies that are not what they should be --------------------------------


async def test_body_that_is_not_json_is_a_parse_error(raw: Raw) -> None:
    outcome = await raw.post(_send_path(raw), b'{"jsonrpc": "2.0", "id": 1, "method": ')
    expect_error(outcome, -32700)
    if raw.binding == "JSONRPC":
        assert outcome.json["id"] is None, "an unreadable request is answered with id null"
    await raw.echo_ok()


async def test_cancel_body_that_is_not_json_is_a_parse_error(raw: Raw) -> None:
    task_id = (await raw.call("SendMessage", send_params("stream:1"))).result["task"]["id"]
    if raw.binding == "JSONRPC":
        outcome = await raw.post("", b'{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":' + b"}")
    else:
        outcome = await raw.post(f"tasks/{task_id}:cancel", b"{oops")
    expect_error(outcome, -32700)
    await raw.echo_ok()


@pytest.mark.parametrize(
    "body", [b"[]", b"[1, 2]", b"42", b'"text"', b"null"], ids=["empty", "array", "int", "str", "null"]
)
async def test_body_that_is_not_an_object_is_refused(raw: Raw, body: bytes) -> None:
    outcome = await raw.post(_send_path(raw), body)
    if raw.binding == "JSONRPC":
        expect_error(outcome, -32600)
    else:
        # REST has no envelope: the body is the request message, so a non-object is bad params.
        assert outcome.error_code in (-32600, -32602), outcome.body
        expect_error(outcome, outcome.error_code or 0)
    await raw.echo_ok()


async def test_batch_of_requests_is_invalid_request(raw: Raw) -> None:
    one = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("a")}
    outcome = await raw.post(_send_path(raw), json.dumps([one, {**one, "id": 2}]).encode())
    if raw.binding == "JSONRPC":
        expect_error(outcome, -32600)
    else:
        assert outcome.status == 400 and outcome.error_code in (-32600, -32602), outcome.body
    await raw.echo_ok()


WRONG_PARAMS = [
    ("parts is a string", "SendMessage", {"message": {**user_message("x"), "parts": "x"}}, "parts"),
    ("role is unknown", "SendMessage", {"message": {**user_message("x"), "role": "ROLE_ROBOT"}}, "role"),
    ("messageId missing", "SendMessage", {"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}, "messageId"),
    ("message missing", "SendMessage", {}, "message"),
    ("messageId is a number", "SendMessage", {"message": {**user_message("x"), "messageId": 7}}, "messageId"),
    (
        "returnImmediately is a string",
        "SendMessage",
        {"message": user_message("x"), "configuration": {"returnImmediately": "soon"}},
        "returnImmediately",
    ),
    ("historyLength is text", "GetTask", {"id": "x", "historyLength": "abc"}, "historyLength"),
    ("status is unknown", "ListTasks", {"status": "TASK_STATE_SLEEPING"}, "status"),
    ("pageSize is text", "ListTasks", {"pageSize": "ten"}, "pageSize"),
    ("timestamp is not a time", "ListTasks", {"statusTimestampAfter": "yesterday"}, "statusTimestampAfter"),
]


@pytest.mark.parametrize(("method", "params", "field"), [c[1:] for c in WRONG_PARAMS], ids=[c[0] for c in WRONG_PARAMS])
async def test_wrong_types_are_invalid_params_naming_the_field(
    raw: Raw, method: str, params: dict[str, Any], field: str
) -> None:
    message = expect_error(await raw.call(method, params), -32602)
    assert field in message, f"the error should name {field!r}: {message!r}"
    await raw.echo_ok()


BAD_PARTS = [
    ("text and url", {"text": "hi", "url": "https://example.com/a.txt"}, ("text", "url")),
    ("text and data", {"text": "hi", "data": {"a": 1}}, ("text", "data")),
    ("nothing", {"mediaType": "text/plain"}, ("Part",)),
]


@pytest.mark.parametrize(("part", "words"), [c[1:] for c in BAD_PARTS], ids=[c[0] for c in BAD_PARTS])
async def test_part_must_set_exactly_one_content_field(raw: Raw, part: dict[str, Any], words: tuple[str, ...]) -> None:
    params = {"message": {**user_message("x"), "parts": [part]}}
    message = expect_error(await raw.call("SendMessage", params), -32602)
    assert all(word in message for word in words), message
    await raw.echo_ok()


async def test_semantically_invalid_messages_are_invalid_params(raw: Raw) -> None:
    no_parts = {"message": {**user_message("x"), "parts": []}}
    assert "parts" in expect_error(await raw.call("SendMessage", no_parts), -32602)
    from_agent = {"message": {**user_message("x"), "role": "ROLE_AGENT"}}
    assert "role" in expect_error(await raw.call("SendMessage", from_agent), -32602)
    negative = {"message": user_message("x"), "configuration": {"historyLength": -1}}
    assert "historyLength" in expect_error(await raw.call("SendMessage", negative), -32602)
    await raw.echo_ok()


async def test_unknown_fields_are_ignored(raw: Raw) -> None:
    params = {"message": {**user_message("forward"), "futureField": [1]}, "somethingNew": {"x": 1}}
    assert (await raw.call("SendMessage", params)).result["message"]["parts"][0]["text"] == "forward"


# ---- body size ------------------------------------------------------------------------------

LIMIT = 2048


@pytest.fixture
async def small(serve: StartServer, open_raw: OpenRaw) -> Raw:
    server = await serve(load_module("echo_agent.py").agent, config=ServerConfig(max_body_bytes=LIMIT))
    return open_raw(server)


async def test_body_over_the_limit_is_413(small: Raw) -> None:
    outcome = await small.call("SendMessage", send_params("x" * (LIMIT * 2)))
    expect_error(outcome, -32600, http_status=413)
    await small.echo_ok()
    # Just under the limit is fine.
    assert (await small.call("SendMessage", send_params("y" * (LIMIT // 2)))).result["message"]


async def test_chunked_body_over_the_limit_is_413(small: Raw) -> None:
    request = small.request("SendMessage", send_params("x" * (LIMIT * 4)))
    body = request.content

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 512):
            yield body[i : i + 512]

    headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
    chunked = small.http.build_request(request.method, request.url, content=chunks(), headers=headers)
    assert "content-length" not in chunked.headers, "the body must arrive without a declared length"
    expect_error(await small.send(chunked), -32600, http_status=413)
    await small.echo_ok()


# ---- JSON-RPC envelope -----------------------------------------------------------------------


ENVELOPES = [
    ("jsonrpc 1.0", {"jsonrpc": "1.0", "id": 5, "method": "ListTasks", "params": {}}, -32600, 5),
    ("jsonrpc missing", {"id": 5, "method": "ListTasks", "params": {}}, -32600, 5),
    ("jsonrpc as number", {"jsonrpc": 2.0, "id": 5, "method": "ListTasks", "params": {}}, -32600, 5),
    ("id missing", {"jsonrpc": "2.0", "method": "ListTasks", "params": {}}, -32600, None),
    ("id is an object", {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ListTasks"}, -32600, None),
    ("id is a boolean", {"jsonrpc": "2.0", "id": True, "method": "ListTasks"}, -32600, None),
    ("method missing", {"jsonrpc": "2.0", "id": "r1", "params": {}}, -32600, "r1"),
    ("method is a number", {"jsonrpc": "2.0", "id": "r1", "method": 3}, -32600, "r1"),
    ("unknown method", {"jsonrpc": "2.0", "id": "r2", "method": "DoSomething", "params": {}}, -32601, "r2"),
    ("0.3 method name", {"jsonrpc": "2.0", "id": 9, "method": "message/send", "params": {}}, -32601, 9),
    ("params is an array", {"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": [1]}, -32602, 4),
    ("params is a string", {"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": "all"}, -32602, 4),
]


@pytest.mark.parametrize(("envelope", "code", "answer_id"), [c[1:] for c in ENVELOPES], ids=[c[0] for c in ENVELOPES])
async def test_jsonrpc_envelope_errors(rpc: Raw, envelope: dict[str, Any], code: int, answer_id: object) -> None:
    outcome = await rpc.post("", json.dumps(envelope).encode())
    expect_error(outcome, code)
    assert outcome.json["id"] == answer_id, "the answer carries the request's id when it could be read"
    await rpc.echo_ok()


async def test_jsonrpc_error_is_http_200(rpc: Raw) -> None:
    outcome = await rpc.call("GetTask", {"id": "no-such-task"})
    assert outcome.status == 200
    expect_error(outcome, -32001)


async def test_jsonrpc_string_id_is_echoed(rpc: Raw) -> None:
    envelope = {"jsonrpc": "2.0", "id": "abc-1", "method": "ListTasks", "params": {}}
    outcome = await rpc.post("", json.dumps(envelope).encode())
    assert outcome.json["id"] == "abc-1"
    assert outcome.json["result"]["tasks"] == []


async def test_jsonrpc_wrong_verb_is_refused(rpc: Raw) -> None:
    response = await bounded(rpc.http.get(rpc.endpoint, headers=VERSION))
    assert response.status_code == 405
    await rpc.echo_ok()


# ---- REST paths and verbs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verb", "path"),
    [("GET", "nothing-here"), ("POST", "message:shout"), ("GET", "tasks/a/b/c"), ("POST", "tasks/x:explode")],
)
async def test_rest_unknown_path_is_404(rest: Raw, verb: str, path: str) -> None:
    response = await bounded(rest.http.request(verb, f"{rest.endpoint}/{path}", headers=VERSION))
    outcome = _outcome(rest, response)
    expect_error(outcome, -32601)
    assert response.status_code == 404
    await rest.echo_ok()


@pytest.mark.parametrize(
    ("verb", "path"),
    [("GET", "message:send"), ("DELETE", "tasks/x"), ("PUT", "tasks"), ("GET", "tasks/x:cancel"), ("POST", "tasks")],
)
async def test_rest_wrong_verb_is_refused(rest: Raw, verb: str, path: str) -> None:
    response = await bounded(rest.http.request(verb, f"{rest.endpoint}/{path}", headers=VERSION))
    assert response.status_code in (404, 405), response.text
    if response.status_code == 405:
        assert response.headers.get("Allow"), "a 405 must list the allowed methods"
    assert _outcome(rest, response).error_code == -32601
    await rest.echo_ok()


async def test_rest_tenant_prefix_is_served(rest: Raw) -> None:
    outcome = await rest.call("ListTasks", {"tenant": "acme"})
    assert outcome.result["tasks"] == []
    sent = await rest.call("SendMessage", {**send_params("stream:1"), "tenant": "acme"})
    task_id = sent.result["task"]["id"]
    assert (await rest.call("GetTask", {"id": task_id, "tenant": "acme"})).result["id"] == task_id
    # Another tenant (or none) does not see it.
    expect_error(await rest.call("GetTask", {"id": task_id}), -32001)
    expect_error(await rest.call("GetTask", {"id": task_id, "tenant": "other"}), -32001)


def _outcome(raw: Raw, response: httpx.Response) -> Any:
    from .helpers import Outcome

    return Outcome(raw.binding, response.status_code, response.headers, response.content)


# ---- what the server cannot even read is still an A2A error -----------------------------------
#
# The handler turns faults into -32603; the bindings catch protocol errors only, so whatever
# they decode themselves (headers, paths, queries, bodies) must fail as a protocol error.


async def _with_header(raw: Raw, method: str, params: dict[str, Any], name: bytes, value: bytes) -> Outcome:
    request = raw.request(method, params)
    request.headers = httpx.Headers([*request.headers.raw, (name, value)])
    return await raw.send(request)


async def test_credentials_that_are_not_utf8_are_refused_as_credentials(
    serve: StartServer, open_raw: OpenRaw, echo_agent: Any
) -> None:
    raw = open_raw(await serve(echo_agent, auth=[BearerAuth(credentials={"tok": "alice"})]))
    outcome = await _with_header(raw, "ListTasks", {}, b"Authorization", b"Bearer \xff\xfe")
    expect_error(outcome, -32000, http_status=401)


async def test_a_last_event_id_of_other_digits_is_invalid_params(raw: Raw) -> None:
    outcome = await _with_header(raw, "ListTasks", {}, b"Last-Event-ID", "\u00b2".encode())  # "²" is no int
    expect_error(outcome, -32602)
    await raw.echo_ok()


async def test_a_last_event_id_that_is_no_whole_number_is_invalid_params(raw: Raw) -> None:
    """protocol.md §5: ``Last-Event-ID`` must be a whole number (else -32602), on every binding."""
    for bad in (b"abc", b"-1", b"1.5"):
        expect_error(await _with_header(raw, "ListTasks", {}, b"Last-Event-ID", bad), -32602)
    await raw.echo_ok()


async def test_rest_body_with_a_string_that_is_not_utf8_is_a_parse_error(rest: Raw) -> None:
    expect_error(await rest.post("tasks/x:cancel", b'{"metadata": {"a": "\xff"}}'), -32700)
    await rest.echo_ok()
