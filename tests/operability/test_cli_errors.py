"""Every failure the CLI reports is one line on stderr, a non-zero exit, and never a traceback.

Each case runs the real ``a2a`` console script as a subprocess (issue 15, "Errors are one line,
everywhere").
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_cli import A2A, ROOT, Result, Server, _closed_port, _env, run

pytestmark = pytest.mark.slow  # every test starts `a2a` processes

AGENT = "tests/operability/cli_agent.py:agent"
ECHO = "examples/echo_agent.py:agent"


def one_line(result: Result, *, code: int | None = None) -> str:
    """The one line of stderr of a failed command (which wrote no traceback anywhere)."""
    assert result.code != 0, result
    if code is not None:
        assert result.code == code, result
    assert "Traceback" not in result.err and "Traceback" not in result.out, result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    return lines[0]


@pytest.fixture(scope="module")
def agent() -> Iterator[Server]:
    server = Server(AGENT, "--port", "0").started()
    try:
        yield server
    finally:
        assert server.stop() == 0


# ---- a2a supervise --------------------------------------------------------------------------------


def test_unreachable_model_endpoint_is_one_line_naming_its_url() -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    env = _env(A2A_MODEL="some-model", A2A_MODEL_BASE_URL=url, A2A_MODEL_API_KEY="unused")
    result = run("supervise", "say hello", "--batch", "--agent", f"http://127.0.0.1:{_closed_port()}", env=env)
    line = one_line(result, code=1)
    assert line.startswith("a2a supervise: ")
    assert url in line and "cannot be reached" in line


# ---- a2a serve ------------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["http", "stdio"])
def test_unreachable_redis_is_one_line_naming_the_store(binding: str) -> None:
    store = f"redis://127.0.0.1:{_closed_port()}"
    where = ["--port", "0"] if binding == "http" else ["--stdio"]
    line = one_line(run("serve", ECHO, *where, "--store", store), code=1)
    assert line.startswith("a2a: ") and store in line


def test_unknown_factory_option_names_it_and_suggests_the_closest() -> None:
    line = one_line(run("serve", "agents.assistant:make_agent", "--tols", "files"), code=2)
    assert "--tols" in line and "did you mean --tools?" in line
    assert "TypeError" not in line


def test_a_serve_flag_with_a_typo_after_the_target_is_suggested() -> None:
    line = one_line(run("serve", ECHO, "--prot", "9000"), code=2)
    assert "--prot" in line and "did you mean --port?" in line


def test_serve_flags_after_the_target_are_serve_flags() -> None:
    server = Server(ECHO, "--port", "0", "--log-level", "info").started()
    assert server.stop() == 0
    assert " INFO " in server.stderr  # the level was read, not taken for a factory option


@pytest.mark.parametrize("port", ["70000", "-1", "eighty"])
def test_a_port_out_of_range_is_refused(port: str) -> None:
    line = one_line(run("serve", ECHO, f"--port={port}"), code=2)
    assert "--port" in line and port in line


def test_a_public_url_that_is_no_url_is_refused() -> None:
    line = one_line(run("serve", ECHO, "--public-url", "not-a-url"), code=2)
    assert "--public-url" in line and "not-a-url" in line


# ---- client commands ------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["flag", "env"])
def test_a_non_ascii_token_is_one_line(where: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    if where == "flag":
        result = run("send", url, "hi", "--token", "jeton-été")
    else:
        result = run("send", url, "hi", env=_env(A2A_TOKEN="jeton-été"))
    assert "a token must be ASCII" in one_line(result, code=2)


def test_an_unknown_client_option_is_suggested() -> None:
    line = one_line(run("send", "http://127.0.0.1:1", "hi", "--strem"), code=2)
    assert "did you mean --stream?" in line


def test_a_stream_piped_into_a_reader_that_leaves_ends_quietly(agent: Server) -> None:
    """``a2a send ... --stream | head -c 20``: the reader closes the pipe mid-stream. Like cat or
    grep, the CLI then stops without a word (no BrokenPipeError) and a non-zero exit."""
    proc = subprocess.Popen(
        [A2A, "send", agent.url, "400", "--skill", "words", "--stream"],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert proc.stdout.read(20)
        proc.stdout.close()  # the reader leaves while the agent is still streaming
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        proc.stderr.close()
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert not err.strip(), err
    assert code != 0


def test_a_skill_exception_reaches_the_client_with_its_type(agent: Server) -> None:
    result = run("send", agent.url, "zzz", "--skill", "lookup")
    assert result.code == 1, result
    assert "KeyError: 'zzz'" in result.out, result.out
    assert "Traceback" not in result.out + result.err


def test_python_dash_m_a2a_reports_errors_the_same_way() -> None:
    python = os.path.join(os.path.dirname(A2A), "python")
    proc = subprocess.run(
        [python, "-m", "a2a", "serve", ECHO, "--port", "70000"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    line = one_line(Result(proc.returncode, proc.stdout, proc.stderr), code=2)
    assert "70000" in line


class _SlammingDoor:
    """A TCP port that accepts each connection and closes it at once: a model endpoint that is
    up at the start of a run and fails when it is called."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join(timeout=5)
        self.sock.close()


def test_a_model_that_fails_during_the_run_is_one_log_line_naming_its_url() -> None:
    door = _SlammingDoor()
    echo = Server(ECHO, "--port", "0").started()
    try:
        url = f"http://127.0.0.1:{door.port}/v1"
        env = _env(A2A_MODEL="some-model", A2A_MODEL_BASE_URL=url, A2A_MODEL_API_KEY="unused")
        result = run("supervise", "say hello", "--batch", "--agent", echo.url, env=env, timeout=120)
    finally:
        assert echo.stop() == 0
        door.close()
    line = one_line(result, code=1)
    assert "failed" in line and url in line, line


def test_a_missing_supervisor_config_is_one_line_with_where_to_get_the_examples(tmp_path: Path) -> None:
    done = subprocess.run(
        [A2A, "supervise", "hello", "-c", "examples/supervisor.yaml"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = one_line(Result(done.returncode, done.stdout, done.stderr), code=2)
    assert "no such file: examples/supervisor.yaml" in line and "a2a examples --copy" in line


def test_a_misspelt_command_is_suggested() -> None:
    line = one_line(run("sned", "http://127.0.0.1:1", "hi"), code=2)
    assert "unknown 'sned' (did you mean send?)" in line
