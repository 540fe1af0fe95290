#!/usr/bin/env python
"""What the HTTP layer costs a request: the default ``a2a serve`` (SQLite, access log on), the
same without its access log, our same A2A handler and store behind a minimal HTTP/1.1 front
(``front_server.py``), and bare aiohttp, measured in one run.

wrk on one CPU, each server pinned to the other, rounds interleaved (as ``run.py``), for the two
SendMessage cases of issue 13: a plain reply (``hello``) and a task made, given an artifact and
completed (``stream:1``). Reported per server: requests/s, server CPU per request, and both as
ratios to bare aiohttp; then how a default request's CPU divides between the access log, the HTTP
layer (aiohttp's request machinery and ours around it) and the A2A work with its store.
``--candidate DIR`` adds ``a2a serve`` from another source tree (a change to try, such as an HTTP
front of our own), measured interleaved with the others.

    .venv/bin/python benchmarks/front_cost.py --repeat 3
    .venv/bin/python benchmarks/front_cost.py --repeat 3 --candidate ../scratch-copy
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procs as P
import run as R
from procs import REPO, Procs

HERE = Path(__file__).resolve().parent
#: ``a2a serve`` of the echo agent on a fresh SQLite file of the run (as ``run.py``'s "ours").
_SERVE = ["-m", "a2a.cli.main", "serve", str(REPO / "examples/echo_agent.py") + ":agent", "--port", "{port}"]
#: name -> (label, command after the interpreter, with {port} and {scratch})
SERVERS: dict[str, tuple[str, list[str]]] = {
    "default": ("a2a serve (SQLite, access log)", [*_SERVE, "--store", "sqlite:///{scratch}/default.db"]),
    "no-log": ("a2a serve --no-access-log", [*_SERVE, "--store", "sqlite:///{scratch}/nolog.db", "--no-access-log"]),
    "front": (
        "our handler, minimal front",
        [str(HERE / "front_server.py"), "--port", "{port}", "--store", "sqlite:///{scratch}/front.db"],
    ),
    "bare": ("bare aiohttp (ceiling)", [str(HERE / "bare_server.py"), "--port", "{port}"]),
}
CASES = {"send": "hello", "task": R.TASK_TEXT}


def servers_for(args: argparse.Namespace) -> dict[str, tuple[str, list[str], Path]]:
    """name -> (label, command template, working directory): ``SERVERS`` from this checkout,
    then each ``--candidate``: ``a2a serve`` (the default store) from that source tree."""
    servers = {name: (label, template, REPO) for name, (label, template) in SERVERS.items()}
    for i, folder in enumerate(args.candidate, 1):
        template = [*_SERVE, "--store", f"sqlite:///{{scratch}}/cand{i}.db"]
        servers[f"cand{i}"] = (f"a2a serve from {folder.name}", template, folder)
    return servers


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--message-ids", choices=("uuid", "counter"), default="uuid")
    p.add_argument("--output", type=Path, default=HERE / "results" / "front_cost.json")
    p.add_argument(
        "--candidate",
        action="append",
        default=[],
        type=Path,
        metavar="DIR",
        help="also serve `a2a serve` from this source tree (a scratch copy with a change to try); repeatable",
    )
    args = p.parse_args(argv)
    args.candidate = [folder.resolve() for folder in args.candidate]
    for folder in args.candidate:
        if not (folder / "a2a" / "__init__.py").is_file():
            p.error(f"--candidate {folder}: no a2a/ package there")
    if not (1 <= args.repeat <= 10 and 1 <= args.duration <= 60 and 0 <= args.warmup <= 30):
        p.error("repeat 1..10, duration 1..60 s, warmup 0..30 s")
    return args


def measure(procs: Procs, args: argparse.Namespace, scratch: str) -> dict[str, dict[str, Any]]:
    server_cpu, load_cpu, pinning = P.cpu_plan()
    print(pinning, flush=True)
    servers = servers_for(args)
    running: dict[str, tuple[int, str]] = {}
    for name, (_label, template, cwd) in servers.items():
        port = P.free_port()
        cmd = [sys.executable] + [part.format(port=port, scratch=scratch) for part in template]
        proc = procs.start(f"server-{name}", cmd, cpu=server_cpu, cwd=cwd)
        url = f"http://127.0.0.1:{port}/a2a/jsonrpc"
        P.wait_ready(proc, url, name)
        running[name] = (proc.pid, url)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {n: {c: [] for c in CASES} for n in servers}
    for round_no in range(1, args.repeat + 1):
        for case, text in CASES.items():
            for name, (pid, url) in running.items():
                print(f"  round {round_no}/{args.repeat}: {case} {servers[name][0]} ...", flush=True)
                meter = R.CpuMeter(pid, server_cpu, load_cpu)
                sample = R.bench_send_wrk(procs, url, args, load_cpu, f"{name}-{case}", text)
                sample.update(meter.done())
                if sample.get("server_cpu_s"):
                    sample["server_cpu_us_per_unit"] = round(
                        1e6 * sample["server_cpu_s"] / sample["total_requests_incl_warmup"], 2
                    )
                samples[name][case].append(sample)
    return {n: {c: R.median_of(s, "requests_per_s") for c, s in cases.items()} for n, cases in samples.items()}


def report(results: dict[str, dict[str, Any]], servers: dict[str, tuple[str, list[str], Path]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for case in CASES:
        bare = results["bare"][case]
        rows = {}
        print(f"\n{case} ({CASES[case]})            req/s   x bare   us/request (server CPU)   x bare CPU")
        for name, (label, _cmd, _cwd) in servers.items():
            r = results[name][case]
            rate, cpu = r["requests_per_s"], r.get("server_cpu_us_per_unit")
            ratio = rate / bare["requests_per_s"]
            cpu_ratio = bare["server_cpu_us_per_unit"] / cpu if cpu else None
            rows[name] = {
                "requests_per_s": round(rate, 1),
                "over_bare": round(ratio, 3),
                "us_per_request": cpu,
                "per_cpu_over_bare": None if cpu_ratio is None else round(cpu_ratio, 3),
                "rounds": r.get("samples"),
            }
            print(
                f"  {label:<32} {rate:>9,.0f}   {ratio:6.3f}   {cpu or 0:8.1f}                  {cpu_ratio or 0:6.3f}"
            )
        us = {n: results[n][case].get("server_cpu_us_per_unit") or 0.0 for n in SERVERS}
        split = {
            "access_log_us": round(us["default"] - us["no-log"], 1),
            "http_layer_us": round(us["no-log"] - us["front"], 1),
            "a2a_work_and_store_us": round(us["front"], 1),
        }
        print(
            "  a default request's server CPU: access log {access_log_us} us, HTTP layer beyond a minimal "
            "front {http_layer_us} us, A2A work and store behind the front {a2a_work_and_store_us} us".format(**split)
        )
        out[case] = {"servers": rows, "split": split}
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if shutil.which("wrk") is None:
        print("front_cost.py needs wrk on PATH", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, R._on_sigterm)
    procs = Procs(HERE / "results" / "logs")
    with tempfile.TemporaryDirectory(prefix="a2a-front-cost-") as scratch:
        try:
            results = measure(procs, args, scratch)
        except (RuntimeError, OSError, R.Interrupted) as exc:
            print(f"front_cost.py: {exc}", file=sys.stderr)
            return 1
        finally:
            procs.stop_all()
    summary = report(results, servers_for(args))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(
        json.dumps(
            {
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "commit": R._git_commit(),
                "config": {k: getattr(args, k) for k in ("connections", "warmup", "duration", "repeat", "message_ids")},
                "candidates": [str(folder) for folder in args.candidate],
                "summary": summary,
                "raw": results,
            },
            indent=2,
        )
    )
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
