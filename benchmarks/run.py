#!/usr/bin/env python
"""a2a-net throughput benchmark: our echo agent vs the reference SDK vs a bare aiohttp ceiling.

Optionally also our echo agent as an ASGI application (``A2AServer(...).asgi()``, same store as
``ours``) under a real uvicorn or granian process: ``--servers ours,asgi-uvicorn,asgi-granian,bare``.

One run, loopback only. Each server runs alone, as its own process pinned to one CPU; the
load generator runs as its own process pinned to another. For each server it measures

- SendMessage requests/s (JSON-RPC, text -> plain Message reply, fresh messageId each time) with
  a fixed number of keep-alive connections, after a warm-up, with wrk if it is installed, else
  with the Python load generator (loadgen.py: aiohttp client on uvloop);
- SSE events/s (SendStreamingMessage ``stream:N``, several concurrent streams, events counted
  by the client) with the Python load generator.

Prints absolute figures and ratios, writes benchmarks/results/latest.json. See README.md.

    .venv/bin/python benchmarks/run.py            # everything, ~1.5 minutes
    .venv/bin/python benchmarks/run.py --quick    # short windows, for a smoke test
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procs as P
from procs import REPO, Procs

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SERVERS = ("ours", "sdk", "bare")
#: Our echo agent as an ASGI application (asgi_server.py) under each ASGI server: not in the
#: default run; named in ``--servers``.
ASGI_SERVERS = ("asgi-uvicorn", "asgi-granian")
LABELS = {
    "ours": "ours (a2a-net)",
    "sdk": "SDK (a2a-sdk 1.3.0)",
    "bare": "bare aiohttp (ceiling)",
    "asgi-uvicorn": "ours ASGI on uvicorn",
    "asgi-granian": "ours ASGI on granian",
}
TARGET_SEND_VS_BARE = 0.50
#: Issue 13's goals for the default ``a2a serve``.
TARGET_SSE_VS_SDK = 15.0
TARGET_TASK_VS_BARE = 0.35
#: The "task" case: SendMessage whose echo run creates a task, adds one artifact chunk and
#: completes it; the answer is the completed task.
TASK_TEXT = "stream:1"


class Interrupted(Exception):
    pass


def _on_sigterm(_signum: int, _frame: object) -> None:
    raise Interrupted("SIGTERM")


# ---- the servers ---------------------------------------------------------------------------


def store_url(name: str, store: str, scratch: str) -> str:
    """The ``--store`` URL for a server of ours from the ``--ours-store`` / ``--variant`` form."""
    if store == "sqlite":
        # What a plain `a2a serve` uses (a SQLite file, durability=normal), in a fresh file
        # of this run (the CLI's own file is shared, locked and grows from run to run).
        return f"sqlite:///{scratch}/{name}.db"
    if store.startswith("sqlite-full"):
        return f"sqlite:///{scratch}/{name}.db?durability=full"
    return store


def server_command(
    name: str, port: int, args: argparse.Namespace
) -> tuple[list[str], str, Path, dict[str, str] | None]:
    """(command, JSON-RPC URL, working directory, environment or None) for one server."""
    base = f"http://127.0.0.1:{port}"
    if name == "ours" or name in args.candidates:
        # The shipped CLI (`a2a serve`, on uvloop when it is installed), from this checkout or,
        # for a candidate, from another source tree (a scratch copy with a change to try).
        src = args.candidates.get(name) or (Path(args.ours_src).resolve() if args.ours_src else REPO)
        example = str(REPO / "examples" / "echo_agent.py") + ":agent"
        cmd = [sys.executable, "-m", "a2a.cli.main", "serve", example, "--port", str(port)]
        store = store_url(name, args.variant_stores.get(name, args.ours_store), args.scratch)
        if store and cli_has_store_option(src):
            cmd += ["--store", store]
        return cmd, base + "/a2a/jsonrpc", src, None
    if name in ASGI_SERVERS:
        # The same agent and store as "ours" (asgi_server.py mirrors `a2a serve`), from this
        # checkout, under the ASGI server's own command line.
        env = {
            **os.environ,
            "A2A_BENCH_STORE": store_url(name, args.ours_store, args.scratch),
            "A2A_BENCH_PORT": str(port),
        }
        return asgi_command(name, port), base + "/a2a/jsonrpc", HERE, env
    if name == "sdk":
        return [sdk_python(), str(HERE / "sdk_launcher.py"), "--port", str(port)], base + "/", REPO, None
    return [sys.executable, str(HERE / "bare_server.py"), "--port", str(port)], base + "/a2a/jsonrpc", REPO, None


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def asgi_versions() -> dict[str, str | None]:
    """The versions of the ASGI servers and their speed-ups (None: not installed)."""
    found: dict[str, str | None] = {}
    for dist in ("uvicorn", "granian", "uvloop", "httptools"):
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


def asgi_command(name: str, port: int) -> list[str]:
    """uvicorn or granian serving ``asgi_server:app`` (run from this folder): one process (one
    granian worker), no access log of its own, uvloop (and httptools) when installed."""
    app = "asgi_server:app"
    server = name.split("-", 1)[1]
    if not _installed(server):
        raise RuntimeError(f"{server} is not installed (pip install -e '.[asgi]')")
    if name == "asgi-uvicorn":
        cmd = [sys.executable, "-m", "uvicorn", app, "--app-dir", str(HERE), "--host", "127.0.0.1"]
        cmd += ["--port", str(port), "--no-access-log", "--log-level", "warning", "--lifespan", "on"]
        cmd += ["--loop", "uvloop"] if _installed("uvloop") else []
        cmd += ["--http", "httptools"] if _installed("httptools") else []
        return cmd
    # granian: a supervising process and one worker process (CpuMeter counts both).
    cmd = [sys.executable, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", "1", "--loop", "uvloop" if _installed("uvloop") else "asyncio"]
    cmd += ["--working-dir", str(HERE), "--no-access-log", "--log-level", "warning", app]
    return cmd


def cli_has_store_option(src: Path) -> bool:
    """Whether ``a2a serve`` in this source tree takes ``--store`` (older trees do not)."""
    out = subprocess.run(
        [sys.executable, "-m", "a2a.cli.main", "serve", "--help"],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return "--store" in out.stdout


_sdk_python: str | None = None


def sdk_python() -> str:
    """The SDK venv's python (built on first use by tests/interop/sdk_env.py, which we only call)."""
    global _sdk_python
    if _sdk_python is None:
        sys.path.insert(0, str(REPO / "tests" / "interop"))
        import sdk_env  # type: ignore[import-not-found]

        _sdk_python = str(sdk_env.sdk_python())
    return _sdk_python


