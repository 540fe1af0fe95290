"""The child-process helper: every stop ends in a reaped child, in bounded time, whatever the child does."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from a2a.process import ChildProcess
from tests.bindings._bindings_support import is_leftover_child, python_child, wait_exit

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")

#: Every bound in these tests: nothing waits longer than this.
BOUND = 10.0
#: Ignores SIGTERM and its input, says so on stdout, then sleeps.
STUBBORN = (
    "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


class _Lines(asyncio.SubprocessProtocol):
    """What the child writes on stdout, line by line."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self._buffer = b""

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            *lines, self._buffer = (self._buffer + data).split(b"\n")
            for line in lines:
                self.lines.put_nowait(line)

    async def next(self) -> bytes:
        return await asyncio.wait_for(self.lines.get(), BOUND)


async def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period_and_reaped() -> None:
    out = _Lines()
    process = await ChildProcess.start(python_child(STUBBORN), protocol=out)
    assert await out.next() == b"ready"
    started = time.monotonic()
    returncode = await asyncio.wait_for(process.stop(0.3, kill_wait=BOUND), BOUND)
    elapsed = time.monotonic() - started
    assert returncode == -signal.SIGKILL == process.returncode
    # 0.3 s after its input closed, then 0.3 s after SIGTERM: only then SIGKILL.
    assert 0.6 <= elapsed < BOUND
    assert process.exited.done() and not is_leftover_child(process.pid)


async def test_a_child_that_exits_by_itself_is_reaped() -> None:
    process = await ChildProcess.start(python_child("import sys; sys.exit(3)"))
    assert await asyncio.wait_for(process.wait(), BOUND) == 3
    assert not is_leftover_child(process.pid)
    started = time.monotonic()
    assert await asyncio.wait_for(process.stop(BOUND), BOUND) == 3  # nothing left to do: no wait
    assert time.monotonic() - started < 1.0


async def test_a_child_ends_by_itself_when_its_input_closes() -> None:
    process = await ChildProcess.start(python_child("import sys; sys.stdin.read(); sys.exit(0)"))
    started = time.monotonic()
    assert await asyncio.wait_for(process.stop(BOUND), BOUND) == 0  # no signal was needed
    assert time.monotonic() - started < BOUND / 2
    assert not is_leftover_child(process.pid)


async def test_stop_is_idempotent() -> None:
    out = _Lines()
    process = await ChildProcess.start(python_child(STUBBORN), protocol=out)
    assert await out.next() == b"ready"
    first, second = await asyncio.wait_for(asyncio.gather(process.stop(0.1), process.stop(0.1)), BOUND)
    assert first == second == -signal.SIGKILL
    assert await asyncio.wait_for(process.stop(0.1), BOUND) == -signal.SIGKILL
    assert not is_leftover_child(process.pid)


async def test_a_canceled_stop_still_ends_the_child() -> None:
    out = _Lines()
    process = await ChildProcess.start(python_child(STUBBORN), protocol=out)
    assert await out.next() == b"ready"
    stopping = asyncio.ensure_future(process.stop(0.2))
    await asyncio.sleep(0)
    stopping.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopping
    assert await asyncio.wait_for(process.wait(), BOUND) == -signal.SIGKILL
    assert await asyncio.wait_for(process.stop(0.2), BOUND) == -signal.SIGKILL  # the same stop, finished
    assert not is_leftover_child(process.pid)


async def test_group_stop_kills_the_childs_own_children_at_once() -> None:
    out = _Lines()
    spawner = "import subprocess, sys; p = subprocess.Popen(['sleep', '60']); print(p.pid, flush=True); p.wait()"
    process = await ChildProcess.start(python_child(spawner), protocol=out)
    grandchild = int(await out.next())
    started = time.monotonic()
    assert await asyncio.wait_for(process.stop(0, group=True, drain=BOUND), BOUND) == -signal.SIGKILL
    assert time.monotonic() - started < BOUND / 2  # no grace: SIGKILL at once
    assert process.all_closed.done()  # the grandchild held stdout: it is closed now too
    assert await wait_exit(grandchild, BOUND)


async def test_a_program_that_does_not_exist_raises_oserror() -> None:
    with pytest.raises(OSError, match="No such file"):
        await ChildProcess.start(["/nonexistent/program"])
