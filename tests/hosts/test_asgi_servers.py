"""The ASGI host under real ASGI servers, as separate processes: an agent mounted under a prefix in
FastAPI (``examples/asgi_mount.py``) and in Starlette, served by uvicorn and by granian, reached
by our client over every binding (JSON-RPC, REST, SSE streaming, WebSocket), its card's URLs
under the mount, its operations routes, and the application's own routes beside it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from a2a import A2AClient, RetryPolicy

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

STARLETTE_APP = """
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from examples.asgi_mount import agent_app


async def hello(request):
    return PlainTextResponse("hello")


app = Starlette(routes=[Route("/status", hello), Mount("/agents/echo", app=agent_app)], lifespan=agent_app.lifespan)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _command(server: str, target: str, port: int) -> list[str]:
    if server == "uvicorn":
        return [sys.executable, "-m", "uvicorn", target, "--host", "127.0.0.1", "--port", str(port)]
    return [
        sys.executable, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port),
        "--workers", "1", target,
    ]  # fmt: skip


@contextlib.contextmanager
def _serving(server: str, target: str, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    (tmp_path / "starlette_mount.py").write_text(STARLETTE_APP)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    log = (tmp_path / f"{server}.log").open("wb")
    child = subprocess.Popen(_command(server, target, port), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(base + "/status", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert child.poll() is None, (tmp_path / f"{server}.log").read_text()
            assert time.monotonic() < deadline, f"{server} did not start in 30 s"
            time.sleep(0.1)
        yield base
    finally:
        child.terminate()
        try:
            child.wait(15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(5)
        log.close()


@pytest.mark.parametrize("server", ["uvicorn", "granian"])
@pytest.mark.parametrize("target", ["examples.asgi_mount:app", "starlette_mount:app"], ids=["fastapi", "starlette"])
def test_a_mounted_agent_serves_every_binding(server: str, target: str, tmp_path: Path) -> None:
    with _serving(server, target, tmp_path) as base:
        mounted = base + "/agents/echo"
        card = httpx.get(mounted + "/.well-known/agent-card.json", timeout=5).json()
        urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
        assert urls["JSONRPC"] == mounted + "/a2a/jsonrpc"
        assert urls["HTTP+JSON"] == mounted + "/a2a/rest"
        assert any(url == mounted + "/a2a/ws" for url in urls.values()), urls
        assert httpx.get(mounted + "/healthz", timeout=5).json() == {"status": "ok"}
        assert httpx.get(mounted + "/readyz", timeout=5).json()["status"] == "ready"
        assert httpx.get(mounted + "/nothing-here", timeout=5).status_code == 404
        asyncio.run(_every_binding(mounted))


async def _every_binding(url: str) -> None:
    for binding in ["JSONRPC", "HTTP+JSON", "WEBSOCKET"]:
        async with A2AClient(url, binding=binding, retry=RetryPolicy.none(), timeout=10) as client:
            task = await client.send("hello")
            assert "echo: hello" in str(task), (binding, task)
            events = [event async for event in client.stream("streamed")]
            assert events, binding
            assert "echo: streamed" in str(events), (binding, events)
