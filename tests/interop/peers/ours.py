"""Our ``a2a serve`` with any example agent, for the peers' clients to talk to.

``our_env.start_our_server`` serves the echo agent; the matrix also needs the input-required
example, so this takes the agent as an argument and otherwise starts it the same way.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import our_env

from peers import common

ECHO = our_env.ECHO_AGENT
GREETER = f"{common.REPO_ROOT / 'examples' / 'input_required_agent.py'}:agent"
MODES = f"{Path(__file__).resolve().parent / 'modes_agent.py'}:agent"  # skill media types declared


def start(agent: str, *args: str, env: Mapping[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """``a2a serve AGENT --port 0 ARGS`` on 127.0.0.1; return the process and its base URL."""
    cmd = [*our_env.cli_command(), "serve", agent, "--host", "127.0.0.1", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=common.REPO_ROOT, env=our_env.clean_env(env))
    return proc, common.wait_ready(proc, pattern=r"^Serving .* at (http://\S+)", what="a2a serve")
