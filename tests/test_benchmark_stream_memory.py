"""A small run of ``benchmarks/stream_memory.py`` (our server, memory store): every held stream
is open and counted.

Memory figures are not asserted (no performance assertions): only that the script starts the
server, holds N then 2N streams that each received their first event (and N subscribers of
one held task), and reports.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_stream_memory_holds_every_stream_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "stream_memory.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "stream_memory.py"), "--servers", "memory", "--subscribe"]
    cmd += ["--streams", "6", "--hold", "10", "--settle", "0.2", "--nice", "0", "--output", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    assert set(results) == {"memory"}
    for result in results.values():
        assert result["all_open"], result
        assert result["at_n"]["streams_open"] == 6 and result["at_2n"]["streams_open"] == 12
        assert result["at_2n"]["errors"] == 0 and result["closed"]["closed"] == 12
        assert result["idle_rss_kib"]["VmRSS"] > 0
        assert result["subscribers"]["subscribers_open"] == 6 and result["subscribers"]["errors"] == 0
