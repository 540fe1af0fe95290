"""@a2a-js/sdk 0.3 (A2A 0.3 on the wire): a node project under ``.cache/peers`` beside the
1.3 one, and its two scripts.

``js03/echo_server.mjs`` is an agent on the 0.3 SDK's server (JSON-RPC and HTTP+JSON, a 0.3
card); ``js03/client.mjs`` runs one scenario of the 0.3 SDK's client and prints the 0.3 JSON
it returned. The process helpers are js_env's (one way to run node).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from peers import common, js_env

HERE = Path(__file__).resolve().parent / "js03"
# Exact pins: 0.3.14 is the newest 0.3 release (its protocolVersion "0.3.0").
DEPENDENCIES = {"@a2a-js/sdk": "0.3.14", "express": "5.3.0"}


def project() -> Path:
    """The node project with DEPENDENCIES, built on first use (a few seconds with a warm npm cache)."""
    return common.node_project("js-sdk-0.3.14", DEPENDENCIES)


def _script(name: str) -> Path:
    """The script copied into the project, so that its imports resolve from its node_modules."""
    target = project() / name
    source = HERE / name
    if not target.exists() or target.read_bytes() != source.read_bytes():
        shutil.copyfile(source, target)
    return target


def start_server(token: str | None = None) -> tuple[subprocess.Popen[str], str]:
    """The JS 0.3 echo agent on a free port (with ``token``: required on both bindings);
    returns the process and its base URL."""
    cmd = [js_env.node(), str(_script("echo_server.mjs")), "--port", "0"]
    if token:
        cmd += ["--token", token]
    return common.start(cmd, what="JS SDK 0.3 server", cwd=project())


def run_client(
    url: str, binding: str, scenario: str, token: str | None = None, timeout: float = 60.0, check: bool = True
) -> list[dict[str, Any]]:
    """Run client.mjs once (``token``: sent on every request); return its JSON lines (with
    check: raise unless it succeeded)."""
    cmd = [js_env.node(), str(_script("client.mjs")), "--url", url, "--binding", binding, "--scenario", scenario]
    if token:
        cmd += ["--token", token]
    proc = subprocess.run(
        cmd, check=False, capture_output=True, text=True, timeout=timeout, env=common.peer_environ(), cwd=project()
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    if check and proc.returncode != 0:
        raise AssertionError(f"JS 0.3 client {scenario}/{binding} failed: {proc.stdout}\n{proc.stderr[-2000:]}")
    return lines
