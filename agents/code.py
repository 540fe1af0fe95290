"""The code agent: runs Python code in a separate, limited process and returns what it did.

Serve it with ``a2a serve agents.code:agent``. One tool, ``run_python``
``{"code": "...", "timeout": seconds?}`` or ``{"file": "primes.py"}`` (structured input, or plain
text with a model; see ``agents._tools``). **Files sent with the message** (parts with a
``filename``: text or raw bytes, e.g. a program another agent wrote) are put in the run's working
directory before it starts, so the code can read them, and ``file`` names the one to run when no
``code`` is given; files left unchanged are not returned again. Each run gets:

- a **new process** (``python -I``: isolated mode, so no ``PYTHON*`` variables, no user
  site-packages, and neither the script's nor the current directory on ``sys.path``), in a new
  session and process group; the code is fed on stdin, which is then at end-of-file;
- a **fresh working directory**, also its ``HOME`` and (a sibling) ``TMPDIR``, removed afterwards;
- an **environment with nothing inherited** but ``PATH``: ``HOME``, ``TMPDIR``, ``LANG`` are set
  by us, so API keys, tokens and the like in the agent's own environment do not reach the code;
- **limits**: wall-clock time (the whole process group is killed), CPU seconds (``RLIMIT_CPU``),
  address space (``RLIMIT_AS``), size of any file written (``RLIMIT_FSIZE``), open files
  (``RLIMIT_NOFILE``), no core dumps; stdout and stderr are each capped (64 KiB by default) and
  marked when cut;
- its **results as artifacts**: ``result`` (JSON: exit code, signal, ``timedOut``, ``limit``
  hit, sizes, truncation flags, files), ``stdout`` and ``stderr`` (text), and each file the code
  left in its working directory (text or raw bytes with a media type; count and size capped).

The task reports WORKING as the run starts, then the program's stdout as it comes (WORKING
status updates whose message is the new text: a client sees a long run progress). The task
completes whenever the code ran, whatever its exit status (the ``result`` artifact and
the status message say how it ended: exit status, timed out, or stopped by a limit). Canceling
the task kills the process group at once.

What this sandbox does **not** protect against, plainly: it is resource limiting, not isolation.
The code runs as the **same user** as the agent, so it can read, change and delete anything that
user can (files anywhere, the files agent's workspace, ``~/.ssh``...); the working directory is
only where it starts, not a jail. It has the **network** (it can call out, and reach services on
loopback). It can see other processes, and a child that starts its own session escapes the
process-group kill; ``RLIMIT_NPROC`` is per user, so fork bombs are not bounded. ``RLIMIT_AS`` is
not enforced on macOS. For untrusted code, run this agent itself inside a container or VM with no
credentials (or use a real sandbox: gVisor, Firecracker, nsjail).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shutil
import signal
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from a2a.process import ChildProcess

from ._tools import (
    ArgumentError,
    Output,
    Tool,
    ToolAgent,
    ToolError,
    ToolResult,
    data_output,
    file_output,
    human_size,
    progress_sink,
    received_file,
    received_files,
    text_output,
    truncate_text,
)
from .llm import ModelSettings

__all__ = ["CodeAgent", "Limits", "Outcome", "agent", "make_agent", "make_tools", "run_python"]

#: Sets the limits, then becomes the interpreter that runs the code (same pid, same group).
LAUNCHER = """
import os, resource, sys
cpu, memory, fsize, nofile = (int(v) for v in sys.argv[1:5])
def limit(kind, soft, hard=None):
    hard = soft if hard is None else hard
    _, old_hard = resource.getrlimit(kind)
    if old_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(kind, (soft, hard))
