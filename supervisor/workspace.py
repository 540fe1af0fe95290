"""A run's shared files: what its delegations wrote, readable by later delegations.

Agents do not share a disk: the files agent writes into its workspace, the code agent runs each
program in a fresh directory. The supervisor sees both sides, so it keeps the run's files itself:
a file is the ``content`` a finished delegation sent with a ``path`` (a write), or a file artifact
an agent returned (the code agent's ``file:<path>`` artifacts). A later step that names the file
where it needs content ("run primes.py with Python" after "write primes.py: ...") is sent that
content (the offline planner marks such arguments with ``FILE_SOURCE``).
"""

from __future__ import annotations

from typing import Any

from .state import Item, SupervisorState

__all__ = ["FILE_SOURCE", "workspace_file"]

#: In an item's ``inputs``: ``FILE_SOURCE + path`` is the content of that file of the run.
FILE_SOURCE = "@file:"


def _written(record: dict[str, Any]) -> dict[str, str]:
    """The files one delegation produced: its write arguments, and its file artifacts."""
    files: dict[str, str] = {}
    arguments = record.get("arguments") or {}
    path, content = arguments.get("path"), arguments.get("content")
    if isinstance(path, str) and isinstance(content, str) and record.get("state") == "completed":
        files[path] = content
    for artifact in record.get("artifacts") or []:
        name = str(artifact.get("name") or "")
        if name.startswith("file:"):
            texts = [p["text"] for p in artifact.get("parts") or [] if isinstance(p.get("text"), str)]
            if texts:
                files[name.removeprefix("file:")] = "".join(texts)
    return files


def workspace_file(state: SupervisorState, items: dict[str, Item], path: str) -> str | None:
    """The latest content of ``path`` written in this run by a finished item, if any."""
    records = state.get("delegations") or {}
    found = None
    for item in items.values():
        if item["status"] != "done" or not item["delegations"]:
            continue
        record = records.get(item["delegations"][-1])
        written = _written(dict(record)) if record else {}
        if path in written:
            found = written[path]
    return found
