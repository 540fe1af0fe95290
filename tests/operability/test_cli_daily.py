"""The CLI as a daily tool: version, banner, flowing streams, questions, Ctrl-C, subscribe, push.

Subprocess tests of the real ``a2a`` script; the terminal behaviours run under a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cli import A2A, ROOT, START_TIMEOUT, Server, _env, run

pytestmark = pytest.mark.slow  # every test starts `a2a` processes

AGENT = "tests/operability/cli_agent.py:agent"
PYTHON = os.path.join(os.path.dirname(A2A), "python")


@pytest.fixture(scope="module")
def agent() -> Iterator[Server]:
    server = Server(AGENT, "--port", "0", "--push-allow", "127.0.0.1/32").started()
    try:
        yield server
    finally:
        assert server.stop() == 0


# ---- version, python -m, startup -------------------------------------------------------------------


def test_version_and_python_dash_m_are_the_same_command() -> None:
    import a2a

    result = run("--version")
    assert result.code == 0, result
    assert result.out.startswith(f"a2a-net {a2a.__version__}")
    module = subprocess.run(
        [PYTHON, "-m", "a2a", "--version"], cwd=ROOT, env=_env(), capture_output=True, text=True, check=False
    )
    assert module.returncode == 0 and module.stdout == result.out


def _modules_after(code: str) -> set[str]:
    """The top-level modules loaded once ``code`` ran (in a fresh interpreter)."""
    probe = f"import sys, contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    {code}\n"
    probe += "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    done = subprocess.run([PYTHON, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_version_loads_no_network_or_model_library() -> None:
    loaded = _modules_after("from a2a.cli import main; main(['--version'])")
    assert not loaded & {"httpx", "aiohttp", "langgraph", "langchain_core", "openai", "redis", "msgspec"}, loaded


def test_supervise_help_and_client_commands_do_not_load_langgraph() -> None:
    help_loaded = _modules_after(
        "from a2a.cli import main\n    with contextlib.suppress(SystemExit): main(['supervise', '--help'])"
    )
    assert not help_loaded & {"langgraph", "langchain_core", "openai"}, help_loaded
    send_loaded = _modules_after(
        "from a2a.cli import main; main(['send', 'http://127.0.0.1:1', 'x', '--retries', '1'])"
    )
    # A built-in command does not even read the plugins (supervise, demo).
    assert not send_loaded & {"langgraph", "langchain_core", "openai", "redis", "supervisor"}, send_loaded


def test_the_cli_default_limits_are_the_servers() -> None:
    from a2a.cli import options
    from a2a.cli.main import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_JSON_DEPTH, DEFAULT_SSE_HEARTBEAT
    from a2a.protocol.nesting import DEFAULT_MAX_JSON_DEPTH as DEPTH_DEFAULT
    from a2a.server.app import DEFAULT_MAX_BODY_BYTES as SERVER_DEFAULT
    from a2a.server.bindings.sse import DEFAULT_SSE_HEARTBEAT as HEARTBEAT_DEFAULT
    from a2a.transport import base

    assert DEFAULT_MAX_BODY_BYTES == SERVER_DEFAULT
    assert DEFAULT_MAX_JSON_DEPTH == DEPTH_DEFAULT
    assert DEFAULT_SSE_HEARTBEAT == HEARTBEAT_DEFAULT
    assert options.DEFAULT_IDLE_TIMEOUT == base.DEFAULT_IDLE_TIMEOUT
    assert options.DEFAULT_MAX_RESPONSE_BYTES == base.DEFAULT_MAX_RESPONSE_BYTES
    from a2a.cli.serve_limits import DEFAULTS
    from a2a.server.engine.limits import HttpLimits

    for name, value in vars(DEFAULTS).items():
        assert getattr(HttpLimits(), name) == value, name
    from a2a.cli.serve_limits import DEFAULT_MAX_EXECUTING
    from a2a.server.channels.rpc_connection import ConnectionLimits
    from a2a.server.channels.stdio import StdioConfig
    from a2a.server.channels.ws import WebSocketConfig

    assert ConnectionLimits().max_executing == DEFAULT_MAX_EXECUTING
    assert WebSocketConfig().max_executing == DEFAULT_MAX_EXECUTING
    assert StdioConfig().max_executing == DEFAULT_MAX_EXECUTING


# ---- the serve banner ---------------------------------------------------------------------------


def test_the_banner_says_where_what_and_how_protected() -> None:
    server = Server(AGENT, "--port", "0", "--public-url", "https://agents.example/cli")
    try:
        assert server.first_line == "Serving 'CliAgent' at https://agents.example/cli"
        lines = []
        while not (lines and lines[-1].strip().startswith("a2a-net ")):
            lines.append(server._next_line(START_TIMEOUT))
    finally:
        assert server.stop() == 0
    text = "\n".join(lines)
    assert "  listening on 127.0.0.1:" in text and "(public URL https://agents.example/cli)" in text
    assert "  card at https://agents.example/cli/.well-known/agent-card.json" in text
    for binding in ("JSONRPC", "HTTP+JSON", "WEBSOCKET"):
        assert f"  {binding}" in text
    assert "  tasks in memory (gone when the server stops)" in text
    assert "  auth: off" in text


def test_the_banner_says_auth_is_on(tmp_path: os.PathLike[str]) -> None:
    server = Server(AGENT, "--port", "0", "--auth", "bearer", env=_env(A2A_BEARER_TOKENS="me:secret"))
    try:
        server.started()
        lines = [server._next_line(START_TIMEOUT) for _ in range(12)]
    finally:
        assert server.stop() == 0
    assert "  auth: bearer" in lines
    assert not any("secret" in line for line in lines)


# ---- send --stream ------------------------------------------------------------------------------


def test_streamed_chunks_flow_as_one_text(agent: Server) -> None:
    result = run("send", agent.url, "4", "--skill", "words", "--stream")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert lines[0].startswith("task ")
    assert "word0 word1 word2 word3 end" in lines
    assert lines[-1] == "  completed"
    assert "\x1b" not in result.out  # no ticker off a terminal


def _pty_run(args: list[str], *, answer: str | None = None, timeout: float = 30.0) -> tuple[int, str]:
    """Run ``a2a ARGS`` with a pseudo-terminal as stdin, stdout and stderr; type ``answer`` when
    it asks. Returns the exit code and everything it wrote."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [A2A, *args], cwd=ROOT, env=_env(), stdin=follower, stdout=follower, stderr=follower, close_fds=True
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed: the program ended
                    break
                if not chunk:
                    break
                seen += chunk
                if answer is not None and b"your answer" in seen:
                    os.write(leader, answer.encode() + b"\n")
                    answer = None
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(leader)
    return code, seen.decode(errors="replace")


