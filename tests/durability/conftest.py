"""Real ``a2a serve`` processes, killed and restarted by PID, for the durability tests.

Every wait here is bounded: a server has ``START_TIMEOUT`` to print its address and
``STOP_TIMEOUT`` to exit, and ``poll_until`` gives up at its deadline.
"""

from __future__ import annotations

import asyncio
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

import pytest

from tests.redis_server import redis_server

ROOT = Path(__file__).resolve().parents[2]
ECHO_TARGET = "examples/echo_agent.py:agent"
SERVING_PREFIX = "Serving 'Echo' at "
START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0

T = TypeVar("T")


def a2a_script() -> str:
    sibling = Path(sys.executable).with_name("a2a")
    found = str(sibling) if sibling.is_file() else shutil.which("a2a")
    assert found, "the a2a console script is not installed next to this Python"
    return found


def free_port() -> int:
    """A loopback port that was free a moment ago (the kill test needs the same port each time)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_env(**extra: str) -> dict[str, str]:
    """The parent's environment without any A2A settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


class ServeProcess:
    """One ``a2a serve`` process: started, its URL read from its first line, ended by its PID.

    stderr goes to ``log_path`` (so nothing can fill a pipe, and a failure can show it)."""

    def __init__(self, args: list[str], *, log_path: Path, env: dict[str, str] | None = None) -> None:
        self.args = args
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in _reap
        self.proc = subprocess.Popen(
            [a2a_script(), "serve", *args],
            cwd=ROOT,
            env=env or serve_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        self.pid = self.proc.pid
        self.url = ""
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_tail(self, limit: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def wait_serving(self, timeout: float = START_TIMEOUT) -> str:
        """Block until the server prints its address (or fail, with its stderr)."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise AssertionError(f"a2a serve printed nothing within {timeout}s: {self.stderr_tail()}") from None
        if line is None or not line.startswith(SERVING_PREFIX):
            self.kill()
            raise AssertionError(
                f"a2a serve did not start (exit {self.proc.returncode}): {line!r}\n{self.stderr_tail()}"
            )
        self.url = line.removeprefix(SERVING_PREFIX).strip()
        assert self.url.startswith("http://127.0.0.1:"), self.url
        return self.url

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL by PID, and reap it (so its SQLite lock and port are released)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self._reap()

    def terminate(self) -> int:
        """SIGTERM by PID; the exit code, which must come within ``STOP_TIMEOUT``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"a2a serve (pid {self.pid}) did not stop within {STOP_TIMEOUT}s on SIGTERM") from None
        finally:
            self._reap()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=STOP_TIMEOUT)
        finally:
            self._reader.join(timeout=STOP_TIMEOUT)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self._log.close()


@pytest.fixture
def servers() -> Iterator[list[ServeProcess]]:
    """Every server a test starts goes in this list; whatever is still running at the end is killed."""
    started: list[ServeProcess] = []
    yield started
    for server in started:
        if server.alive:
            server.kill()


async def poll_until(
    probe: Callable[[], Awaitable[T | None]], *, timeout: float, interval: float = 0.05, what: str = "condition"
) -> T:
    """Call ``probe`` until it returns something other than ``None``; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if value is not None:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis-durability")) as url:
        yield url
