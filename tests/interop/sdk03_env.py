"""a2a-sdk 0.3's side of the 0.3 interop tests, seen from OUR test suite.

a2a-sdk imports as ``a2a``, like our package, so it lives in its own venv (``.cache/sdk03-venv``,
or ``$A2A_SDK03_VENV``; built on first use, rebuilt only when the pins change) and only ever runs
as a separate process (``sdk03_echo_server.py``, ``sdk03_client.py``). The process helpers are
the 1.x SDK's (``sdk_env``).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from sdk_env import HERE, REPO_ROOT, sdk_environ

# Exact pins: interop results must not drift with new releases.
REQUIREMENTS = ("a2a-sdk[http-server]==0.3.26", "uvicorn==0.54.0")
MARKER_NAME = "a2a-net-sdk03-requirements.txt"


def venv_dir() -> Path:
    return Path(os.environ.get("A2A_SDK03_VENV") or REPO_ROOT / ".cache" / "sdk03-venv")


def sdk03_python() -> Path:
    """The 0.3 SDK venv's python, built (under a lock, for xdist workers) unless it is current."""
    venv = venv_dir()
    python = venv / "bin" / "python"
    marker = venv / MARKER_NAME
    wanted = "\n".join(REQUIREMENTS) + "\n"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists() and marker.exists() and marker.read_text() == wanted:
            return python
        marker.unlink(missing_ok=True)
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "creating the 0.3 SDK venv")
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        _run([*pip, *REQUIREMENTS], "installing a2a-sdk 0.3")
        marker.write_text(wanted)
    return python


def _run(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900, env=sdk_environ())
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")


def start_sdk03_server(*args: str) -> subprocess.Popen[str]:
    """Start the 0.3 echo agent on a free port (``--rest``: HTTP+JSON only); follow with
    ``sdk_env.wait_ready``."""
    cmd = [str(sdk03_python()), str(HERE / "sdk03_echo_server.py"), *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=sdk_environ())


def run_sdk03_client(
    url: str,
    token: str | None = None,
    ask_url: str | None = None,
    transport: str = "JSONRPC",
    timeout: float = 120.0,
    watch_url: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Run sdk03_client.py against ``url`` over ``transport`` (``ask_url``: an agent that
    asks; ``watch_url``: a webhook to register on a task it then cancels); its lines by step."""
    cmd = [str(sdk03_python()), str(HERE / "sdk03_client.py"), "--url", url, "--transport", transport]
    if ask_url:
        cmd += ["--ask-url", ask_url]
    if watch_url:
        cmd += ["--watch-url", watch_url]
    if token:
        cmd.append(f"--token={token}")  # joined: a token may begin with "-"
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=sdk_environ())
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip().startswith("{")]
    if proc.returncode != 0 and not lines:
        raise AssertionError(f"sdk03_client failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return {line["step"]: line for line in lines}
