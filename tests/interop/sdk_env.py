"""The reference SDK's side of the interop tests, seen from OUR test suite.

The reference SDK (``a2a-sdk``) imports as ``a2a``, like our package, so it
lives in its own venv and only ever runs as a separate process
(``sdk_echo_server.py``, ``sdk_client.py``). Nothing here imports it.

The venv is at ``$A2A_SDK_VENV`` if set, else ``<repo>/.cache/sdk-venv``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
# Exact pins: interop results must not drift with new releases.
REQUIREMENTS = ("a2a-sdk[http-server]==1.3.0", "uvicorn==0.54.0")
MARKER_NAME = "a2a-net-sdk-requirements.txt"


def sdk_environ() -> dict[str, str]:
    """Our environment minus what would let OUR ``a2a`` shadow the SDK's (PYTHONPATH=. is common in CI)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}


def venv_dir() -> Path:
    return Path(os.environ.get("A2A_SDK_VENV") or REPO_ROOT / ".cache" / "sdk-venv")


def sdk_python() -> Path:
    """Ensure the SDK venv exists with exactly REQUIREMENTS; return its python.

    Idempotent (a marker file records what was installed) and safe to call
    from several processes at once (pytest-xdist workers): an exclusive
    fcntl lock serialises creation.
    """
    venv = venv_dir()
    python = venv / "bin" / "python"
    marker = venv / MARKER_NAME
    wanted = "\n".join(REQUIREMENTS) + "\n"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if python.exists() and marker.exists() and marker.read_text() == wanted:
            return python
        # Missing, half-built or different pins: rebuild from scratch so no
        # stale package survives.
        marker.unlink(missing_ok=True)
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "creating the SDK venv")
        _run(
            [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *REQUIREMENTS],
            "installing the reference SDK",
        )
        marker.write_text(wanted)  # only after a successful install
    return python


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900, env=sdk_environ())
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")


def free_port() -> int:
    """A port free right now on 127.0.0.1 (the OS picks it; small reuse race)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_sdk_server(port: int = 0, debug: bool = False) -> subprocess.Popen[str]:
    """Start the reference echo agent (port 0: any free port); follow with wait_ready()."""
    cmd = [str(sdk_python()), str(HERE / "sdk_echo_server.py"), "--port", str(port)]
    if debug:
        cmd.append("--debug")
    # stderr is inherited so pytest shows the server log on failures.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=sdk_environ())


def wait_ready(
    proc: subprocess.Popen[str], timeout: float = 30.0, pattern: str = r"^READY (\S+)", what: str = "SDK server"
) -> str:
    """Wait for the stdout line matching ``pattern`` (default ``READY <url>``); return its group 1.

    On timeout or early exit the process is stopped and RuntimeError raised.
    """
    assert proc.stdout is not None
    wanted = re.compile(pattern)
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not sel.select(left):
                break
            line = proc.stdout.readline()  # servers print whole lines, flushed
            if not line:  # EOF: the server died before getting ready
                stop(proc)  # reaps it (or kills it, if it closed stdout but lingers)
                raise RuntimeError(f"{what} exited early (code {proc.returncode})")
            if found := wanted.search(line):
                return found.group(1)
    stop(proc)
    raise RuntimeError(f"{what} not ready within {timeout}s")


def stop(proc: subprocess.Popen[str], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout:
        proc.stdout.close()


def run_sdk_client(
    url: str,
    binding: str,
    scenario: str,
    token: str | None = None,
    timeout: float = 120.0,
    check: bool = True,
) -> list[dict[str, Any]]:
    """Run sdk_client.py and return its JSON lines; with check, raise on failure."""
    cmd = [str(sdk_python()), str(HERE / "sdk_client.py"), "--url", url, "--binding", binding, "--scenario", scenario]
    if token:
        cmd.append(f"--token={token}")  # joined: a token may begin with "-"
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=sdk_environ())
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if check and (proc.returncode != 0 or any("error" in line for line in lines)):
        raise AssertionError(f"sdk_client {scenario}/{binding} failed: {proc.stdout}\n{proc.stderr[-2000:]}")
    return lines
