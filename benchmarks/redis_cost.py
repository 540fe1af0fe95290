#!/usr/bin/env python
"""What one request costs on the Redis store: round trips, Redis commands, and CPU of the
server and of redis-server, per SendMessage (``hello``), per task (``stream:1``) and per SSE
event (``stream:N`` streams), for one ``a2a serve`` replica on a local redis-server.

Counts come from redis-server itself (``INFO stats``: ``total_reads_processed`` is one per
request a client writes, a pipeline being one; ``total_commands_processed``), read before and
after each fixed window, so they need no wrapper in the server. Each source tree given with
``--src`` gets its own redis-server (started here on a free port, no persistence, stopped by
PID at the end) and its own server; rounds are interleaved, so before/after figures come from
one sitting. The servers and their redis-servers share one CPU, the load generators the other.

    .venv/bin/python benchmarks/redis_cost.py                     # this checkout
    .venv/bin/python benchmarks/redis_cost.py --src /tmp/before --src .  --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procs as P

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CASES = ("hello", "task", "sse")


def cpu_ticks(pid: int) -> int:
    """utime + stime of the whole process (every thread), in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def redis_stats(port: int) -> dict[str, int]:
    """Counters from ``INFO stats`` (one round trip of ours, subtracted by the caller)."""
    import redis

    client = redis.Redis(port=port)
    try:
        info: dict[str, Any] = client.info("stats")
    finally:
        client.close()
    return {"reads": int(info["total_reads_processed"]), "commands": int(info["total_commands_processed"])}


class Target:
    """One source tree: its redis-server and its ``a2a serve``."""

    def __init__(self, procs: P.Procs, src: Path, index: int, cpu: int | None) -> None:
        self.src = src
        self.label = f"{index}:{src.name}"
        self.redis_port, self.port = P.free_port(), P.free_port()
        redis_cmd = [shutil.which("redis-server") or "redis-server", "--port", str(self.redis_port)]
        redis_cmd += ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.redis = procs.start(f"redis-cost-redis{index}", redis_cmd, cpu=cpu)
        deadline = time.monotonic() + 10
        while True:
            try:
                redis_stats(self.redis_port)
                break
            except Exception:  # noqa: BLE001 - not up yet: tried again until the deadline
                if time.monotonic() > deadline or self.redis.poll() is not None:
                    raise RuntimeError(f"redis-server on port {self.redis_port} did not start") from None
                time.sleep(0.05)
        cmd = [sys.executable, "-m", "a2a.cli.main", "serve", "examples/echo_agent.py:agent"]
        cmd += ["--port", str(self.port), "--store", f"redis://127.0.0.1:{self.redis_port}/0"]
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.server = procs.start(f"redis-cost-server{index}", cmd, cpu=cpu, env=env, cwd=src)
        self.url = f"http://127.0.0.1:{self.port}/a2a/jsonrpc"
        P.wait_ready(self.server, self.url, f"a2a serve ({src})")

    def measure(self, run: Any) -> dict[str, float]:
        """Run ``run()`` (returns the count of requests or events) between two readings."""
        stats0 = redis_stats(self.redis_port)
        server0, redis0 = cpu_ticks(self.server.pid), cpu_ticks(self.redis.pid)
        count = run()
        server1, redis1 = cpu_ticks(self.server.pid), cpu_ticks(self.redis.pid)
        stats1 = redis_stats(self.redis_port)
        tick = 1e6 / os.sysconf("SC_CLK_TCK")
        count = max(count, 1)
        return {
            "count": count,
            "round_trips": (stats1["reads"] - stats0["reads"] - 1) / count,
            "commands": (stats1["commands"] - stats0["commands"] - 1) / count,
            "server_us": (server1 - server0) * tick / count,
            "redis_us": (redis1 - redis0) * tick / count,
        }


def wrk(url: str, text: str, seconds: float, connections: int, cpu: int | None) -> tuple[int, float, float]:
    """(requests, requests/s, p50 ms)."""
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
    cmd += ["-s", str(HERE / "sendmessage.lua"), url, "--", "rc" + uuid.uuid4().hex[:10], text]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 30, check=True, preexec_fn=P._preexec(cpu)
    ).stdout
    totals = json.loads(next(x for x in out.splitlines() if x.startswith("WRKJSON "))[8:])
    if totals["bad_answers"] or totals["requests"] == 0:
        raise RuntimeError(f"wrk {text}: {totals}")
    return int(totals["requests"]), totals["requests"] / (totals["duration_us"] / 1e6), totals["latency_us_p50"] / 1000


def sse(url: str, streams: int, chunks: int, seconds: float, cpu: int | None) -> tuple[int, float]:
    """(events, events/s in the window)."""
    cmd = [sys.executable, str(HERE / "loadgen.py"), "sse", "--url", url, "--streams", str(streams)]
    cmd += ["--chunks", str(chunks), "--warmup", "0", "--duration", str(seconds)]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 60, check=True, preexec_fn=P._preexec(cpu)
    ).stdout
    result = json.loads(out.strip().splitlines()[-1])
    if result["stream_errors"]:
        raise RuntimeError(f"sse: {result['first_error']}")
    return int(result["total_events_incl_warmup"]), float(result["events_per_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", default=[], help="source tree to serve (repeatable; default .)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of hello,task,sse")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if unknown := set(cases) - set(CASES):
        parser.error(f"unknown cases: {', '.join(sorted(unknown))}")
    if not (1 <= args.repeat <= 10 and 1 <= args.duration <= 60 and 0 <= args.warmup <= 30):
        parser.error("repeat 1..10, duration 1..60 s, warmup 0..30 s")
    server_cpu, load_cpu, pin_note = P.cpu_plan()
    P.pin_self(load_cpu)
    procs = P.Procs(RESULTS / "logs")
    sources = [Path(s).resolve() for s in (args.src or ["."])]
    samples: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        targets = [Target(procs, src, i, server_cpu) for i, src in enumerate(sources, 1)]
        for _ in range(args.repeat):
            for case in cases:
                for target in targets:
                    if case == "sse":
                        rate: dict[str, float] = {}

                        def run(t: Target = target, rate: dict[str, float] = rate) -> int:
                            events, rate["per_s"] = sse(t.url, args.streams, args.chunks, args.duration, load_cpu)
                            return events

                    else:
                        text = "hello" if case == "hello" else "stream:1"
                        if args.warmup:
                            wrk(target.url, text, args.warmup, args.connections, load_cpu)
                        rate = {}

                        def run(t: Target = target, text: str = text, rate: dict[str, float] = rate) -> int:
                            count, rate["per_s"], rate["p50_ms"] = wrk(
                                t.url, text, args.duration, args.connections, load_cpu
                            )
                            return count

                    figures = target.measure(run)
                    figures.update(rate)
                    samples.setdefault((case, target.label), []).append(figures)
    finally:
        procs.stop_all()
    print(f"{pin_note}; servers and their redis-servers on one CPU; median of {args.repeat}")
    head = f"{'case':<6}{'source':<22}{'per_s':>9}{'round trips':>13}{'commands':>10}{'server us':>11}{'redis us':>10}"
    print(head + "   (per request; sse: per event)")
    summary: dict[str, dict[str, dict[str, float]]] = {}
    for (case, label), runs in samples.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        summary.setdefault(case, {})[label] = med
        print(
            f"{case:<6}{label[:21]:<22}{med['per_s']:>9,.0f}{med['round_trips']:>13.2f}{med['commands']:>10.2f}"
            f"{med['server_us']:>11.1f}{med['redis_us']:>10.1f}"
        )
    print("JSON " + json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
