"""The files agent: read, write, edit, list and delete files inside one workspace directory.

Serve it with ``a2a serve agents.files:agent`` (HTTP) or ``--stdio``. The workspace of ``agent`` is
``$A2A_FILES_WORKSPACE`` if set (created if missing), else a fresh directory under the system's
temp dir; its path is written to **stderr** when the agent is loaded (stdout may be the protocol
channel). In code,
``make_agent(Path("work"))`` gives an agent on a directory of your choice.

Tools (structured input ``{"tool": ..., "arguments": {...}}``, or plain text with a model; see
``agents._tools``):

- ``read`` ``{"path"}``: the file's content, as a text artifact (UTF-8) or a raw file part with
  its media type (binary);
- ``write`` ``{"path", "content", "encoding"="utf-8"|"base64", "overwrite"=true}``: creates parent
  directories, replaces the file atomically; without ``content`` it saves a **file sent with the
  message** (a part with a ``filename``: the one named like ``path``, or the only one), e.g. a file
  another agent produced;
- ``edit`` ``{"path", "old_text", "new_text", "count"?, "replace_all"=false}``: find and replace;
  fails when the text is not found, or is found more than once and neither ``count`` (the exact
  number expected) nor ``replace_all`` is given;
- ``list`` ``{"path"=".", "recursive"=false}``: entries with type and size;
- ``delete`` ``{"path", "recursive"=false}``: a file, a symbolic link (not its target), an empty
  directory, or with ``recursive`` a whole directory.

Every path is relative to the workspace and must stay inside it: absolute paths, ``..``
components, NUL bytes, names over 255 bytes, paths over 1024 characters are refused as invalid
arguments, and a path that leads outside through a symbolic link is refused before anything is
touched. Files over ``max_file_bytes`` (default 1 MiB) are neither read nor written.

What this does *not* guard against: another process replacing a directory with a symbolic link
between the check and the operation (the check resolves every link, the final open refuses a
link, but intermediate directories are not opened one by one), and the total size of the
workspace (only each file is limited).
"""

from __future__ import annotations

import base64
import binascii
import errno
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ._tools import (
    ArgumentError,
    Tool,
    ToolAgent,
    ToolError,
    ToolResult,
    data_output,
    file_output,
    human_size,
    in_thread,
    received_file,
    received_files,
)
from .llm import ModelSettings

__all__ = ["DEFAULT_MAX_FILE_BYTES", "WORKSPACE_ENV", "FilesAgent", "Workspace", "agent", "make_agent", "make_tools"]

WORKSPACE_ENV = "A2A_FILES_WORKSPACE"
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255
MAX_LIST_ENTRIES = 1000


# ---- paths -----------------------------------------------------------------------------


def check_relative_path(path: str) -> str:
    """Refuse what can never name a file inside the workspace (before touching the disk)."""
    if "\x00" in path:
        raise ValueError("must not contain NUL bytes")
    if path.startswith(("/", "\\", "~")) or PureWindowsPath(path).drive or os.path.isabs(path):
        raise ValueError(f"must be relative to the workspace (not absolute, not ~): {path[:80]!r}")
    names = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in names:
        raise ValueError(f"must not contain '..' (stay inside the workspace): {path[:80]!r}")
    for name in names:
        if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise ValueError(f"has a name longer than {MAX_NAME_BYTES} bytes: {name[:40]!r}...")
    return path


WorkspacePath = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PATH_CHARS, description="path relative to the workspace"),
    AfterValidator(check_relative_path),
]


