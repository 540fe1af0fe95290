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
import logging
import os
import shlex
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InvalidResponseError, TransportError
from ..process import KILL_WAIT, ChildProcess
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES
from .lines import LineChannel, LineTransport
from .multiplex import DEFAULT_MAX_IN_FLIGHT

__all__ = ["StdioTransport"]

log = logging.getLogger("a2a.transport")

#: After the child's stdout closes or it exits, how long to wait for the rest (exit code, last
#: stderr) before failing the pending calls.
_SETTLE = 0.5


class _AgentPipes(asyncio.SubprocessProtocol):
    """The child's pipes: stdout to the channel, the tail of stderr kept, stdin's flow control."""

    def __init__(self, channel: LineChannel, tail_bytes: int) -> None:
        self._channel = channel
        self._tail_bytes = tail_bytes
        self._tail = bytearray()
        self._name = channel.name

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self._channel.feed(data)
            return
        self._tail += data
        if len(self._tail) > 2 * self._tail_bytes:
            del self._tail[: len(self._tail) - self._tail_bytes]
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s stderr: %s", self._name, data.decode("utf-8", "replace").rstrip())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 0:
            self._channel.input_lost()

    def process_exited(self) -> None:
        self._channel.input_lost()

    def pause_writing(self) -> None:
        self._channel.pause_writing()

    def resume_writing(self) -> None:
        self._channel.resume_writing()

    def stderr_note(self) -> str:
        tail = bytes(self._tail[-self._tail_bytes :]).decode("utf-8", "replace").strip()
        return f"; last stderr:\n{tail}" if tail else "; nothing on stderr"


def resolve_a2a_command(argv: list[str]) -> list[str]:
    """``a2a ...`` runs this installation's ``a2a`` even when its virtual environment is not on
    PATH (a config that says ``a2a serve agents.code:agent --stdio`` then works from anywhere)."""
    if argv[0] != "a2a" or shutil.which("a2a") is not None:
        return argv
    beside = Path(sys.executable).with_name("a2a")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside), *argv[1:]]
    return [sys.executable, "-m", "a2a.cli.main", *argv[1:]]


def _short(argv: Sequence[str]) -> str:
    line = shlex.join(argv)
    return line if len(line) <= 80 else line[:77] + "..."


class StdioTransport(LineTransport):
    """A2A with an agent that runs as a child process (``argv``), over its stdin and stdout.

    ``headers`` are the service parameters sent once in ``initialize`` (``A2A-Version`` is
    added; credentials such as ``Authorization`` go here too). POSIX only.
    """

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
        super().__init__(
            f"agent process {_short(self.argv)}",
            headers=headers,
            tenant=tenant,
            max_in_flight=max_in_flight,
            max_line_bytes=max_line_bytes,
            start_timeout=start_timeout,
        )
        self.env = env
        self.cwd = cwd
        self.grace = grace
        self.stderr_tail_bytes = stderr_tail_bytes
        self._process: ChildProcess | None = None
        self._pipes: _AgentPipes | None = None
        self._watcher: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        """The child's process id (``None`` before it is started)."""
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def _connect(self) -> LineChannel:
        channel = LineChannel(
            self.name,
            max_line_bytes=self.max_line_bytes,
            max_in_flight=self.max_in_flight,
            broken=self._broken,
            input_closed=lambda: TransportError(self._describe_end()),
        )
        self._pipes = _AgentPipes(channel, self.stderr_tail_bytes)
        try:
            process = await ChildProcess.start(self.argv, protocol=self._pipes, env=self.env, cwd=self.cwd)
        except OSError as exc:
            raise TransportError(f"cannot start {self.name}: {exc.strerror or exc}") from exc
        self._process = process
        if process.stdin is not None:
            channel.attach(process.stdin)
        self._watcher = asyncio.get_running_loop().create_task(
            self._watch(channel, process), name=f"a2a-stdio-watch {process.pid}"
        )
        return channel

    async def _watch(self, channel: LineChannel, process: ChildProcess) -> None:
        """When the child is gone (stdout closed or exited), fail whatever still waits on it."""
        await asyncio.wait([process.exited, process.closed(1)], return_when=asyncio.FIRST_COMPLETED)
        await asyncio.wait([process.exited, process.closed(1), process.closed(2)], timeout=_SETTLE)
        channel.end(TransportError(self._describe_end()))

    def _broken(self, what: str) -> BaseException:
        error = InvalidResponseError(
            f"{self.name} {what} (on stdout) (stdout must carry only protocol lines; "
            f"diagnostics belong on stderr){self._stderr_note()}"
        )
        log.warning("%s", error)
        if self._process is not None:
            # A child that breaks the protocol is not talked to again: end it now.
            self._process.send_signal(signal.SIGTERM)
        return error

    def _describe_end(self) -> str:
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
        return f"{self.name} (pid {self.pid}) {what}{self._stderr_note()}"

    def _stderr_note(self) -> str:
        return self._pipes.stderr_note() if self._pipes is not None else ""

    async def _disconnect(self) -> None:
        if self._process is not None:
            await self._process.stop(self.grace)
        if self._watcher is not None:
            self._watcher.cancel()
            await asyncio.wait([self._watcher], timeout=KILL_WAIT)
