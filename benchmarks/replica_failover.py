"""How fast a replica's death is noticed: two ``a2a serve`` replicas on one redis-server.

Starts a redis-server (loopback, no persistence) and two replicas A and B of
``examples/echo_agent.py`` with the same ``--store redis://...``. Each round has three
scenarios; in each, a ``hold:300`` task is started through A, seen WORKING through B, then A is
SIGKILLed (and restarted for the next scenario):

- **detect**: B is polled (GetTask, every 50 ms) until the task has ended: the time from the
  kill until the task is ``FAILED`` as seen through B;
- **cancel**: ``CancelTask`` through B right after the kill (the task is an orphan, though
  nothing knows it yet): the time until it answers, and the state it answers with;
- **retry**: the same message (same ``messageId``), sent again as a blocking ``SendMessage``
  through B right after the kill: the time until it answers.

Then the Redis commands per second of the two replicas, idle and with 100 tasks running, from
``INFO commandstats`` over a window (this script's own commands are not counted: it sends
none during the window).

Prints a table (median and max over the rounds) and writes the samples as JSON
(``--output``). Every process started here is stopped by its own PID.

    .venv/bin/python benchmarks/replica_failover.py --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

from a2a import A2AClient, RetryPolicy
from a2a.client import user_message
from a2a.types import Task, TaskState

REPO = Path(__file__).resolve().parent.parent
AGENT = "examples/echo_agent.py:agent"
#: A bound on every single wait (a hang guard, far above what is measured).
WAIT = 90.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Proc:
    """A child process, stopped by its PID."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self._log = open(log, "ab")  # noqa: SIM115 - closed in stop
        self.proc = subprocess.Popen(
            args, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log, text=True
        )

    def first_line(self, timeout: float = 30.0) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        os.set_blocking(self.proc.stdout.fileno(), True)
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line:
                return line.strip()
            if self.proc.poll() is not None:
                break
        raise RuntimeError(f"process {self.proc.args} printed nothing (exit {self.proc.poll()})")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._log.close()


def start_redis(workdir: Path, procs: list[Proc]) -> str:
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed (apt-get install -y redis-server)")
    port = _free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    procs.append(Proc([*args, "--dir", str(workdir)], workdir / "redis.log"))
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return f"redis://127.0.0.1:{port}/0"
        except OSError:
            if time.monotonic() > deadline:
                sys.exit("redis-server did not start")
            time.sleep(0.05)


def start_replica(store: str, name: str, workdir: Path, procs: list[Proc]) -> tuple[Proc, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env["PYTHONUNBUFFERED"] = "1"
    args = [sys.executable, "-m", "a2a.cli.main", "serve", AGENT, "--port", "0", "--store", store]
    proc = Proc(args, workdir / f"serve-{name}.log", env)
    procs.append(proc)
    line = proc.first_line()
    if not line.startswith("Serving "):
        raise RuntimeError(f"replica {name} did not start: {line}")
    return proc, line.rsplit(" at ", 1)[1]


async def _until_working(client: A2AClient, task_id: str) -> None:
    deadline = time.monotonic() + WAIT
    while (await client.get_task(task_id)).status.state != TaskState.WORKING:
        if time.monotonic() > deadline:
            raise RuntimeError(f"task {task_id} never WORKING")
        await asyncio.sleep(0.05)


async def _until_ended(client: A2AClient, task_id: str) -> Task:
    deadline = time.monotonic() + WAIT
    while True:
        task = await client.get_task(task_id)
        if task.status.state.is_terminal:
            return task
        if time.monotonic() > deadline:
            raise RuntimeError(f"task {task_id} not ended {WAIT}s after the kill")
        await asyncio.sleep(0.05)


async def scenario(kind: str, store: str, b_url: str, workdir: Path, procs: list[Proc]) -> dict[str, Any]:
    a, a_url = start_replica(store, "a", workdir, procs)
    message = user_message("hold:300", message_id=f"bench-{uuid.uuid4().hex}")
    async with (
        A2AClient(a_url, retry=RetryPolicy.none(), timeout=WAIT) as on_a,
        A2AClient(b_url, retry=RetryPolicy.none(), timeout=WAIT) as on_b,
    ):
        started = await on_a.send(message, return_immediately=True)
        assert isinstance(started, Task)
        await _until_working(on_b, started.id)
        a.kill()
        killed = time.monotonic()
        if kind == "detect":
            ended = await _until_ended(on_b, started.id)
        elif kind == "cancel":
            ended = await on_b.cancel_task(started.id)
        else:
            answer = await on_b.send(message)
            assert isinstance(answer, Task) and answer.id == started.id, answer
            ended = answer
        took = time.monotonic() - killed
        final = (await on_b.get_task(started.id)).status.state
    a.stop()
    procs.remove(a)
    return {"scenario": kind, "seconds": took, "answered": ended.status.state.name, "final": final.name}


async def commands_per_second(redis_url: str, window: float) -> dict[str, float]:
    """Commands/s by name over ``window`` (those run inside Lua scripts are counted too, under
    their own names; ``evalsha`` is the scripts' own round trips)."""
    redis = aioredis.from_url(redis_url)
    try:

        async def calls() -> dict[str, int]:
            stats: dict[str, Any] = await redis.info("commandstats")
            return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items() if k != "cmdstat_info"}

        before = await calls()
        await asyncio.sleep(window)
        after = await calls()
        rates = {name: (n - before.get(name, 0)) / window for name, n in after.items() if n != before.get(name, 0)}
        return {"total": sum(rates.values()), **dict(sorted(rates.items(), key=lambda kv: -kv[1]))}
    finally:
        await redis.aclose()


