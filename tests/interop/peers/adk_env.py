"""The Google ADK peer: a venv under ``.cache/peers`` and its two scripts.

``adk/echo_server.py`` serves an ADK agent (no model) with ADK's ``to_a2a()``;
``adk/remote_client.py`` drives ADK's ``RemoteA2aAgent`` against an A2A server. ADK imports
a2a-sdk as ``a2a``, like our package, so both only ever run in the ADK venv as processes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from peers import common

HERE = Path(__file__).resolve().parent / "adk"
# Exact pins: ADK 2.13.0 is built on a2a-sdk 1.x (A2A 1.0, with 0.3 compatibility).
REQUIREMENTS = ("google-adk[a2a]==2.13.0", "uvicorn==0.54.0")


def python() -> Path:
    """The ADK venv's python, built on first use (about a minute cold)."""
    return common.venv_python("adk-2.13.0", REQUIREMENTS)


def start_server(token: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """The ADK echo agent via ``to_a2a()`` on a free port (``token``: behind a bearer token
    check); returns the process and its base URL."""
    cmd = [str(python()), str(HERE / "echo_server.py")] + (["--token", token] if token else [])
    return common.start(cmd, what="ADK to_a2a server", timeout=120)


def run_remote_agent(
    url: str,
    scenario: str,
    *,
    streaming: bool = True,
    token: str | None = None,
    timeout: float = 120.0,
    check: bool = True,
) -> list[dict[str, Any]]:
    """Run ADK's RemoteA2aAgent scenario against ``url``; return its JSON lines.

    With ``check``, raise unless it succeeded; without, the last line is ``{"exit", "stderr"}``.
    """
    cmd = [str(python()), str(HERE / "remote_client.py"), "--url", url, "--scenario", scenario]
    if not streaming:
        cmd.append("--no-streaming")
    if token:
        cmd += ["--token", token]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=common.peer_environ())
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not check:
        return [*lines, {"exit": proc.returncode, "stderr": proc.stderr[-2000:]}]
    if proc.returncode != 0:
        raise AssertionError(f"ADK RemoteA2aAgent {scenario} failed: {proc.stdout}\n{proc.stderr[-3000:]}")
    return lines
