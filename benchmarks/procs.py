"""Child processes for the benchmark: CPU pinning, readiness, and a guaranteed stop by PID.

Every process we start is recorded in ``Procs``; ``Procs.stop_all`` (called from a ``finally``
and on SIGTERM) terminates each one *by its own PID*, then kills it if it lingers. Children are
also asked to die with us (``PR_SET_PDEATHSIG``) in case this process is killed outright.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_PR_SET_PDEATHSIG = 1


def cpu_plan() -> tuple[int | None, int | None, str]:
    """(server cpu, load-generator cpu, description). None when pinning is not possible."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None, "no CPU pinning (sched_setaffinity unavailable)"
    if len(cpus) < 2:
        return None, None, f"no CPU pinning (only {len(cpus)} CPU available): server and load share it"
    server, loadgen = cpus[0], cpus[1]
    note = f"server pinned to CPU {server}, load generator (and this script) to CPU {loadgen}"
    if len(cpus) > 2:
        note += f" (of {len(cpus)} CPUs)"
    return server, loadgen, note


def pin_self(cpu: int | None) -> None:
    if cpu is not None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})


#: Scheduling priority for every process of the benchmark (set by run.py; 0 = leave it).
NICE = 0


def renice_self(nice: int) -> str:
    """Raise (negative ``nice``) our priority and our children's, so that other work on a shared
    machine disturbs the figures less. Returns what was done."""
    global NICE
    if nice == 0:
        return "normal priority"
    try:
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    except (OSError, AttributeError) as exc:
        return f"normal priority (could not renice to {nice}: {exc})"
    NICE = nice
    return f"nice {nice} for every benchmark process"


def _preexec(cpu: int | None):  # type: ignore[no-untyped-def]
    nice = NICE

    def run() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        if nice:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, nice)
        with contextlib.suppress(Exception):  # Linux only; best effort
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Procs:
    """The processes this run started, each stopped by PID at the end."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []
        self._opened: set[str] = set()  # logs start empty on each run, then collect every use

    def start(
        self,
        name: str,
        cmd: Sequence[str],
        *,
        cpu: int | None,
        capture: bool = False,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        interactive: bool = False,
    ) -> subprocess.Popen[bytes]:
        """``capture``: its stdout is ours to read; ``interactive``: its stdin too (commands)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        mode = "ab" if name in self._opened else "wb"
        self._opened.add(name)
        stderr = open(self.log_dir / f"{name}.log", mode)  # noqa: SIM115 - closed when the process ends
        proc = subprocess.Popen(
            list(cmd),
            stdout=subprocess.PIPE if capture else stderr,
            stderr=stderr,
            stdin=subprocess.PIPE if interactive else subprocess.DEVNULL,
            cwd=cwd or REPO,
            env=env,
            preexec_fn=_preexec(cpu),
            start_new_session=True,  # Ctrl-C reaches only us; we stop the children ourselves
        )
        stderr.close()
        self._procs.append((name, proc))
        return proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout)
        for pipe in (proc.stdin, proc.stdout):
            if pipe:
                with contextlib.suppress(OSError):
                    pipe.close()
        self._procs = [(n, p) for n, p in self._procs if p is not proc]

    def stop_all(self) -> None:
        for _name, proc in reversed(list(self._procs)):
            with contextlib.suppress(Exception):
                self.stop(proc)


def run_captured(procs: Procs, name: str, cmd: Sequence[str], *, cpu: int | None, timeout: float) -> str:
    """Run a load generator to completion (bounded by ``timeout``) and return its stdout."""
    proc = procs.start(name, cmd, cpu=cpu, capture=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        procs.stop(proc)
        raise RuntimeError(f"{name} did not finish within {timeout:.0f}s (see {procs.log_dir / name}.log)") from None
    procs.stop(proc)
    if proc.returncode != 0:
        tail = (procs.log_dir / f"{name}.log").read_text(errors="replace")[-1500:]
        raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
    return out.decode()


def rss_kib(pid: int) -> int:
    """The resident set of a process (VmRSS in /proc/PID/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


# ---- talking to a server with the standard library (readiness, spot checks) ------------------


def send_body(text: str, method: str = "SendMessage") -> bytes:
    msg = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": msg}}).encode()


HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def post(url: str, body: bytes, timeout: float = 10.0) -> bytes:
    req = urllib.request.Request(url, data=body, headers=HEADERS, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return bytes(resp.read())


def wait_ready(proc: subprocess.Popen[bytes], url: str, name: str, timeout: float = 60.0) -> None:
    """Poll with a real SendMessage until it answers with a result (bounded in time)."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited early with code {proc.returncode}")
        try:
            answer = json.loads(post(url, send_body("ready?"), timeout=2.0))
            if "result" in answer:
                return
            last = RuntimeError(f"unexpected answer: {answer}")
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last = exc
        time.sleep(0.1)
    raise RuntimeError(f"{name} not ready at {url} within {timeout:.0f}s: {last}")


def check_stream(url: str, chunks: int = 5) -> int:
    """Events in one ``stream:N`` answer; raises if the stream does not end COMPLETED."""
    raw = post(url, send_body(f"stream:{chunks}", "SendStreamingMessage"), timeout=30.0)
    datas = [line for line in raw.replace(b"\r\n", b"\n").split(b"\n") if line.startswith(b"data:")]
    if not datas or b"TASK_STATE_COMPLETED" not in datas[-1]:
        raise RuntimeError(f"stream:{chunks} did not end COMPLETED: {raw[-300:]!r}")
    return len(datas)


def python() -> str:
    return sys.executable
