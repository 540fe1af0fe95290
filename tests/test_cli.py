"""The real ``a2a`` console script, run as subprocesses against a server it started itself."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

pytestmark = pytest.mark.slow  # every test starts `a2a` processes

ROOT = Path(__file__).resolve().parents[1]
ECHO_TARGET = "examples/echo_agent.py:agent"
#: Every client command gets this long; a server this long to print its address.
CALL_TIMEOUT = 30.0
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


def _a2a() -> str:
    sibling = Path(sys.executable).with_name("a2a")
    found = str(sibling) if sibling.is_file() else shutil.which("a2a")
    assert found, "the a2a console script is not installed next to this Python"
    return found


A2A = _a2a()


def _env(**extra: str) -> dict[str, str]:
    """The parent's environment without any A2A credentials, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


def run(*args: str, env: dict[str, str] | None = None, timeout: float = CALL_TIMEOUT) -> Result:
    proc = subprocess.run(
        [A2A, *args], cwd=ROOT, env=env or _env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(result: Result, *, code: int = 1, contains: str = "") -> str:
    """A failure is one line on stderr, a non-zero exit, and never a traceback."""
    assert result.code == code, result
    assert "Traceback" not in result.err and "Traceback" not in result.out
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert lines[0].startswith("a2a: "), lines[0]
    assert contains.lower() in lines[0].lower(), lines[0]
    return lines[0]


class Server:
    """``a2a serve`` in a subprocess: started, its URL read from its first line, stopped by PID."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [A2A, "serve", *args],
            cwd=ROOT,
            env=env or _env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        try:
            self.first_line = self._next_line(START_TIMEOUT)
        except AssertionError:
            self.proc.kill()
            self.proc.communicate(timeout=STOP_TIMEOUT)
            raise
        self.url = ""
        self.stderr = ""

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def _next_line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"a2a serve printed nothing within {timeout}s") from None
        return "" if line is None else line.rstrip("\n")

    def started(self) -> Server:
        if not (self.first_line.startswith("Serving '") and "' at " in self.first_line):
            code = self.stop()
            raise AssertionError(f"a2a serve did not start (exit {code}): {self.first_line!r} {self.stderr!r}")
        self.url = self.first_line.rsplit("' at ", 1)[1].strip()
        assert self.url.startswith("http://127.0.0.1:")
        return self

    def stop(self) -> int:
        """SIGTERM by PID; the exit code (which must come within STOP_TIMEOUT)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=STOP_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT)
            self._reader.join(timeout=STOP_TIMEOUT)
            assert self.proc.stderr is not None
            self.stderr = self.proc.stderr.read()
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()
        return code

    def wait_exit(self) -> tuple[int, str]:
        """For a server expected to fail at start: its exit code and stderr."""
        try:
            _, err = self.proc.communicate(timeout=START_TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.communicate(timeout=STOP_TIMEOUT)
            self._reader.join(timeout=STOP_TIMEOUT)
        return self.proc.returncode, err


def _served(target: str) -> Iterator[Server]:
    """``a2a serve TARGET --port 0`` for the tests of a module; it must stop cleanly."""
    server = Server(target, "--port", "0").started()
    try:
        yield server
    finally:
        assert server.stop() == 0


@pytest.fixture(scope="module")
def echo() -> Iterator[Server]:
    yield from _served(ECHO_TARGET)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ---- serve --------------------------------------------------------------------------------------


def test_serve_prints_the_real_url_and_its_skills(echo: Server) -> None:
    port = int(echo.url.rsplit(":", 1)[1])
    assert port != 0
    assert echo._next_line(START_TIMEOUT).strip().startswith("skill echo:")


def test_serve_stops_cleanly_on_sigterm() -> None:
    server = Server(ECHO_TARGET, "--port", "0").started()
    assert run("send", server.url, "hello").code == 0
    assert server.stop() == 0


def test_serve_stops_cleanly_on_sigterm_with_a_task_in_flight() -> None:
    server = Server(ECHO_TARGET, "--port", "0").started()
    held = run("send", server.url, "hold:60", "--no-wait", "--json")
    assert held.code == 0, held
    assert server.stop() == 0


# ---- client commands ---------------------------------------------------------------------------


def test_card(echo: Server) -> None:
    result = run("card", echo.url)
    assert result.code == 0, result
    assert result.out.startswith("Echo 1.0.0\n")
    assert f"JSONRPC    A2A 1.0  {echo.url}/a2a/jsonrpc" in result.out
    assert "skill echo:" in result.out


def test_card_json(echo: Server) -> None:
    result = run("card", echo.url, "--json")
    assert result.code == 0, result
    (card,) = result.json_lines()
    assert card["name"] == "Echo"
    bindings = [i["protocolBinding"] for i in card["supportedInterfaces"]]
    assert bindings[:2] == ["JSONRPC", "HTTP+JSON"]
    assert card["capabilities"]["streaming"] is True


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_send(echo: Server, binding: str) -> None:
    result = run("send", echo.url, "hello there", "--binding", binding)
    assert result.code == 0, result
    assert result.out == "hello there\n"
    assert result.err == ""


def test_send_json(echo: Server) -> None:
    result = run("send", echo.url, "hello", "--json")
    assert result.code == 0, result
    (message,) = result.json_lines()
    assert message["role"] == "ROLE_AGENT"
    assert message["parts"] == [{"text": "hello"}]


def test_send_stream(echo: Server) -> None:
    result = run("send", echo.url, "stream:3", "--stream")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert lines[0].startswith("task ") and lines[0].endswith("submitted")
    # The chunks of one artifact flow on as one text; the status starts a line of its own.
    assert lines[1:] == ["chunk 0chunk 1chunk 2", "  completed"]


def test_send_stream_json(echo: Server) -> None:
    result = run("send", echo.url, "stream:3", "--stream", "--json")
    assert result.code == 0, result
    events = result.json_lines()
    assert [next(iter(e)) for e in events] == [
        "task",
        "artifactUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events[1:4]] == [
        "chunk 0",
        "chunk 1",
        "chunk 2",
    ]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len({e[next(iter(e))].get("taskId", e[next(iter(e))].get("id")) for e in events}) == 1


def test_no_wait_then_get_cancel_and_list(echo: Server) -> None:
    sent = run("send", echo.url, "hold:30", "--no-wait", "--json")
    assert sent.code == 0, sent
    (task,) = sent.json_lines()
    task_id = task["id"]
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")

    got = run("get", echo.url, task_id, "--json")
    assert got.code == 0, got
    (current,) = got.json_lines()
    assert current["id"] == task_id
    assert current["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")

    shown = run("get", echo.url, task_id)
    assert shown.code == 0 and shown.out.startswith(f"task {task_id}  ")

    canceled = run("cancel", echo.url, task_id, "--json")
    assert canceled.code == 0, canceled
    (after,) = canceled.json_lines()
    assert after["id"] == task_id and after["status"]["state"] == "TASK_STATE_CANCELED"

    listed = run("list", echo.url, "--json")
    assert listed.code == 0, listed
    (page,) = listed.json_lines()
    assert task_id in [t["id"] for t in page["tasks"]]
    assert page["nextPageToken"] == ""

    filtered = run("list", echo.url, "--state", "canceled")
    assert filtered.code == 0, filtered
    assert any(line.startswith(f"{task_id}  canceled") for line in filtered.out.splitlines())

    again = run("cancel", echo.url, task_id)
    assert_one_line_error(again, contains="TaskNotCancelableError")


def test_list_human_readable(echo: Server) -> None:
    assert run("send", echo.url, "stream:1").code == 0
    result = run("list", echo.url, "--page-size", "1")
    assert result.code == 0, result
    lines = result.out.splitlines()
    assert len(lines) == 2 and "next page: --page-token" in lines[-1]


# ---- send --skill ------------------------------------------------------------------------------------

SHOP_TARGET = "tests/conformance/skills_agent.py:agent"


@pytest.fixture(scope="module")
def shop() -> Iterator[Server]:
    yield from _served(SHOP_TARGET)


def test_send_skill_with_arguments(shop: Server) -> None:
    result = run("send", shop.url, "--skill", "forecast", "--data", '{"city": "Paris", "days": 2}', "--json")
    assert result.code == 0, result
    (task,) = result.json_lines()
    assert task["artifacts"][0]["parts"][0]["data"] == {"city": "Paris", "days": 2}


def test_send_skill_with_text_then_the_follow_up_reaches_it(shop: Server) -> None:
    asked = run("send", shop.url, "a shirt", "--skill", "order", "--json")
    assert asked.code == 0, asked
    (task,) = asked.json_lines()
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    done = run("send", shop.url, "large", "--task-id", task["id"], "--stream")
    assert done.code == 0, done
    assert "order: size large" in done.out


def test_send_skill_with_a_bad_argument_names_it(shop: Server) -> None:
    result = run("send", shop.url, "--skill", "forecast", "--data", '{"city": "Paris", "days": "two"}')
    line = assert_one_line_error(result, contains="-32602")
    assert "days" in line


def test_send_skill_data_must_be_an_object(shop: Server) -> None:
    assert_one_line_error(run("send", shop.url, "--skill", "forecast", "--data", "[1]"), code=2, contains="JSON object")


# ---- errors: one line, non-zero exit, no traceback --------------------------------------------------


def test_unreachable_url() -> None:
    result = run("card", f"http://127.0.0.1:{_closed_port()}", "--retries", "1")
    assert_one_line_error(result, contains="cannot connect")


def test_unreachable_url_for_send_after_retries() -> None:
    result = run("send", f"http://127.0.0.1:{_closed_port()}", "hello", "--retries", "2")
    assert_one_line_error(result, contains="cannot connect")


def test_unknown_task_id(echo: Server) -> None:
    line = assert_one_line_error(run("get", echo.url, "no-such-task"), contains="TaskNotFoundError")
    assert "-32001" in line
    assert_one_line_error(run("cancel", echo.url, "no-such-task"), contains="TaskNotFoundError")


def test_bad_state(echo: Server) -> None:
    line = assert_one_line_error(run("list", echo.url, "--state", "sleeping"), code=2, contains="unknown state")
    assert "working" in line and "input-required" in line


def test_not_an_agent_url(echo: Server) -> None:
    # Something answers, but not with an agent card.
    assert_one_line_error(run("card", echo.url + "/nothing-here", "--retries", "1"), contains="404")


@pytest.mark.parametrize(
    ("target", "contains"),
    [
        ("nosuchmodule:agent", "cannot import module 'nosuchmodule'"),
        ("examples/echo_agent.py:nothing", "has no attribute 'nothing'"),
        ("examples/no_such_file.py:agent", "no such file"),
        ("examples/echo_agent.py:MAX_CHUNKS", "not an a2a Agent"),
        ("no-colon-here", "MODULE:ATTR"),
    ],
)
def test_serve_bad_target(target: str, contains: str) -> None:
    code, err = Server(target, "--port", "0").wait_exit()
    assert_one_line_error(Result(code, "", err), code=2, contains=contains)


def test_serve_port_already_in_use(echo: Server) -> None:
    port = echo.url.rsplit(":", 1)[1]
    code, err = Server(ECHO_TARGET, "--port", port).wait_exit()
    assert_one_line_error(Result(code, "", err), contains=f"cannot listen on 127.0.0.1:{port}")


def test_serve_auth_without_credentials_refuses_to_start() -> None:
    code, err = Server(ECHO_TARGET, "--port", "0", "--auth", "bearer").wait_exit()
    assert_one_line_error(Result(code, "", err), contains="A2A_BEARER_TOKENS")


def test_serve_with_a_missing_credentials_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    code, err = Server(ECHO_TARGET, "--port", "0", "--auth", "apikey", "--credentials-file", str(missing)).wait_exit()
    assert_one_line_error(Result(code, "", err), contains="nope.txt")


# ---- serve with bearer auth ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def locked() -> Iterator[Server]:
    tokens = "alice:s3cret-tok,bob:--Dash-led_tok"
    server = Server(ECHO_TARGET, "--port", "0", "--auth", "bearer", env=_env(A2A_BEARER_TOKENS=tokens)).started()
    try:
        yield server
    finally:
        assert server.stop() == 0


def test_auth_card_declares_bearer(locked: Server) -> None:
    result = run("card", locked.url, "--json")
    assert result.code == 0, result
    (card,) = result.json_lines()
    assert card["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}


def test_auth_send_with_token(locked: Server) -> None:
    result = run("send", locked.url, "hello", "--token", "s3cret-tok")
    assert result.code == 0, result
    assert result.out == "hello\n"


@pytest.mark.parametrize("form", ["apart", "joined"])
def test_auth_send_with_a_token_that_begins_with_dashes(locked: Server, form: str) -> None:
    """A generated secret may begin with ``-`` (URL-safe base64 does, one time in 64): it is
    still the value of ``--token``, given apart or joined with ``=``."""
    token = ["--token", "--Dash-led_tok"] if form == "apart" else ["--token=--Dash-led_tok"]
    result = run("send", locked.url, "hello", *token)
    assert result.code == 0, result
    assert result.out == "hello\n"


def test_auth_send_with_token_from_the_environment(locked: Server) -> None:
    result = run("send", locked.url, "hello", env=_env(A2A_TOKEN="s3cret-tok"))
    assert result.code == 0, result


@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_auth_send_without_a_valid_token_fails_with_one_line(locked: Server, token: str | None) -> None:
    args = ["send", locked.url, "hello"] + (["--token", token] if token else [])
    result = run(*args)
    line = assert_one_line_error(result, contains="authentication")
    assert "s3cret" not in line and (token is None or token not in line)
