"""Fixtures of the interop tests: the reference SDK's venv and one server of each kind per session.

Nothing here skips: the SDK venv is built on first use (that needs the package registry),
and a failure to build it or to start a server is an error of every test that needs it.
Each server is a subprocess started once per session (per xdist worker) and stopped, by its
PID, at the end.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The helpers are plain modules next to this file (pytest's default "prepend" import mode
# puts this directory on sys.path; make sure of it for the other modes too).
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import our_env  # noqa: E402
import sdk_env  # noqa: E402
from our_env import AuthServer  # noqa: E402


@pytest.fixture(scope="session")
def sdk_python() -> Path:
    """The SDK venv's python, built on first use (a few seconds warm, longer cold)."""
    return sdk_env.sdk_python()


@pytest.fixture(scope="session")
def sdk_server_url(sdk_python: Path) -> Iterator[str]:
    """The reference SDK's echo agent (tests/interop/sdk_echo_server.py), both bindings at one URL."""
    proc = sdk_env.start_sdk_server()
    try:
        yield sdk_env.wait_ready(proc)
    finally:
        sdk_env.stop(proc)


@pytest.fixture(scope="session")
def our_server_url() -> Iterator[str]:
    """``a2a serve examples/echo_agent.py:agent`` on a free port, no auth."""
    # Push off, as on the reference server it is compared with (a2a serve offers it by default).
    proc, url = our_env.start_our_server("--no-push")
    try:
        yield url
    finally:
        sdk_env.stop(proc)


@pytest.fixture(scope="session")
def our_auth_server() -> Iterator[AuthServer]:
    """The same, with ``--auth bearer`` and one token in ``$A2A_BEARER_TOKENS``."""
    token = secrets.token_urlsafe(24)
    proc, url = our_env.start_our_server("--auth", "bearer", env={"A2A_BEARER_TOKENS": f"interop:{token}"})
    try:
        yield AuthServer(url, token)
    finally:
        sdk_env.stop(proc)
