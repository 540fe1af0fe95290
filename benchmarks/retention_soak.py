#!/usr/bin/env python
"""Does the SQLite file stay bounded under a long run? ``a2a serve`` (echo agent) on a fresh
SQLite file with a short retention, loaded with SendMessage (half plain replies, half
"stream:1" tasks: a task, an artifact, completed), a fresh messageId each; the size of the
file (database + WAL) is sampled as it goes, and the rows left at the end are counted.

    .venv/bin/python benchmarks/retention_soak.py --requests 200000 --retention 10

With retention R seconds the file holds about R seconds of traffic (plus the sweep interval,
R/10): it must level off once the first records expire. Loopback only; bounded by
``--requests`` and ``--max-seconds``. Needs wrk (apt-get install -y wrk).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def file_size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--retention", type=float, default=10.0, help="task and idempotency retention, seconds")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="a2a-soak-") as scratch:
        db = Path(scratch) / "soak.db"
        store = f"sqlite:///{db}?task_retention={args.retention}&idempotency_retention={args.retention}"
        cmd = [sys.executable, "-m", "a2a.cli.main", "serve", "examples/echo_agent.py:agent", "--port", "0"]
        server = subprocess.Popen(
            [*cmd, "--store", store], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            found = re.search(r"(http://127\.0\.0\.1:\d+)", line)
            if not found:
                print(f"server did not start: {line!r}", file=sys.stderr)
                return 1
            url = found.group(1) + "/a2a/jsonrpc"
            threading.Thread(target=server.stdout.read, daemon=True).start()  # drain its output
            samples: list[tuple[float, int, int]] = []
            done = 0
            started = time.monotonic()
            round_no = 0
            while done < args.requests and time.monotonic() - started < args.max_seconds:
                round_no += 1
                text = "hello" if round_no % 2 else "stream:1"
                wrk = ["wrk", "-t1", f"-c{args.connections}", "-d5s", "-s", str(HERE / "sendmessage.lua"), url]
                out = subprocess.run(
                    [*wrk, "--", f"soak{round_no}", text],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=True,
                ).stdout
                totals = json.loads(next(x for x in out.splitlines() if x.startswith("WRKJSON "))[8:])
                if totals["bad_answers"]:
                    print(f"{totals['bad_answers']} bad answers", file=sys.stderr)
                    return 1
                done += totals["requests"]
                samples.append((time.monotonic() - started, done, file_size(db)))
                print(f"{samples[-1][0]:7.1f}s {done:>9,} requests  file {samples[-1][2] / 1e6:8.2f} MB", flush=True)
        finally:
            server.terminate()
            server.wait(timeout=30)
        with sqlite3.connect(db) as conn:
            counts = {
                t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                for t in ("tasks", "message_log", "message_keys")
            }
        half = [size for _, _, size in samples[len(samples) // 2 :]]
        print(
            f"\n{done:,} requests in {samples[-1][0]:.0f}s, retention {args.retention:g}s: file at the end "
            f"{samples[-1][2] / 1e6:.2f} MB, largest {max(s for _, _, s in samples) / 1e6:.2f} MB, largest over the "
            f"second half {max(half) / 1e6:.2f} MB; rows left {counts}"
        )
        print(
            "JSON " + json.dumps({"requests": done, "retention_s": args.retention, "samples": samples, "rows": counts})
        )
    return 0


if __name__ == "__main__":
    sys.exit(os.EX_OK if main() == 0 else 1)
