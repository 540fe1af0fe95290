"""The Google ADK peer, in two releases: a venv under ``.cache/peers`` each, and two scripts.

``adk/echo_server.py`` serves an ADK agent (no model) with ADK's ``to_a2a()``;
``adk/remote_client.py`` drives ADK's ``RemoteA2aAgent`` against an A2A server. The same two
scripts run on both releases (they bridge the few API differences themselves). ADK imports
a2a-sdk as ``a2a``, like our package, so both only ever run in an ADK venv as processes.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peers import common

HERE = Path(__file__).resolve().parent / "adk"


@dataclass(frozen=True)
class AdkRelease:
    """One pinned ADK release: its venv and how to run the two scripts in it."""

    version: str
    requirements: tuple[str, ...]
    #: The A2A version ADK's a2a-sdk speaks ("1.0" or "0.3"): what our client must choose.
    wire: str
    #: Whether ``to_a2a()``'s own card declares streaming (ADK 1.x's declares no capability).
    streams_by_default: bool

    def __str__(self) -> str:  # the pytest id
        return f"adk-{self.version}"

    def python(self) -> Path:
        """This release's venv python, built on first use (about a minute cold)."""
        return common.venv_python(f"adk-{self.version}", self.requirements)

    def start_server(self, *args: str, token: str | None = None) -> tuple[subprocess.Popen[str], str]:
        """The ADK echo agent via ``to_a2a()`` on a free port (``--streaming``: a card declaring
        streaming; ``token``: behind a bearer token check); returns the process and its base URL."""
        cmd = [str(self.python()), str(HERE / "echo_server.py"), *args] + ([f"--token={token}"] if token else [])
        return common.start(cmd, what=f"ADK {self.version} to_a2a server", timeout=120)

    def run_remote_agent(
        self,
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
        cmd = [str(self.python()), str(HERE / "remote_client.py"), "--url", url, "--scenario", scenario]
        if not streaming:
            cmd.append("--no-streaming")
        if token:
            cmd.append(f"--token={token}")  # joined: a token may begin with "-"
        env = common.peer_environ()
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=env)
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        if not check:
            return [*lines, {"exit": proc.returncode, "stderr": proc.stderr[-2000:]}]
        if proc.returncode != 0:
            what = f"ADK {self.version} RemoteA2aAgent {scenario}"
            raise AssertionError(f"{what} failed: {proc.stdout}\n{proc.stderr[-3000:]}")
        return lines


# Exact pins, the ADK pin's own a2a-sdk included, so results never drift with a new release.
#: ADK 2.13.0 is built on a2a-sdk 1.x (A2A 1.0, with 0.3 compatibility).
ADK2 = AdkRelease("2.13.0", ("google-adk[a2a]==2.13.0", "uvicorn==0.54.0"), "1.0", True)
#: ADK 1.39.1 (2026-08) is the newest release whose ``a2a`` extra still requires a2a-sdk < 0.4
#: (2.0-2.4 do too but are older; 2.5+ accept a2a-sdk 1.x): A2A 0.3 on the wire, both ways.
ADK1 = AdkRelease("1.39.1", ("google-adk[a2a]==1.39.1", "a2a-sdk==0.3.26", "uvicorn==0.54.0"), "0.3", False)
RELEASES = (ADK2, ADK1)
