"""``a2a examples``: where the examples are, and a copy of them to work in.

In a checkout they are the ``examples/`` folder; a wheel installs them as data files under
``<prefix>/share/a2a-net/examples`` (pyproject.toml), found through the distribution's file list,
so that an install without a checkout (``pip install a2a-net``) has them too.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .options import UsageError

__all__ = ["examples_dir", "register"]

DISTRIBUTION = "a2a-net"
#: A file every copy of the examples has.
MARKER = "echo_agent.py"


def examples_dir() -> Path | None:
    """The folder of the examples, or ``None`` when this install has none."""
    checkout = Path(__file__).resolve().parents[2] / "examples"
    if (checkout / MARKER).is_file():
        return checkout
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        files = distribution(DISTRIBUTION).files or []
    except PackageNotFoundError:
        return None
    for file in files:
        if file.name == MARKER and "share/a2a-net/examples" in file.as_posix():
            found = Path(str(file.locate())).resolve().parent
            if (found / MARKER).is_file():
                return found
    return None


def register(sub: Any) -> None:
    cmd = sub.add_parser(
        "examples",
        help="show where the examples are, or copy them: a2a examples --copy [DIR]",
        description="The examples of the README (agents, a client, a supervisor config). Without a checkout, "
        "`a2a examples --copy` puts them in ./examples, where the README's commands expect them.",
    )
    cmd.add_argument(
        "--copy",
        nargs="?",
        const="examples",
        metavar="DIR",
        help="copy them into DIR (default ./examples); existing files are left alone",
    )
    cmd.set_defaults(func=run)


async def run(args: argparse.Namespace) -> int:
    return _examples(args)  # a few small files: no need to leave the event loop's thread


def _examples(args: argparse.Namespace) -> int:
    import shutil  # only here: every a2a command imports this module for its parser

    source = examples_dir()
    if source is None:
        raise UsageError("this install of a2a-net has no examples (reinstall it, or use a checkout)")
    files = sorted(p for p in source.iterdir() if p.is_file() and p.suffix in (".py", ".yaml"))
    if args.copy is None:
        print(source)
        for path in files:
            print(f"  {path.name}")
        return 0
    target = Path(args.copy)
    target.mkdir(parents=True, exist_ok=True)
    copied = skipped = 0
    for path in files:
        destination = target / path.name
        if destination.exists():
            skipped += 1
            continue
        shutil.copyfile(path, destination)
        copied += 1
    note = f" ({skipped} already there, left alone)" if skipped else ""
    print(f"copied {copied} examples to {target}{note}; try: a2a serve {target / 'echo_agent.py'}:agent")
    return 0
