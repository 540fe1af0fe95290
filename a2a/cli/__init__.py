"""The ``a2a`` command.

This module is the console script's entry point and stays light: ``a2a --version`` is answered
before anything else is imported, and the full command (``.main``) loads only what its
subcommand needs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main", "version_line"]


def _asks_version(argv: Sequence[str]) -> bool:
    """``--version`` (or ``-V``) among the options before the subcommand."""
    for word in argv:
        if word in ("--version", "-V"):
            return True
        if not word.startswith("-"):
            return False
    return False


def version_line() -> str:
    """What ``a2a --version`` prints."""
    import a2a

    return f"a2a-net {a2a.__version__} (Python {sys.version.split()[0]})"


def main(argv: Sequence[str] | None = None) -> int:
    import a2a

    words = list(sys.argv[1:] if argv is None else argv)
    if not getattr(a2a, "__a2a_net__", False):
        # Another distribution's ``a2a/__init__.py`` replaced ours (this file is still ours):
        # nothing below would work, so say why in one line rather than fail on an import.
        from a2a._clash import clash_messages

        lines = clash_messages(force=True) or [
            "a2a-net: the package 'a2a' imported here is not a2a-net's; another distribution replaced it"
        ]
        print(lines[0], file=sys.stderr)
        return 2
    if _asks_version(words):
        print(version_line())
        return 0
    from .main import main as run

    return run(words)