# ---- load generation -------------------------------------------------------------------------


def wrk_version() -> str | None:
    exe = shutil.which("wrk")
    if exe is None:
        return None
    out = subprocess.run([exe, "-v"], capture_output=True, text=True, timeout=10, check=False)
    found = re.search(r"wrk\s+\S*?(\d+\.\d+(?:\.\d+)?)", out.stdout + out.stderr)
    return f"wrk {found.group(1)}" if found else "wrk"


def bench_send_wrk(
    procs: Procs, url: str, args: argparse.Namespace, cpu: int | None, tag: str, text: str = "hello"
) -> dict[str, Any]:
    lua = str(HERE / "sendmessage.lua")

    def wrk(seconds: float, prefix: str) -> str:
        cmd = [
            "wrk",
            "-t1",
            f"-c{args.connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "10s",
            "-s",
            lua,
            url,
            "--",
            prefix,
            text,
            "",  # no webhook
            args.message_ids,
        ]
        return P.run_captured(procs, f"wrk-{tag}", cmd, cpu=cpu, timeout=seconds + 30)

    def totals(out: str) -> dict[str, Any]:
        line = next((x for x in out.splitlines() if x.startswith("WRKJSON ")), None)
        if line is None:
            raise RuntimeError(f"wrk printed no totals:\n{out[-1000:]}")
        return dict(json.loads(line[len("WRKJSON ") :]))

    warm = totals(wrk(args.warmup, "warm" + uuid.uuid4().hex[:10])) if args.warmup > 0 else {"requests": 0}
    raw = totals(wrk(args.duration, "run" + uuid.uuid4().hex[:10]))
    seconds = raw["duration_us"] / 1e6
    errors = sum(raw[k] for k in ("bad_answers", "connect_errors", "read_errors", "write_errors", "timeouts"))
    good = raw["requests"] - raw["bad_answers"]
    return {
        "mode": "send" if text == "hello" else "task",
        "loadgen": "wrk",
        "connections": args.connections,
        "message_ids": args.message_ids,
        "duration_s": round(seconds, 3),
        "requests": good,
        "errors": errors,
        "requests_per_s": good / seconds,
        "latency_ms_p50": raw["latency_us_p50"] / 1000,
        "latency_ms_p99": raw["latency_us_p99"] / 1000,
        "total_requests_incl_warmup": raw["requests"] + warm["requests"],
        "wrk": raw,
    }


def bench_python(
    procs: Procs, mode: str, url: str, args: argparse.Namespace, cpu: int | None, tag: str
) -> dict[str, Any]:
    cmd = [sys.executable, str(HERE / "loadgen.py"), mode, "--url", url]
    cmd += ["--warmup", str(args.warmup), "--duration", str(args.duration)]
    if mode in ("send", "task"):
        cmd += ["--connections", str(args.connections), "--message-ids", args.message_ids]
    else:
        cmd += ["--streams", str(args.streams), "--chunks", str(args.chunks)]
    out = P.run_captured(procs, f"loadgen-{tag}", cmd, cpu=cpu, timeout=args.warmup + args.duration + 60)
    return dict(json.loads(out.strip().splitlines()[-1]))


