"""Our bindings side by side: HTTP JSON-RPC, WebSocket and stdio, driven by our own client.

The same client (A2AClient on uvloop, pinned to one core) drives the same echo agent (pinned to
the other core) over each binding, so the figures compare the bindings, not clients:

- SendMessage round trips per second with 1 call in flight (latency-bound), and
- messages per second with 64 calls in flight (HTTP: a pool of connections; WebSocket and
  stdio: all 64 multiplexed on one connection / one child process).

Each figure is also given as server CPU time per call (from /proc), which other load on the
machine hardly moves. Every loop is bounded in time; every process is stopped by its PID.

    .venv/bin/python benchmarks/bindings.py [--window 4] [--warmup 1] [--inflight 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from procs import REPO, Procs, cpu_plan, free_port, pin_self, python, wait_ready

from a2a import A2AClient, RetryPolicy

ECHO = f"{REPO / 'examples' / 'echo_agent.py'}:agent"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def stdio_child_pid() -> int | None:
    """The stdio server our client started (a child of this process)."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and b"--stdio" in cmd:
            return int(entry.name)
    return None


async def measure(client: A2AClient, server_pid: int, inflight: int, warmup: float, window: float) -> dict[str, float]:
    """Calls per second and server CPU per call, with ``inflight`` calls always outstanding."""
    counter = [0]
    stop_at = [time.monotonic() + warmup]

    async def worker() -> None:
        while time.monotonic() < stop_at[0]:
            await client.send("hello")
            counter[0] += 1

    async def phase(seconds: float) -> tuple[int, float, float]:
        counter[0] = 0
        stop_at[0] = time.monotonic() + seconds
        cpu0, t0 = cpu_seconds(server_pid), time.monotonic()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        return counter[0], time.monotonic() - t0, cpu_seconds(server_pid) - cpu0

    await phase(warmup)
    calls, elapsed, cpu = await phase(window)
    return {
        "calls_per_s": calls / elapsed,
        "server_cpu_us_per_call": 1e6 * cpu / calls if calls else float("nan"),
        "calls": calls,
    }


async def run(args: argparse.Namespace, procs: Procs, server_cpu: int | None) -> dict[str, dict[str, float]]:
    port = free_port()
    cmd = [python(), "-m", "a2a.cli.main", "serve", ECHO, "--port", str(port), "--store", "memory:", "--no-push"]
    server = procs.start("bindings-server", cmd, cpu=server_cpu)
    url = f"http://127.0.0.1:{port}"
    wait_ready(server, f"{url}/a2a/jsonrpc", "our server")
    retry = RetryPolicy.none()
    results: dict[str, dict[str, float]] = {}
    cases: list[tuple[str, Callable[[], A2AClient], Callable[[], int]]] = [
        ("HTTP JSON-RPC", lambda: A2AClient(url, binding="JSONRPC", retry=retry), lambda: server.pid),
        ("WebSocket", lambda: A2AClient(url, binding="WEBSOCKET", retry=retry), lambda: server.pid),
    ]
    pin = ["taskset", "-c", str(server_cpu)] if server_cpu is not None and shutil.which("taskset") else []
    stdio_cmd = [*pin, python(), "-m", "a2a.cli.main", "serve", ECHO, "--stdio", "--no-push"]
    cases.append(("stdio", lambda: A2AClient.stdio(stdio_cmd, retry=retry), lambda: stdio_child_pid() or 0))
    for name, make, pid_of in cases:
        for inflight in (1, args.inflight):
            async with make() as client:
                await client.send("warm up")  # connect (and, for stdio, start the child)
                pid = pid_of()
                figures = await measure(client, pid, inflight, args.warmup, args.window)
            key = f"{name}, {inflight} in flight"
            results[key] = figures
            print(
                f"  {key:<28} {figures['calls_per_s']:>9,.0f} calls/s"
                f"   {figures['server_cpu_us_per_call']:>7.1f} us server CPU per call",
                flush=True,
            )
    procs.stop(server)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--window", type=float, default=4.0, help="seconds measured per figure")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "bindings.json"))
    args = parser.parse_args()
    server_cpu, load_cpu, pinning = cpu_plan()
    pin_self(load_cpu)
    print(f"Pinning: {pinning}; client: A2AClient on uvloop", flush=True)
    procs = Procs(REPO / "benchmarks" / "results" / "logs")
    try:
        import uvloop

        results = uvloop.run(run(args, procs, server_cpu))
    finally:
        procs.stop_all()
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps({"pinning": pinning, "results": results}, indent=2))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