def test_a_silent_task_shows_a_ticking_state_on_a_terminal(agent: Server) -> None:
    code, out = _pty_run(["send", agent.url, "2.5", "--skill", "think", "--stream"])
    assert code == 0, out
    assert re.search(r"\[(submitted|working) \d+s\]", out), out
    assert "s]\x1b[" in out  # erased before the next output
    assert "thought" in out


def test_a_question_on_a_terminal_is_asked_and_answered(agent: Server) -> None:
    code, out = _pty_run(["send", agent.url, "table", "--skill", "book", "--stream"], answer="4")
    assert code == 0, out
    assert "For how many people?" in out
    assert "Booked for 4." in out


def test_a_question_off_a_terminal_says_how_to_answer(agent: Server) -> None:
    asked = run("send", agent.url, "table", "--skill", "book")
    assert asked.code == 0, asked
    assert "input-required" in asked.out and "For how many people?" in asked.out
    task_id = asked.out.split()[1]
    assert f'answer with: a2a send {agent.url} "..." --task-id {task_id}' in asked.err
    answered = run("send", agent.url, "4", "--task-id", task_id)
    assert answered.code == 0, answered
    assert "Booked for 4." in answered.out


def _interrupt_stream(agent: Server, *extra: str) -> tuple[int, str, str]:
    """``a2a send --stream`` of a long task, then Ctrl-C (SIGINT by PID) once it named its task."""
    proc = subprocess.Popen(
        [A2A, "send", agent.url, "30", "--skill", "think", "--stream", *extra],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert first.startswith("task "), first
        task_id = first.split()[1]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    return proc.returncode, task_id, err


def test_ctrl_c_says_how_to_cancel_and_leaves_the_task_running(agent: Server) -> None:
    code, task_id, err = _interrupt_stream(agent)
    assert code == 130
    assert "Traceback" not in err
    assert f"a2a cancel {agent.url} {task_id}" in err
    state = run("get", agent.url, task_id, "--json")
    assert json.loads(state.out)["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert run("cancel", agent.url, task_id).code == 0


def test_ctrl_c_with_cancel_on_interrupt_cancels_the_task(agent: Server) -> None:
    code, task_id, err = _interrupt_stream(agent, "--cancel-on-interrupt")
    assert code == 130
    assert f"task {task_id} canceled" in err, err
    state = run("get", agent.url, task_id, "--json")
    assert json.loads(state.out)["status"]["state"] == "TASK_STATE_CANCELED"


# ---- subscribe and push -------------------------------------------------------------------------


def test_subscribe_follows_a_task_to_its_end(agent: Server) -> None:
    sent = run("send", agent.url, "4", "--skill", "think", "--no-wait", "--json")
    assert sent.code == 0, sent
    task_id = json.loads(sent.out)["id"]
    followed = run("subscribe", agent.url, task_id)
    assert followed.code == 0, followed
    lines = followed.out.splitlines()
    assert lines[0].startswith(f"task {task_id}") and not lines[0].endswith("completed")
    assert lines[-2:] == ["thought", "  completed"]
    # A task that has ended: its final state and what it made.
    again = run("subscribe", agent.url, task_id)
    assert again.code == 0, again
    assert again.out.splitlines() == [f"task {task_id}  completed", "thought"]


def test_push_create_list_get_delete(agent: Server) -> None:
    sent = run("send", agent.url, "30", "--skill", "think", "--no-wait", "--json")
    task_id = json.loads(sent.out)["id"]
    try:
        hook = "http://127.0.0.1:9/hook"
        created = run("push", "create", agent.url, task_id, hook, "--config-id", "c1", "--json")
        assert created.code == 0, created
        assert json.loads(created.out)["url"] == hook
        listed = run("push", "list", agent.url, task_id, "--json")
        assert [c["id"] for c in json.loads(listed.out)["configs"]] == ["c1"]
        got = run("push", "get", agent.url, task_id, "c1", "--json")
        assert json.loads(got.out)["id"] == "c1"
        deleted = run("push", "delete", agent.url, task_id, "c1")
        assert deleted.code == 0 and "deleted push config c1" in deleted.out
        assert json.loads(run("push", "list", agent.url, task_id, "--json").out).get("configs", []) == []
    finally:
        run("cancel", agent.url, task_id)


def test_global_flags_after_any_subcommand(agent: Server) -> None:
    result = run("card", agent.url, "--log-level", "debug")
    assert result.code == 0, result
    assert " DEBUG " in result.err


if sys.platform == "win32":  # pragma: no cover - pseudo-terminals are POSIX
    pytest.skip("POSIX only", allow_module_level=True)


# ---- the README's multi-skill agent and embedded server ----------------------------------------------


def _readme_block(first_line: str) -> str:
    """The README's fenced Python block that starts with ``first_line``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in text.split("```python\n")[1:]:
        body = block.split("```", 1)[0]
        if body.startswith(first_line):
            return body
    raise AssertionError(f"README.md has no Python block starting {first_line!r}")


def test_the_readmes_multi_skill_agent_from_the_shell_and_from_python(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(_readme_block("# shop.py"))
    server = Server(f"{tmp_path}/shop.py:agent", "--port", "0").started()
    try:
        priced = run("send", server.url, "apple")
        assert priced.code == 0 and "apple: 0.50 EUR" in priced.out, priced
        unknown = run("send", server.url, "kiwi")
        assert unknown.code == 1 and "KeyError: 'kiwi'" in unknown.out, unknown
        ordered = run("send", server.url, "--skill", "order", "--data", '{"item": "pear", "quantity": 3}')
        assert ordered.code == 0 and '"quantity":3' in ordered.out, ordered
        counted = run("send", server.url, "5", "--skill", "count", "--stream")
        assert counted.code == 0 and "1 2 3 4 5 " in counted.out.splitlines(), counted
        client = _readme_block("import asyncio\n\nfrom a2a import A2AClient").replace(
            "http://127.0.0.1:8000", server.url
        )
        (tmp_path / "client.py").write_text(client)
        done = subprocess.run(
            [PYTHON, "client.py"], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "apple: 0.50 EUR" in done.stdout and "ordered" in done.stdout
    finally:
        assert server.stop() == 0


def test_the_readmes_embedded_server_runs_until_ctrl_c(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(_readme_block("# shop.py"))
    (tmp_path / "embedded.py").write_text(_readme_block("# embedded.py").replace("port=8000", "port=0"))
    proc = subprocess.Popen(
        [PYTHON, "embedded.py"], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:
        first = proc.stdout.readline()
        assert first.startswith("serving at http://127.0.0.1:"), first
        url = first.split()[2].rstrip(";")
        assert run("send", url, "pear").out.strip().endswith("pear: 0.70 EUR")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_help_and_client_commands_do_not_load_the_server() -> None:
    """``a2a --help`` and ``a2a send`` never import aiohttp's server (a2a.server): the loader,
    imported for its error type, loads it only to load an agent."""
    for code in (
        "from a2a.cli import main\n    with contextlib.suppress(SystemExit): main(['--help'])",
        "from a2a.cli import main; main(['send', 'http://127.0.0.1:1', 'x', '--retries', '1'])",
    ):
        probe = (
            f"import sys, contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()):\n    {code}\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('a2a.server', 'aiohttp')))))"
        )
        done = subprocess.run([PYTHON, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [], done.stdout
