"""The reference SDK's client (a2a-sdk 1.3.0) against OUR server, over JSON-RPC and HTTP+JSON.

Our server runs as ``a2a serve examples/echo_agent.py:agent`` (see conftest.py); the SDK
client runs as ``sdk_client.py`` in the SDK's own venv and prints what it parsed, as
ProtoJSON lines, which is what these tests check.
"""

from __future__ import annotations

from typing import Any

import pytest
import sdk_env
from our_env import AuthServer

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # the reference SDK runs as processes

BINDINGS = ["JSONRPC", "HTTP+JSON"]
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


def steps(lines: list[dict[str, Any]], step: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["step"] == step]


def one(lines: list[dict[str, Any]], step: str) -> dict[str, Any]:
    found = steps(lines, step)
    assert len(found) == 1, f"expected one {step!r} line in {lines}"
    return found[0]


def kind(event: dict[str, Any]) -> str:
    (name,) = event.keys()  # a StreamResponse is exactly one of task/message/statusUpdate/artifactUpdate
    return name


def test_card(our_server_url: str) -> None:
    (line,) = sdk_env.run_sdk_client(our_server_url, "JSONRPC", "card")
    card = line["data"]
    assert card["name"] == "Echo"
    interfaces = {i["protocolBinding"]: i for i in card["supportedInterfaces"]}
    assert interfaces["JSONRPC"]["url"] == f"{our_server_url}/a2a/jsonrpc"
    assert interfaces["HTTP+JSON"]["url"] == f"{our_server_url}/a2a/rest"
    assert {i["protocolVersion"] for i in interfaces.values()} == {"1.0"}
    assert card["capabilities"]["streaming"] is True
    assert [s["id"] for s in card["skills"]] == ["echo"]
    assert "securitySchemes" not in card


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_gets_a_message(our_server_url: str, binding: str) -> None:
    lines = sdk_env.run_sdk_client(our_server_url, binding, "send")
    message = one(lines, "reply")["data"]["message"]
    assert message["role"] == "ROLE_AGENT"
    assert [p["text"] for p in message["parts"]] == ["hello interop"]
    assert message["messageId"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_task_then_chunks_then_completed(our_server_url: str, binding: str) -> None:
    events = [line["data"] for line in sdk_env.run_sdk_client(our_server_url, binding, "stream")]
    assert kind(events[0]) == "task", events
    task = events[0]["task"]
    assert task["status"]["state"] not in TERMINAL
    # Status updates other than the last may come and go (WORKING); the rest is fixed.
    shape = [kind(e) for i, e in enumerate(events) if kind(e) != "statusUpdate" or i == len(events) - 1]
    assert shape == ["task", "artifactUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"], events
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    chunks = [e["artifactUpdate"] for e in events if kind(e) == "artifactUpdate"]
    assert [c["artifact"]["parts"][0]["text"] for c in chunks] == ["chunk 0", "chunk 1", "chunk 2"]
    assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, True]
    for event in events[1:]:
        payload = next(iter(event.values()))
        assert payload["taskId"] == task["id"]
        assert payload["contextId"] == task["contextId"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_of_a_plain_reply_is_one_message(our_server_url: str, binding: str) -> None:
    (line,) = sdk_env.run_sdk_client(our_server_url, binding, "stream_message")
    assert [p["text"] for p in line["data"]["message"]["parts"]] == ["hello stream"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_get_task(our_server_url: str, binding: str) -> None:
    lines = sdk_env.run_sdk_client(our_server_url, binding, "get")
    sent = one(lines, "send")["data"]["task"]
    got = one(lines, "get")["data"]
    assert sent["status"]["state"] == "TASK_STATE_COMPLETED"  # SendMessage blocks until the end
    assert got["id"] == sent["id"]
    assert got["contextId"] == sent["contextId"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = got["artifacts"]
    assert [p["text"] for p in artifact["parts"]] == ["chunk 0", "chunk 1"]
    assert [m["parts"][0]["text"] for m in got["history"]] == ["stream:2"]
    no_history = one(lines, "get_no_history")["data"]
    assert no_history["id"] == sent["id"]
    assert not no_history.get("history")


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel_a_running_task(our_server_url: str, binding: str) -> None:
    lines = sdk_env.run_sdk_client(our_server_url, binding, "cancel")
    sent = one(lines, "send")["data"]["task"]
    assert sent["status"]["state"] not in TERMINAL  # returnImmediately: hold:30 is still going
    canceled = one(lines, "cancel")["data"]
    assert canceled["id"] == sent["id"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    got = one(lines, "get")["data"]
    assert got["id"] == sent["id"]
    assert got["status"]["state"] == "TASK_STATE_CANCELED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_subscribe_to_a_running_task(our_server_url: str, binding: str) -> None:
    lines = sdk_env.run_sdk_client(our_server_url, binding, "subscribe")
    task_id = one(lines, "send")["data"]["task"]["id"]
    events = [line["data"] for line in steps(lines, "event")]
    assert kind(events[0]) == "task"  # SubscribeToTask starts with the current Task
    assert events[0]["task"]["id"] == task_id
    assert events[0]["task"]["status"]["state"] not in TERMINAL
    assert kind(events[-1]) == "statusUpdate"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert all(next(iter(e.values())).get("taskId", task_id) == task_id for e in events[1:])
    # Once the task has ended there is nothing to subscribe to.
    assert one(lines, "late")["raised"]["type"] == "UnsupportedOperationError"


@pytest.mark.parametrize("binding", BINDINGS)
def test_list_tasks_pages(our_server_url: str, binding: str) -> None:
    lines = sdk_env.run_sdk_client(our_server_url, binding, "list")
    first_id, second_id = one(lines, "tasks")["ids"]
    page1, page2 = one(lines, "page1"), one(lines, "page2")
    # Newest first, one per page, and the cursor runs out on the last page.
    assert [t["id"] for t in page1["data"]["tasks"]] == [second_id]
    assert page1["next_page_token"]
    assert [t["id"] for t in page2["data"]["tasks"]] == [first_id]
    assert page2["next_page_token"] == ""
    assert page1["data"]["totalSize"] == 2
    completed = one(lines, "completed")
    tasks = completed["data"]["tasks"]
    assert {t["id"] for t in tasks} == {first_id, second_id}
    assert all(t["status"]["state"] == "TASK_STATE_COMPLETED" for t in tasks)
    assert all(t.get("artifacts") for t in tasks)  # includeArtifacts=true
    assert not any(t.get("history") for t in tasks)  # historyLength=0
    assert not any("artifacts" in t for t in page1["data"]["tasks"])  # artifacts are opt-in
    future = one(lines, "future")  # statusTimestampAfter tomorrow: nothing yet
    assert not future["data"].get("tasks")
    assert future["next_page_token"] == ""


@pytest.mark.parametrize("binding", BINDINGS)
def test_errors_reach_the_sdk_as_its_own_types(our_server_url: str, binding: str) -> None:
    """The SDK maps JSON-RPC codes, and REST ErrorInfo reasons, back to its exception classes."""
    lines = sdk_env.run_sdk_client(our_server_url, binding, "errors")
    raised = {line["step"]: line.get("raised", {}).get("type") for line in lines}
    assert raised == {
        "get_unknown": "TaskNotFoundError",
        "cancel_unknown": "TaskNotFoundError",
        "cancel_finished": "TaskNotCancelableError",
        "send_to_finished": "UnsupportedOperationError",
        "send_to_unknown": "TaskNotFoundError",
    }, lines


# ---- bearer authentication: a2a serve --auth bearer, tokens from $A2A_BEARER_TOKENS -----------


def test_card_of_an_authenticated_server_declares_bearer(our_auth_server: AuthServer) -> None:
    (line,) = sdk_env.run_sdk_client(our_auth_server.url, "JSONRPC", "card")  # the card itself is public
    card = line["data"]
    (name,) = card["securitySchemes"]
    assert card["securitySchemes"][name]["httpAuthSecurityScheme"]["scheme"].lower() == "bearer"
    assert any(name in r["schemes"] for r in card["securityRequirements"])


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("scenario", ["send", "stream"])
def test_bearer_right_token(our_auth_server: AuthServer, binding: str, scenario: str) -> None:
    lines = sdk_env.run_sdk_client(our_auth_server.url, binding, scenario, token=our_auth_server.token)
    if scenario == "send":
        assert one(lines, "reply")["data"]["message"]["parts"][0]["text"] == "hello interop"
    else:
        assert lines[-1]["data"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("scenario", ["send", "stream"])
@pytest.mark.parametrize("token", ["wrong-token", None], ids=["wrong", "missing"])
def test_bearer_wrong_or_missing_token(
    our_auth_server: AuthServer, binding: str, scenario: str, token: str | None
) -> None:
    lines = sdk_env.run_sdk_client(our_auth_server.url, binding, scenario, token=token, check=False)
    assert len(lines) == 1 and "error" in lines[0], lines  # nothing got through
    assert "401" in lines[0]["error"]  # HTTP 401, not an error hidden in an HTTP 200
