"""The LangGraph Server peer: ``langgraph dev`` (in memory) serving a trivial graph, and its A2A endpoint.

LangGraph Server (``langgraph-api``) serves every assistant over A2A at ``/a2a/{assistant_id}``.
The server comes from ``langgraph-cli[inmem]``, pinned in the project's test extra (the
supervisor's Studio test runs it too), so it runs from our venv's ``langgraph`` script; the graph
(``langgraph/echo_graph.py``, no model) and its ``langgraph.json`` are copied to a directory under
``.cache/peers`` where ``langgraph dev`` keeps its state and log.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from peers import common

HERE = Path(__file__).resolve().parent / "langgraph"
GRAPH_ID = "echo"
START_TIMEOUT = 90.0  # `langgraph dev` imports a lot before it serves


@dataclass(frozen=True)
class LangGraphServer:
    """A running ``langgraph dev``: its base URL, the A2A URL of the echo graph's assistant, and
    the ``secure`` graph's (the same graph; LangGraph's custom auth, ``langgraph/auth.py``,
    requires ``Bearer token`` there) with its id."""

    url: str
    a2a_url: str
    log: Path
    secure_a2a_url: str
    secure_assistant_id: str
    token: str


def _langgraph() -> str:
    found = shutil.which("langgraph", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("langgraph-cli[inmem] is not installed (it is in the test extra: pip install -e '.[test]')")
    return found


def _workdir() -> Path:
    work = common.cache_dir() / "langgraph-dev"
    shutil.rmtree(work, ignore_errors=True)  # a fresh in-memory state each session
    work.mkdir(parents=True)
    for source in HERE.iterdir():
        if source.is_file():
            shutil.copyfile(source, work / source.name)
    return work


def _get(url: str, body: dict[str, object] | None = None) -> bytes:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data else {}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=5) as reply:
        out: bytes = reply.read()
        return out


def start_server() -> tuple[subprocess.Popen[bytes], LangGraphServer]:
    """``langgraph dev`` on a free loopback port; returns once its A2A endpoint answers."""
    work = _workdir()
    port = common.free_port()
    log = work / "langgraph-dev.log"
    cmd = [_langgraph(), "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser", "--no-reload"]
    token = secrets.token_urlsafe(24)
    env = common.peer_environ(
        {"LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1", "A2A_NET_LANGGRAPH_TOKEN": token}
    )
    with log.open("wb") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"langgraph dev exited (code {proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            (assistant,) = json.loads(_get(f"{url}/assistants/search", {"graph_id": GRAPH_ID}))
            (secure,) = json.loads(_get(f"{url}/assistants/search", {"graph_id": "secure"}))
            break
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
            if time.monotonic() > deadline:
                stop(proc)
                raise RuntimeError(
                    f"langgraph dev not ready within {START_TIMEOUT}s:\n{log.read_text()[-3000:]}"
                ) from None
            time.sleep(0.3)
    secure_id = secure["assistant_id"]
    return proc, LangGraphServer(
        url, f"{url}/a2a/{assistant['assistant_id']}", log, f"{url}/a2a/{secure_id}", secure_id, token
    )


def stop(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
