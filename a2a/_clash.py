"""Another distribution that installs the same top-level import name as ours.

The names ``a2a``, ``agents`` and ``supervisor`` are fixed by this project's layout; ``a2a`` is
also the import name of the reference SDK (``a2a-sdk``) and ``agents`` that of OpenAI's Agents
SDK (``openai-agents``). Two distributions with one import name overwrite each other's files in a
virtual environment, so they cannot share one. Said once, in one line, when the package is
imported; the check costs a directory listing per ``sys.path`` entry, and the full (slow) map of
distributions is read only when a suspect is found.
"""

from __future__ import annotations

import os
import sys

__all__ = ["OURS", "clash_messages", "warn_of_clashes"]

OURS = "a2a-net"
#: Our top-level import names.
NAMES = ("a2a", "agents", "supervisor")
#: Distributions known to install one of our names, as their metadata directories start.
_SUSPECTS = ("a2a_sdk-", "openai_agents-")

_warned = False


def _suspect_installed() -> bool:
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                if any(e.name.startswith(_SUSPECTS) and e.name.endswith(".dist-info") for e in found):
                    return True
        except OSError:  # a zip file, or a folder that does not exist
            continue
    return False


def clash_messages(*, force: bool = False) -> list[str]:
    """One line per top-level name of ours that another distribution also installs."""
    if not force and not _suspect_installed():
        return []
    from importlib.metadata import packages_distributions

    owners = packages_distributions()
    lines = []
    for name in NAMES:
        others = sorted({d for d in owners.get(name, []) if d.lower().replace("_", "-") != OURS})
        if others:
            lines.append(
                f"a2a-net: the import name {name!r} is also installed by {', '.join(others)}; "
                f"the two cannot share a virtual environment (uninstall one, or use a separate venv)"
            )
    return lines


def warn_of_clashes() -> None:
    """Write the clash lines to stderr, once per process."""
    global _warned
    if _warned:
        return
    _warned = True
    for line in clash_messages():
        print(line, file=sys.stderr)
