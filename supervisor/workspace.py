"""A run's shared files: what its delegations produced, passed to later delegations as A2A parts.

Agents do not share a disk: the files agent writes into its workspace, the code agent runs each
program in a fresh directory. The supervisor sees both sides. The files one finished delegation
produced are the parts with a ``filename`` of its artifacts (the code agent's ``file:<path>``, the
files agent's ``read``; inline text or bytes, or a ``url``), and the ``content`` it was sent with a
``path`` (a write). A delegation is sent, **as parts** of its message, the files of the items it
depends on (``attachments``) when its skill's input modes accept them, up to
``supervisor.attachments_bytes`` of inline content (a file beyond that is left out and named in
its text; a ``url`` part costs nothing and is passed on as it is). The built-in agents use them:
``run_python {"file": "primes.py"}`` runs a received file, ``write`` without ``content`` saves one.

For an agent that takes no files, a later step that names the file where it needs content is sent
that content as an argument instead (the offline planner marks such arguments with ``FILE_SOURCE``).
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from typing import Any

import msgspec

from a2a.types import Part

from .state import Item, SupervisorState

__all__ = ["FILE_SOURCE", "attachments", "produced_files", "workspace_file"]

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


def produced_files(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The files one finished delegation produced, as A2A parts (JSON-like), by file name."""
    if record.get("state") != "completed":
        return {}
    files: dict[str, dict[str, Any]] = {}
    arguments = record.get("arguments") or {}
    path, content = arguments.get("path"), arguments.get("content")
    if isinstance(path, str) and isinstance(content, str):
        media_type = mimetypes.guess_type(path)[0] or "text/plain"
        files[path] = {"text": content, "filename": path, "mediaType": media_type}
    for artifact in record.get("artifacts") or []:
        for part in artifact.get("parts") or []:
            if part.get("filename") and ("text" in part or "raw" in part or "url" in part):
                files[str(part["filename"])] = part
    return files


def _accepts(modes: Sequence[str], media_type: str) -> bool:
    major = media_type.split("/")[0]
    return any(m in ("*/*", "*", media_type) or m == f"{major}/*" for m in modes)


def _inline_size(part: dict[str, Any]) -> int:
    if isinstance(part.get("text"), str):
        return len(part["text"].encode("utf-8", "surrogatepass"))
    if isinstance(part.get("raw"), str):  # base64 in the JSON form
        return len(part["raw"]) * 3 // 4
    return 0


def attachments(
    state: SupervisorState, item: Item, items: dict[str, Item], modes: Sequence[str], limit: int
) -> tuple[list[Part], list[str]]:
    """The files of the items ``item`` depends on that its skill accepts (``modes``), as parts,
    within ``limit`` bytes of inline content; and the names of those left out for the limit."""
    records = state.get("delegations") or {}
    found: dict[str, dict[str, Any]] = {}
    for dependency in item["depends_on"]:
        source = items.get(dependency)
        if source is None or source["status"] != "done" or not source["delegations"]:
            continue
        record = records.get(source["delegations"][-1])
        found.update(produced_files(dict(record)) if record else {})
    parts: list[Part] = []
    left_out: list[str] = []
    room = limit
    for name, part in found.items():
        media_type = str(part.get("mediaType") or "application/octet-stream").split(";")[0].strip().lower()
        if not _accepts(modes, media_type):
            continue
        size = _inline_size(part)
        if size > room:
            left_out.append(name)
            continue
        room -= size
        parts.append(msgspec.convert(part, Part))
    return parts, left_out
