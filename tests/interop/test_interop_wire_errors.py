"""Error parity on the wire: the same bad request to OUR server and to the reference SDK's.

Each case is sent, as raw HTTP, to both servers (at the interface URLs their cards give)
and the parts of the answer a client acts on are compared: for HTTP+JSON the HTTP status,
``error.status`` and the ErrorInfo ``reason`` (what the SDK's client maps errors by); for
JSON-RPC the HTTP status, ``error.code`` and the reason. Where the two are allowed to differ
(a reason for a plain JSON-RPC error, which the spec does not define), that part is left out.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # the reference SDK runs as processes

V = {"A2A-Version": "1.0"}
JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Server:
    name: str
    jsonrpc: str
    rest: str
    done_task: str  # a task of this server that has COMPLETED


def _server(http: httpx.Client, name: str, base_url: str) -> Server:
    card = http.get(f"{base_url}/.well-known/agent-card.json", headers=V).raise_for_status().json()
    urls = {i["protocolBinding"]: i["url"].rstrip("/") for i in card["supportedInterfaces"]}
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "stream:1"}]}
    reply = http.post(f"{urls['HTTP+JSON']}/message:send", json={"message": message}, headers=V)
    task = reply.raise_for_status().json()["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    return Server(name, urls["JSONRPC"], urls["HTTP+JSON"], task["id"])


@pytest.fixture(scope="module")
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=20) as client:
        yield client


@pytest.fixture(scope="module")
def servers(http: httpx.Client, our_server_url: str, sdk_server_url: str) -> tuple[Server, Server]:
    return _server(http, "ours", our_server_url), _server(http, "sdk", sdk_server_url)


def _reason(details: Any) -> str | None:
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and detail.get("@type") == "type.googleapis.com/google.rpc.ErrorInfo":
            return str(detail.get("reason"))
    return None


def _message(task_id: str | None = None, text: str = "more") -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id:
        message["taskId"] = task_id
    return {"message": message}


# ---- HTTP+JSON ----------------------------------------------------------------------------

# (id, HTTP method, path under the interface URL ({done} = a finished task), headers, JSON body
#  or raw bytes, compare the reason too)
REST_CASES: list[tuple[str, str, str, dict[str, str], Any, bool]] = [
    ("get-unknown-task", "GET", "tasks/no-such-task", V, None, True),
    ("version-unsupported", "GET", "tasks/no-such-task", {"A2A-Version": "9.9"}, None, True),
    ("version-missing", "GET", "tasks/no-such-task", {}, None, True),
    ("history-length-negative", "GET", "tasks/{done}?historyLength=-1", V, None, True),
    ("cancel-unknown-task", "POST", "tasks/no-such-task:cancel", V, {}, True),
    ("cancel-finished-task", "POST", "tasks/{done}:cancel", V, {}, True),
    ("subscribe-finished-task-post", "POST", "tasks/{done}:subscribe", V, None, True),
    ("subscribe-finished-task-get", "GET", "tasks/{done}:subscribe", V, None, True),
    ("send-to-unknown-task", "POST", "message:send", V, _message("no-such-task"), True),
    ("send-to-finished-task", "POST", "message:send", V, "finished", True),
    ("send-without-message-id", "POST", "message:send", V, {"message": {"role": "ROLE_USER"}}, True),
    # Malformed JSON is a 400 for the client's mistake; the reason is not one the spec defines.
    ("send-malformed-json", "POST", "message:send", V, b"{bad", False),
    ("stream-malformed-json", "POST", "message:stream", V, b"{bad", False),
    ("list-page-size-zero", "GET", "tasks?pageSize=0", V, None, True),
    ("list-bad-page-token", "GET", "tasks?pageToken=garbage", V, None, True),
    ("push-config-create", "POST", "tasks/{done}/pushNotificationConfigs", V, {"url": "https://e.test/h"}, True),
    ("extended-card", "GET", "extendedAgentCard", V, None, True),
]


def _rest(http: httpx.Client, server: Server, verb: str, path: str, headers: dict[str, str], body: Any) -> Any:
    if body == "finished":
        body = _message(server.done_task)
    url = f"{server.rest}/{path.format(done=server.done_task)}"
    content = body if isinstance(body, bytes) else None
    json_body = None if isinstance(body, bytes) else body
    response = http.request(verb, url, headers={**headers, **JSON}, content=content, json=json_body)
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return (response.status_code, "no A2A error body", response.text[:120])
    return response.status_code, error.get("status"), _reason(error.get("details"))


@pytest.mark.parametrize(
    ("verb", "path", "headers", "body", "with_reason"),
    [pytest.param(*case[1:], id=case[0]) for case in REST_CASES],
)
def test_rest_error_matches_the_reference(
    http: httpx.Client,
    servers: tuple[Server, Server],
    verb: str,
    path: str,
    headers: dict[str, str],
    body: Any,
    with_reason: bool,
) -> None:
    ours, sdk = (_rest(http, s, verb, path, headers, body) for s in servers)
    if not with_reason:
        ours, sdk = ours[:2], sdk[:2]
    assert sdk[0] >= 400, f"the reference accepted the request: {sdk}"  # the case is a real error case
    assert ours == sdk, f"ours {ours} != reference {sdk}"


# ---- JSON-RPC -----------------------------------------------------------------------------


def _call(method: str, params: Any = None, **envelope: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method, **envelope}
    if params is not None:
        call["params"] = params
    return call


# (id, headers, body (JSON, or raw bytes), compare the reason too)
JSONRPC_CASES: list[tuple[str, dict[str, str], Any, bool]] = [
    ("malformed-json", V, b"{bad", False),
    ("batch", V, [_call("GetTask", {"id": "x"})], True),
    ("jsonrpc-1.0", V, _call("GetTask", {"id": "x"}, jsonrpc="1.0"), True),
    ("unknown-method", V, _call("NoSuchMethod", {}), False),
    ("v0.3-method-name", V, _call("tasks/get", {"id": "x"}), False),
    ("version-unsupported", {"A2A-Version": "9.9"}, _call("GetTask", {"id": "x"}), True),
    ("get-unknown-task", V, _call("GetTask", {"id": "no-such-task"}), True),
    ("get-without-id", V, _call("GetTask", {}), True),
    ("cancel-finished-task", V, _call("CancelTask", {"id": "{done}"}), True),
    ("send-to-finished-task", V, "finished", True),
    (
        "push-config-create",
        V,
        _call("CreateTaskPushNotificationConfig", {"taskId": "{done}", "url": "https://e.test"}),
        True,
    ),
    ("extended-card", V, _call("GetExtendedAgentCard"), True),
    ("list-page-size-zero", V, _call("ListTasks", {"pageSize": 0}), True),
]


def _fill(value: Any, task_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("{done}", task_id)
    if isinstance(value, dict):
        return {k: _fill(v, task_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, task_id) for v in value]
    return value


def _jsonrpc(http: httpx.Client, server: Server, headers: dict[str, str], body: Any) -> Any:
    if body == "finished":
        body = _call("SendMessage", _message(server.done_task))
    body = _fill(body, server.done_task)
    content = body if isinstance(body, bytes) else None
    json_body = None if isinstance(body, bytes) else body
    response = http.post(server.jsonrpc, headers={**headers, **JSON}, content=content, json=json_body)
    try:
        error = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        return (response.status_code, "no JSON-RPC error", response.text[:120])
    return response.status_code, error.get("code"), _reason(error.get("data"))


@pytest.mark.parametrize(
    ("headers", "body", "with_reason"), [pytest.param(*case[1:], id=case[0]) for case in JSONRPC_CASES]
)
def test_jsonrpc_error_matches_the_reference(
    http: httpx.Client, servers: tuple[Server, Server], headers: dict[str, str], body: Any, with_reason: bool
) -> None:
    ours, sdk = (_jsonrpc(http, s, headers, body) for s in servers)
    if not with_reason:
        ours, sdk = ours[:2], sdk[:2]
    assert isinstance(sdk[1], int), f"the reference gave no JSON-RPC error: {sdk}"
    assert ours == sdk, f"ours {ours} != reference {sdk}"