limit(resource.RLIMIT_CORE, 0)
if cpu > 0: limit(resource.RLIMIT_CPU, cpu, cpu + 1)
if memory > 0 and hasattr(resource, "RLIMIT_AS"): limit(resource.RLIMIT_AS, memory)
if fsize > 0: limit(resource.RLIMIT_FSIZE, fsize)
if nofile > 0: limit(resource.RLIMIT_NOFILE, nofile)
os.execv(sys.executable, [sys.executable, "-I", "-X", "utf8", "-"])
"""
#: After the main process exits, how long to wait for its pipes to close.
DRAIN_SECONDS = 5.0
#: Files not returned are listed in the result up to this many.
MAX_SKIPPED_LISTED = 100


@dataclass(frozen=True)
class Limits:
    """What one run may use. ``timeout`` is also the most a caller may ask for."""

    timeout: float = 30.0
    cpu_seconds: int = 30
    memory_bytes: int = 512 * 1024 * 1024
    #: The largest file the code may write (``RLIMIT_FSIZE``).
    file_bytes: int = 16 * 1024 * 1024
    open_files: int = 256
    #: Per stream (stdout, stderr).
    output_bytes: int = 64 * 1024
    max_code_bytes: int = 256 * 1024
    #: Files written by the code that are returned: how many, each at most, all together at most.
    max_files: int = 20
    max_file_bytes: int = 1024 * 1024
    max_total_file_bytes: int = 4 * 1024 * 1024
    #: Runs at once; more are refused (FAILED, "busy") rather than queued.
    max_concurrent: int = 4


# ---- one run -----------------------------------------------------------------------------


@dataclass
class _Capture:
    """Keeps the start and the end of a stream (``cap`` bytes in all) and counts what was dropped.

    The end matters: that is where a traceback is.
    """

    cap: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    @property
    def tail_cap(self) -> int:
        return min(self.cap // 4, 8192)

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - self.tail_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.tail_cap)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        if not self.truncated:
            return head + self.tail.decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        marker = f"\n[... output truncated: {omitted} of {self.total} bytes omitted here ...]\n"
        return head + marker + self.tail.decode("utf-8", "replace")

    def last_line(self) -> str:
        data = self.tail or self.head
        lines = data.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""


@dataclass
class Outcome:
    """How a run ended."""

    exit_code: int | None
    signal: str | None
    timed_out: bool
    limit: str | None
    seconds: float
    stdout: _Capture
    stderr: _Capture

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self, limits: Limits, timeout: float) -> str:
        if self.timed_out:
            return f"timed out after {timeout:g}s (killed)"
        if self.limit == "memory":
            return f"stopped by the memory limit ({human_size(limits.memory_bytes)}), exit status {self.exit_code}"
        if self.limit == "cpu":
            return f"killed by the CPU time limit ({limits.cpu_seconds}s)"
        if self.limit == "file size":
            return f"stopped by the file size limit ({human_size(limits.file_bytes)}), exit status {self.exit_code}"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        return f"exit status {self.exit_code}"


def _limit_hit(returncode: int, last_stderr_line: str) -> str | None:
    """Which limit stopped the code, judged by its exit signal or the exception it died of."""
    if returncode == 0:
        return None
    if returncode == -signal.SIGXCPU:
        return "cpu"
    if last_stderr_line.startswith("MemoryError"):
        return "memory"
    if returncode == -signal.SIGXFSZ or "File too large" in last_stderr_line:
        return "file size"
    return None


def _signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)


def _environment(workdir: Path, tmpdir: Path) -> dict[str, str]:
    """Nothing of ours but PATH: no keys, tokens or proxies reach the code."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(workdir),
        "TMPDIR": str(tmpdir),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


class _RunOutput(asyncio.SubprocessProtocol):
    """Captures the output as it arrives, and reports stdout as it comes (to ``report``)."""

    def __init__(self, cap: int, report: Callable[[str], None] | None = None) -> None:
        self.stdout = _Capture(cap)
        self.stderr = _Capture(cap)
        self._report = report
        #: Undecoded tail of a UTF-8 sequence split between two reads of stdout.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._reported = 0

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        (self.stdout if fd == 1 else self.stderr).add(data)
        if fd == 1 and self._report is not None and self._reported < self.stdout.cap:
            # Reported up to the capture's cap: past it the final result says it was cut.
            data = data[: self.stdout.cap - self._reported]
            self._reported += len(data)
            text = self._decoder.decode(data)
            if text:
                self._report(text)


