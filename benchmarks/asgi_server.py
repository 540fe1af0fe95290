"""The echo agent as an ASGI application, set up as ``a2a serve`` sets up its server: run.py's
``asgi-uvicorn`` and ``asgi-granian`` servers run ``asgi_server:app`` under a real uvicorn or
granian process, with this folder as the working directory.

    A2A_BENCH_STORE=sqlite:///echo.db uvicorn asgi_server:app --port 8000

What it mirrors from ``a2a serve examples/echo_agent.py:agent --store URL``: the same agent,
loaded the same way (``a2a.loader``); the backend opened from the same URL (``A2A_BENCH_STORE``;
empty or unset: the CLI's own default file for the agent and ``A2A_BENCH_PORT``), with the same
namespace and exclusivity; push notifications offered; the access log on, on stderr, through
the same batching handler; the collector tuned as ``ServerConfig(tune_gc=True)`` tunes it in
``A2AServer.start`` (which an ASGI application never calls). The ASGI server's own access log
stays off (its flags).
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import pkgutil
import sys
from pathlib import Path
from typing import Any

import a2a.server
from a2a import A2AServer, ServerConfig
from a2a.loader import load_agent

REPO = Path(__file__).resolve().parent.parent
ECHO = f"{REPO / 'examples' / 'echo_agent.py'}:agent"


def server_name(name: str) -> Any:
    """A name of the server package: its public export when it has one, else the first module
    under it that defines it (``open_backend`` and the access log's handler are not exported
    from ``a2a.server`` yet, and its modules are being moved into folders)."""
    found = getattr(a2a.server, name, None)
    if found is not None:
        return found
    for info in pkgutil.walk_packages(a2a.server.__path__, "a2a.server.", onerror=lambda _name: None):
        try:
            module = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module needing an extra that is not installed
            continue
        found = getattr(module, name, None)
        if found is not None:
            return found
    raise ImportError(f"a2a.server has no {name}")


def _namespace(agent_name: str) -> str:
    """The CLI's Redis key prefix for an agent (one per agent)."""
    return "a2a:" + "".join(c if c.isalnum() or c in "-_." else "-" for c in agent_name.lower())


def _access_log() -> None:
    """What ``a2a serve`` does for its (default) access log: INFO on ``a2a.access``, on stderr,
    in batches, written once."""
    access = logging.getLogger("a2a.access")
    access.setLevel(logging.INFO)
    access.addHandler(server_name("AccessLogHandler")(sys.stderr))
    access.propagate = False
    logging.logProcesses = False


def make_app() -> Any:
    agent = load_agent(ECHO)
    url = os.environ.get("A2A_BENCH_STORE") or server_name("default_store_url")(
        agent.name, int(os.environ.get("A2A_BENCH_PORT", "8000"))
    )
    backend = server_name("open_backend")(url, namespace=_namespace(agent.name), exclusive=True)
    server = A2AServer(agent, backend=backend, config=ServerConfig(access_log=True), push=True)
    _access_log()
    return server.asgi()


app = make_app()

# ServerConfig(tune_gc=True), as A2AServer.start applies it: what is alive now is frozen out of
# collections, and young collections run every 20,000 allocations.
gc.collect()
gc.freeze()
gc.set_threshold(20_000, 20, 20)
