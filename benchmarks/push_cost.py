#!/usr/bin/env python
"""What one webhook per task costs: SendMessage that creates a task, completes it with an
artifact and returns it (``stream:1``), with and without a push notification config in the
request, against ``a2a serve`` (push on, as by default) on a fresh SQLite file.

A receiver on loopback (aiohttp, its own process) answers every delivery 204 and counts them;
the server is pinned to one CPU, wrk and the receiver to the other. Rounds are interleaved;
reported: requests/s, p50, server CPU per request, and the deliveries received (3 events per
task: the task, the artifact, the completed status).

    .venv/bin/python benchmarks/push_cost.py --repeat 3
    .venv/bin/python benchmarks/push_cost.py --store sqlite-full
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procs as P

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def receiver(port: int) -> None:
    """The webhook receiver: 204 for every POST; prints the count when stopped."""
    import asyncio

    from aiohttp import web

    count = 0

    async def hook(request: web.Request) -> web.Response:
        nonlocal count
        await request.read()
        count += 1
        return web.Response(status=204)

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/hook", hook)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        print("ready", flush=True)
        await stop.wait()
        print(json.dumps({"deliveries": count}), flush=True)
        await runner.cleanup()

    asyncio.run(serve())


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wrk(url: str, seconds: float, connections: int, cpu: int | None, hook: str | None) -> dict[str, float]:
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--timeout", "10s"]
    cmd += ["-s", str(HERE / "sendmessage.lua"), url, "--", "push" + uuid.uuid4().hex[:10], "stream:1"]
    cmd += [hook] if hook else []
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 30, check=True, preexec_fn=P._preexec(cpu)
    ).stdout
    totals: dict[str, float] = json.loads(next(x for x in out.splitlines() if x.startswith("WRKJSON "))[8:])
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--receiver", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--store", default="sqlite", help="sqlite (fresh file), sqlite-full, memory:, or a URL")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if args.receiver:
        receiver(args.receiver)
        return 0
    server_cpu, load_cpu, pin_note = P.cpu_plan()
    P.pin_self(load_cpu)
    procs = P.Procs(RESULTS / "logs")
    results: dict[str, list[dict[str, float]]] = {"no webhook": [], "one webhook per task": []}
    deliveries = 0
    expected = 0
    with tempfile.TemporaryDirectory(prefix="a2a-push-cost-") as scratch:
        store = args.store
        if store in ("sqlite", "sqlite-full"):
            store = f"sqlite:///{scratch}/push.db" + ("?durability=full" if store == "sqlite-full" else "")
        hook_port, port = P.free_port(), P.free_port()
        hook_url = f"http://127.0.0.1:{hook_port}/hook"
        try:
            hook = procs.start(
                "push-receiver", [sys.executable, __file__, "--receiver", str(hook_port)], cpu=load_cpu, capture=True
            )
            assert hook.stdout is not None
            hook.stdout.readline()  # "ready"
            cmd = [sys.executable, "-m", "a2a.cli.main", "serve", "examples/echo_agent.py:agent", "--port", str(port)]
            cmd += ["--store", store, "--push-allow", "127.0.0.1"]
            server = procs.start("push-server", cmd, cpu=server_cpu)
            url = f"http://127.0.0.1:{port}/a2a/jsonrpc"
            P.wait_ready(server, url, "a2a serve")
            for _ in range(args.repeat):
                for case in results:
                    with_hook = hook_url if case != "no webhook" else None
                    if args.warmup:
                        warm = wrk(url, args.warmup, args.connections, load_cpu, with_hook)
                        expected += 3 * int(warm["requests"]) if with_hook else 0
                    before, t0 = cpu_ticks(server.pid), time.monotonic()
                    raw = wrk(url, args.duration, args.connections, load_cpu, with_hook)
                    cpu_s = (cpu_ticks(server.pid) - before) / os.sysconf("SC_CLK_TCK")
                    expected += 3 * int(raw["requests"]) if with_hook else 0
                    if raw["bad_answers"]:
                        raise RuntimeError(f"{raw['bad_answers']} bad answers ({case})")
                    results[case].append(
                        {
                            "requests_per_s": raw["requests"] / (raw["duration_us"] / 1e6),
                            "latency_ms_p50": raw["latency_us_p50"] / 1000,
                            "server_cpu_us_per_request": 1e6 * cpu_s / raw["requests"],
                            "window_s": time.monotonic() - t0,
                        }
                    )
            time.sleep(3.0)  # the last deliveries
            procs.stop(server)
            os.kill(hook.pid, signal.SIGTERM)  # it prints its count, then exits
            out, _ = hook.communicate(timeout=10)
            lines = [x for x in out.decode().splitlines() if x.startswith("{")]
            deliveries = json.loads(lines[-1])["deliveries"] if lines else -1
        finally:
            procs.stop_all()
    print(f"store {args.store}; {pin_note}; {args.connections} connections, median of {args.repeat}")
    print(f"{'SendMessage -> task':<24}{'req/s':>10}{'p50 ms':>9}{'CPU us/req':>12}   rounds (req/s)")
    summary = {}
    for case, samples in results.items():
        med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        summary[case] = {**med, "samples": [round(s["requests_per_s"]) for s in samples]}
        print(
            f"{case:<24}{med['requests_per_s']:>10,.0f}{med['latency_ms_p50']:>9.2f}"
            f"{med['server_cpu_us_per_request']:>12.1f}   {summary[case]['samples']}"
        )
    ratio = summary["one webhook per task"]["requests_per_s"] / summary["no webhook"]["requests_per_s"]
    print(f"with a webhook / without: {ratio:.3f}; deliveries received {deliveries:,} of {expected:,} events sent")
    print(
        "JSON " + json.dumps({"store": args.store, "results": summary, "deliveries": deliveries, "expected": expected})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
