"""Child processes: start one, and stop it in bounded time, always reaped (POSIX).

Every place in a2a-net that starts a program goes through ``ChildProcess``: the stdio transport
(an agent as a child), the code agent (a run of user code) and ``a2a demo`` (the built-in agents
as services). Each child gets a session of its own, so a Ctrl-C at the terminal reaches only this
process, which then ends its children in order. What the child writes is handed, as it arrives,
to the ``protocol`` given at start (an ``asyncio.SubprocessProtocol``), so a pipe never fills up
behind a reader that waits for something else::

    process = await ChildProcess.start(["a2a", "serve", "my:agent", "--stdio"], protocol=pipes)
    ...
    returncode = await process.stop(grace=2.0)

``stop`` ends the child: end of its input (a well-behaved program exits by itself), then
``SIGTERM``, then ``SIGKILL``, each after ``grace`` seconds; the exit status is collected by the
event loop, so no zombie is left. With ``group=True`` the signals go to the child's whole process
group, so its own children end with it. Every wait has a time limit, and ``stop`` may be called
any number of times (later calls wait for the first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO, Any, cast

__all__ = ["KILL_WAIT", "ChildProcess"]

log = logging.getLogger("a2a.process")

#: After ``SIGKILL``, the most ``stop`` waits for the exit before it gives up (and logs it).
KILL_WAIT = 5.0

#: What ``start`` accepts for each of the child's standard streams (as ``subprocess`` does).
Redirect = int | IO[Any] | None


class _Watch(asyncio.SubprocessProtocol):
    """Notes the exit and the end of each pipe for ``ChildProcess``; passes every callback on."""

    def __init__(self, process: ChildProcess, inner: asyncio.SubprocessProtocol) -> None:
        self._process = process
        self._inner = inner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._inner.connection_made(transport)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._inner.pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        _settle(self._process.closed(fd))
        self._inner.pipe_connection_lost(fd, exc)

    def process_exited(self) -> None:
        _settle(self._process.exited)
        self._inner.process_exited()

    def connection_lost(self, exc: Exception | None) -> None:
        _settle(self._process.all_closed)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class ChildProcess:
    """One child process this program started (made by ``start``)."""

    def __init__(self, argv: Sequence[str], protocol: asyncio.SubprocessProtocol) -> None:
        loop = asyncio.get_running_loop()
        self.argv = list(argv)
        #: The protocol given to ``start``: the child's output, as it arrives.
        self.protocol = protocol
        #: Done once the child has exited and its exit status was collected (it is no zombie).
        self.exited: asyncio.Future[None] = loop.create_future()
        #: Done once the child has exited and every pipe to it is closed (a grandchild that
        #: inherited stdout can hold it open after the child exited).
        self.all_closed: asyncio.Future[None] = loop.create_future()
        self._closed = {fd: loop.create_future() for fd in (0, 1, 2)}
        self._transport: asyncio.SubprocessTransport | None = None
        self._stopping: asyncio.Task[int | None] | None = None

    @classmethod
    async def start(
        cls,
        argv: Sequence[str],
        *,
        protocol: asyncio.SubprocessProtocol | None = None,
        stdin: Redirect = subprocess.PIPE,
        stdout: Redirect = subprocess.PIPE,
        stderr: Redirect = subprocess.PIPE,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> ChildProcess:
        """Start ``argv`` in a new session; raises ``OSError`` when it cannot be started.

        ``protocol`` gets what the child writes on the piped streams (and, for stdin, the flow
        control callbacks ``pause_writing`` / ``resume_writing``).
        """
        child = cls(argv, protocol or asyncio.SubprocessProtocol())
        await child._spawn(stdin, stdout, stderr, env, cwd)
        return child

    async def _spawn(
        self,
        stdin: Redirect,
        stdout: Redirect,
        stderr: Redirect,
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
    ) -> None:
        for fd, redirect in enumerate((stdin, stdout, stderr)):
            if redirect != subprocess.PIPE:
                _settle(self._closed[fd])  # no pipe: nothing to wait for
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.subprocess_exec(
            lambda: _Watch(self, self.protocol),
            *self.argv,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            # Its own session (and process group): a Ctrl-C meant for this process does not
            # reach the child directly; this process ends it in order instead.
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        assert self._transport is not None, "the process was not started"
        return self._transport.get_pid()

    @property
    def returncode(self) -> int | None:
        """The exit status once it exited (``-N``: killed by signal ``N``), else ``None``."""
        return self._transport.get_returncode() if self._transport is not None else None

    @property
    def stdin(self) -> asyncio.WriteTransport | None:
        """The child's input, when it is a pipe (``None`` once closed)."""
        pipe = self._transport.get_pipe_transport(0) if self._transport is not None else None
        return cast(asyncio.WriteTransport, pipe) if pipe is not None else None  # uvloop's is no subclass

    def closed(self, fd: int) -> asyncio.Future[None]:
        """Done once the pipe for ``fd`` (0, 1, 2) is closed (at once if it is not a pipe)."""
        return self._closed[fd]

    async def wait(self) -> int | None:
        """Wait until the child exits (its pipes may stay open); its exit status."""
        await asyncio.shield(self.exited)
        return self.returncode

    def send_signal(self, sig: int, *, group: bool = False) -> None:
        """Send ``sig`` to the child (``group``: to its whole process group), if it is still there."""
        if group:
            # The group outlives its leader while any member is left: signal it even then.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
        elif self._transport is not None and not self.exited.done():
            with contextlib.suppress(ProcessLookupError):
                self._transport.send_signal(sig)

    async def stop(
        self, grace: float, *, kill_wait: float = KILL_WAIT, group: bool = False, drain: float = 0.0
    ) -> int | None:
        """End the child and collect its exit status (``None`` if even ``SIGKILL`` did not end it).

        Its input is closed first, and it gets ``grace`` seconds to exit by itself; then
        ``SIGTERM`` and ``grace`` seconds more; then ``SIGKILL`` and up to ``kill_wait`` seconds.
        ``grace`` 0: ``SIGKILL`` at once. ``group``: the signals go to the whole process group,
        and ``SIGKILL`` is sent even when the child itself has already exited (its own children
        may not have). ``drain``: then wait up to that long for its output pipes to close, so
        that everything it wrote is read. Idempotent: a second call waits for the first.
        """
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(
                self._stop(grace, kill_wait, group, drain), name=f"a2a-stop-process {self.pid}"
            )
        return await asyncio.shield(self._stopping)

    async def _stop(self, grace: float, kill_wait: float, group: bool, drain: float) -> int | None:
        assert self._transport is not None, "the process was not started"
        stdin = self._transport.get_pipe_transport(0)
        if stdin is not None and not stdin.is_closing():
            stdin.close()  # end of input: a well-behaved program exits by itself
            await self._bounded(self.exited, grace)
        if grace > 0 and not self.exited.done():
            self.send_signal(signal.SIGTERM, group=group)
            await self._bounded(self.exited, grace)
        if group or not self.exited.done():
            self.send_signal(signal.SIGKILL, group=group)
            await self._bounded(self.exited, kill_wait)
        if drain > 0:
            await self._bounded(self.all_closed, drain)
        if not self.exited.done():
            log.error("process %s (%s) did not exit even after SIGKILL", self.pid, self.argv[0])
        self._transport.close()
        return self.returncode

    @staticmethod
    async def _bounded(future: asyncio.Future[None], seconds: float) -> None:
        if seconds > 0 and not future.done():
            await asyncio.wait([future], timeout=seconds)
