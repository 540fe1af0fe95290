"""OUR ``a2a`` CLI against the reference SDK's server, as a user runs it (a subprocess).

Checked: exit codes, ``--json`` output (one wire-JSON object per line), the human output
of a few commands, and that every error is one line on stderr without a traceback.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from our_env import run_cli

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # the reference SDK runs as processes

BINDINGS = ["JSONRPC", "HTTP+JSON"]
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


def ok_json(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The JSON lines of a command that must have succeeded."""
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """A failed command: exit 1, nothing on stdout, one ``a2a: ...`` line on stderr."""
    assert proc.returncode == 1, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("a2a: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def a2a(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "--retries", "1", "--timeout", "20")


def test_card_json(sdk_server_url: str) -> None:
    (card,) = ok_json(a2a("card", sdk_server_url, "--json"))
    assert card["name"] == "sdk-echo"
    assert [(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", sdk_server_url),
        ("HTTP+JSON", sdk_server_url),
    ]
    assert card["capabilities"]["streaming"] is True


def test_card_for_people(sdk_server_url: str) -> None:
    proc = a2a("card", sdk_server_url)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("sdk-echo 1.0.0\n")
    assert "JSONRPC" in proc.stdout and "HTTP+JSON" in proc.stdout
    assert "skill echo:" in proc.stdout


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_message(sdk_server_url: str, binding: str) -> None:
    (message,) = ok_json(a2a("send", sdk_server_url, "hello", "--json", "--binding", binding))
    assert message["role"] == "ROLE_AGENT"
    assert [p["text"] for p in message["parts"]] == ["hello"]
    plain = a2a("send", sdk_server_url, "hello", "--binding", binding)
    assert (plain.returncode, plain.stdout) == (0, "hello\n"), plain.stderr


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_stream(sdk_server_url: str, binding: str) -> None:
    events = ok_json(a2a("send", sdk_server_url, "stream:2", "--stream", "--json", "--binding", binding))
    assert [next(iter(e)) for e in events] == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate",
    ], events
    task_id = events[0]["task"]["id"]
    assert all(next(iter(e.values())).get("taskId", task_id) == task_id for e in events)
    assert events[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events[2:4]] == ["chunk 0", "chunk 1"]
    assert events[3]["artifactUpdate"].get("lastChunk") is True
    assert events[4]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("binding", BINDINGS)
def test_send_then_get(sdk_server_url: str, binding: str) -> None:
    (task,) = ok_json(a2a("send", sdk_server_url, "stream:2", "--json", "--binding", binding))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (got,) = ok_json(a2a("get", sdk_server_url, task["id"], "--json", "--binding", binding))
    assert got["id"] == task["id"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p["text"] for p in got["artifacts"][0]["parts"]] == ["chunk 0", "chunk 1"]
    plain = a2a("get", sdk_server_url, task["id"], "--binding", binding)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0] == f"task {task['id']}  completed"
    assert "chunk 0\nchunk 1" in plain.stdout


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancel(sdk_server_url: str, binding: str) -> None:
    (task,) = ok_json(a2a("send", sdk_server_url, "hold:30", "--no-wait", "--json", "--binding", binding))
    assert task["status"]["state"] not in TERMINAL
    (canceled,) = ok_json(a2a("cancel", sdk_server_url, task["id"], "--json", "--binding", binding))
    assert canceled["id"] == task["id"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    (got,) = ok_json(a2a("get", sdk_server_url, task["id"], "--json", "--binding", binding))
    assert got["status"]["state"] == "TASK_STATE_CANCELED"
    again = a2a("cancel", sdk_server_url, task["id"], "--binding", binding)
    one_line_error(again, "TaskNotCancelableError", "-32002")


@pytest.mark.parametrize("binding", BINDINGS)
def test_get_unknown_task(sdk_server_url: str, binding: str) -> None:
    one_line_error(a2a("get", sdk_server_url, "no-such-task", "--binding", binding), "TaskNotFoundError", "-32001")


@pytest.mark.parametrize("binding", BINDINGS)
def test_list(sdk_server_url: str, binding: str) -> None:
    # Two finished tasks in one conversation, then list them several ways.
    (first,) = ok_json(a2a("send", sdk_server_url, "stream:1", "--json", "--binding", binding))
    context = first["contextId"]
    (second,) = ok_json(
        a2a("send", sdk_server_url, "stream:1", "--context-id", context, "--json", "--binding", binding)
    )
    assert second["contextId"] == context

    (everything,) = ok_json(a2a("list", sdk_server_url, "--json", "--binding", binding))
    assert {first["id"], second["id"]} <= {task["id"] for task in everything["tasks"]}
    assert "nextPageToken" in everything

    (mine,) = ok_json(a2a("list", sdk_server_url, "--context-id", context, "--json", "--binding", binding))
    assert [task["id"] for task in mine["tasks"]] == [second["id"], first["id"]]  # newest first
    assert mine["nextPageToken"] == ""

    args = ("--context-id", context, "--state", "completed", "--page-size", "1", "--json", "--binding", binding)
    (page1,) = ok_json(a2a("list", sdk_server_url, *args))
    assert [task["id"] for task in page1["tasks"]] == [second["id"]]
    assert page1["nextPageToken"]
    (page2,) = ok_json(a2a("list", sdk_server_url, *args, "--page-token", page1["nextPageToken"]))
    assert [task["id"] for task in page2["tasks"]] == [first["id"]]
    assert page2["nextPageToken"] == ""

    plain = a2a("list", sdk_server_url, "--context-id", context, "--binding", binding)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0].startswith(f"{second['id']}  completed")
    assert plain.stdout.splitlines()[-1] == "(2 of 2)"


@pytest.mark.parametrize("binding", BINDINGS)
def test_agent_failure(sdk_server_url: str, binding: str) -> None:
    one_line_error(a2a("send", sdk_server_url, "fail", "--binding", binding), "InternalError", "-32603")


@pytest.mark.parametrize("binding", BINDINGS)
def test_error_inside_a_stream(sdk_server_url: str, binding: str) -> None:
    """What arrived before the error is printed; the error is one line; the exit code says so."""
    proc = a2a("send", sdk_server_url, "fail:working", "--stream", "--json", "--binding", binding)
    assert proc.returncode == 1, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [next(iter(e)) for e in events] == ["task", "statusUpdate"]
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("a2a: ") and "InternalError" in line


def test_unknown_state_is_a_usage_error(sdk_server_url: str) -> None:
    proc = a2a("list", sdk_server_url, "--state", "sleeping")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("a2a: unknown state 'sleeping'")
