"""@a2a-js/sdk 0.3.14's client (A2A 0.3 on the wire) against OUR server, over JSON-RPC and
HTTP+JSON.

The JS client runs as ``peers/js03/client.mjs`` in its own node project and prints the 0.3
JSON it returned (``kind`` discriminators, kebab-case states); these tests check that.
"""

from __future__ import annotations

from typing import Any

import pytest
from our_env import AuthServer
from peers import js03_env

pytestmark = [pytest.mark.interop, pytest.mark.slow]

BINDINGS = ["JSONRPC", "HTTP+JSON"]


def step(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [line["data"] for line in lines if line["step"] == name]


def one(lines: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = step(lines, name)
    return found


def test_card(our_server_url: str) -> None:
    card = one(js03_env.run_client(our_server_url, "JSONRPC", "card"), "card")
    assert card["name"] == "Echo"
    assert card["url"] == f"{our_server_url}/a2a/jsonrpc"
    transports = {i["transport"]: i["url"] for i in card["additionalInterfaces"]}
    assert transports["HTTP+JSON"] == f"{our_server_url}/a2a/rest"


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message_and_task_replies(our_server_url: str, binding: str) -> None:
    lines = js03_env.run_client(our_server_url, binding, "send")
    message = one(lines, "reply")
    assert (message["kind"], message["role"]) == ("message", "agent")
    assert [p["text"] for p in message["parts"]] == ["hello interop"]
    task = one(lines, "task_reply")
    assert (task["kind"], task["status"]["state"]) == ("task", "completed")
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["chunk 0", "chunk 1"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream(our_server_url: str, binding: str) -> None:
    events = step(js03_env.run_client(our_server_url, binding, "stream"), "event")
    assert events[0]["kind"] == "task"
    chunks = [e["artifact"]["parts"][0]["text"] for e in events if e["kind"] == "artifact-update"]
    assert chunks == ["chunk 0", "chunk 1", "chunk 2"]
    assert events[-1]["kind"] == "status-update"
    assert (events[-1]["status"]["state"], events[-1]["final"]) == ("completed", True)


@pytest.mark.parametrize("binding", BINDINGS)
def test_get(our_server_url: str, binding: str) -> None:
    lines = js03_env.run_client(our_server_url, binding, "get")
    sent, got = one(lines, "sent"), one(lines, "got")
    assert got["id"] == sent["id"]
    assert got["status"]["state"] == "completed"
    (unknown,) = [line for line in lines if line["step"] == "unknown"]
    assert "raised" in unknown, unknown  # an unknown task is an error the SDK raises


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel(our_server_url: str, binding: str) -> None:
    lines = js03_env.run_client(our_server_url, binding, "cancel")
    task_id = one(lines, "sent")["id"]
    assert one(lines, "canceled")["status"]["state"] == "canceled"
    assert one(lines, "got")["id"] == task_id
    assert one(lines, "got")["status"]["state"] == "canceled"


@pytest.mark.parametrize("binding", BINDINGS)
def test_resubscribe(our_server_url: str, binding: str) -> None:
    lines = js03_env.run_client(our_server_url, binding, "subscribe")
    task_id = one(lines, "sent")["id"]
    events = step(lines, "event")
    assert events[0]["kind"] == "task" and events[0]["id"] == task_id
    assert (events[-1]["kind"], events[-1]["status"]["state"]) == ("status-update", "completed")


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_round_trip(our_greeter_url: str, binding: str) -> None:
    lines = js03_env.run_client(our_greeter_url, binding, "input_required")
    asked = one(lines, "asked")
    assert asked["status"]["state"] == "input-required"
    assert asked["status"]["message"]["parts"][0]["text"] == "What is your name?"
    answered = one(lines, "answered")
    assert answered["id"] == asked["id"]
    assert answered["status"]["state"] == "completed"
    assert answered["artifacts"][0]["parts"][0]["text"] == "Hello, Ada!"


@pytest.mark.parametrize("binding", BINDINGS)
def test_bearer_token(our_auth_server: AuthServer, binding: str) -> None:
    """``a2a serve --auth bearer``: the 0.3 client sending the token is served; with a wrong one
    it raises what it read: over JSON-RPC the error in our 401's JSON-RPC body (it does not
    report the status when the body is JSON-RPC), over HTTP+JSON the 401 itself."""
    lines = js03_env.run_client(our_auth_server.url, binding, "send", token=our_auth_server.token)
    assert [p["text"] for p in one(lines, "reply")["parts"]] == ["hello interop"]
    assert one(lines, "task_reply")["status"]["state"] == "completed"
    refused = js03_env.run_client(our_auth_server.url, binding, "send", token="wrong-token", check=False)
    assert not step(refused, "reply"), refused
    assert refused[-1]["step"] == "error", refused
    reported = refused[-1]["raised"]["message"]
    expected = "Authentication required" if binding == "JSONRPC" else "401"
    assert expected in reported, reported