def median_of(samples: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The sample with the median ``key`` (the samples are kept in the JSON too)."""
    ordered = sorted(samples, key=lambda s: s[key])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    if len(samples) > 1:
        chosen["samples"] = [round(s[key], 1) for s in samples]
        chosen["per_core_samples"] = [s.get("per_core_rate") for s in samples]
        chosen["stdev"] = round(statistics.pstdev(s[key] for s in samples), 1)
    return chosen


# ---- profiling (optional) ----------------------------------------------------------------------


def profile_ours(procs: Procs, pid: int, url: str, args: argparse.Namespace, cpu: int | None) -> dict[str, Any]:
    """py-spy (on the load generator's CPU) on our server under each load; returns top costs."""
    import profile_summary

    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        return {"error": "py-spy not installed (pip install py-spy)"}
    found: dict[str, Any] = {}
    for mode in ("send", "sse"):
        out = RESULTS / f"profile-ours-{mode}.txt"
        seconds = max(3, round(args.duration))
        spy_cmd = [spy, "record", "--pid", str(pid), "--rate", "200", "--duration", str(seconds)]
        spy_cmd += ["--format", "raw", "--nonblocking", "--output", str(out)]
        spy_proc = procs.start(f"py-spy-{mode}", spy_cmd, cpu=cpu)
        time.sleep(0.5)
        load = argparse.Namespace(**{**vars(args), "warmup": 0.0, "duration": float(seconds)})
        try:
            bench_python(procs, mode, url, load, cpu, f"profile-{mode}")
        finally:
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy_proc.wait(seconds + 20)  # py-spy stops by itself after --duration
            procs.stop(spy_proc)
        if out.exists():
            found[mode] = {"file": str(out.relative_to(REPO)), **profile_summary.summarize(out, top=15)}
    return found


# ---- the servers under load ------------------------------------------------------------------


class CpuMeter:
    """CPU used during one load run: by the server on its core, by the load generator (and us) on
    the other, and by anything else on each (other people's work on a shared machine)."""

    def __init__(self, pid: int, cpu: int | None, load_cpu: int | None) -> None:
        self.pid, self.cpu, self.load_cpu = pid, cpu, load_cpu
        self.t0 = time.monotonic()
        self.proc0, self.core0 = _proc_ticks(pid), _core_busy_ticks(cpu)
        self.load_core0, self.ours0 = _core_busy_ticks(load_cpu), _own_cpu_seconds()

    def done(self) -> dict[str, float | None]:
        elapsed = time.monotonic() - self.t0
        hz = os.sysconf("SC_CLK_TCK")
        proc1, core1, load_core1 = _proc_ticks(self.pid), _core_busy_ticks(self.cpu), _core_busy_ticks(self.load_cpu)
        server = None if proc1 is None or self.proc0 is None else (proc1 - self.proc0) / hz / elapsed
        core = None if core1 is None or self.core0 is None else (core1 - self.core0) / hz / elapsed
        other = None if server is None or core is None else max(0.0, core - server)
        # The load generator is our (reaped) child: its CPU shows in our children's times.
        loadgen = (_own_cpu_seconds() - self.ours0) / elapsed
        load_core = None if load_core1 is None or self.load_core0 is None else (load_core1 - self.load_core0) / hz
        other_load = None if load_core is None else max(0.0, load_core / elapsed - loadgen)
        return {
            "server_cpu_s": None if proc1 is None or self.proc0 is None else (proc1 - self.proc0) / hz,
            "server_cpu_util": None if server is None else round(server, 3),
            "other_cpu_util_on_server_core": None if other is None else round(other, 3),
            "loadgen_cpu_util": round(loadgen, 3),
            "other_cpu_util_on_loadgen_core": None if other_load is None else round(other_load, 3),
        }


def _own_cpu_seconds() -> float:
    """This process and its reaped children (the load generators), user + system."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _proc_ticks(pid: int) -> int | None:
    """User + system ticks of a process and its live descendants (granian serves from a worker
    process it starts; the others have none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None
    for child in _children(pid):
        ticks += _proc_ticks(child) or 0
    return ticks


def _children(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                found += [int(x) for x in (task / "children").read_text().split()]
    return found


def _core_busy_ticks(cpu: int | None) -> int | None:
    if cpu is None:
        return None
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith(f"cpu{cpu} "):
                v = [int(x) for x in line.split()[1:]]
                # user + nice + system + steal: processes (ours or not); irq/softirq time, much
                # of it our own loopback traffic, is not charged to any process, so leave it out.
                return v[0] + v[1] + v[2] + (v[7] if len(v) > 7 else 0)
    except (OSError, ValueError):
        return None
    return None


class Server:
    def __init__(self, name: str, proc: subprocess.Popen[bytes], url: str) -> None:
        self.name, self.proc, self.url = name, proc, url


def start_servers(
    procs: Procs, args: argparse.Namespace, server_cpu: int | None
) -> tuple[dict[str, Server], dict[str, Any]]:
    """Start every server (all pinned to the server CPU; idle ones cost nothing) and check them."""
    servers: dict[str, Server] = {}
    failed: dict[str, dict[str, Any]] = {}
    for name in args.server_list:
        try:
            port = P.free_port()
            cmd, url, cwd, env = server_command(name, port, args)
            proc = procs.start(f"server-{name}", cmd, cpu=server_cpu, cwd=cwd, env=env)
            P.wait_ready(proc, url, name)
            servers[name] = Server(name, proc, url)
        except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as exc:
            print(f"  {name} failed to start: {exc}", file=sys.stderr)
            failed[name] = {"server": LABELS[name], "error": str(exc)}
    return servers, failed


def measure(
    procs: Procs,
    servers: dict[str, Server],
    args: argparse.Namespace,
    server_cpu: int | None,
    load_cpu: int | None,
    use_wrk: bool,
) -> dict[str, dict[str, Any]]:
    """Each figure ``repeat`` times, the servers interleaved within each round (so that drifting
    background load on a shared machine hits them alike); the median is reported."""
    samples: dict[str, dict[str, list[dict[str, Any]]]] = {
        n: {"send": [], "task": [], "lat": [], "sse": []} for n in servers
    }
    results: dict[str, dict[str, Any]] = {}
    for name, server in servers.items():
        results[name] = {"server": LABELS[name], "url": server.url, "pid": server.proc.pid}
        results[name]["events_per_stream_5"] = P.check_stream(server.url, 5)
    kinds = ["send"] + ([] if args.no_task else ["task"])
    kinds += ["lat"] if args.latency_connections else []
    kinds += [] if args.no_sse else ["sse"]
    for round_no in range(1, args.repeat + 1):
        for kind in kinds:
            for name, server in servers.items():
                if "error" in results[name]:
                    continue
                print(f"  round {round_no}/{args.repeat}: {kind:<4} {LABELS[name]} ...", flush=True)
                meter = CpuMeter(server.proc.pid, server_cpu, load_cpu)
                try:
                    if kind == "lat":
                        # The latency of a lightly loaded server: SendMessage at few connections.
                        light = argparse.Namespace(**{**vars(args), "connections": args.latency_connections})
                        if use_wrk:
                            sample = bench_send_wrk(procs, server.url, light, load_cpu, f"{name}-lat")
                        else:
                            sample = bench_python(procs, "send", server.url, light, load_cpu, f"{name}-lat")
                    elif kind in ("send", "task") and use_wrk:
                        text = "hello" if kind == "send" else TASK_TEXT
                        sample = bench_send_wrk(procs, server.url, args, load_cpu, f"{name}-{kind}", text)
                    else:
                        sample = bench_python(procs, kind, server.url, args, load_cpu, f"{name}-{kind}")
                    sample.update(meter.done())
                    units = sample.get("total_events_incl_warmup" if kind == "sse" else "total_requests_incl_warmup")
                    if units and sample.get("server_cpu_s"):
                        # Server CPU per request/event: hardly moved by other load on the machine.
                        sample["server_cpu_us_per_unit"] = round(1e6 * sample["server_cpu_s"] / units, 2)
                        sample["per_core_rate"] = round(units / sample["server_cpu_s"], 1)
                    P.post(server.url, P.send_body("still alive?"))  # it survived the load
                except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as exc:
                    print(f"  {name} failed: {exc}", file=sys.stderr)
                    results[name]["error"] = str(exc)
                    continue
                samples[name][kind].append(sample)
    for name in servers:
        for kind, key in (
            ("send", "requests_per_s"),
            ("task", "requests_per_s"),
            ("lat", "latency_ms_p50"),
            ("sse", "events_per_s"),
        ):
            if samples[name][kind]:
                results[name][kind] = median_of(samples[name][kind], key)
    return results


# ---- report ---------------------------------------------------------------------------------


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def get(name: str, kind: str, key: str) -> float | None:
        value = results.get(name, {}).get(kind, {}).get(key)
        return float(value) if value else None

    def div(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a is not None and b else None

    send = {n: get(n, "send", "requests_per_s") for n in SERVERS}
    task = {n: get(n, "task", "requests_per_s") for n in SERVERS}
    sse = {n: get(n, "sse", "events_per_s") for n in SERVERS}
    out: dict[str, Any] = {
        "send_ours_over_bare": div(send["ours"], send["bare"]),
        "send_sdk_over_bare": div(send["sdk"], send["bare"]),
        "send_ours_over_sdk": div(send["ours"], send["sdk"]),
        "task_ours_over_bare": div(task["ours"], task["bare"]),
        "task_sdk_over_bare": div(task["sdk"], task["bare"]),
        "sse_ours_over_sdk": div(sse["ours"], sse["sdk"]),
        "sse_sdk_over_bare": div(sse["sdk"], sse["bare"]),
        "sse_ours_over_bare": div(sse["ours"], sse["bare"]),
    }
    send_c = {n: get(n, "send", "per_core_rate") for n in SERVERS}
    sse_c = {n: get(n, "sse", "per_core_rate") for n in SERVERS}
    out["cpu_normalized"] = {
        "send_ours_over_bare": div(send_c["ours"], send_c["bare"]),
        "send_sdk_over_bare": div(send_c["sdk"], send_c["bare"]),
        "sse_ours_over_sdk": div(sse_c["ours"], sse_c["sdk"]),
        "sse_sdk_over_bare": div(sse_c["sdk"], sse_c["bare"]),
        "note": "ratios of requests (events) per second of server CPU time: robust to other load on the machine",
    }
    for name in results:
        if name.startswith("cand") or name in ASGI_SERVERS:
            c_send, c_sse = get(name, "send", "requests_per_s"), get(name, "sse", "events_per_s")
            c_send_c, c_sse_c = get(name, "send", "per_core_rate"), get(name, "sse", "per_core_rate")
            out[name] = {
                "task_over_bare": div(get(name, "task", "requests_per_s"), task["bare"]),
                "task_over_ours": div(get(name, "task", "requests_per_s"), task["ours"]),
                "p50_over_ours": div(get(name, "send", "latency_ms_p50"), get("ours", "send", "latency_ms_p50")),
                "lat_p50_over_ours": div(get(name, "lat", "latency_ms_p50"), get("ours", "lat", "latency_ms_p50")),
                "send_over_bare": div(c_send, send["bare"]),
                "send_over_ours": div(c_send, send["ours"]),
                "sse_over_sdk": div(c_sse, sse["sdk"]),
                "sse_over_ours": div(c_sse, sse["ours"]),
                "per_core_send_over_bare": div(c_send_c, send_c["bare"]),
                "per_core_send_over_ours": div(c_send_c, send_c["ours"]),
                "per_core_sse_over_sdk": div(c_sse_c, sse_c["sdk"]),
                "per_core_sse_over_ours": div(c_sse_c, sse_c["ours"]),
            }
    a, b = out["send_ours_over_bare"], out["sse_ours_over_sdk"]
    out["targets"] = {
        "send_ours_over_bare": {"target": TARGET_SEND_VS_BARE, "met": None if a is None else a >= TARGET_SEND_VS_BARE},
        "sse_ours_over_sdk": {"target": TARGET_SSE_VS_SDK, "met": None if b is None else b >= TARGET_SSE_VS_SDK},
        "task_ours_over_bare": {
            "target": TARGET_TASK_VS_BARE,
            "met": None if out["task_ours_over_bare"] is None else out["task_ours_over_bare"] >= TARGET_TASK_VS_BARE,
        },
    }
    return out


def _fmt(value: Any, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def _pct(sample: dict[str, Any]) -> str:
    value = sample.get("server_cpu_util")
    return "-" if value is None else f"{100 * value:.0f}%"


def _other(name: str, result: dict[str, Any]) -> str:
    def pct(kind: str, key: str) -> str:
        value = result.get(kind, {}).get(key)
        return "-" if value is None else f"{100 * value:.0f}%"

    shown = " ".join(
        f"{pct(k, 'other_cpu_util_on_server_core')}/{pct(k, 'other_cpu_util_on_loadgen_core')}" for k in ("send", "sse")
    )
    return f"{name} {shown}"


def print_report(report: dict[str, Any]) -> None:
    res, rat = report["results"], report["ratios"]
    print()
    print(f"SendMessage load: {report['loadgen']['send']}; SSE load: {report['loadgen']['sse']}")
    print(f"Pinning: {report['pinning']}; {report['priority']}")
    print(
        f"connections={report['config']['connections']}  streams={report['config']['streams']}  "
        f"chunks=stream:{report['config']['chunks']}  warm-up={report['config']['warmup']}s  "
        f"window={report['config']['duration']}s  repeat={report['config']['repeat']} (median)"
    )
    print()
    head = f"{'server':<25}{'SendMessage req/s':>18}{'p50 ms':>9}{'p99 ms':>9}{'errors':>7}{'srv CPU':>8}"
    head += f"{'SSE events/s':>14}{'streams':>9}{'s/stream':>10}{'srv CPU':>8}"
    print(head)
    print("-" * len(head))
    for name in res:
        r = res[name]
        if "error" in r and "send" not in r:
            print(f"{LABELS[name]:<25}  FAILED: {r['error']}")
            continue
        s, e = r.get("send", {}), r.get("sse", {})
        print(
            f"{LABELS[name]:<25}{_fmt(s.get('requests_per_s')):>18}{_fmt(s.get('latency_ms_p50'), '.2f'):>9}"
            f"{_fmt(s.get('latency_ms_p99'), '.2f'):>9}{_fmt(s.get('errors'), 'd'):>7}{_pct(s):>8}"
            f"{_fmt(e.get('events_per_s')):>14}{_fmt(e.get('streams_completed'), 'd'):>9}"
            f"{_fmt(e.get('stream_seconds_p50'), '.3f'):>10}{_pct(e):>8}"
        )
    print(
        "srv CPU: the server's CPU use during the run (100% = its whole core). Other processes took, "
        "on the server core / on the load core, send then sse: " + "; ".join(_other(n, res[n]) for n in res)
    )
    print()
    if any(res[n].get("lat") for n in res):
        print(f"{'SendMessage, light load':<25}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>7}{'srv CPU':>8}")
        for name in res:
            k = res[name].get("lat")
            if k:
                print(
                    f"{LABELS[name]:<25}{_fmt(k.get('requests_per_s')):>10}{_fmt(k.get('latency_ms_p50'), '.2f'):>9}"
                    f"{_fmt(k.get('latency_ms_p99'), '.2f'):>9}{_fmt(k.get('errors'), 'd'):>7}{_pct(k):>8}"
                )
        print()
    print(f"{'SendMessage -> task':<25}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>7}{'srv CPU':>8}{'us/req':>9}")
    for name in res:
        k = res[name].get("task")
        if not k:
            continue
        print(
            f"{LABELS[name]:<25}{_fmt(k.get('requests_per_s')):>10}{_fmt(k.get('latency_ms_p50'), '.2f'):>9}"
            f"{_fmt(k.get('latency_ms_p99'), '.2f'):>9}{_fmt(k.get('errors'), 'd'):>7}{_pct(k):>8}"
            f"{_fmt(k.get('server_cpu_us_per_unit'), '.1f'):>9}"
        )
    print()
    print(f"{'server CPU cost':<25}{'us/request':>12}{'req/s per core':>16}{'us/event':>10}{'events/s per core':>19}")
    for name in res:
        r = res[name]
        if "send" not in r and "sse" not in r:
            continue
        s, e = r.get("send", {}), r.get("sse", {})
        print(
            f"{LABELS[name]:<25}{_fmt(s.get('server_cpu_us_per_unit'), '.1f'):>12}{_fmt(s.get('per_core_rate')):>16}"
            f"{_fmt(e.get('server_cpu_us_per_unit'), '.2f'):>10}{_fmt(e.get('per_core_rate')):>19}"
        )
    print()
    cn = rat["cpu_normalized"]
    rows = [
        (
            "SendMessage  ours / bare",
            rat["send_ours_over_bare"],
            f">= {TARGET_SEND_VS_BARE:.2f}",
            rat["targets"]["send_ours_over_bare"]["met"],
        ),
        ("SendMessage  SDK  / bare", rat["send_sdk_over_bare"], "", None),
        ("SendMessage  ours / SDK", rat["send_ours_over_sdk"], "", None),
        (
            "Send->task   ours / bare",
            rat["task_ours_over_bare"],
            f">= {TARGET_TASK_VS_BARE:.2f}",
            rat["targets"]["task_ours_over_bare"]["met"],
        ),
        ("Send->task   SDK  / bare", rat["task_sdk_over_bare"], "", None),
        (
            "SSE events/s ours / SDK",
            rat["sse_ours_over_sdk"],
            f">= {TARGET_SSE_VS_SDK:.0f}x",
            rat["targets"]["sse_ours_over_sdk"]["met"],
        ),
        ("SSE events/s SDK  / bare", rat["sse_sdk_over_bare"], "", None),
        ("SSE events/s ours / bare", rat["sse_ours_over_bare"], "", None),
    ]
    per_core = {
        "SendMessage  ours / bare": cn["send_ours_over_bare"],
        "SendMessage  SDK  / bare": cn["send_sdk_over_bare"],
        "SSE events/s ours / SDK": cn["sse_ours_over_sdk"],
        "SSE events/s SDK  / bare": cn["sse_sdk_over_bare"],
    }
    print(f"{'ratio':<27}{'measured':>9}  {'target':<10}{'verdict':<8}{'per server-CPU-second':>22}")
    for label, value, target, met in rows:
        verdict = "" if met is None else ("met" if met else "MISSED")
        print(f"{label:<27}{_fmt(value, '.3f'):>9}  {target:<10}{verdict:<8}{_fmt(per_core.get(label), '.3f'):>22}")
    for name, cand in rat.items():
        if (name.startswith("cand") or name in ASGI_SERVERS) and isinstance(cand, dict):
            tag = "asgi" if name in ASGI_SERVERS else "cand"
            print(f"\n{res[name]['server']} (measured / per server-CPU-second):")
            for key, label in (
                ("task_over_bare", "Send->task   {} / bare"),
                ("task_over_ours", "Send->task   {} / ours"),
                ("p50_over_ours", "p50 send     {} / ours"),
                ("lat_p50_over_ours", "p50 light    {} / ours"),
                ("send_over_bare", "SendMessage  {} / bare"),
                ("send_over_ours", "SendMessage  {} / ours"),
                ("sse_over_sdk", "SSE events/s {} / SDK"),
                ("sse_over_ours", "SSE events/s {} / ours"),
            ):
                core_ratio = cand.get("per_core_" + key)
                print(f"  {label.format(tag):<25}{_fmt(cand[key], '.3f'):>9}{_fmt(core_ratio, '.3f'):>12}")
    print()


# ---- main -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--servers",
        default=",".join(SERVERS),
        help="comma-separated, from ours,sdk,bare (the default) and asgi-uvicorn,asgi-granian (our echo "
        "agent as an ASGI application, with ours's store, under uvicorn / granian)",
    )
    p.add_argument(
        "--loadgen",
        choices=["auto", "wrk", "python"],
        default="auto",
        help="SendMessage load generator (auto: wrk when installed); SSE always uses Python",
    )
    p.add_argument("--connections", type=int, default=32)
    p.add_argument(
        "--message-ids",
        choices=["uuid", "counter"],
        default="uuid",
        help="messageIds of SendMessage: random UUIDs (default: what the A2A SDKs' clients send) or "
        "a counter (ids in sending order, which a store indexes at its end: cheaper; the figures "
        "before 2026-11-26 were taken with it)",
    )
    p.add_argument("--streams", type=int, default=4, help="concurrent SSE streams")
    p.add_argument("--chunks", type=int, default=2000, help="N in stream:N (at most 10000)")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of load before each window")
    p.add_argument("--duration", type=float, default=8.0, help="seconds in each measurement window")
    p.add_argument("--repeat", type=int, default=1, help="windows per figure; the median is reported")
    p.add_argument("--no-sse", action="store_true")
    p.add_argument("--no-task", action="store_true", help="skip the SendMessage-creates-a-task case")
    p.add_argument(
        "--latency-connections",
        type=int,
        default=0,
        metavar="C",
        help="also measure SendMessage latency at C connections (e.g. 8: p50 of a lightly loaded server)",
    )
    p.add_argument(
        "--nice",
        type=int,
        default=-5,
        help="priority for all benchmark processes (default -5, needs root; 0 = unchanged)",
    )
    p.add_argument("--profile", action="store_true", help="also py-spy our server under each load (extra run)")
    p.add_argument("--ours-src", help="serve 'ours' from this source tree (a scratch copy of the repo)")
    p.add_argument(
        "--ours-store",
        default="sqlite",
        help="task store for our server (a2a serve --store): sqlite (default: what a plain `a2a serve` "
        "uses, a SQLite file, in a fresh file of this run), sqlite-full (the same, durability=full), "
        "memory: (like the SDK's InMemoryTaskStore), any URL, or '' = the CLI's own default file",
    )
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="STORE",
        help="also serve our echo agent from this checkout with this --store (same forms as "
        "--ours-store, e.g. memory: or redis://127.0.0.1:6379/0); repeatable; measured interleaved",
    )
    p.add_argument(
        "--candidate",
        action="append",
        default=[],
        metavar="DIR",
        help="also serve our echo agent from this source tree (a scratch copy with a change to try); "
        "repeatable; measured interleaved with the others",
    )
    p.add_argument("--output", default=str(RESULTS / "latest.json"))
    p.add_argument("--quick", action="store_true", help="1 s warm-up, 3 s windows, stream:500")
    args = p.parse_args(argv)
    if args.quick:
        args.warmup, args.duration, args.chunks = 1.0, 3.0, 500
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    if unknown := set(names) - set(SERVERS) - set(ASGI_SERVERS):
        p.error(f"unknown servers: {', '.join(sorted(unknown))}")
    args.candidates = {}
    args.variant_stores = {}
    for i, store in enumerate(args.variant, 1):
        name = f"cand{len(args.candidate) + i}"
        args.candidates[name] = REPO
        args.variant_stores[name] = store
        LABELS[name] = f"ours --store {store}"[:24]
    for i, folder in enumerate(args.candidate, 1):
        path = Path(folder).resolve()
        if not (path / "a2a" / "__init__.py").is_file():
            p.error(f"--candidate {folder}: no a2a/ package there")
        name = f"cand{i}"
        args.candidates[name] = path
        LABELS[name] = f"cand{i} {path.name}"
    # Candidates go right after "ours", so that each round measures them back to back.
    at = names.index("ours") + 1 if "ours" in names else len(names)
    names[at:at] = list(args.candidates)
    args.server_list = names
    if not (1 <= args.connections <= 1024 and 1 <= args.streams <= 64 and 1 <= args.chunks <= 10_000):
        p.error("connections 1..1024, streams 1..64, chunks 1..10000")
    if not -20 <= args.nice <= 19:
        p.error("nice -20..19")
    if not (0 <= args.warmup <= 60 and 1 <= args.duration <= 120 and 1 <= args.repeat <= 10):
        p.error("warmup 0..60 s, duration 1..120 s, repeat 1..10")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    server_cpu, load_cpu, pin_note = P.cpu_plan()
    P.pin_self(load_cpu)
    priority = P.renice_self(args.nice)
    wrk = wrk_version()
    if args.loadgen == "wrk" and wrk is None:
        print("run.py: --loadgen wrk but wrk is not installed (apt-get install -y wrk)", file=sys.stderr)
        return 2
    use_wrk = wrk is not None and args.loadgen != "python"
    send_gen = (
        f"{wrk} (1 thread, {args.connections} connections)"
        if use_wrk
        else (
            f"Python loadgen.py (aiohttp client on uvloop, {args.connections} connections)"
            + ("; wrk not installed" if wrk is None else "")
        )
    )
    sse_gen = f"Python loadgen.py (aiohttp client on uvloop, {args.streams} streams)"
    print(f"SendMessage load generator: {send_gen}")
    print(f"SSE load generator: {sse_gen}")
    print(f"Pinning: {pin_note}; {priority}")
    print(f"Our task store: {args.ours_store or 'the a2a serve default'}")
    loadavg = os.getloadavg()
    if loadavg[0] > 0.5:
        print(f"note: load average is {loadavg[0]:.2f} before we start: other work on this machine adds noise")

    signal.signal(signal.SIGTERM, _on_sigterm)
    procs = Procs(RESULTS / "logs")
    scratch = tempfile.TemporaryDirectory(prefix="a2a-bench-")
    args.scratch = scratch.name
    results: dict[str, dict[str, Any]] = {}
    interrupted = None
    started = time.monotonic()
    try:
        servers, failed = start_servers(procs, args, server_cpu)
        results.update(failed)
        results.update(measure(procs, servers, args, server_cpu, load_cpu, use_wrk))
        if args.profile and "ours" in servers:
            print("  profiling our server with py-spy (an extra, unmeasured run) ...", flush=True)
            results["ours"]["profile"] = profile_ours(
                procs, servers["ours"].proc.pid, servers["ours"].url, args, load_cpu
            )
        for server in servers.values():
            procs.stop(server.proc)
    except (KeyboardInterrupt, Interrupted) as exc:
        interrupted = type(exc).__name__
        print(f"\ninterrupted ({interrupted}): stopping our processes", file=sys.stderr)
    finally:
        procs.stop_all()
        scratch.cleanup()

    report = {
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": _git_commit(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_before": [round(x, 2) for x in loadavg],
        },
        "pinning": pin_note,
        "priority": priority,
        "loadgen": {"send": send_gen, "sse": sse_gen, "send_tool": "wrk" if use_wrk else "python"},
        "config": {k: getattr(args, k) for k in ("connections", "streams", "chunks", "warmup", "duration", "repeat")},
        "ours_src": args.ours_src,
        "ours_store": args.ours_store or "(the CLI default)",
        "candidates": {name: str(path) for name, path in args.candidates.items()},
        "asgi": asgi_versions() if set(args.server_list) & set(ASGI_SERVERS) else None,
        "elapsed_s": round(time.monotonic() - started, 1),
        "interrupted": interrupted,
        "results": results,
        "ratios": ratios(results),
    }
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"wrote {out}")
    _print_profile(results.get("ours", {}).get("profile"))
    return 130 if interrupted else (1 if any("error" in r for r in results.values()) else 0)


def _print_profile(profile: dict[str, Any] | None) -> None:
    if not profile:
        return
    import profile_summary

    for mode, summary in profile.items():
        if isinstance(summary, dict) and "top_self" in summary:
            print(f"\npy-spy, our server under {mode} load ({summary['file']}):")
            profile_summary.print_summary(summary)


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5, check=False
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


if __name__ == "__main__":
    sys.exit(main())
