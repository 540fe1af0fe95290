"""The code agent: runs, limits, truncation, files, cancellation; directly and over HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import agents.code
from a2a import A2AClient, A2AServer, RetryPolicy, ServerConfig
from a2a.metadata import USAGE_KEY
from a2a.types import Artifact, Part, Task, TaskState
from agents._tools import ArgumentError, ToolError, ToolResult
from agents.code import CodeAgent, Limits, make_agent
from tests.fakes import FakeOpenAI, Reply, Step, ToolCalls, call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups and resource limits")

LIMITS = Limits(timeout=20, cpu_seconds=20, memory_bytes=256 * 1024 * 1024, output_bytes=4096, max_concurrent=2)
WAIT = 30.0


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    directory = tmp_path / "runs"
    directory.mkdir()
    return directory


@pytest.fixture
def code(runs: Path) -> CodeAgent:
    return make_agent(LIMITS, work_root=runs)


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("A2A_MODEL", raising=False)


async def run(agent: CodeAgent, source: str, **arguments: Any) -> tuple[ToolResult, dict[str, Any]]:
    async with asyncio.timeout(WAIT):
        result = await agent.call("run_python", {"code": source, **arguments})
    summary = result.outputs[0].parts[0].data
    assert result.outputs[0].name == "result"
    return result, summary


def text(result: ToolResult, name: str) -> str:
    part = next(o.parts[0] for o in result.outputs if o.name == name)
    assert isinstance(part.text, str)
    return part.text


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return state not in ("Z", "X")


async def read_fifo(path: Path) -> str:
    """Wait (bounded) until the code opens ``path`` for writing, and return what it wrote."""
    async with asyncio.timeout(WAIT):
        return await asyncio.to_thread(path.read_text)


async def assert_serves(agent: CodeAgent) -> None:
    result, summary = await run(agent, "print(6 * 7)")
    assert summary["ok"] and text(result, "stdout") == "42\n"


# ---- runs ----------------------------------------------------------------------------------


async def test_hello_world(code: CodeAgent, runs: Path) -> None:
    result, summary = await run(code, "print('hello'); import sys; print('warn', file=sys.stderr)")
    assert result.summary == "exit status 0"
    assert summary["ok"] is True and summary["exitCode"] == 0 and summary["timedOut"] is False
    assert (text(result, "stdout"), text(result, "stderr")) == ("hello\n", "warn\n")
    assert not any(runs.iterdir())  # noqa: ASYNC240 - the run's directory is gone


async def test_failure_reports_exit_status_and_traceback(code: CodeAgent) -> None:
    result, summary = await run(code, "raise SystemExit(3)")
    assert (result.summary, summary["exitCode"], summary["ok"]) == ("exit status 3", 3, False)
    result, summary = await run(code, "1 / 0")
    assert summary["exitCode"] == 1
    assert text(result, "stderr").rstrip().endswith("ZeroDivisionError: division by zero")


async def test_environment_is_stripped_and_directory_is_fresh(code: CodeAgent, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    monkeypatch.setenv("A2A_TOKEN", "do-not-leak")
    source = "import os, json; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'ls': os.listdir()}))"
    result, _ = await run(code, source)
    seen = __import__("json").loads(text(result, "stdout"))
    assert sorted(seen["env"]) == ["HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]
    assert "do-not-leak" not in text(result, "stdout")
    assert seen["env"]["HOME"] == seen["cwd"] and seen["ls"] == []
    again, _ = await run(code, "import os; print(os.getcwd())")
    assert text(again, "stdout").strip() != seen["cwd"]


async def test_isolated_mode(code: CodeAgent) -> None:
    result, _ = await run(code, "import sys; print(sys.flags.isolated, sys.flags.utf8_mode, repr(sys.stdin.read()))")
    assert text(result, "stdout") == "1 1 ''\n"


async def test_files_written_are_returned_with_media_types(code: CodeAgent) -> None:
    source = (
        "import os\n"
        "open('report.csv', 'w').write('a,b\\n1,2\\n')\n"
        "os.mkdir('img'); open('img/dot.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n\\x00')\n"
        "open('huge.bin', 'wb').write(b'x' * (2 * 1024 * 1024))\n"
        "os.symlink('/etc/passwd', 'link')\n"
    )
    result, summary = await run(code, source)
    files = {o.name: o.parts[0] for o in result.outputs[3:]}
    assert files["file:report.csv"].text == "a,b\n1,2\n"
    assert files["file:report.csv"].media_type == "text/csv"
    assert (files["file:img/dot.png"].raw, files["file:img/dot.png"].media_type) == (
        b"\x89PNG\r\n\x1a\n\x00",
        "image/png",
    )
    assert [f["path"] for f in summary["files"]] == ["report.csv", "img/dot.png"]
    skipped = {f["path"]: f["reason"] for f in summary["skippedFiles"]}
    assert skipped == {"huge.bin": "too large to return", "link": "not a regular file"}


# ---- limits ---------------------------------------------------------------------------------


async def test_infinite_loop_is_stopped_by_the_timeout(code: CodeAgent) -> None:
    result, summary = await run(code, "while True: pass", timeout=1)
    assert summary["timedOut"] is True and summary["exitCode"] is None and summary["ok"] is False
    assert result.summary == "timed out after 1s (killed)"
    await assert_serves(code)


async def test_cpu_limit(runs: Path) -> None:
    agent = make_agent(Limits(timeout=20, cpu_seconds=1), work_root=runs)
    result, summary = await run(agent, "while True: pass")
    assert (summary["limit"], summary["signal"], summary["timedOut"]) == ("cpu", "SIGXCPU", False)
    assert result.summary == "killed by the CPU time limit (1s)"


async def test_memory_bomb_is_stopped_by_the_limit(code: CodeAgent) -> None:
    result, summary = await run(code, "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))")
    assert summary["limit"] == "memory" and summary["exitCode"] == 1
    assert result.summary.startswith("stopped by the memory limit (256 MiB)")
    await assert_serves(code)


async def test_output_flood_is_truncated_and_marked(code: CodeAgent) -> None:
    result, summary = await run(
        code, "import sys\nfor i in range(200_000): print(i)\nprint('the end', file=sys.stderr)"
    )
    stdout = text(result, "stdout")
    total = sum(len(f"{i}\n") for i in range(200_000))
    assert summary["stdoutTruncated"] is True and summary["stdoutBytes"] == total
    assert len(stdout.encode()) < 4096 + 200
    assert stdout.startswith("0\n1\n2\n")
    assert "bytes omitted here ...]\n" in stdout and stdout.endswith("199999\n")
    assert f"of {total} bytes" in stdout
    assert text(result, "stderr") == "the end\n" and summary["stderrTruncated"] is False
    await assert_serves(code)


async def test_file_size_limit(runs: Path) -> None:
    agent = make_agent(Limits(file_bytes=1024 * 1024), work_root=runs)
    result, summary = await run(agent, "open('big', 'wb').write(b'x' * (2 * 1024 * 1024))")
    assert summary["limit"] == "file size"
    assert "File too large" in text(result, "stderr")


async def test_children_of_the_code_are_killed_with_it(code: CodeAgent) -> None:
    source = "import subprocess\np = subprocess.Popen(['sleep', '60'])\nprint(p.pid)"
    result, _ = await run(code, source)
    assert not alive(int(text(result, "stdout")))


async def test_arguments_over_the_limits_are_rejected(code: CodeAgent) -> None:
    with pytest.raises(ArgumentError, match="'timeout' 99s is over this agent's limit of 20s"):
        await code.call("run_python", {"code": "pass", "timeout": 99})
    with pytest.raises(ArgumentError, match=r"'code' is .* bytes, over the limit of 256 KiB"):
        await code.call("run_python", {"code": "#" * (300 * 1024)})
    with pytest.raises(ArgumentError, match=r"give 'code' \(the program\) or 'file'"):
        await code.call("run_python", {})


async def test_concurrent_runs_over_the_limit_are_refused(runs: Path, tmp_path: Path) -> None:
    agent = make_agent(Limits(max_concurrent=1), work_root=runs)
    ready, gate = tmp_path / "ready", tmp_path / "gate"
    os.mkfifo(ready)
    os.mkfifo(gate)
    source = f"open({str(ready)!r}, 'w').write('up')\nprint(open({str(gate)!r}).read())"
    first = asyncio.ensure_future(run(agent, source))
    try:
        assert await read_fifo(ready) == "up"
        with pytest.raises(ToolError, match="busy: 1 runs in progress"):
            await agent.call("run_python", {"code": "pass"})
    finally:
        await asyncio.wait_for(asyncio.to_thread(gate.write_text, "go"), WAIT)
    result, _ = await first
    assert text(result, "stdout") == "go\n"
    await assert_serves(agent)


async def test_cancellation_kills_the_process(code: CodeAgent, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    source = f"import os, time\nopen({str(ready)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)"
    running = asyncio.ensure_future(code.call("run_python", {"code": source}))
    pid = int(await read_fifo(ready))
    assert alive(pid)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert not alive(pid)


# ---- the card ------------------------------------------------------------------------------


def test_card(code: CodeAgent) -> None:
    card = code.build_card([])
    [skill] = card.skills
    assert skill.id == "run_python"
    assert "Arguments: code (string or null, default null)" in skill.description
    assert "file (string or null, default null): the name of a file sent with the message" in skill.description
    assert skill.examples == [
        "compute the 30th Fibonacci number with Python",
        '{"tool": "run_python", "arguments": {"code": "print(sum(range(10)))"}}',
    ]
    assert skill.input_modes == ["application/json", "text/plain", "*/*"]  # files sent with the message


# ---- over HTTP ------------------------------------------------------------------------------


@pytest.fixture
async def client(code: CodeAgent) -> AsyncIterator[A2AClient]:
    async with A2AServer(code, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as c:
            yield c


def run_call(source: str, **arguments: Any) -> list[Part]:
    return [Part(data={"tool": "run_python", "arguments": {"code": source, **arguments}})]


async def send(client: A2AClient, content: str | list[Part]) -> Task:
    task = await client.send(content)
    assert isinstance(task, Task)
    return task


def artifact(task: Task, name: str) -> Artifact:
    return next(a for a in task.artifacts or [] if a.name == name)


async def assert_still_serving(client: A2AClient) -> None:
    task = await send(client, run_call("print(6 * 7)"))
    assert task.status.state == TaskState.COMPLETED
    assert artifact(task, "stdout").parts[0].text == "42\n"


async def test_structured_run_over_http(client: A2AClient) -> None:
    task = await send(client, run_call("open('out.txt', 'w').write('hi'); print('done')"))
    assert task.status.state == TaskState.COMPLETED
    assert task.status.message is not None and task.status.message.text == "exit status 0"
    assert [a.name for a in task.artifacts or []] == ["result", "stdout", "stderr", "file:out.txt"]
    assert artifact(task, "result").parts[0].data["exitCode"] == 0
    assert artifact(task, "stdout").parts[0].text == "done\n"
    assert artifact(task, "file:out.txt").parts[0].text == "hi"


@pytest.mark.parametrize(
    ("source", "arguments", "expected"),
    [
        pytest.param("while True: pass", {"timeout": 1}, {"timedOut": True}, id="infinite-loop"),
        pytest.param("b = []\nwhile True: b.append(bytearray(10**7))", {}, {"limit": "memory"}, id="memory-bomb"),
        pytest.param("print('x' * 10**6)", {}, {"stdoutTruncated": True}, id="output-flood"),
    ],
)
async def test_runaway_code_is_stopped_and_the_agent_keeps_serving(
    client: A2AClient, source: str, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    task = await send(client, run_call(source, **arguments))
    assert task.status.state == TaskState.COMPLETED
    summary = artifact(task, "result").parts[0].data
    assert {k: summary[k] for k in expected} == expected
    await assert_still_serving(client)


async def test_invalid_arguments_over_http_are_rejected(client: A2AClient) -> None:
    task = await send(client, run_call("pass", timeout=-1))
    assert task.status.state == TaskState.REJECTED
    assert task.status.message is not None
    assert "run_python: invalid arguments: 'timeout' Input should be greater than 0" in task.status.message.text


async def test_cancel_over_http_kills_the_process(client: A2AClient, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    os.mkfifo(ready)
    source = f"import os, time\nopen({str(ready)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)"
    started = await client.send(run_call(source), return_immediately=True)
    assert isinstance(started, Task)
    pid = int(await read_fifo(ready))
    canceled = await client.cancel_task(started.id)
    assert canceled.status.state == TaskState.CANCELED
    assert not alive(pid)
    await assert_still_serving(client)


async def test_stdout_streams_as_it_comes_and_the_result_stays(client: A2AClient, tmp_path: Path) -> None:
    """WORKING as the run starts, then each line of stdout while the program still runs (it
    waits for the test to have seen its first line), then the usual final result."""
    go_on = tmp_path / "go-on"
    os.mkfifo(go_on)
    source = f"print('first line', flush=True)\nopen({str(go_on)!r}).read()\nprint('second line')"
    events = client.stream(run_call(source))
    seen: list[str] = []
    task_id = ""
    async with asyncio.timeout(WAIT):
        async for event in events:
            payload = event.payload
            if isinstance(payload, Task):
                assert payload.status.state in (TaskState.SUBMITTED, TaskState.WORKING)
                task_id = payload.id
                continue
            status = getattr(payload, "status", None)
            if status is not None and status.message is not None:
                seen.append(status.message.text)
            if seen and seen[-1] == "first line\n":
                await asyncio.to_thread(go_on.write_text, "go")
            if status is not None and status.state == TaskState.COMPLETED:
                break
    assert seen[0] == "running run_python", "WORKING is reported as the run starts"
    assert seen[1:3] == ["first line\n", "second line\n"], seen
    assert seen[-1] == "exit status 0"
    task = await client.get_task(task_id)
    assert artifact(task, "stdout").parts[0].text == "first line\nsecond line\n"


async def test_natural_language_runs_code_and_reports_usage(code: CodeAgent) -> None:
    script: list[Step] = [
        ToolCalls(call("run_python", code="print(2 ** 10)"), input_tokens=100, output_tokens=20),
        Reply("2 to the 10th is 1024.", input_tokens=150, output_tokens=10),
    ]
    async with FakeOpenAI(script) as model:
        code.model = model.settings(input_price=1.0, output_price=2.0)
        async with A2AServer(code, config=ServerConfig(port=0)) as server:
            assert server.url is not None
            async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as c:
                task = await send(c, "what is 2 to the 10th?")
    assert task.status.state == TaskState.COMPLETED
    assert artifact(task, "stdout").parts[0].text == "1024\n"
    assert artifact(task, "answer").parts[0].text == "2 to the 10th is 1024."
    assert task.metadata is not None
    usage = task.metadata[USAGE_KEY]
    assert (usage["inputTokens"], usage["outputTokens"], usage["model"]) == (250, 30, "fake-model")
    assert usage["costUsd"] == pytest.approx((250 * 1.0 + 30 * 2.0) / 1_000_000)
    shown = model.requests[1].last_message()["content"]
    assert shown.startswith("exit status 0\n--- stdout ---\n1024\n")


async def test_a_child_that_escapes_the_group_does_not_hang_the_run(
    code: CodeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child in a session of its own survives the group kill (documented); the run still ends."""
    monkeypatch.setattr(agents.code, "DRAIN_SECONDS", 0.5)
    source = (
        "import subprocess\np = subprocess.Popen(['sleep', '60'], start_new_session=True)\nprint(p.pid, flush=True)"
    )
    result, summary = await run(code, source)
    escaped = int(text(result, "stdout"))
    try:
        assert summary["exitCode"] == 0
        await assert_serves(code)
    finally:
        os.kill(escaped, signal.SIGKILL)  # the test's own grandchild, by its pid


# ---- over stdio ---------------------------------------------------------------------------------


@pytest.mark.slow
async def test_over_stdio_structured_and_natural_language(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", "agents.code:agent", "--stdio"]
    script: list[Step] = [ToolCalls(call("run_python", code="print(sum(range(5)))")), Reply("The sum is 10.")]
    async with FakeOpenAI(script) as model:
        for name, value in model.env().items():
            monkeypatch.setenv(name, value)
        async with A2AClient.stdio(argv, retry=RetryPolicy.none(), timeout=WAIT) as c:
            timed_out = await send(c, run_call("while True: pass", timeout=1))
            assert timed_out.status.state == TaskState.COMPLETED, timed_out.status
            assert artifact(timed_out, "result").parts[0].data["timedOut"] is True
            await assert_still_serving(c)
            asked = await send(c, "what is 0+1+2+3+4?")
    assert asked.status.state == TaskState.COMPLETED
    assert artifact(asked, "stdout").parts[0].text == "10\n"
    assert artifact(asked, "answer").parts[0].text == "The sum is 10."
    assert (asked.metadata or {})[USAGE_KEY]["outputTokens"] == 14
