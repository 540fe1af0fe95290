"""A tiny run of ``benchmarks/run.py`` with the ASGI servers (our echo agent's ``asgi()`` under a
real uvicorn and a real granian process): each starts, answers SendMessage under load without
errors, and has its server CPU counted (granian serves from a worker process it starts).

No performance figures are asserted; only that the figures exist and are those of a server that
did the work.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("uvicorn")
pytest.importorskip("granian")


@pytest.mark.slow
def test_run_measures_the_asgi_servers(tmp_path: Path) -> None:
    out = tmp_path / "asgi.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--servers", "asgi-uvicorn,asgi-granian"]
    cmd += ["--no-sse", "--no-task", "--loadgen", "python", "--connections", "4", "--warmup", "0"]
    cmd += ["--duration", "1", "--nice", "0", "--output", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert set(report["results"]) == {"asgi-uvicorn", "asgi-granian"}
    for name, result in report["results"].items():
        send = result["send"]
        assert send["errors"] == 0 and send["requests"] > 0, (name, send)
        # Any A2A request costs its server far more than 5 us of CPU: a figure below that is
        # a process that did not serve (granian's supervisor without its worker).
        assert send["server_cpu_us_per_unit"] > 5, (name, send)
        assert result["events_per_stream_5"] >= 5, (name, result)
    ratios = report["ratios"]
    assert ratios["asgi-uvicorn"]["send_over_ours"] is None  # no "ours" in this run
    assert report["asgi"]["uvicorn"] and report["asgi"]["granian"]
    assert "asgi / bare" in done.stdout and "ours ASGI on granian" in done.stdout
