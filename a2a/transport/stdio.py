"""The stdio transport: start an agent as a child process and talk to it over its stdin/stdout.

The transport owns the child's whole life. It starts it on first use and sends ``initialize``
(the version and credentials, once); it keeps reading stderr so a chatty child never blocks,
remembering the tail; if the child exits, or writes anything on stdout that is not a JSON-RPC
line (garbage, invalid UTF-8, a line over the limit), every pending call fails at once with an
error naming the exit code and that tail. ``close`` ends stdin (the child exits by itself), then
terminates, then kills it after a grace period, and always reaps it. A child that died is not
restarted: make a new transport (or client) for a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from .. import types as t
from ..errors import InvalidResponseError, TransportError
from ..protocol.connection import INITIALIZE_METHOD, STDIO_BINDING, InitializeParams, InitializeResult
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES, LineDecoder, encode_line
from ..protocol.methods import MethodSpec
from .base import StreamItem
from .multiplex import DEFAULT_MAX_IN_FLIGHT, ConnectionTransport, Multiplexer, feed_lines, with_tenant

__all__ = ["StdioTransport"]

log = logging.getLogger("a2a.transport")

#: After the child's stdout closes or it exits, how long to wait for the rest (exit code, last
#: stderr) before failing the pending calls.
_SETTLE = 0.5
_KILL_WAIT = 5.0


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Callbacks from the child's pipes, handed to ``_Child``."""

    def __init__(self, child: _Child) -> None:
        self._child = child

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self._child.on_stdout(data)
        else:
            self._child.on_stderr(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._child.on_pipe_closed(fd)

    def process_exited(self) -> None:
        self._child.on_exit()

    def pause_writing(self) -> None:
        self._child.writable.clear()

    def resume_writing(self) -> None:
        self._child.writable.set()


class _Child:
    """One running child: its pipes, its multiplexer, and what it said on stderr."""

    def __init__(self, argv: Sequence[str], max_line_bytes: int, max_in_flight: int, tail_bytes: int) -> None:
        loop = asyncio.get_running_loop()
        self.argv = list(argv)
        self.name = shlex.join(self.argv)
        if len(self.name) > 80:
            self.name = self.name[:77] + "..."
        self.decoder = LineDecoder(max_line_bytes)
        self.mux = Multiplexer(self.send, max_in_flight=max_in_flight)
        self.transport: asyncio.SubprocessTransport | None = None
        self.writable = asyncio.Event()
        self.writable.set()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stdout_closed: asyncio.Future[None] = loop.create_future()
        self.stderr_closed: asyncio.Future[None] = loop.create_future()
        self._tail = bytearray()
        self._tail_bytes = tail_bytes
        self._broken: str | None = None
        self.watcher: asyncio.Task[None] | None = None

    async def spawn(self, env: Mapping[str, str] | None, cwd: str | os.PathLike[str] | None) -> None:
        loop = asyncio.get_running_loop()
        try:
            self.transport, _ = await loop.subprocess_exec(
                lambda: _ChildProtocol(self),
                *self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                # Its own session: a Ctrl-C meant for the parent does not reach the child
                # directly; the parent ends it in order instead.
                start_new_session=True,
            )
        except OSError as exc:
            raise TransportError(f"cannot start agent process {self.name}: {exc.strerror or exc}") from exc
        self.watcher = loop.create_task(self._watch(), name=f"a2a-stdio-watch {self.transport.get_pid()}")

    @property
    def pid(self) -> int | None:
        return self.transport.get_pid() if self.transport is not None else None

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode() if self.transport is not None else None

    # ---- from the child ----------------------------------------------------------------

    def on_stdout(self, data: bytes) -> None:
        if self._broken is not None:
            return
        problem = feed_lines(self.decoder, self.mux, data)
        if problem is not None:
            self._protocol_error(f"{problem} (on stdout)")

    def _protocol_error(self, what: str) -> None:
        self._broken = what
        error = InvalidResponseError(
            f"agent process {self.name} {what} (stdout must carry only protocol lines; "
            f"diagnostics belong on stderr){self._stderr_note()}"
        )
        log.warning("%s", error)
        self.mux.fail(error)
        if self.transport is not None:
            # A child that breaks the protocol is not talked to again: end it now.
            with contextlib.suppress(ProcessLookupError):
                self.transport.terminate()

    def on_stderr(self, data: bytes) -> None:
        self._tail += data
        if len(self._tail) > 2 * self._tail_bytes:
            del self._tail[: len(self._tail) - self._tail_bytes]
        if log.isEnabledFor(logging.DEBUG):
            log.debug("agent %s stderr: %s", self.name, data.decode("utf-8", "replace").rstrip())

    def on_pipe_closed(self, fd: int) -> None:
        future = self.stdout_closed if fd == 1 else self.stderr_closed if fd == 2 else None
        if future is not None and not future.done():
            future.set_result(None)

    def on_exit(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    async def _watch(self) -> None:
        """When the child is gone (stdout closed or exited), fail whatever still waits on it."""
        await asyncio.wait([self.exited, self.stdout_closed], return_when=asyncio.FIRST_COMPLETED)
        await asyncio.wait([self.exited, self.stdout_closed, self.stderr_closed], timeout=_SETTLE)
        last = self.decoder.flush()
        if last is not None and self._broken is None:
            with contextlib.suppress(InvalidResponseError):
                self.mux.feed(last)
        self.mux.fail(TransportError(self.describe_end()))

    def describe_end(self) -> str:
        code = self.returncode
        if code is None:
            what = "closed its stdout"
        elif code < 0:
            try:
                what = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"was killed by signal {-code}"
        else:
            what = f"exited with code {code}"
        return f"agent process {self.name} (pid {self.pid}) {what}{self._stderr_note()}"

    def _stderr_note(self) -> str:
        tail = bytes(self._tail[-self._tail_bytes :]).decode("utf-8", "replace").strip()
        return f"; last stderr:\n{tail}" if tail else "; nothing on stderr"

    # ---- to the child ------------------------------------------------------------------

    async def send(self, message: bytes) -> None:
        pipe = self.transport.get_pipe_transport(0) if self.transport is not None else None
        if pipe is None or pipe.is_closing() or self.exited.done():
            raise TransportError(self.describe_end())
        cast(asyncio.WriteTransport, pipe).write(encode_line(message))
        if not self.writable.is_set():
            # The pipe is full: wait until the child reads (or is gone).
            ready = asyncio.ensure_future(self.writable.wait())
            waits: list[asyncio.Future[Any]] = [ready, self.exited]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()

    async def stop(self, grace: float) -> None:
        """End the child: EOF on stdin, then SIGTERM, then SIGKILL, each after ``grace`` seconds."""
        self.mux.fail(TransportError(f"the connection to agent process {self.name} was closed by this client"))
        transport = self.transport
        if transport is None:
            return
        pipe = transport.get_pipe_transport(0)
        if pipe is not None:
            pipe.close()  # end of input: a well-behaved agent exits by itself
        await asyncio.wait([self.exited], timeout=grace)
        for step, wait in ((transport.terminate, grace), (transport.kill, _KILL_WAIT)):
            if self.exited.done():
                break
            with contextlib.suppress(ProcessLookupError):
                step()
            await asyncio.wait([self.exited], timeout=wait)
        if not self.exited.done():
            log.error("agent process %s (pid %s) did not exit even after SIGKILL", self.name, self.pid)
        transport.close()
        if self.watcher is not None:
            self.watcher.cancel()
            await asyncio.wait([self.watcher], timeout=_KILL_WAIT)


def resolve_a2a_command(argv: list[str]) -> list[str]:
    """``a2a ...`` runs this installation's ``a2a`` even when its virtual environment is not on
    PATH (a config that says ``a2a serve agents.code:agent --stdio`` then works from anywhere)."""
    if argv[0] != "a2a" or shutil.which("a2a") is not None:
        return argv
    beside = Path(sys.executable).with_name("a2a")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside), *argv[1:]]
    return [sys.executable, "-m", "a2a.cli.main", *argv[1:]]