async def load(
    store: str, b_url: str, redis_url: str, workdir: Path, procs: list[Proc], window: float
) -> dict[str, Any]:
    """Redis commands/s of two replicas: idle, then with 100 tasks running on A."""
    _a, a_url = start_replica(store, "a", workdir, procs)
    await asyncio.sleep(2.0)  # past start-up
    idle = await commands_per_second(redis_url, window)
    async with A2AClient(a_url, retry=RetryPolicy.none(), timeout=WAIT) as on_a:
        tasks = [await on_a.send("hold:120", return_immediately=True) for _ in range(100)]
        await asyncio.sleep(2.0)
        busy = await commands_per_second(redis_url, window)
        for task in tasks:
            assert isinstance(task, Task)
            await on_a.cancel_task(task.id)
    return {"idle_commands_per_s": idle, "running_100_commands_per_s": busy, "window_s": window}


def summary(samples: list[dict[str, Any]]) -> list[str]:
    lines = ["| scenario | median s | max s | answered |", "|---|---|---|---|"]
    for kind in ("detect", "cancel", "retry"):
        mine = [s for s in samples if s["scenario"] == kind]
        if not mine:
            continue
        took = [s["seconds"] for s in mine]
        answered = sorted({s["answered"] for s in mine})
        lines.append(f"| {kind} | {statistics.median(took):.2f} | {max(took):.2f} | {', '.join(answered)} |")
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--window", type=float, default=10.0, help="seconds of each commands/s measurement")
    parser.add_argument("--store-options", default="", help="extra query options of the store URL, e.g. lease_ttl=3")
    parser.add_argument("--output", type=Path, default=REPO / "benchmarks" / "results" / "replica_failover.json")
    args = parser.parse_args()
    procs: list[Proc] = []
    workdir = Path(tempfile.mkdtemp(prefix="replica-failover-"))
    try:
        redis_url = start_redis(workdir, procs)
        store = f"{redis_url}?namespace=bench-{uuid.uuid4().hex[:8]}"
        if args.store_options:
            store += "&" + args.store_options
        _b, b_url = start_replica(store, "b", workdir, procs)
        samples: list[dict[str, Any]] = []
        for round_no in range(args.rounds):
            for kind in ("detect", "cancel", "retry"):
                sample = await scenario(kind, store, b_url, workdir, procs)
                sample["round"] = round_no
                samples.append(sample)
                print(f"round {round_no} {kind}: {sample['seconds']:.2f}s ({sample['answered']})", flush=True)
        traffic = await load(store, b_url, redis_url, workdir, procs, args.window)
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(Exception):
                proc.stop()
    print("\n".join(summary(samples)))
    for label, key in (("idle", "idle_commands_per_s"), ("with 100 tasks running", "running_100_commands_per_s")):
        rates = traffic[key]
        detail = ", ".join(f"{name} {rate:.1f}" for name, rate in rates.items() if name != "total")
        print(f"Redis commands/s of two replicas, {label}: {rates['total']:.1f} ({detail})")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"store": store, "samples": samples, "traffic": traffic}, indent=2))
    print(f"samples: {args.output}")


if __name__ == "__main__":
    asyncio.run(main())
