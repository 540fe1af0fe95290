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

In ``conversational`` mode a ``delegate`` call has no dependencies: the model sees the run's files
listed in its prompt (``listing``: name, media type, size, never the content) and names those to
attach in the call's ``files``; a call without ``files`` is sent the files its task or arguments
name (``named_in``). Either way they are found among all the files of the run (``run_files``).

A file given by ``url`` was fetched by the supervisor when its delegation ended
(``supervisor.file_urls``): it is inline here like any other, or, when the fetch was refused or
failed, still a ``url`` part whose metadata (``FETCH_NOTE``) says why; the delegation's text names
it too.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import msgspec

from a2a.metadata import FETCH_NOTE_KEY, FETCHED_FROM_KEY
from a2a.types import Part

from .state import Item, SupervisorState

__all__ = [
    "FETCHED_FROM",
    "FETCH_NOTE",
    "FILE_SOURCE",
    "LISTING_MAX",
    "Attachments",
    "attachments",
    "listing",
    "named_in",
    "produced_files",
    "run_files",
    "workspace_file",
]

#: In an item's ``inputs``: ``FILE_SOURCE + path`` is the content of that file of the run.
FILE_SOURCE = "@file:"
#: In a file part's metadata: the URL its inline bytes were fetched from (``supervisor.file_urls``).
FETCHED_FROM = FETCHED_FROM_KEY
#: In a ``url`` file part's metadata: why the supervisor did not fetch it.
FETCH_NOTE = FETCH_NOTE_KEY
#: The most files the model's prompt lists (the newest); the rest are counted.
LISTING_MAX = 20


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


def run_files(state: SupervisorState, items: dict[str, Item]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every file of the run so far, by name: ``(item id, part)``; a later item's file of the same
    name replaces an earlier one (items in the order they were made)."""
    records = state.get("delegations") or {}
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for item in items.values():
        if item["status"] != "done" or not item["delegations"]:
            continue
        record = records.get(item["delegations"][-1])
        for name, part in (produced_files(dict(record)) if record else {}).items():
            found.pop(name, None)  # re-inserted: the dict's order stays "newest last"
            found[name] = (item["id"], part)
    return found


def named_in(names: Iterable[str], text: str, arguments: dict[str, Any] | None) -> list[str]:
    """The names among ``names`` that ``text`` mentions as a word (``run primes.py.``) or that are
    the value of one of ``arguments`` (``{"file": "primes.py"}``)."""
    values = {v for v in (arguments or {}).values() if isinstance(v, str)}
    found = []
    for name in names:
        # Not inside a longer name: "primes.py" is not named by "old_primes.py" nor "primes.pyc".
        pattern = rf"(?<![\w./-]){re.escape(name)}(?!\.?[\w/-])"
        if name in values or re.search(pattern, text):
            found.append(name)
    return found


def _accepts(modes: Sequence[str], media_type: str) -> bool:
    major = media_type.split("/")[0]
    return any(m in ("*/*", "*", media_type) or m == f"{major}/*" for m in modes)


def _inline_size(part: dict[str, Any]) -> int:
    if isinstance(part.get("text"), str):
        return len(part["text"].encode("utf-8", "surrogatepass"))
    if isinstance(part.get("raw"), str):  # base64 in the JSON form
        return len(part["raw"]) * 3 // 4
    return 0


def _media_type(part: dict[str, Any]) -> str:
    return str(part.get("mediaType") or "application/octet-stream").split(";")[0].strip().lower()


class Attachments(NamedTuple):
    """The files one delegation is sent."""

    parts: list[Part]
    #: Names of the files left out for ``supervisor.attachments_bytes``.
    left_out: list[str]
    #: ``name: why`` of the files sent by URL only because the supervisor could not fetch them.
    by_url: list[str]


def attachments(
    state: SupervisorState,
    item: Item,
    items: dict[str, Item],
    modes: Sequence[str],
    limit: int,
    named: Sequence[str] = (),
) -> Attachments:
    """The files of the items ``item`` depends on, and the run's files ``named``, that its skill
    accepts (``modes``), as parts, within ``limit`` bytes of inline content."""
    records = state.get("delegations") or {}
    found: dict[str, dict[str, Any]] = {}
    for dependency in item["depends_on"]:
        source = items.get(dependency)
        if source is None or source["status"] != "done" or not source["delegations"]:
            continue
        record = records.get(source["delegations"][-1])
        found.update(produced_files(dict(record)) if record else {})
    if named:
        every = run_files(state, items)
        found.update({name: every[name][1] for name in named if name in every})
    result = Attachments([], [], [])
    room = limit
    for name, part in found.items():
        if not _accepts(modes, _media_type(part)):
            continue
        size = _inline_size(part)
        if size > room:
            result.left_out.append(name)
            continue
        room -= size
        result.parts.append(msgspec.convert(part, Part))
        note = (part.get("metadata") or {}).get(FETCH_NOTE)
        if "url" in part and note:
            result.by_url.append(f"{name}: {note}")
    return result


def _size_text(size: int) -> str:
    return f"{size} bytes" if size < 10 * 1024 else f"{size / 1024:.0f} KiB"


def listing(files: dict[str, tuple[str, dict[str, Any]]], limit: int = LISTING_MAX) -> str:
    """The run's files for the model's prompt, newest first, at most ``limit`` lines: name, media
    type, size (or URL) and the item that made it; never the content."""
    lines = []
    for name, (item_id, part) in list(reversed(files.items()))[:limit]:
        if "url" in part:
            note = (part.get("metadata") or {}).get(FETCH_NOTE)
            where = f"by URL {str(part['url'])[:200]}" + (f", not fetched: {note}" if note else "")
        else:
            where = _size_text(_inline_size(part))
        lines.append(f"- {name} ({_media_type(part)}, {where}; from item {item_id})")
    if len(files) > limit:
        lines.append(f"({len(files) - limit} older file(s) not listed; they can still be named)")
    return "\n".join(lines)
