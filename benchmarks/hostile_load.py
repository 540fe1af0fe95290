"""A served agent under hostile peers: does a well-behaved client still get quick answers?

Starts ``a2a serve examples/echo_agent.py:agent`` as a child process, with its default store (a
SQLite file, in a temporary ``$A2A_DATA_DIR``) and, by default, 1,024 file descriptors (what
many machines give a process), then runs each scenario for ``--seconds`` (default 60):

- ``gzip-bomb``: clients each sending 1 MB gzip bodies that inflate to 1 GiB, one after the
  other, at ``--bomb-rate`` bytes/s per client (default 1 MB/s; ``0``: as fast as loopback goes);
- ``slowloris``: 500 connections each sending a request's headers one byte per second, never
  finishing them, reconnecting when the server closes one;
- ``idle``: 2,000 connections that never send a byte, reconnecting a second after the server
  closes one (more than the server's descriptors allow);
- ``ws-flood``: WebSocket connections sending small JSON-RPC requests as fast as the server
  takes them (each one answered; the answers read and thrown away).

Attackers run in a child process of their own, from loopback addresses other than the probe's
(``127.0.1.x``, spread so that no address holds more than 200 connections: the per-address cap
does not do the work alone). Meanwhile a probe client (from ``127.0.0.2``, one keep-alive
connection) sends a JSON-RPC ``SendMessage`` every 0.2 s. Reported per scenario: the probe's
latency p50/p99/max, refused probes (any answer but 200 with a result, an error, or no answer
within 5 s), the server's RSS (peak, and against the idle figure measured before the first
scenario), the server's CPU time, and what the attackers saw; and, to tell the attack's cost
from the machine's other load, the same probe for 10 s just before each attack, and the load
average. The attackers stand for other machines: they run at nice +10.

Goal (issue 16): p50 under 10 ms, no probe refused, RSS within 50 MB of idle.

Usage: python benchmarks/hostile_load.py [--seconds 60] [--scenarios gzip-bomb,slowloris,idle,ws-flood]
Linux only (it reads /proc). Network: 127.0.0.0/8 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PROBE_ADDRESS = "127.0.0.2"
PROBE_INTERVAL = 0.2
PROBE_TIMEOUT = 5.0
#: Seconds of probing with no attack before each scenario.
BASELINE_SECONDS = 10.0
SCENARIOS = ["gzip-bomb", "slowloris", "idle", "ws-flood"]
#: Connections per attacking source address (under the server's default per-address cap, 256).
PER_ADDRESS = 200


# ---- the server ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _limit_descriptors(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def start_server(port: int, data_dir: str, nofile: int, log_path: Path, store: str | None) -> subprocess.Popen[bytes]:
    env = {**os.environ, "A2A_DATA_DIR": data_dir}
    command = [sys.executable, "-m", "a2a.cli.main", "serve", "examples/echo_agent.py:agent", "--port", str(port)]
    if store:
        command += ["--store", store]
    log = log_path.open("wb")
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=(lambda: _limit_descriptors(nofile)) if nofile else None,
    )


def wait_ready(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with {process.returncode} before it was ready")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            if sock.recv(12).startswith(b"HTTP/1.1 200"):
                return
        time.sleep(0.1)
    raise SystemExit("the server did not answer within 30 s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# ---- the probe -------------------------------------------------------------------------------


def _send_message_body() -> bytes:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "probe"}]}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}).encode()


async def probe(port: int, seconds: float) -> dict[str, Any]:
    import aiohttp

    latencies: list[float] = []
    refused: dict[str, int] = {}
    connector = aiohttp.TCPConnector(limit=1, local_addr=(PROBE_ADDRESS, 0))
    url = f"http://127.0.0.1:{port}/a2a/jsonrpc"
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        next_at = time.monotonic()
        end = next_at + seconds
        while next_at < end:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += PROBE_INTERVAL
            started = time.perf_counter()
            try:
                async with session.post(url, data=_send_message_body(), headers=headers) as response:
                    body = await response.read()
                    outcome = "ok" if response.status == 200 and b'"result"' in body else f"HTTP {response.status}"
            except TimeoutError:
                outcome = "timeout"
            except aiohttp.ClientError as exc:
                outcome = type(exc).__name__
            if outcome == "ok":
                latencies.append((time.perf_counter() - started) * 1000)
            else:
                refused[outcome] = refused.get(outcome, 0) + 1
    ordered = sorted(latencies)
    return {
        "probes": len(latencies) + sum(refused.values()),
        "refused": refused,
        "p50_ms": round(statistics.median(ordered), 2) if ordered else None,
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2) if ordered else None,
        "max_ms": round(ordered[-1], 2) if ordered else None,
    }


# ---- the attackers (run in a child process: ``--attack SCENARIO``) ----------------------------


def _addresses(count: int) -> list[str]:
    return [f"127.0.1.{1 + i // PER_ADDRESS}" for i in range(count)]


class Tally:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n


def _bomb() -> bytes:
    """1 MB of gzip that inflates to 1 GiB (after a full flush, each further MiB of zeros
    compresses to the same bytes; the trailer is wrong, and no server should read that far)."""
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","x":"' + zeros)
    first += compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    return first + block * 1023 + compressor.flush()


async def _read_status(reader: asyncio.StreamReader) -> str:
    line = await asyncio.wait_for(reader.readline(), 30)
    return line.split(b" ")[1].decode() if line.count(b" ") >= 2 else "closed"


async def attack_gzip_bomb(port: int, end: float, tally: Tally, clients: int, rate: int) -> None:
    bomb = _bomb()
    head = (
        f"POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
        f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n"
    ).encode()
    step = 64 * 1024

    async def client(address: str) -> None:
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
            except OSError as exc:
                tally.add(f"connect failed: {exc.strerror}")
                await asyncio.sleep(0.1)
                continue
            status = asyncio.create_task(_read_status(reader))
            try:
                writer.write(head)
                for offset in range(0, len(bomb), step):  # paced, as a throttled client sends
                    writer.write(bomb[offset : offset + step])
                    await writer.drain()
                    if rate:
                        await asyncio.sleep(step / rate)
                    if time.monotonic() >= end:
                        break
                tally.add("bombs sent")
                tally.add(f"answer {await status}")
            except (TimeoutError, OSError) as exc:
                tally.add(f"cut: {type(exc).__name__}")
            finally:
                status.cancel()
                writer.close()

    await asyncio.gather(*(client(f"127.0.1.{1 + i}") for i in range(clients)))


async def attack_slowloris(port: int, end: float, tally: Tally, connections: int) -> None:
    request = b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"
    request += b"X-Padding: " + b"a" * 4000  # never the blank line that ends the headers

    async def connection(address: str, delay: float) -> None:
        await asyncio.sleep(delay)
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
            except OSError as exc:
                tally.add(f"connect failed: {exc.strerror}")
                await asyncio.sleep(1)
                continue
            tally.add("connections")
            opened = time.monotonic()
            try:
                for byte in request:
                    if time.monotonic() >= end:
                        return
                    writer.write(bytes([byte]))
                    await writer.drain()
                    if reader.at_eof():
                        break
                    with contextlib.suppress(asyncio.TimeoutError):
                        if await asyncio.wait_for(reader.read(4096), 1.0) == b"":
                            break
                tally.add("closed by the server")
                tally.add("held seconds", round(time.monotonic() - opened))
            except OSError:
                tally.add("closed by the server")
                tally.add("held seconds", round(time.monotonic() - opened))
            finally:
                writer.close()

    addresses = _addresses(connections)
    await asyncio.gather(*(connection(a, i / connections) for i, a in enumerate(addresses)))


async def attack_idle(port: int, end: float, tally: Tally, connections: int) -> None:
    async def connection(address: str, delay: float) -> None:
        await asyncio.sleep(delay)
        while time.monotonic() < end:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
            except OSError as exc:
                tally.add(f"connect failed: {exc.strerror}")
                await asyncio.sleep(1)
                continue
            tally.add("connections")
            try:
                first = await asyncio.wait_for(reader.read(64), max(0.01, end - time.monotonic()))
                tally.add("answered 503" if first.startswith(b"HTTP/1.1 503") else "closed by the server")
            except TimeoutError:
                return  # held to the end
            except OSError:
                tally.add("closed by the server")
            finally:
                writer.close()
            await asyncio.sleep(1)

    addresses = _addresses(connections)
    await asyncio.gather(*(connection(a, i / connections) for i, a in enumerate(addresses)))


async def attack_ws_flood(port: int, end: float, tally: Tally, connections: int) -> None:
    import aiohttp

    async def connection(address: str) -> None:
        connector = aiohttp.TCPConnector(local_addr=(address, 0))
        async with aiohttp.ClientSession(connector=connector) as session:
            while time.monotonic() < end:
                try:
                    async with session.ws_connect(
                        f"ws://127.0.0.1:{port}/a2a/ws", headers={"A2A-Version": "1.0"}, max_msg_size=0
                    ) as ws:
                        tally.add("connections")

                        async def drain() -> None:
                            async for _ in ws:
                                tally.add("answers")

                        reading = asyncio.create_task(drain())
                        n = 0
                        while time.monotonic() < end and not ws.closed:
                            n += 1
                            # Unanswerable but well-formed: each costs the server a lookup.
                            frame = {"jsonrpc": "2.0", "id": n, "method": "GetTask", "params": {"id": f"t{n}"}}
                            await ws.send_str(json.dumps(frame))
                            tally.add("frames")
                            if n % 64 == 0:
                                await asyncio.sleep(0)  # let the reader run
                        reading.cancel()
                        if ws.closed:
                            tally.add(f"closed by the server ({ws.close_code})")
                except (aiohttp.ClientError, OSError) as exc:
                    tally.add(f"failed: {type(exc).__name__}")
                    await asyncio.sleep(0.5)

    await asyncio.gather(*(connection(f"127.0.1.{1 + i}") for i in range(connections)))


def run_attack(args: argparse.Namespace) -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    end = time.monotonic() + args.seconds
    tally = Tally()

    async def main() -> None:
        if args.attack == "gzip-bomb":
            await attack_gzip_bomb(args.port, end, tally, args.bomb_clients, args.bomb_rate)
        elif args.attack == "slowloris":
            await attack_slowloris(args.port, end, tally, args.slowloris)
        elif args.attack == "idle":
            await attack_idle(args.port, end, tally, args.idle)
        elif args.attack == "ws-flood":
            await attack_ws_flood(args.port, end, tally, args.ws_connections)

    asyncio.run(main())
    print(json.dumps(tally.counts), flush=True)


# ---- the scenarios -------------------------------------------------------------------------


def run_scenario(name: str, args: argparse.Namespace, port: int, server: subprocess.Popen[bytes]) -> dict[str, Any]:
    attack = [
        sys.executable,
        __file__,
        "--attack",
        name,
        "--port",
        str(port),
        "--seconds",
        str(args.seconds),
        "--bomb-clients",
        str(args.bomb_clients),
        "--bomb-rate",
        str(args.bomb_rate),
        "--slowloris",
        str(args.slowloris),
        "--idle",
        str(args.idle),
        "--ws-connections",
        str(args.ws_connections),
    ]
    # The same probe with no attack, just before: what the machine's other load costs alone.
    baseline = asyncio.run(probe(port, BASELINE_SECONDS))
    load_before = os.getloadavg()[0]
    cpu_before = cpu_seconds(server.pid)
    # The attackers stand for other machines: on this one they yield the CPU to the server
    # and the probe (nice +10), so that what is measured is the server's doing.
    attacker = subprocess.Popen(attack, stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.nice(10))
    peak_rss, peak_fds = 0.0, 0

    async def sample() -> None:
        nonlocal peak_rss, peak_fds
        while attacker.poll() is None:
            peak_rss = max(peak_rss, rss_mb(server.pid))
            peak_fds = max(peak_fds, open_fds(server.pid))
            await asyncio.sleep(0.5)

    async def both() -> dict[str, Any]:
        await asyncio.sleep(min(5.0, args.seconds / 10))  # the attack builds up first
        sampler = asyncio.create_task(sample())
        figures = await probe(port, args.seconds - min(5.0, args.seconds / 10))
        await asyncio.get_running_loop().run_in_executor(None, attacker.wait)
        await sampler
        return figures

    try:
        figures = asyncio.run(both())
    finally:
        if attacker.poll() is None:
            attacker.terminate()
    out, _ = attacker.communicate(timeout=60)
    figures["attack"] = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    figures["server_peak_rss_mb"] = round(peak_rss, 1)
    figures["server_peak_fds"] = peak_fds
    figures["server_cpu_s"] = round(cpu_seconds(server.pid) - cpu_before, 1)
    figures["server_alive"] = server.poll() is None
    figures["baseline_p50_ms"] = baseline["p50_ms"]
    figures["baseline_p99_ms"] = baseline["p99_ms"]
    figures["load_average"] = round((load_before + os.getloadavg()[0]) / 2, 1)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="per scenario (default 60)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated (default: all)")
    parser.add_argument("--server-nofile", type=int, default=1024, help="the server's descriptor limit (0: ours)")
    parser.add_argument("--bomb-clients", type=int, default=2, help="gzip-bomb: concurrent clients (default 2)")
    parser.add_argument("--bomb-rate", type=int, default=1 << 20, help="gzip-bomb: bytes/s per client (0: unpaced)")
    parser.add_argument("--slowloris", type=int, default=500, help="slowloris: connections (default 500)")
    parser.add_argument("--idle", type=int, default=2000, help="idle: connections (default 2000)")
    parser.add_argument("--ws-connections", type=int, default=4, help="ws-flood: connections (default 4)")
    parser.add_argument("--store", help="the server's --store (default: its default, a SQLite file)")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "hostile_load.json")
    parser.add_argument("--attack", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attack:
        run_attack(args)
        return

    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenarios: {sorted(unknown)}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="a2a-hostile-") as data_dir:
        server = start_server(port, data_dir, args.server_nofile, args.output.with_suffix(".server.log"), args.store)
        try:
            wait_ready(port, server)
            # Idle: after a few requests (the store, the caches warm), nothing else running.
            warm = asyncio.run(probe(port, 3.0))
            time.sleep(1)
            idle_rss = rss_mb(server.pid)
            results: dict[str, Any] = {
                "server": f"a2a serve examples/echo_agent.py:agent (store {args.store or 'default: SQLite'}, "
                f"RLIMIT_NOFILE {args.server_nofile})",
                "seconds": args.seconds,
                "idle_rss_mb": round(idle_rss, 1),
                "unloaded_probe": warm,
                "scenarios": {},
            }
            print(f"server idle: RSS {idle_rss:.1f} MB; unloaded probe p50 {warm['p50_ms']} ms", flush=True)
            for name in scenarios:
                print(f"running {name} for {args.seconds:g} s ...", flush=True)
                figures = run_scenario(name, args, port, server)
                figures["rss_over_idle_mb"] = round(figures["server_peak_rss_mb"] - idle_rss, 1)
                results["scenarios"][name] = figures
                print("  " + json.dumps(figures), flush=True)
                time.sleep(2)  # let what the attack left time out
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print()
    print(
        f"{'scenario':<11} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>8} {'refused':>8} {'RSS+MB':>7} {'CPU s':>6}"
        f" {'base p50':>9} {'base p99':>9} {'load':>5}"
    )
    for name, f in results["scenarios"].items():
        refused = sum(f["refused"].values())
        print(
            f"{name:<11} {f['p50_ms']!s:>7} {f['p99_ms']!s:>7} {f['max_ms']!s:>8} {refused:>8} "
            f"{f['rss_over_idle_mb']:>7} {f['server_cpu_s']:>6} {f['baseline_p50_ms']!s:>9} "
            f"{f['baseline_p99_ms']!s:>9} {f['load_average']:>5}"
        )
    print("(base: the same probe for 10 s just before, no attack; load: the machine's load average)")
    print(f"(idle RSS {results['idle_rss_mb']} MB; figures in {args.output})")


if __name__ == "__main__":
    main()
