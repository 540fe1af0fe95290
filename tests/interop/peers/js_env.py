"""The @a2a-js/sdk peer: a node project under ``.cache/peers`` and its two scripts.

``js/echo_server.mjs`` is an agent on the JS SDK's server (JSON-RPC and HTTP+JSON);
``js/client.mjs`` runs one scenario of the JS SDK's client and prints what it parsed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from peers import common

HERE = Path(__file__).resolve().parent / "js"
# Exact pins: interop results must not drift with new releases. 1.3.0 speaks A2A 1.0
# (its A2A_PROTOCOL_VERSION); express is the JS SDK's peer dependency for its server.
DEPENDENCIES = {"@a2a-js/sdk": "1.3.0", "express": "5.3.0"}


def project() -> Path:
    """The node project with DEPENDENCIES, built on first use (a few seconds with a warm npm cache)."""
    return common.node_project("js-sdk-1.3.0", DEPENDENCIES)


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not installed: the JS peers need Node.js 18+")
    return found


def _script(name: str) -> Path:
    """The script copied into the project, so that its imports resolve from its node_modules."""
    target = project() / name
    source = HERE / name
    if not target.exists() or target.read_bytes() != source.read_bytes():
        shutil.copyfile(source, target)
    return target


def start_server(token: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """The JS echo agent on a free port; returns the process and its base URL."""
    cmd = [node(), str(_script("echo_server.mjs")), "--port", "0"]
    if token:
        cmd += ["--token", token]
    return common.start(cmd, what="JS SDK server", cwd=project())


def run_client(
    url: str, binding: str, scenario: str, token: str | None = None, timeout: float = 60.0, check: bool = True
) -> list[dict[str, Any]]:
    """Run client.mjs once; return its JSON lines (with check: raise unless it succeeded)."""
    cmd = [node(), str(_script("client.mjs")), "--url", url, "--binding", binding, "--scenario", scenario]
    if token:
        cmd += ["--token", token]
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, timeout=timeout, env=common.peer_environ(), cwd=project()
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if check and proc.returncode != 0:
        raise AssertionError(f"JS client {scenario}/{binding} failed: {proc.stdout}\n{proc.stderr[-2000:]}")
    return lines
