"""OUR side of the interop tests, run as real processes: ``a2a serve`` and the ``a2a`` CLI.

The counterpart of ``sdk_env.py``. Our server runs as ``a2a serve ... --port 0`` (the way
people run it) and announces its URL on stdout; the CLI runs as a subprocess with a bounded
time and a clean environment (no credentials from the developer's shell).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import sdk_env

REPO_ROOT = sdk_env.REPO_ROOT
ECHO_AGENT = f"{REPO_ROOT / 'examples' / 'echo_agent.py'}:agent"
#: Variables that would change what our CLI or server does behind the test's back.
_CREDENTIAL_VARS = ("A2A_TOKEN", "A2A_API_KEY", "A2A_BEARER_TOKENS", "A2A_API_KEYS")


@dataclass(frozen=True)
class AuthServer:
    """Our server started with ``--auth bearer``, and the one token it accepts."""

    url: str
    token: str


def cli_command() -> list[str]:
    """The ``a2a`` console script of this venv, else the module (same code either way)."""
    script = Path(sys.executable).with_name("a2a")
    return [str(script)] if script.exists() else [sys.executable, "-m", "a2a.cli.main"]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIAL_VARS}
    env.update(extra or {})
    return env


def start_our_server(*args: str, env: Mapping[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """``a2a serve examples/echo_agent.py:agent --port 0 ARGS``; return the process and its URL.

    Stop it with ``sdk_env.stop(proc)``.
    """
    cmd = [*cli_command(), "serve", ECHO_AGENT, "--host", "127.0.0.1", "--port", "0", *args]
    # stderr is inherited so pytest shows the server log on failures.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT, env=clean_env(env))
    url = sdk_env.wait_ready(proc, pattern=r"^Serving .* at (http://\S+)", what="a2a serve")
    return proc, url


def run_cli(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``a2a ARGS`` to completion (bounded by ``timeout``) and capture its output."""
    return subprocess.run(
        [*cli_command(), *args], check=False, capture_output=True, text=True, timeout=timeout, env=clean_env()
    )