async def run_python(code: str, workdir: Path, tmpdir: Path, limits: Limits, timeout: float) -> Outcome:
    """Run ``code`` with ``limits`` in ``workdir``; the process group is always killed at the end."""
    started = time.monotonic()
    limit_args = [str(limits.cpu_seconds), str(limits.memory_bytes), str(limits.file_bytes), str(limits.open_files)]
    output = _RunOutput(limits.output_bytes, progress_sink())
    process = await ChildProcess.start(
        [sys.executable, "-I", "-S", "-c", LAUNCHER, *limit_args],
        protocol=output,
        cwd=workdir,
        env=_environment(workdir, tmpdir),
    )
    timed_out = False
    try:
        stdin = process.stdin
        assert stdin is not None
        stdin.write(code.encode("utf-8", "surrogatepass"))
        stdin.close()  # after the buffer is flushed: the code then reads end-of-file
        try:
            # Its exit, not the end of its pipes: a background child may hold them open.
            async with asyncio.timeout(timeout):
                await process.wait()
        except TimeoutError:
            timed_out = True
    finally:
        # Always at once: the code's own children too, and everything if we were canceled; then
        # the rest of the output (a child in a session of its own may hold a pipe: bounded).
        returncode = await process.stop(0, kill_wait=DRAIN_SECONDS, group=True, drain=DRAIN_SECONDS)
    assert returncode is not None
    return Outcome(
        exit_code=None if timed_out or returncode < 0 else returncode,
        signal=None if timed_out else _signal_name(returncode),
        timed_out=timed_out,
        limit=None if timed_out else _limit_hit(returncode, output.stderr.last_line()),
        seconds=round(time.monotonic() - started, 3),
        stdout=output.stdout,
        stderr=output.stderr,
    )


# ---- files the code wrote ------------------------------------------------------------------


def _collect_files(
    workdir: Path, limits: Limits, received: dict[str, bytes] | None = None
) -> tuple[list[Output], list[dict[str, Any]], list[dict[str, Any]]]:
    """(artifacts, returned files, skipped files); symbolic links are never followed, and files
    that were received and are unchanged are not returned."""
    received = received or {}
    outputs: list[Output] = []
    returned: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    budget = limits.max_total_file_bytes
    for current, dirs, names in os.walk(workdir, followlinks=False):
        dirs.sort()
        if len(skipped) > MAX_SKIPPED_LISTED:
            skipped.append({"path": "...", "reason": "more files not listed"})
            break
        for name in sorted(names)[: MAX_SKIPPED_LISTED + limits.max_files]:
            path = Path(current) / name
            rel = path.relative_to(workdir).as_posix()
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                skipped.append({"path": rel, "reason": "not a regular file"})
            elif len(outputs) >= limits.max_files:
                skipped.append({"path": rel, "bytes": info.st_size, "reason": f"more than {limits.max_files} files"})
            elif info.st_size > min(limits.max_file_bytes, budget):
                skipped.append({"path": rel, "bytes": info.st_size, "reason": "too large to return"})
            else:
                content = _read_file(path, info.st_size)
                if content is None:
                    skipped.append({"path": rel, "reason": "unreadable"})
                    continue
                if received.get(rel) == content:
                    continue  # the caller has it already
                budget -= len(content)
                outputs.append(file_output(rel, content, name=f"file:{rel}"))
                returned.append({"path": rel, "bytes": len(content), "mediaType": outputs[-1].parts[0].media_type})
    return outputs, returned, skipped