class Workspace:
    """One directory; every path handed out is checked to lie inside it."""

    def __init__(self, root: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace {root} is not a directory")
        self.max_file_bytes = max_file_bytes

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def _inside(self, rel: str, resolved: Path) -> Path:
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise ArgumentError(
                f"path {rel!r} leads outside the workspace (through a symbolic link); refused", argument="path"
            )
        return resolved

    def resolve(self, rel: str) -> Path:
        """The real path ``rel`` names, every symbolic link followed; refused if outside."""
        check_relative_path(rel)
        try:
            resolved = (self.root / rel).resolve()
        except (RuntimeError, OSError) as exc:  # a symbolic link loop (Python 3.11, 3.12)
            raise ArgumentError(f"path {rel!r} cannot be resolved: {exc}", argument="path") from None
        if _loops(resolved):  # Python 3.13 leaves the rest of the path as it is, without raising
            raise ArgumentError(f"path {rel!r} cannot be resolved: a symbolic link loop", argument="path")
        return self._inside(rel, resolved)

    def resolve_entry(self, rel: str) -> Path:
        """Like ``resolve``, but the last name is not followed (to delete a link, not its target)."""
        check_relative_path(rel)
        relpath = PurePosixPath(rel.replace("\\", "/"))
        if not relpath.name or relpath.name == ".":
            raise ArgumentError("refusing to delete the workspace itself", argument="path")
        parent = self.resolve(str(relpath.parent))
        return parent / relpath.name

    def check_size(self, size: int, what: str) -> None:
        if size > self.max_file_bytes:
            limit = human_size(self.max_file_bytes)
            raise ToolError(f"{what} is {size} bytes, over this workspace's limit of {limit} per file")


def _loops(path: Path) -> bool:
    """Whether following ``path`` goes round a loop of symbolic links."""
    try:
        path.stat()
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _open_regular(path: Path, rel: str) -> int:
    """A read descriptor for a regular file (never a FIFO or device, never through a final link)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ToolError(f"no such file: {rel!r}") from None
    except IsADirectoryError:
        raise ToolError(f"{rel!r} is a directory; use the list tool") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ArgumentError(f"path {rel!r} became a symbolic link; refused", argument="path") from None
        raise ToolError(f"cannot open {rel!r}: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory; use the list tool" if stat.S_ISDIR(mode) else "not a regular file"
        raise ToolError(f"{rel!r} is {kind}")
    return fd


def _read_bytes(ws: Workspace, rel: str) -> bytes:
    fd = _open_regular(ws.resolve(rel), rel)
    with os.fdopen(fd, "rb") as file:
        ws.check_size(os.fstat(file.fileno()).st_size, f"file {rel!r}")
        content = file.read(ws.max_file_bytes + 1)
    ws.check_size(len(content), f"file {rel!r}")
    return content


def _write_atomic(ws: Workspace, rel: str, content: bytes, *, overwrite: bool = True) -> bool:
    """Write through a temporary file in the same directory; returns True if the file is new."""
    ws.check_size(len(content), "the content")
    target = ws.resolve(rel)
    if target == ws.root:
        raise ArgumentError("path names the workspace itself, not a file", argument="path")
    existed = os.path.lexists(target)
    if existed and not target.is_file():
        raise ToolError(f"{rel!r} exists and is not a regular file")
    if existed and not overwrite:
        raise ToolError(f"{rel!r} already exists (pass overwrite=true to replace it)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"cannot create {rel!r}: a parent path is a file, not a directory") from None
    ws.resolve(rel)  # the parents just made are inside too (checked again, after creating them)
    mode = stat.S_IMODE(target.stat().st_mode) if existed else 0o644
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return not existed


# ---- tool arguments ----------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadArgs(_Args):
    path: WorkspacePath


class WriteArgs(_Args):
    path: WorkspacePath
    content: str | None = Field(
        None, description="the new content of the file; leave out to save the file sent with the message"
    )
    encoding: Literal["utf-8", "base64"] = Field("utf-8", description="how content is encoded: text or base64")
    overwrite: bool = Field(True, description="replace the file if it exists")


class EditArgs(_Args):
    path: WorkspacePath
    old_text: str = Field(min_length=1, description="the exact text to find")
    new_text: str = Field(description="what to put in its place")
    count: int | None = Field(None, ge=1, description="how many occurrences are expected (all are replaced)")
    replace_all: bool = Field(False, description="replace every occurrence, however many")


class ListArgs(_Args):
    path: WorkspacePath = "."
    recursive: bool = Field(False, description="include subdirectories")


class DeleteArgs(_Args):
    path: WorkspacePath
    recursive: bool = Field(False, description="delete a directory and everything in it")


# ---- the tools ---------------------------------------------------------------------------


def _read(ws: Workspace, args: ReadArgs) -> ToolResult:
    content = _read_bytes(ws, args.path)
    output = file_output(args.path, content)
    kind = "text" if isinstance(output.parts[0].text, str) else (output.parts[0].media_type or "binary")
    return ToolResult(f"read {args.path} ({len(content)} bytes, {kind})", [output])


def _decode_content(args: WriteArgs) -> bytes:
    if args.content is None:
        received = received_file(args.path)
        received = received_file("") if received is None else received
        if received is None:
            sent = ", ".join(received_files()) or "none"
            raise ArgumentError(
                f"'content' is required, unless the message carries the file to save as a part named like "
                f"{args.path!r} (files sent: {sent})",
                argument="content",
            )
        return received
    if args.encoding == "utf-8":
        return args.content.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(args.content, validate=True)
    except (binascii.Error, ValueError):
        raise ArgumentError("'content' is not valid base64 (encoding is 'base64')", argument="content") from None


def _write(ws: Workspace, args: WriteArgs) -> ToolResult:
    content = _decode_content(args)
    created = _write_atomic(ws, args.path, content, overwrite=args.overwrite)
    verb = "created" if created else "replaced"
    return ToolResult(
        f"{verb} {args.path} ({len(content)} bytes)",
        [data_output("write", {"path": args.path, "bytes": len(content), "created": created})],
    )


def _replacements(args: EditArgs, found: int) -> int:
    """How many occurrences to replace, or why not."""
    where = f"in {args.path!r}"
    if found == 0:
        raise ToolError(f"old_text was not found {where}; read the file and copy the text exactly")
    if args.replace_all:
        return found
    if args.count is not None:
        if found != args.count:
            raise ToolError(f"old_text was found {found} times {where}, not the {args.count} expected; nothing changed")
        return found
    if found > 1:
        raise ToolError(
            f"old_text is ambiguous: found {found} times {where}; include more surrounding text to make it "
            f"unique, or pass count={found} or replace_all=true to replace them all; nothing changed"
        )
    return 1


def _edit(ws: Workspace, args: EditArgs) -> ToolResult:
    raw = _read_bytes(ws, args.path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{args.path!r} is not UTF-8 text; edit works on text files only") from None
    replaced = _replacements(args, text.count(args.old_text))
    _write_atomic(ws, args.path, text.replace(args.old_text, args.new_text).encode("utf-8"))
    noun = "occurrence" if replaced == 1 else "occurrences"
    return ToolResult(
        f"edited {args.path}: replaced {replaced} {noun}",
        [data_output("edit", {"path": args.path, "replacements": replaced})],
    )


def _entry(ws: Workspace, path: Path) -> dict[str, Any]:
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        kind = "symlink"
    elif stat.S_ISDIR(info.st_mode):
        kind = "directory"
    elif stat.S_ISREG(info.st_mode):
        kind = "file"
    else:
        kind = "other"
    entry: dict[str, Any] = {"path": path.relative_to(ws.root).as_posix(), "type": kind}
    if kind == "file":
        entry["bytes"] = info.st_size
    return entry


def _walk(directory: Path, recursive: bool) -> list[Path]:
    if not recursive:
        return sorted(directory.iterdir())
    found: list[Path] = []
    for current, dirs, files in os.walk(directory, followlinks=False):
        dirs.sort()
        here = Path(current)
        found.extend(here / name for name in sorted(dirs + files))
        if len(found) > MAX_LIST_ENTRIES:
            break
    return found


def _list(ws: Workspace, args: ListArgs) -> ToolResult:
    directory = ws.resolve(args.path)
    if not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise ToolError(f"{args.path!r} {problem}")
    paths = _walk(directory, args.recursive)
    truncated = len(paths) > MAX_LIST_ENTRIES
    entries = [_entry(ws, p) for p in paths[:MAX_LIST_ENTRIES]]
    data: dict[str, Any] = {"path": ws.relative(directory), "entries": entries}
    if truncated:
        data["truncated"] = True
    more = f" (first {MAX_LIST_ENTRIES} shown)" if truncated else ""
    return ToolResult(f"{len(entries)} entries in {args.path}{more}", [data_output("list", data)])


def _delete(ws: Workspace, args: DeleteArgs) -> ToolResult:
    target = ws.resolve_entry(args.path)
    if not os.path.lexists(target):
        raise ToolError(f"no such file or directory: {args.path!r}")
    if target.is_symlink():
        target.unlink()
        kind = "symbolic link"
    elif not target.is_dir():
        target.unlink()
        kind = "file"
    elif args.recursive:
        shutil.rmtree(target)
        kind = "directory"
    else:
        try:
            target.rmdir()
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise ToolError(
                    f"directory {args.path!r} is not empty (pass recursive=true to delete it all)"
                ) from None
            raise
        kind = "directory"
    return ToolResult(f"deleted {kind} {args.path}", [data_output("delete", {"path": args.path, "deleted": kind})])


def make_tools(workspace: Workspace) -> list[Tool]:
    """The five file tools, bound to one workspace (an assistant may combine them with others)."""
    ws = workspace

    @in_thread
    def read(args: ReadArgs) -> ToolResult:
        return _read(ws, args)

    @in_thread
    def write(args: WriteArgs) -> ToolResult:
        return _write(ws, args)

    @in_thread
    def edit(args: EditArgs) -> ToolResult:
        return _edit(ws, args)

    @in_thread
    def list_(args: ListArgs) -> ToolResult:
        return _list(ws, args)

    @in_thread
    def delete(args: DeleteArgs) -> ToolResult:
        return _delete(ws, args)

    limit = f"Files over {human_size(ws.max_file_bytes)} are refused."
    return [
        Tool(
            "read",
            f"Read a file of the workspace: UTF-8 text comes back as text, anything else as a file with its media "
            f"type. {limit}",
            ReadArgs,
            read,
            tags=["files", "read"],
            examples=["show me notes.txt"],
            example_arguments={"path": "notes.txt"},
            output_modes=["text/plain", "application/octet-stream"],
        ),
        Tool(
            "write",
            f"Create or replace a file (parent directories are created). {limit}",
            WriteArgs,
            write,
            tags=["files", "write"],
            examples=["write a hello world script to hello.py"],
            example_arguments={"path": "hello.py", "content": "print('hello')\n"},
            accepts_files=True,
        ),
        Tool(
            "edit",
            "Find and replace text in a file. old_text must occur exactly once, unless count (the number "
            "expected) or replace_all is given; otherwise nothing is changed and the reason is reported.",
            EditArgs,
            edit,
            tags=["files", "edit"],
            examples=["in hello.py, change 'hello' to 'goodbye'"],
            example_arguments={"path": "hello.py", "old_text": "hello", "new_text": "goodbye"},
        ),
        Tool(
            "list",
            f"List a directory of the workspace (type and size of each entry; at most {MAX_LIST_ENTRIES}).",
            ListArgs,
            list_,
            tags=["files", "list"],
            examples=["what files are in the workspace?"],
            example_arguments={"path": ".", "recursive": True},
        ),
        Tool(
            "delete",
            "Delete a file, a symbolic link (not what it points to), an empty directory, or with recursive=true "
            "a directory and everything in it.",
            DeleteArgs,
            delete,
            tags=["files", "delete"],
            examples=["delete old.txt"],
            example_arguments={"path": "old.txt"},
        ),
    ]


INSTRUCTIONS = """You manage the files of one workspace directory with your tools (read, write, edit, list, delete).
Paths are relative to the workspace; you cannot reach anything outside it. Prefer edit for small changes to an
existing file (read it first and copy the text to replace exactly). When a tool reports an error, correct the call
or explain the problem. Finish with a short answer saying what you did."""


@dataclass
class FilesAgent(ToolAgent):
    """The files agent; ``workspace`` is the directory it works in."""

    workspace: Workspace | None = None


def make_agent(
    workspace: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, model: ModelSettings | None = None
) -> FilesAgent:
    """A files agent on ``workspace`` (created if missing); ``model`` overrides the ``A2A_MODEL*`` settings."""
    ws = Workspace(workspace, max_file_bytes=max_file_bytes)
    return FilesAgent(
        name="Files",
        description=(
            "Reads, writes, edits, lists and deletes files inside one workspace directory; paths that would "
            "leave it are refused."
        ),
        tools=make_tools(ws),
        instructions=INSTRUCTIONS,
        default_output_modes=["application/json", "text/plain", "application/octet-stream"],
        workspace=ws,
        model=model,
    )


def _default_workspace() -> Path:
    configured = os.environ.get(WORKSPACE_ENV, "").strip()
    return Path(configured).expanduser() if configured else Path(tempfile.mkdtemp(prefix="a2a-files-"))


#: The agent ``a2a serve agents.files:agent`` serves; made on first access by ``__getattr__``.
agent: FilesAgent


def __getattr__(name: str) -> FilesAgent:
    """``agent`` is made on first use (``a2a serve agents.files:agent``), not on import, so that
    importing this module for ``make_tools`` creates no directory."""
    if name != "agent":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    built = make_agent(_default_workspace())
    assert built.workspace is not None
    sys.stderr.write(f"a2a files agent: workspace {built.workspace.root}\n")  # stdout may carry the protocol
    globals()["agent"] = built
    return built
