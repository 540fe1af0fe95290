"""The python-a2a peer (PyPI ``python-a2a``): a venv under ``.cache/peers`` and its two scripts.

``python_a2a/echo_server.py`` is python-a2a's default ``A2AServer`` (it echoes text) on its
Flask server; ``python_a2a/client.py`` runs python-a2a's ``A2AClient`` against an A2A server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from peers import common

HERE = Path(__file__).resolve().parent / "python_a2a"
# Exact pin: 0.5.10 is the newest release (its card says protocolVersion "0.3.0").
REQUIREMENTS = ("python-a2a==0.5.10",)


def python() -> Path:
    """The python-a2a venv's python, built on first use (about 1.5 min cold: it pulls Flask, MCP...)."""
    return common.venv_python("python-a2a-0.5.10", REQUIREMENTS)


def start_server() -> tuple[subprocess.Popen[str], str]:
    """The python-a2a echo agent on a free port (it needs its URL up front); returns it and its URL."""
    cmd = [str(python()), "-u", str(HERE / "echo_server.py"), "--port", str(common.free_port())]
    return common.start(cmd, what="python-a2a server")


def run_client(url: str, scenario: str, timeout: float = 90.0) -> list[dict[str, Any]]:
    """Run python-a2a's client scenario against ``url``; return its JSON lines (raises on failure)."""
    cmd = [str(python()), str(HERE / "client.py"), "--url", url, "--scenario", scenario]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=common.peer_environ())
    if proc.returncode != 0:
        raise AssertionError(f"python-a2a client {scenario} failed: {proc.stdout}\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
