"""The files agent: each tool directly, the workspace boundary, and the agent over HTTP."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, RetryPolicy, ServerConfig
from a2a.metadata import USAGE_KEY
from a2a.types import Part, Task, TaskState
from agents._tools import ArgumentError, ToolError
from agents.files import FilesAgent, make_agent
from tests.fakes import FakeOpenAI, Reply, Step, ToolCalls, call

SECRET = b"outside the workspace\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_bytes(SECRET)
    return directory


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path / "ws"


@pytest.fixture
def files(ws: Path) -> FilesAgent:
    return make_agent(ws, max_file_bytes=1000)


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A2A_MODEL", raising=False)


def snapshot(directory: Path) -> dict[str, tuple[bytes | str, int]]:
    """Every entry under ``directory`` with its content (or link target) and mode."""
    found: dict[str, tuple[bytes | str, int]] = {}
    for path in sorted(directory.rglob("*")):
        info = path.lstat()
        content: bytes | str = os.readlink(path) if path.is_symlink() else path.read_bytes() if path.is_file() else ""
        found[str(path.relative_to(directory))] = (content, info.st_mode)
    return found


def data_of(result: Any, name: str) -> Any:
    return next(o.parts[0].data for o in result.outputs if o.name == name)


# ---- the tools, directly ------------------------------------------------------------------


async def test_write_then_read_text(files: FilesAgent, ws: Path) -> None:
    written = await files.call("write", {"path": "notes/today.md", "content": "# hi\n"})
    assert data_of(written, "write") == {"path": "notes/today.md", "bytes": 5, "created": True}
    assert (ws / "notes" / "today.md").read_text() == "# hi\n"
    result = await files.call("read", {"path": "notes/today.md"})
    part = result.outputs[0].parts[0]
    assert (part.text, part.media_type, part.filename) == ("# hi\n", "text/markdown", "notes/today.md")
    again = await files.call("write", {"path": "notes/today.md", "content": "# bye\n"})
    assert data_of(again, "write")["created"] is False


async def test_binary_round_trip_comes_back_raw_with_media_type(files: FilesAgent, ws: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00binary"
    await files.call("write", {"path": "logo.png", "content": base64.b64encode(png).decode(), "encoding": "base64"})
    assert (ws / "logo.png").read_bytes() == png
    part = (await files.call("read", {"path": "logo.png"})).outputs[0].parts[0]
    assert (part.raw, part.media_type) == (png, "image/png")


async def test_write_without_overwrite_keeps_the_file(files: FilesAgent, ws: Path) -> None:
    await files.call("write", {"path": "a.txt", "content": "one"})
    with pytest.raises(ToolError, match="already exists"):
        await files.call("write", {"path": "a.txt", "content": "two", "overwrite": False})
    assert (ws / "a.txt").read_text() == "one"


async def test_edit_replaces_a_unique_text(files: FilesAgent, ws: Path) -> None:
    (ws / "hello.py").write_text("print('hello')\n")
    result = await files.call("edit", {"path": "hello.py", "old_text": "hello", "new_text": "goodbye"})
    assert data_of(result, "edit") == {"path": "hello.py", "replacements": 1}
    assert (ws / "hello.py").read_text() == "print('goodbye')\n"


async def test_edit_fails_when_the_text_is_missing(files: FilesAgent, ws: Path) -> None:
    (ws / "a.txt").write_text("abc")
    with pytest.raises(ToolError, match="not found"):
        await files.call("edit", {"path": "a.txt", "old_text": "xyz", "new_text": "q"})
    assert (ws / "a.txt").read_text() == "abc"


async def test_edit_refuses_an_ambiguous_text_unless_told_how_many(files: FilesAgent, ws: Path) -> None:
    (ws / "a.txt").write_text("x = 1\nx = 1\n")
    edit = {"path": "a.txt", "old_text": "x = 1", "new_text": "x = 2"}
    with pytest.raises(ToolError, match="ambiguous: found 2 times"):
        await files.call("edit", edit)
    with pytest.raises(ToolError, match=r"found 2 times .* not the 3 expected"):
        await files.call("edit", {**edit, "count": 3})
    assert (ws / "a.txt").read_text() == "x = 1\nx = 1\n"
    result = await files.call("edit", {**edit, "count": 2})
    assert data_of(result, "edit")["replacements"] == 2
    await files.call("edit", {"path": "a.txt", "old_text": "x = 2", "new_text": "y", "replace_all": True})
    assert (ws / "a.txt").read_text() == "y\ny\n"


async def test_list_flat_and_recursive(files: FilesAgent, ws: Path, outside: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("pass\n")
    (ws / "README").write_text("r")
    (ws / "out").symlink_to(outside)
    flat = data_of(await files.call("list", {}), "list")
    assert flat["entries"] == [
        {"path": "README", "type": "file", "bytes": 1},
        {"path": "out", "type": "symlink"},
        {"path": "src", "type": "directory"},
    ]
    deep = data_of(await files.call("list", {"path": ".", "recursive": True}), "list")
    assert [e["path"] for e in deep["entries"]] == ["README", "out", "src", "src/main.py"]  # the link is not followed


async def test_delete_file_directory_and_link(files: FilesAgent, ws: Path, outside: Path) -> None:
    (ws / "d" / "e").mkdir(parents=True)
    (ws / "d" / "e" / "f.txt").write_text("f")
    (ws / "gone.txt").write_text("g")
    (ws / "link").symlink_to(outside / "secret.txt")
    await files.call("delete", {"path": "gone.txt"})
    with pytest.raises(ToolError, match="not empty"):
        await files.call("delete", {"path": "d"})
    await files.call("delete", {"path": "d", "recursive": True})
    result = await files.call("delete", {"path": "link"})
    assert data_of(result, "delete")["deleted"] == "symbolic link"
    assert not any(ws.iterdir())  # noqa: ASYNC240
    assert (outside / "secret.txt").read_bytes() == SECRET
    with pytest.raises(ToolError, match="no such file"):
        await files.call("delete", {"path": "gone.txt"})
    with pytest.raises(ArgumentError, match="workspace itself"):
        await files.call("delete", {"path": "."})


async def test_size_limit_on_write_and_read(files: FilesAgent, ws: Path) -> None:
    with pytest.raises(ToolError, match="over this workspace's limit"):
        await files.call("write", {"path": "big.txt", "content": "x" * 1001})
    assert not (ws / "big.txt").exists()
    (ws / "big.txt").write_text("x" * 1001)
    with pytest.raises(ToolError, match="1001 bytes, over"):
        await files.call("read", {"path": "big.txt"})
    with pytest.raises(ToolError, match="over"):
        await files.call("edit", {"path": "big.txt", "old_text": "x", "new_text": "y", "replace_all": True})


async def test_read_refuses_directories_and_missing_files(files: FilesAgent, ws: Path) -> None:
    (ws / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await files.call("read", {"path": "d"})
    with pytest.raises(ToolError, match="no such file"):
        await files.call("read", {"path": "nope.txt"})


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "'path' is required"),
        ({"path": 3}, "'path' Input should be a valid string"),
        ({"path": "a", "colour": "red"}, "'colour' is not an argument"),
        ({"path": ""}, "'path' String should have at least 1 character"),
    ],
)
async def test_invalid_arguments_name_the_argument(files: FilesAgent, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        await files.call("read", arguments)


# ---- the workspace boundary -----------------------------------------------------------------

ESCAPES = [
    pytest.param("../secret.txt", "'..'", id="dotdot"),
    pytest.param("a/../../outside/secret.txt", "'..'", id="nested-dotdot"),
    pytest.param("/etc/passwd", "relative", id="absolute"),
    pytest.param("~/secret.txt", "relative", id="home"),
    pytest.param("x" * 256, "longer than 255 bytes", id="long-name"),
    pytest.param("/".join(["abc"] * 300), "at most 1024 characters", id="long-path"),
    pytest.param("a\x00b", "NUL", id="nul"),
    pytest.param("out/secret.txt", "outside the workspace", id="symlinked-dir"),
    pytest.param("alias.txt", "outside the workspace", id="symlinked-file"),
    pytest.param("dangling.txt", "outside the workspace", id="dangling-link"),
]


def _calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("read", {"path": path}),
        ("write", {"path": path, "content": "pwned"}),
        ("edit", {"path": path, "old_text": "outside", "new_text": "pwned"}),
        ("list", {"path": path}),
        ("delete", {"path": path, "recursive": True}),
    ]


@pytest.mark.parametrize(("path", "message"), ESCAPES)
async def test_escape_attempts_are_refused_and_touch_nothing(
    files: FilesAgent, ws: Path, outside: Path, path: str, message: str
) -> None:
    (ws / "out").symlink_to(outside)
    (ws / "alias.txt").symlink_to(outside / "secret.txt")
    (ws / "dangling.txt").symlink_to(outside / "new.txt")
    before_outside, before_ws = snapshot(outside), snapshot(ws)
    for tool, arguments in _calls(path):
        if tool == "delete" and path in ("alias.txt", "dangling.txt"):
            continue  # deleting a link removes the link itself, which is inside (tested above)
        with pytest.raises(ArgumentError, match=message):
            await files.call(tool, arguments)
    assert snapshot(outside) == before_outside
    assert snapshot(ws) == before_ws


async def test_absolute_path_to_the_workspace_itself_is_refused(files: FilesAgent, ws: Path) -> None:
    with pytest.raises(ArgumentError, match="relative"):
        await files.call("write", {"path": str(ws / "a.txt"), "content": "x"})
    assert not (ws / "a.txt").exists()


async def test_links_that_stay_inside_are_followed(files: FilesAgent, ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "real" / "a.txt").write_text("inside")
    (ws / "alias").symlink_to(ws / "real")
    result = await files.call("read", {"path": "alias/a.txt"})
    assert result.outputs[0].parts[0].text == "inside"


async def test_a_symlink_loop_is_refused(files: FilesAgent, ws: Path) -> None:
    (ws / "loop").symlink_to(ws / "loop")
    with pytest.raises(ArgumentError, match=r"cannot be resolved|outside"):
        await files.call("read", {"path": "loop/x"})


# ---- the card ------------------------------------------------------------------------------


def test_card_has_one_skill_per_tool_with_arguments_and_a_structured_example(files: FilesAgent) -> None:
    card = files.build_card([])
    assert [s.id for s in card.skills] == ["read", "write", "edit", "list", "delete"]
    assert card.default_input_modes == ["application/json", "text/plain"]
    for skill in card.skills:
        files_sent = ["*/*"] if skill.id == "write" else []  # write saves a file sent with the message
        assert skill.input_modes == ["application/json", "text/plain", *files_sent]
        assert skill.output_modes
        assert "Arguments: path (string" in skill.description
        assert skill.tags[0] == "files"
        structured = json.loads(skill.examples[-1]) if skill.examples else {}
        assert structured["tool"] == skill.id
        files.tool(skill.id).validate(structured["arguments"])  # the example is valid


# ---- over HTTP ------------------------------------------------------------------------------


@pytest.fixture
async def client(files: FilesAgent) -> AsyncIterator[A2AClient]:
    async with A2AServer(files, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=30) as c:
            yield c


def tool_call(tool: str, **arguments: Any) -> list[Part]:
    return [Part(data={"tool": tool, "arguments": arguments})]


async def send(client: A2AClient, content: str | list[Part]) -> Task:
    task = await client.send(content)
    assert isinstance(task, Task)
    return task


def status_text(task: Task) -> str:
    assert task.status.message is not None
    return task.status.message.text


async def test_structured_write_read_over_http(client: A2AClient, ws: Path) -> None:
    written = await send(client, tool_call("write", path="hello.py", content="print('hi')\n"))
    assert written.status.state == TaskState.COMPLETED
    assert status_text(written) == "created hello.py (12 bytes)"
    assert (ws / "hello.py").read_text() == "print('hi')\n"
    read = await send(client, tool_call("read", path="hello.py"))
    assert read.status.state == TaskState.COMPLETED
    assert read.artifacts is not None
    part = read.artifacts[0].parts[0]
    assert (read.artifacts[0].name, part.text, part.media_type) == ("hello.py", "print('hi')\n", "text/x-python")


async def test_escape_over_http_is_rejected(client: A2AClient, ws: Path, outside: Path) -> None:
    before = snapshot(outside)
    task = await send(client, tool_call("write", path="../outside/secret.txt", content="pwned"))
    assert task.status.state == TaskState.REJECTED
    assert "'path'" in status_text(task) and "'..'" in status_text(task)
    assert snapshot(outside) == before
    ok = await send(client, tool_call("list"))
    assert ok.status.state == TaskState.COMPLETED


async def test_failures_over_http(client: A2AClient, ws: Path) -> None:
    (ws / "a.txt").write_text("same same")
    ambiguous = await send(client, tool_call("edit", path="a.txt", old_text="same", new_text="other"))
    assert ambiguous.status.state == TaskState.FAILED
    assert "edit: old_text is ambiguous: found 2 times" in status_text(ambiguous)
    unknown = await send(client, tool_call("format_disk"))
    assert unknown.status.state == TaskState.REJECTED
    assert "unknown tool 'format_disk'; this agent offers: read, write, edit, list, delete" in status_text(unknown)
    shapeless = await send(client, [Part(data={"path": "a.txt"})])
    assert shapeless.status.state == TaskState.REJECTED
    assert '{"tool": "<tool name>", "arguments": {...}}' in status_text(shapeless)


async def test_text_without_a_model_fails_and_explains_both_ways(client: A2AClient) -> None:
    task = await send(client, "please list my files")
    assert task.status.state == TaskState.FAILED
    text = status_text(task)
    assert "No model is configured" in text
    assert '{"tool": "read", "arguments": {"path": "notes.txt"}}' in text
    assert "A2A_MODEL" in text and "OPENAI_API_KEY" in text
    assert not task.artifacts


async def test_natural_language_writes_a_file_and_reports_usage(
    files: FilesAgent, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script: list[Step] = [ToolCalls(call("write", path="poem.txt", content="roses\n")), Reply("I wrote poem.txt.")]
    async with FakeOpenAI(script) as model:
        for name, value in model.env().items():
            monkeypatch.setenv(name, value)
        async with A2AServer(files, config=ServerConfig(port=0)) as server:
            assert server.url is not None
            async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=30) as c:
                task = await send(c, "write a two-word poem to poem.txt")
    assert task.status.state == TaskState.COMPLETED, task.status
    assert (ws / "poem.txt").read_text() == "roses\n"
    assert task.artifacts is not None
    names = [a.name for a in task.artifacts]
    assert names == ["write", "answer"]
    assert task.artifacts[-1].parts[0].text == "I wrote poem.txt."
    assert task.metadata is not None
    assert task.metadata[USAGE_KEY] == {"inputTokens": 22, "outputTokens": 14, "model": "fake-model"}
    first, second = model.requests
    assert first.tool_names == ["read", "write", "edit", "list", "delete"]
    assert first.messages[0]["role"] == "system" and "workspace" in first.messages[0]["content"]
    assert first.messages[-1] == {"role": "user", "content": "write a two-word poem to poem.txt"}
    tool_result = second.last_message()
    assert tool_result["role"] == "tool" and "created poem.txt (6 bytes)" in tool_result["content"]


# ---- the module's own agent ---------------------------------------------------------------------


@pytest.mark.slow
def test_module_agent_uses_the_workspace_variable_and_logs_to_stderr(tmp_path: Path) -> None:
    workspace = tmp_path / "from-env"
    env = {**os.environ, "A2A_FILES_WORKSPACE": str(workspace)}
    code = "import sys, agents.files as f\nsys.stderr.write('imported\\n')\nprint(f.agent.workspace.root)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{workspace.resolve()}\n"  # nothing else on stdout
    assert done.stderr == f"imported\na2a files agent: workspace {workspace.resolve()}\n"  # made on first use
    assert workspace.is_dir()


# ---- over stdio ---------------------------------------------------------------------------------


@pytest.mark.slow
async def test_over_stdio_structured_and_natural_language(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``a2a serve agents.files:agent --stdio`` as a child: the workspace note goes to stderr, not the protocol."""
    workspace = tmp_path / "stdio-ws"
    monkeypatch.setenv("A2A_FILES_WORKSPACE", str(workspace))
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", "agents.files:agent", "--stdio"]
    script: list[Step] = [ToolCalls(call("read", path="hello.txt")), Reply("It says hi.")]
    async with FakeOpenAI(script) as model:
        for name, value in model.env().items():
            monkeypatch.setenv(name, value)
        async with A2AClient.stdio(argv, retry=RetryPolicy.none(), timeout=30) as c:
            card = await c.get_card()
            assert [s.id for s in card.skills] == ["read", "write", "edit", "list", "delete"]
            written = await send(c, tool_call("write", path="hello.txt", content="hi"))
            assert written.status.state == TaskState.COMPLETED
            assert (workspace / "hello.txt").read_text() == "hi"
            escaped = await send(c, tool_call("read", path="/etc/passwd"))
            assert escaped.status.state == TaskState.REJECTED
            asked = await send(c, "what does hello.txt say?")
    assert asked.status.state == TaskState.COMPLETED
    assert [a.name for a in asked.artifacts or []] == ["hello.txt", "answer"]
    assert (asked.metadata or {})[USAGE_KEY]["inputTokens"] == 22