def _read_file(path: Path, size: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        return file.read(size)


def _remove_tree(root: Path) -> None:
    """Remove a run's directories, even ones the code made read-only."""

    def make_writable(function: Any, path: str, _exc: Any) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            if not os.path.islink(path) and os.path.isdir(path):
                os.chmod(path, 0o700)
            function(path)

    shutil.rmtree(root, onerror=make_writable)


# ---- the tool ------------------------------------------------------------------------------


class RunPythonArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str | None = Field(
        None, min_length=1, description="the Python program to run; print what you want to see (or give file)"
    )
    file: str | None = Field(
        None,
        min_length=1,
        description="the name of a file sent with the message to run, when code is not given (every file sent is "
        "in the working directory)",
    )
    timeout: float | None = Field(None, gt=0, description="wall-clock seconds (default and maximum: the agent's limit)")


def _place_received(workdir: Path, files: dict[str, bytes], limits: Limits) -> dict[str, bytes]:
    """Write the received files into the run's directory (by their last path component, within the
    limits of files the run may return); returns them by the name they have there."""
    placed: dict[str, bytes] = {}
    total = 0
    for filename, content in files.items():
        name = filename.replace("\\", "/").rsplit("/", 1)[-1]
        if name in ("", ".", "..") or "\x00" in name:
            raise ArgumentError(f"a received file has an unusable name: {filename[:80]!r}", argument="file")
        total += len(content)
        if len(content) > limits.max_file_bytes or total > limits.max_total_file_bytes:
            raise ArgumentError(
                f"the received files are too large ({filename!r}: {human_size(len(content))}; at most "
                f"{human_size(limits.max_file_bytes)} each, {human_size(limits.max_total_file_bytes)} in all)",
                argument="file",
            )
        (workdir / name).write_bytes(content)
        placed[name] = content
    return placed


def _program(args: RunPythonArgs) -> str:
    """The code to run: ``code``, else the received file ``file`` (UTF-8)."""
    if args.code is not None:
        return args.code
    if args.file is None:
        raise ArgumentError(
            "give 'code' (the program) or 'file' (the name of a file sent with the message)", argument="code"
        )
    content = received_file(args.file)
    if content is None:
        sent = ", ".join(received_files()) or "none"
        raise ArgumentError(
            f"no file named {args.file!r} was sent with the message (files sent: {sent}); send it as a file part "
            "or give 'code'",
            argument="file",
        )
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise ArgumentError(f"{args.file!r} is not UTF-8 text, so not a Python program", argument="file") from None


def _result_data(outcome: Outcome, returned: list[dict[str, Any]], skipped: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ok": outcome.ok,
        "exitCode": outcome.exit_code,
        "signal": outcome.signal,
        "timedOut": outcome.timed_out,
        "limit": outcome.limit,
        "durationSeconds": outcome.seconds,
        "stdoutBytes": outcome.stdout.total,
        "stderrBytes": outcome.stderr.total,
        "stdoutTruncated": outcome.stdout.truncated,
        "stderrTruncated": outcome.stderr.truncated,
        "files": returned,
        "skippedFiles": skipped,
    }


def _for_model(summary: str, stdout: str, stderr: str, returned: list[dict[str, Any]]) -> str:
    lines = [summary, "--- stdout ---", truncate_text(stdout, 8000), "--- stderr ---", truncate_text(stderr, 8000)]
    if returned:
        lines.append("files written: " + ", ".join(f"{f['path']} ({f['bytes']} bytes)" for f in returned))
    return "\n".join(lines)


@dataclass
class _Runner:
    limits: Limits
    #: Parent of each run's directory (default: the system temp dir).
    work_root: Path | None = None
    running: int = 0

    def _check(self, code: str, args: RunPythonArgs) -> float:
        size = len(code.encode("utf-8", "surrogatepass"))
        if size > self.limits.max_code_bytes:
            raise ArgumentError(
                f"'code' is {size} bytes, over the limit of {human_size(self.limits.max_code_bytes)}", argument="code"
            )
        timeout = self.limits.timeout if args.timeout is None else args.timeout
        if timeout > self.limits.timeout:
            raise ArgumentError(
                f"'timeout' {timeout:g}s is over this agent's limit of {self.limits.timeout:g}s", argument="timeout"
            )
        if self.running >= self.limits.max_concurrent:
            raise ToolError(f"busy: {self.running} runs in progress (the limit); try again when one finishes")
        return timeout

    async def __call__(self, args: RunPythonArgs) -> ToolResult:
        code = _program(args)
        timeout = self._check(code, args)
        self.running += 1
        run_dir = Path(tempfile.mkdtemp(prefix="a2a-code-", dir=self.work_root))
        try:
            workdir, tmpdir = run_dir / "work", run_dir / "tmp"
            workdir.mkdir()
            tmpdir.mkdir()
            placed = await asyncio.to_thread(_place_received, workdir, received_files(), self.limits)
            outcome = await run_python(code, workdir, tmpdir, self.limits, timeout)
            outputs, returned, skipped = await asyncio.to_thread(_collect_files, workdir, self.limits, placed)
        finally:
            self.running -= 1
            await asyncio.shield(asyncio.to_thread(_remove_tree, run_dir))
        summary = outcome.describe(self.limits, timeout)
        stdout, stderr = outcome.stdout.text(), outcome.stderr.text()
        return ToolResult(
            summary,
            [
                data_output("result", _result_data(outcome, returned, skipped)),
                text_output("stdout", stdout),
                text_output("stderr", stderr),
                *outputs,
            ],
            for_model=_for_model(summary, stdout, stderr, returned),
        )


def make_tools(limits: Limits | None = None, *, work_root: Path | None = None) -> list[Tool]:
    """The ``run_python`` tool with these limits (an assistant may combine it with others)."""
    limits = limits or Limits()
    runner = _Runner(limits, work_root)
    return [
        Tool(
            "run_python",
            f"Run a Python program in a separate process with its own empty working directory and return its "
            f"stdout, stderr, exit status and any files it wrote there. Limits: {limits.timeout:g}s wall clock, "
            f"{limits.cpu_seconds}s CPU, {human_size(limits.memory_bytes)} memory, output capped at "
            f"{human_size(limits.output_bytes)} per stream. Not isolated from the network or the user's files.",
            RunPythonArgs,
            runner,
            tags=["python", "code", "execute"],
            examples=["compute the 30th Fibonacci number with Python"],
            example_arguments={"code": "print(sum(range(10)))"},
            output_modes=["application/json", "text/plain", "application/octet-stream"],
            accepts_files=True,
        )
    ]


INSTRUCTIONS = """You run Python code with the run_python tool to answer questions and do tasks.
Each run is a fresh process in an empty directory: print the results you need, and include everything
(imports, data) in each program. When a run fails, read stderr and try again with a fix. Finish with a
short answer that reports the result."""


@dataclass
class CodeAgent(ToolAgent):
    """The code agent; ``limits`` are what each run may use."""

    limits: Limits = field(default_factory=Limits)


def make_agent(
    limits: Limits | None = None, *, work_root: Path | None = None, model: ModelSettings | None = None
) -> CodeAgent:
    """A code agent with these limits; runs live under ``work_root`` (default: the temp dir).

    ``model`` overrides the ``A2A_MODEL*`` settings of the environment.
    """
    limits = limits or Limits()
    return CodeAgent(
        name="Code",
        description=(
            "Runs Python code in a separate process with time, CPU, memory and output limits, and returns its "
            "output, exit status and the files it wrote."
        ),
        tools=make_tools(limits, work_root=work_root),
        instructions=INSTRUCTIONS,
        default_output_modes=["application/json", "text/plain", "application/octet-stream"],
        limits=limits,
        model=model,
    )


agent = make_agent()
