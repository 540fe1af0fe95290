"""Summarize a py-spy ``--format raw`` profile (collapsed stacks) into top costs.

Each line of the file is ``frame;frame;...;leaf COUNT`` with frames like
``function (path/to/file.py:LINE)``. We report, per function (file + name, lines merged):

- self: samples where it is the leaf (time spent in its own code);
- inclusive: samples where it is anywhere on the stack (it and what it calls);

and the same restricted to our package (``a2a/`` and ``examples/``), where "self" also charges
to our innermost frame the time spent in libraries it called (msgspec, aiohttp, asyncio ...).

    python benchmarks/profile_summary.py benchmarks/results/profile-ours-send.txt
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")
_OURS = re.compile(r"(^|/)(a2a|examples)/[^/]")


#: Paths in our tree are shown relative to the repository (whose location varies per machine).
_REPO_ROOT = str(Path(__file__).resolve().parents[1]) + "/"


def _key(frame: str) -> tuple[str, str]:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip(), ""
    path = m.group("file")
    short = path
    for marker in ("/site-packages/", "/lib/python3", _REPO_ROOT):
        if marker in path:
            short = path.split(marker, 1)[1]
            break
    return m.group("func"), short


def _is_ours(file: str) -> bool:
    return bool(_OURS.search(file)) and "site-packages" not in file


def summarize(path: Path, top: int = 15) -> dict[str, Any]:
    self_c: Counter[tuple[str, str]] = Counter()
    incl_c: Counter[tuple[str, str]] = Counter()
    ours_self: Counter[tuple[str, str]] = Counter()
    total = 0
    for raw in path.read_text(errors="replace").splitlines()[:2_000_000]:
        stack, _, count_s = raw.rpartition(" ")
        if not stack or not count_s.isdigit():
            continue
        count = int(count_s)
        total += count
        frames = [
            _key(f) for f in stack.split(";") if f and not f.startswith("process ") and not f.startswith("thread ")
        ]
        if not frames:
            continue
        self_c[frames[-1]] += count
        for key in set(frames):
            incl_c[key] += count
        for key in reversed(frames):
            if _is_ours(key[1]):
                ours_self[key] += count
                break

    def rows(counter: Counter[tuple[str, str]], only_ours: bool = False) -> list[dict[str, Any]]:
        items = [(k, v) for k, v in counter.most_common() if not only_ours or _is_ours(k[1])]
        return [
            {"function": f, "file": file, "samples": v, "pct": round(100 * v / total, 1)}
            for (f, file), v in items[:top]
        ]

    return {
        "samples": total,
        "top_self": rows(self_c),
        "top_inclusive_ours": rows(incl_c, only_ours=True),
        "top_self_ours_incl_callees_in_libs": rows(ours_self),
    }


def print_summary(summary: dict[str, Any]) -> None:
    print(f"  {summary['samples']} samples")
    for title, key in (
        ("self time (leaf frames, any code)", "top_self"),
        ("our code, inclusive (it + everything it calls)", "top_inclusive_ours"),
        ("our innermost frame (our code + library calls it makes directly)", "top_self_ours_incl_callees_in_libs"),
    ):
        print(f"  -- {title}")
        for row in summary[key]:
            print(f"    {row['pct']:5.1f}%  {row['function']:<38} {row['file']}")


def main() -> None:
    for name in sys.argv[1:] or ["benchmarks/results/profile-ours-send.txt"]:
        print(name)
        print_summary(summarize(Path(name), top=20))


if __name__ == "__main__":
    main()
