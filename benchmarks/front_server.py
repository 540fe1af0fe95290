"""A measurement tool, not a server to use: our echo agent's A2A handler, built as ``a2a serve``
builds it (the default SQLite store, or ``--store``), behind a minimal HTTP/1.1 front instead of
aiohttp's request machinery.

It answers ``POST`` bodies with JSON-RPC unary calls (``SendMessage``, ``GetTask`` ...) and
nothing else: no streams, no WebSocket, no REST, no agent card, no credentials, no limits, no
access log. What it measures (``front_cost.py``) is how much of a request's cost is the HTTP
layer around our A2A work, so that the work itself is the same code as in ``a2a serve``: the
JSON-RPC decoder, ``RequestHandler.call``, the store, the answer's encoder.

The parser is ``httptools`` (llhttp, the C parser aiohttp uses too), so the front's own cost is
what a real one's parsing would be.

Usage: python benchmarks/front_server.py --port P [--store URL]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, cast

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import httptools  # noqa: E402 - after the path: the repository's a2a, not an installed one

from a2a.loader import load_agent  # noqa: E402
from a2a.protocol.jsonrpc import decode_call, encode_result  # noqa: E402
from a2a.server import A2AServer, ServerConfig  # noqa: E402
from a2a.server.backends.base import open_backend  # noqa: E402
from a2a.server.engine.handler import CallContext, RequestHandler  # noqa: E402

_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
_REFUSED = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_ANONYMOUS = CallContext()
_tasks: set[asyncio.Task[None]] = set()


class FrontConnection(asyncio.Protocol):
    """One keep-alive connection; requests are answered in the order they complete (the load
    generators do not pipeline)."""

    handler: RequestHandler

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        self._body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not subclasses of asyncio's, only alike)
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._refuse()

    # httptools' callbacks
    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        body, self._body = b"".join(self._body), []
        task = asyncio.get_running_loop().create_task(self._answer(body))
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)

    async def _answer(self, body: bytes) -> None:
        try:
            call = decode_call(body, max_depth=64)
            result: Any = await self.handler.call(call.method.name, call.params, _ANONYMOUS)
            answer = encode_result(call.id, result)
        except Exception:  # noqa: BLE001 - a measurement tool: a bad request just closes
            self._refuse()
            return
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(_HEAD % len(answer) + answer)

    def _refuse(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(_REFUSED)
            self._transport.close()


async def serve(port: int, store: str) -> None:
    agent = load_agent(str(HERE.parent / "examples" / "echo_agent.py") + ":agent", {})
    # ``a2a serve``'s own set-up of the handler and the store (tune_gc as there); its aiohttp
    # listener is on another port and idle.
    server = A2AServer(
        agent,
        backend=open_backend(store, namespace="echo", exclusive=True),
        config=ServerConfig(tune_gc=True, access_log=False),
    )
    await server.start(port=0)
    FrontConnection.handler = server.handler
    loop = asyncio.get_running_loop()
    front = await loop.create_server(FrontConnection, "127.0.0.1", port)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        front.close()
        await server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", default="", help="task store URL (default: a fresh SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="a2a-front-") as scratch:
        store = args.store or f"sqlite:///{scratch}/front.db"
        try:
            import uvloop
        except ImportError:
            asyncio.run(serve(args.port, store))
        else:
            uvloop.run(serve(args.port, store))


if __name__ == "__main__":
    main()
