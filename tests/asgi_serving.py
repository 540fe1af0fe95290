"""Serve an ``A2AServer`` through its ASGI host under a real uvicorn, in the test's event loop.

uvicorn is driven through its public API: a ``Config`` and a ``Server`` serving a socket bound
here (so the port is known before it starts), ``started`` to wait for, ``should_exit`` to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

from a2a import A2AServer


@contextlib.asynccontextmanager
async def uvicorn_serving(app: Any, *, lifespan: str = "on") -> AsyncIterator[str]:
    """Serve the ASGI ``app`` on a free loopback port; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, lifespan=lifespan, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    # uvicorn's own signal handlers are not wanted inside a test run.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:
                if serving.done():
                    serving.result()  # raises what stopped it
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        async with asyncio.timeout(15):
            await serving
        sock.close()


class AsgiServed:
    """An ``A2AServer`` started and stopped like one of ``start``'s, served by uvicorn."""

    def __init__(self, server: A2AServer) -> None:
        self.server = server
        self._serving: contextlib.AbstractAsyncContextManager[str] | None = None

    async def start(self) -> str:
        self.app = self.server.asgi()
        self._serving = uvicorn_serving(self.app)
        url = await self._serving.__aenter__()
        self.server.url = self.server.config.public_url or url
        return url

    async def stop(self) -> None:
        if self._serving is not None:
            # The stop steps first (open runs end CANCELED, their streams and blocking sends
            # are answered): an ASGI server sends lifespan.shutdown only once its connections
            # are done, which open streams never would be.
            await self.app.stopped()
            serving, self._serving = self._serving, None
            await serving.__aexit__(None, None, None)


#: The hosts a server of the suites is served by: aiohttp (``A2AServer.start``) and ASGI (uvicorn).
HOSTS = ["aiohttp", "asgi"]


@contextlib.asynccontextmanager
async def hosted(server: A2AServer, host: str) -> AsyncIterator[A2AServer]:
    """``server`` started on ``host`` (its ``url`` set), stopped at the end."""
    if host == "asgi":
        served = AsgiServed(server)
        await served.start()
        try:
            yield server
        finally:
            await served.stop()
        return
    async with server:
        yield server
