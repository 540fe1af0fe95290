"""The fasta2a peer (pydantic-ai's A2A library): a venv under ``.cache/peers`` and its two scripts.

``fasta2a/echo_server.py`` is an agent on fasta2a's server (no model); ``fasta2a/client.py``
runs fasta2a's client against an A2A server. fasta2a does not import as ``a2a``, but it runs
as processes anyway, like every peer.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from peers import common

HERE = Path(__file__).resolve().parent / "fasta2a"
# Exact pins. fasta2a's client needs httpx, which fasta2a does not require.
REQUIREMENTS = ("fasta2a==2.1.1", "httpx==0.28.1", "uvicorn==0.54.0")


def python() -> Path:
    """The fasta2a venv's python, built on first use."""
    return common.venv_python("fasta2a-2.1.1", REQUIREMENTS)


def start_server(token: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """The fasta2a echo agent on a free port (``token``: behind a bearer token check); returns
    the process and its base URL."""
    cmd = [str(python()), str(HERE / "echo_server.py")] + ([f"--token={token}"] if token else [])
    return common.start(cmd, what="fasta2a server")


def run_client(url: str, scenario: str, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Run fasta2a's client scenario against ``url``; return its JSON lines (raises on failure)."""
    cmd = [str(python()), str(HERE / "client.py"), "--url", url, "--scenario", scenario]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=common.peer_environ())
    if proc.returncode != 0:
        raise AssertionError(f"fasta2a client {scenario} failed: {proc.stdout}\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
