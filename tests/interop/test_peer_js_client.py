"""@a2a-js/sdk 1.3.0's client against OUR server (``a2a serve``), over JSON-RPC and HTTP+JSON.

The JS client runs as ``peers/js/client.mjs`` in its own node project and prints the
ProtoJSON of what it parsed; these tests check that.
"""

from __future__ import annotations

from typing import Any

import pytest
from our_env import AuthServer
from peers import js_env

pytestmark = [pytest.mark.interop, pytest.mark.slow]

BINDINGS = ["JSONRPC", "HTTP+JSON"]


def step(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [line["data"] for line in lines if line["step"] == name]


def one(lines: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = step(lines, name)
    return found


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [next(iter(e)) for e in events]


def test_card(our_server_url: str) -> None:
    card = one(js_env.run_client(our_server_url, "JSONRPC", "card"), "card")
    assert card["name"] == "Echo"
    bindings = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert bindings["JSONRPC"] == f"{our_server_url}/a2a/jsonrpc"
    assert bindings["HTTP+JSON"] == f"{our_server_url}/a2a/rest"
    assert card["capabilities"]["streaming"] is True


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message_and_task_replies(our_server_url: str, binding: str) -> None:
    lines = js_env.run_client(our_server_url, binding, "send")
    message = one(lines, "reply")["message"]
    assert message["role"] == "ROLE_AGENT"
    assert [p["text"] for p in message["parts"]] == ["hello interop"]
    task = one(lines, "task_reply")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["chunk 0", "chunk 1"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream(our_server_url: str, binding: str) -> None:
    events = step(js_env.run_client(our_server_url, binding, "stream"), "event")
    assert kinds(events)[0] == "task"
    chunks = [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events if "artifactUpdate" in e]
    assert chunks == ["chunk 0", "chunk 1", "chunk 2"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_get(our_server_url: str, binding: str) -> None:
    lines = js_env.run_client(our_server_url, binding, "get")
    sent, got = one(lines, "sent")["task"], one(lines, "got")
    assert got["id"] == sent["id"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    (unknown,) = [line for line in lines if line["step"] == "unknown"]
    assert "raised" in unknown, unknown  # an unknown task is an error the SDK raises


@pytest.mark.parametrize("binding", BINDINGS)
def test_list_pages(our_server_url: str, binding: str) -> None:
    lines = js_env.run_client(our_server_url, binding, "list")
    sent = {d["task"]["id"] for d in step(lines, "sent")}
    page1, page2 = one(lines, "page1"), one(lines, "page2")
    assert len(page1["tasks"]) == 1
    assert page1.get("nextPageToken")
    assert {t["id"] for t in page1["tasks"] + page2["tasks"]} == sent


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel(our_server_url: str, binding: str) -> None:
    lines = js_env.run_client(our_server_url, binding, "cancel")
    task_id = one(lines, "sent")["task"]["id"]
    assert one(lines, "canceled")["status"]["state"] == "TASK_STATE_CANCELED"
    assert one(lines, "got")["id"] == task_id
    assert one(lines, "got")["status"]["state"] == "TASK_STATE_CANCELED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_subscribe(our_server_url: str, binding: str) -> None:
    lines = js_env.run_client(our_server_url, binding, "subscribe")
    task_id = one(lines, "sent")["task"]["id"]
    events = step(lines, "event")
    assert kinds(events)[0] == "task" and events[0]["task"]["id"] == task_id
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_round_trip(our_greeter_url: str, binding: str) -> None:
    lines = js_env.run_client(our_greeter_url, binding, "input_required")
    asked = one(lines, "asked")["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert asked["status"]["message"]["parts"][0]["text"] == "What is your name?"
    answered = one(lines, "answered")["task"]
    assert answered["id"] == asked["id"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answered["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_round_trip_streamed(our_greeter_url: str, binding: str) -> None:
    lines = js_env.run_client(our_greeter_url, binding, "input_required_stream")
    asked, answered = step(lines, "asked"), step(lines, "answered")
    assert asked[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert answered[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answered[-1]["statusUpdate"]["taskId"] == asked[-1]["statusUpdate"]["taskId"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_bearer_token(our_auth_server: AuthServer, binding: str) -> None:
    lines = js_env.run_client(our_auth_server.url, binding, "send", token=our_auth_server.token)
    assert one(lines, "reply")["message"]["parts"][0]["text"] == "hello interop"
    refused = js_env.run_client(our_auth_server.url, binding, "send", token="wrong-token", check=False)
    assert refused[-1]["step"] == "error" and "raised" in refused[-1], refused
    assert not step(refused, "reply")