class StdioTransport(ConnectionTransport):
    """A2A with an agent that runs as a child process (``argv``), over its stdin and stdout.

    ``headers`` are the service parameters sent once in ``initialize`` (``A2A-Version`` is
    added; credentials such as ``Authorization`` go here too). POSIX only.
    """

    binding = STDIO_BINDING

    def __init__(
        self,
        argv: Sequence[str],
        *,
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        tenant: str | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        grace: float = 2.0,
        stderr_tail_bytes: int = 4096,
        start_timeout: float = 30.0,
    ) -> None:
        if not argv:
            raise ValueError("StdioTransport needs a command line (argv) to start the agent")
        self.argv = resolve_a2a_command(list(argv))
        self.headers = {"A2A-Version": "1.0", **(headers or {})}
        self.env = env
        self.cwd = cwd
        self.tenant = tenant
        self.max_in_flight = max_in_flight
        self.max_line_bytes = max_line_bytes
        self.grace = grace
        self.stderr_tail_bytes = stderr_tail_bytes
        self.start_timeout = start_timeout
        self.initialized: InitializeResult | None = None
        self._child: _Child | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The child's process id (``None`` before it is started)."""
        return self._child.pid if self._child is not None else None

    @property
    def returncode(self) -> int | None:
        return self._child.returncode if self._child is not None else None

    async def start(self, *, timeout: float | None = None) -> None:
        """Start the child and initialize the connection (done by the first call otherwise)."""
        await self._running(timeout)

    async def _running(self, timeout: float | None) -> _Child:
        child = self._child
        if child is not None and child.mux.alive and self.initialized is not None:
            return child
        async with self._lock:
            if self._closed:
                raise TransportError(f"the stdio transport to {shlex.join(self.argv)} is closed")
            if self._child is not None and self._child.mux.alive:
                if self.initialized is None:
                    # A refused initialize (bad credentials, wrong version) is sent again, so
                    # every call gets that refusal rather than "no initialize yet".
                    await self._initialize(self._child, timeout or self.start_timeout)
                return self._child
            if self._child is not None:
                error = self._child.mux.error
                raise error if error is not None else TransportError(self._child.describe_end())
            child = _Child(self.argv, self.max_line_bytes, self.max_in_flight, self.stderr_tail_bytes)
            self._child = child
            await child.spawn(self.env, self.cwd)
            await self._initialize(child, timeout or self.start_timeout)
            return child

    async def _initialize(self, child: _Child, timeout: float) -> None:
        params = InitializeParams(service_parameters=self.headers)
        result: InitializeResult = await child.mux.call(INITIALIZE_METHOD, params, InitializeResult, timeout=timeout)
        if result.binding != STDIO_BINDING:
            log.warning("agent process %s speaks %s, not %s", child.name, result.binding, STDIO_BINDING)
        child.mux.limit(result.limits.max_in_flight)
        self.initialized = result

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            child = self._child
        if child is not None:
            await child.stop(self.grace)

    # ---- calls -------------------------------------------------------------------------

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        child = await self._running(timeout)
        return await child.mux.call(method.name, with_tenant(params, self.tenant), method.result_type, timeout=timeout)

    async def get_card(self, *, timeout: float | None) -> t.AgentCard:
        child = await self._running(timeout)
        return await child.mux.get_card(timeout=timeout)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        child = await self._running(timeout)
        events = child.mux.stream(method.name, with_tenant(params, self.tenant), last_event_id)
        try:
            async for event in events:
                yield event.item
        finally:
            await events.aclose()  # type: ignore[attr-defined]
