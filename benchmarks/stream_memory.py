#!/usr/bin/env python
"""Memory per open SSE stream: ours (SQLite, memory:), the reference SDK and bare aiohttp.

For each server, one at a time (fresh process each round): start it as run.py does, warm it up
with a few ``hold:`` streams that end (so that lazy imports and first-use allocations are paid),
read its idle RSS (VmRSS, /proc/PID/status), then open N concurrent ``SendStreamingMessage``
streams of ``hold:S`` that stay open (the agent reports WORKING and waits S seconds), wait until
every one has received its first event, read RSS again; then N more (2N open) and read it again;
then close them. Reported: (RSS_open - RSS_idle) / streams in KiB, at N and 2N, and the increment
from N to 2N per stream (the linearity check), with the count of streams actually open.

The streams are held by ``loadgen.py hold`` (aiohttp client, its own process, on the other CPU).

    .venv/bin/python benchmarks/stream_memory.py                 # N=500, about 1 minute
    .venv/bin/python benchmarks/stream_memory.py --streams 1000 --repeat 3

See README.md ("Memory per open SSE stream").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procs as P
import run
from procs import Procs

HERE = Path(__file__).resolve().parent
#: Our server under "memory" is run.py's variant of ours with --store memory:.
NAMES = {"ours": "ours", "memory": "cand1", "sdk": "sdk", "bare": "bare"}
LABELS = {
    "ours": "ours, default (SQLite)",
    "memory": "ours, --store memory:",
    "sdk": "reference SDK 1.3.0",
    "bare": "bare aiohttp (ceiling)",
}
TARGET_KIB = 20.0
MAX_STREAMS = 2000
#: Warm-up: this many concurrent streams that end, twice.
WARM_STREAMS = 16


def server_args(servers: list[str]) -> argparse.Namespace:
    """run.py's configuration for these servers (its ``server_command`` builds the commands)."""
    plain = [NAMES[n] for n in servers if n != "memory"]
    argv = ["--servers", ",".join(plain) or "bare"] + (["--variant", "memory:"] if "memory" in servers else [])
    return run.parse_args(argv)


