"""Helpers for the binding tests: agent command lines, process checks, a cuttable TCP proxy."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: Our echo agent served over stdio by the real CLI.
ECHO_STDIO = [
    *(sys.executable, "-m", "a2a.cli.main", "serve", f"{EXAMPLES / 'echo_agent.py'}:agent"),
    *("--stdio", "--no-push"),
]
#: The agent written with the standard library only.
STDLIB_AGENT = [sys.executable, str(EXAMPLES / "stdio_agent_stdlib.py")]
#: Every bound in these tests: nothing waits longer than this.
BOUND = 10.0


def python_child(code: str) -> list[str]:
    """A child process running ``code`` (standard library only)."""
    return [sys.executable, "-c", code]


def is_leftover_child(pid: int) -> bool:
    """True if ``pid`` is still a child of this process (alive, or a zombie nobody reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    ppid = int(stat.rsplit(")", 1)[1].split()[1])
    return ppid == os.getpid()


async def wait_exit(pid: int, timeout: float) -> bool:
    """Wait (bounded, no polling) until process ``pid`` has ended; any process, not only a child."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    loop.add_reader(fd, lambda: ended.done() or ended.set_result(None))
    try:
        await asyncio.wait_for(ended, timeout)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)


class CuttableProxy:
    """A loopback TCP proxy whose connections the test can cut, and which can hold new ones (or,
    while ``refusing``, drop them at once)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.open = asyncio.Event()
        self.open.set()
        self.refusing = False
        self.accepted = 0
        self._pipes: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.refusing:
            writer.transport.abort()
            return
        self._writers.add(writer)
        current = asyncio.current_task()
        assert current is not None
        self._pipes.add(current)
        current.add_done_callback(self._pipes.discard)
        await self.open.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.get_running_loop().create_task(self._pipe(src, dst))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        dst.close()

    def cut(self) -> None:
        """Drop every connection at once (as a network failure would: no close handshake)."""
        for writer in list(self._writers):
            transport = writer.transport
            transport.abort()
        self._writers.clear()

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._pipes):
            task.cancel()
        if self._pipes:
            await asyncio.wait(list(self._pipes), timeout=BOUND)
