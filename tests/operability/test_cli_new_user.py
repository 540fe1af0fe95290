"""What a new user trips over on the command line (issue 32): flags between the arguments,
a send that outlasts its --timeout, the follow-up hint over stdio, what ``a2a card`` and the
banner say.

Subprocess tests of the real ``a2a`` script, against ``tests/operability/cli_agent.py``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cli import A2A, Server, run

pytestmark = pytest.mark.slow  # every test starts `a2a` processes

AGENT = "tests/operability/cli_agent.py:agent"


@pytest.fixture(scope="module")
def agent() -> Iterator[Server]:
    server = Server(AGENT, "--port", "0", "--push-allow", "127.0.0.1/32").started()
    try:
        yield server
    finally:
        assert server.stop() == 0


# ---- flags anywhere ---------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [["--skill", "lookup"], ["--skill", "lookup", "--stream"]])
def test_send_takes_flags_between_the_url_and_the_text(agent: Server, flags: list[str]) -> None:
    result = run("send", agent.url, *flags, "a")
    assert result.code == 0, result
    assert "alpha" in result.out


def test_send_json_between_the_url_and_the_text(agent: Server) -> None:
    result = run("send", agent.url, "--json", "--skill", "lookup", "a")
    assert result.code == 0, result
    (task,) = result.json_lines()
    assert task["artifacts"][0]["parts"][0]["text"] == "alpha"


def test_every_command_takes_flags_between_its_arguments(agent: Server) -> None:
    asked = run("send", agent.url, "--json", "--skill", "book", "table")
    assert asked.code == 0, asked
    task_id = json.loads(asked.out)["id"]
    got = run("get", agent.url, "--json", task_id)
    assert got.code == 0, got
    assert json.loads(got.out)["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    hook = "http://127.0.0.1:9/hook"
    created = run("push", "create", agent.url, "--json", task_id, "--config-id", "c1", hook)
    assert created.code == 0, created
    assert json.loads(created.out)["url"] == hook
    listed = run("push", "list", agent.url, "--json", task_id)
    assert [c["id"] for c in json.loads(listed.out)["configs"]] == ["c1"]
    one = run("push", "get", agent.url, "--json", task_id, "c1")
    assert json.loads(one.out)["id"] == "c1"
    deleted = run("push", "delete", agent.url, "--json", task_id, "c1")
    assert deleted.code == 0, deleted
    cancelled = run("cancel", agent.url, "--json", task_id)
    assert cancelled.code == 0, cancelled
    assert json.loads(cancelled.out)["status"]["state"] == "TASK_STATE_CANCELED"
    followed = run("subscribe", agent.url, "--json", task_id)
    assert followed.code == 1, followed  # a cancelled task: non-zero, as for send
    assert json.loads(followed.out.splitlines()[0])["task"]["status"]["state"] == "TASK_STATE_CANCELED"


# ---- a blocking send that outlasts --timeout ----------------------------------------------------


def test_a_send_that_outlasts_its_timeout_names_the_task_and_what_to_do(agent: Server) -> None:
    result = run("send", agent.url, "60", "--skill", "think", "--timeout", "3")
    assert result.code == 124, result  # documented: README, `a2a send --help`
    assert "Traceback" not in result.err
    (line,) = result.err.splitlines()
    found = re.search(r"^a2a: task (\w+) did not finish within --timeout 3s and goes on: ", line)
    assert found, line
    task_id = found.group(1)
    for command in ("get", "subscribe", "cancel"):
        assert f"a2a {command} {agent.url} {task_id}" in line, line
    state = run("get", agent.url, task_id, "--json")
    assert json.loads(state.out)["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert run("cancel", agent.url, task_id).code == 0


def test_a_send_within_its_timeout_prints_the_finished_task(agent: Server) -> None:
    result = run("send", agent.url, "--skill", "words", "3", "--json")
    assert result.code == 0, result
    (task,) = result.json_lines()
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(p["text"] for p in task["artifacts"][0]["parts"]) == "word0 word1 word2 end\n"


# ---- stdio: targets ------------------------------------------------------------------------------


def _stdio_target() -> str:
    return f"stdio:{shlex.quote(A2A)} serve {AGENT} --stdio"


def test_over_stdio_the_question_does_not_offer_a_follow_up_that_cannot_reach_the_task() -> None:
    asked = run("send", _stdio_target(), "table", "--skill", "book")
    assert asked.code == 0, asked
    assert "input-required" in asked.out and "For how many people?" in asked.out
    assert "--task-id" not in asked.err and "answer with" not in asked.err, asked.err
    (line,) = asked.err.splitlines()
    assert line.startswith("the task waits for input; a stdio: agent runs as this command's child and stops with it")
    assert "at a terminal" in line


def test_over_stdio_a_send_that_outlasts_its_timeout_says_the_task_stops_with_it() -> None:
    result = run("send", _stdio_target(), "60", "--skill", "think", "--timeout", "3")
    assert result.code == 124, result
    (line,) = result.err.splitlines()
    assert "did not finish within --timeout 3s; a stdio: agent runs as this command's child" in line
    assert "a2a get" not in line and "a2a cancel" not in line


# ---- what a2a card, the banner and the task show -----------------------------------------------


def test_the_card_names_bindings_as_the_banner_and_binding_do_and_shows_typed_arguments(agent: Server) -> None:
    card = run("card", agent.url)
    assert card.code == 0, card
    assert "https://a2a-net.dev/bindings/" not in card.out, card.out
    lines = card.out.splitlines()
    ws = [line for line in lines if line.strip().startswith("WEBSOCKET")]
    assert len(ws) == 1 and ws[0].rstrip().endswith("/a2a/ws"), card.out
    assert "  skill order(item: string, quantity: integer = 1, note: string | null = null): order" in lines
    # The name shown is the one --binding takes.
    sent = run("send", agent.url, "--binding", "WEBSOCKET", "--skill", "lookup", "a")
    assert sent.code == 0 and "alpha" in sent.out, sent


def test_an_unnamed_artifact_is_not_shown_by_its_id(agent: Server) -> None:
    one = run("send", agent.url, "--skill", "lookup", "a")
    assert one.code == 0, one
    assert one.out.splitlines()[1:] == ["alpha"], one.out
    several = run("send", agent.url, "--skill", "order", "--data", '{"item": "tea", "quantity": 2}')
    assert several.code == 0, several
    assert several.out.splitlines()[1:] == [
        "[artifact 1]",
        "2 x tea",
        "[receipt]",
        '{"item":"tea","quantity":2,"note":null}',
    ], several.out


def test_the_banner_says_what_memory_means() -> None:
    server = Server(AGENT, "--port", "0").started()
    try:
        lines = []
        while not (lines and lines[-1].strip().startswith("a2a-net ")):
            lines.append(server._next_line(30))
    finally:
        assert server.stop() == 0
    assert "  tasks in memory (gone when the server stops)" in lines
    assert not any(line.rstrip().endswith("memory:") for line in lines)


def test_a_refused_webhook_names_the_flag_that_admits_it() -> None:
    server = Server(AGENT, "--port", "0").started()  # no --push-allow: loopback is refused
    try:
        sent = run("send", server.url, "--json", "--skill", "book", "table")
        task_id = json.loads(sent.out)["id"]
        refused = run("push", "create", server.url, task_id, "http://127.0.0.1:9/hook")
    finally:
        assert server.stop() == 0
    assert refused.code == 1, refused
    assert "forbidden range (loopback)" in refused.err and "--push-allow" in refused.err, refused.err


def test_a_config_typo_is_answered_with_the_option_meant(tmp_path: Path) -> None:
    config = tmp_path / "supervisor.yaml"
    config.write_text("supervisor:\n  max_concurency: 3\n", encoding="utf-8")
    done = run("supervise", "hello", "-c", str(config))
    assert done.code == 2, done
    assert "Traceback" not in done.err
    assert f"{config}:2: supervisor.max_concurency: unknown option 'max_concurency'" in done.err, done.err
    assert "(did you mean 'max_concurrency'?)" in done.err, done.err