def status_kib(pid: int) -> dict[str, int]:
    """VmRSS and its anonymous / file-backed parts (SQLite maps its -shm file), in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            found[key] = int(value.split()[0])
    return found


class Holder:
    """``loadgen.py hold``: one command line in, one JSON line out."""

    def __init__(self, procs: Procs, url: str, cpu: int | None, tag: str) -> None:
        cmd = [sys.executable, str(HERE / "loadgen.py"), "hold", "--url", url]
        self.proc = procs.start(f"holder-{tag}", cmd, cpu=cpu, capture=True, interactive=True)

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the stream holder exited on {command!r} (code {self.proc.poll()})")
        return dict(json.loads(line))


def start_server(
    procs: Procs, name: str, args: argparse.Namespace, rargs: argparse.Namespace, cpu: int | None
) -> tuple[subprocess.Popen[bytes], str]:
    port = P.free_port()
    cmd, url, cwd, env = run.server_command(NAMES[name], port, rargs)
    if name in ("ours", "memory"):
        # a2a serve caps connections per client address (256) and in all: every stream of this
        # run comes from 127.0.0.1, so both caps are raised above 2N for the measurement.
        cap = str(2 * args.streams + 64)
        cmd += ["--max-connections-per-client", cap, "--max-connections", cap]
    return procs.start(f"server-{name}", cmd, cpu=cpu, cwd=cwd, env=env), url


def measure_subscribers(
    procs: Procs, name: str, args: argparse.Namespace, rargs: argparse.Namespace, cpus: tuple[int | None, int | None]
) -> dict[str, Any]:
    """N ``SubscribeToTask`` streams of one held task, on a fresh server: what one more reader
    of a task costs (no run, no task of its own). The warm-up holds 4 subscribers open."""
    server, url = start_server(procs, name, args, rargs, cpus[0])
    holder: Holder | None = None
    try:
        P.wait_ready(server, url, name)
        holder = Holder(procs, url, cpus[1], f"{name}-subscribe")
        for _ in range(2):
            holder.ask(f"warm {WARM_STREAMS} 0.2")
        holder.ask(f"subscribe 4 {args.hold:g}")
        time.sleep(args.settle)
        idle = status_kib(server.pid)
        answer = holder.ask(f"subscribe {args.streams} {args.hold:g}")
        time.sleep(args.settle)
        rss = status_kib(server.pid)
        holder.ask("close")
    finally:
        if holder is not None:
            procs.stop(holder.proc)
        procs.stop(server)
    return {
        "subscribers_open": int(answer["opened"]),
        "errors": answer["errors"],
        "first_error": answer["first_error"],
        "rss_kib": rss,
        "idle_rss_kib": idle,
        # The N subscribers and the one stream holding their task.
        "kib_per_stream": round((rss["VmRSS"] - idle["VmRSS"]) / max(1, int(answer["opened"]) + 1), 2),
    }


def measure_one(
    procs: Procs, name: str, args: argparse.Namespace, rargs: argparse.Namespace, cpus: tuple[int | None, int | None]
) -> dict[str, Any]:
    server, url = start_server(procs, name, args, rargs, cpus[0])
    holder: Holder | None = None
    try:
        P.wait_ready(server, url, name)
        holder = Holder(procs, url, cpus[1], name)
        warm = [holder.ask(f"warm {WARM_STREAMS} 0.2") for _ in range(2)]
        time.sleep(args.settle)
        idle = status_kib(server.pid)
        steps = []
        for step in (1, 2):
            answer = holder.ask(f"open {args.streams} {args.hold:g}")
            time.sleep(args.settle)
            rss = status_kib(server.pid)
            open_now = int(answer["open"])
            steps.append(
                {
                    "streams_asked": step * args.streams,
                    "streams_open": open_now,
                    "open_seconds": answer["seconds"],
                    "errors": answer["errors"],
                    "first_error": answer["first_error"],
                    "rss_kib": rss,
                    "kib_per_stream": round((rss["VmRSS"] - idle["VmRSS"]) / max(1, open_now), 2),
                    "anon_kib_per_stream": round((rss["RssAnon"] - idle["RssAnon"]) / max(1, open_now), 2),
                }
            )
        closed = holder.ask("close")
    finally:
        if holder is not None:
            procs.stop(holder.proc)
        procs.stop(server)
    subscribers = measure_subscribers(procs, name, args, rargs, cpus) if args.subscribe else None
    n1, n2 = steps
    increment = (n2["rss_kib"]["VmRSS"] - n1["rss_kib"]["VmRSS"]) / max(1, n2["streams_open"] - n1["streams_open"])
    return {
        "server": LABELS[name],
        "warm": warm,
        "idle_rss_kib": idle,
        "at_n": n1,
        "at_2n": n2,
        "increment_kib_per_stream": round(increment, 2),
        "all_open": n1["streams_open"] == args.streams
        and n2["streams_open"] == 2 * args.streams
        and (subscribers is None or subscribers["subscribers_open"] == args.streams),
        "closed": closed,
        "subscribers": subscribers,
    }


def median_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    ordered = sorted(rounds, key=lambda r: r["at_2n"]["kib_per_stream"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    if len(rounds) > 1:
        chosen["rounds_kib_per_stream_2n"] = [r["at_2n"]["kib_per_stream"] for r in rounds]
    return chosen


def print_report(report: dict[str, Any]) -> None:
    n = report["config"]["streams"]
    print(f"\nRSS per open SSE stream (VmRSS over idle, KiB), N={n}; load average {report['loadavg']}")
    head = f"{'server':<26}{'idle MiB':>9}{'open N':>8}{'KiB@N':>8}{'open 2N':>9}{'KiB@2N':>8}{'N->2N':>8}"
    print(head + "  anon KiB@2N")
    for result in report["results"].values():
        if "error" in result:
            print(f"{result['server']:<26} failed: {result['error']}")
            continue
        a, b = result["at_n"], result["at_2n"]
        rounds = result.get("rounds_kib_per_stream_2n")
        print(
            f"{result['server']:<26}{result['idle_rss_kib']['VmRSS'] / 1024:>9.1f}{a['streams_open']:>8}"
            f"{a['kib_per_stream']:>8.1f}{b['streams_open']:>9}{b['kib_per_stream']:>8.1f}"
            f"{result['increment_kib_per_stream']:>8.1f}  {b['anon_kib_per_stream']:.1f}"
            + (f"  (rounds {rounds})" if rounds else "")
            + ("" if result["all_open"] else f"  NOT ALL OPEN: {b['first_error']}")
        )
    subscribed = {r["server"]: r["subscribers"] for r in report["results"].values() if r.get("subscribers")}
    if subscribed:
        print(f"\nSubscribeToTask: N={n} subscribers of one held task (KiB per stream over idle)")
        for label, sub in subscribed.items():
            print(f"{label:<26}{sub['subscribers_open']:>8} open{sub['kib_per_stream']:>8.1f}")
    print(f"target: ours <= {TARGET_KIB:g} KiB per open stream")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--servers", default="ours,memory,sdk,bare", help="subset of ours,memory,sdk,bare")
    p.add_argument("--streams", type=int, default=500, help=f"N (1..{MAX_STREAMS}); 2N are open at the end")
    p.add_argument("--hold", type=float, default=300.0, help="S in hold:S: longer than the measurement")
    p.add_argument("--settle", type=float, default=1.0, help="seconds between the last first event and reading RSS")
    p.add_argument(
        "--subscribe",
        action="store_true",
        help="also N SubscribeToTask streams of one held task, on a fresh server (about 15 s more each)",
    )
    p.add_argument("--repeat", type=int, default=1, help="rounds (a fresh server each); the median is reported")
    p.add_argument("--nice", type=int, default=-5, help="priority of every process (needs root; 0 = unchanged)")
    p.add_argument("--output", default=str(run.RESULTS / "stream_memory.json"))
    args = p.parse_args(argv)
    args.server_list = [n.strip() for n in args.servers.split(",") if n.strip()]
    if unknown := set(args.server_list) - set(NAMES):
        p.error(f"unknown servers: {', '.join(sorted(unknown))}")
    if not (1 <= args.streams <= MAX_STREAMS and 1 <= args.repeat <= 5 and 0 <= args.settle <= 10):
        p.error(f"streams 1..{MAX_STREAMS}, repeat 1..5, settle 0..10")
    if not 10 <= args.hold <= 3600:
        p.error("hold 10..3600 seconds")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server_cpu, load_cpu, pin_note = P.cpu_plan()
    P.pin_self(load_cpu)
    priority = P.renice_self(args.nice)
    print(f"Pinning: {pin_note}; {priority}")
    signal.signal(signal.SIGTERM, run._on_sigterm)
    procs = Procs(run.RESULTS / "logs")
    scratch = tempfile.TemporaryDirectory(prefix="a2a-stream-mem-")
    rargs = server_args(args.server_list)
    rargs.scratch = scratch.name
    loadavg = [round(x, 2) for x in os.getloadavg()]
    rounds: dict[str, list[dict[str, Any]]] = {n: [] for n in args.server_list}
    results: dict[str, dict[str, Any]] = {}
    interrupted = None
    try:
        for round_no in range(1, args.repeat + 1):
            for name in args.server_list:
                print(f"  round {round_no}/{args.repeat}: {LABELS[name]} ...", flush=True)
                try:
                    rounds[name].append(measure_one(procs, name, args, rargs, (server_cpu, load_cpu)))
                except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as exc:
                    print(f"  {name} failed: {exc}", file=sys.stderr)
                    results[name] = {"server": LABELS[name], "error": str(exc)}
    except (KeyboardInterrupt, run.Interrupted) as exc:
        interrupted = type(exc).__name__
        print(f"\ninterrupted ({interrupted}): stopping our processes", file=sys.stderr)
    finally:
        procs.stop_all()
        with contextlib.suppress(OSError):
            scratch.cleanup()
    for name, done in rounds.items():
        if done and name not in results:
            results[name] = median_round(done)
    report = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": run._git_commit(),
        "loadavg": loadavg,
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "pinning": pin_note,
        "priority": priority,
        "config": {"streams": args.streams, "hold": args.hold, "settle": args.settle, "repeat": args.repeat},
        "interrupted": interrupted,
        "results": results,
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"wrote {out}")
    return 130 if interrupted else (1 if any("error" in r or not r.get("all_open") for r in results.values()) else 0)


if __name__ == "__main__":
    sys.exit(main())
