"""``a2a demo``: end to end as a subprocess, offline and with a (fake) model, and its parts.

The demo runs through the installed console script when ``a2a demo --help`` works (the entry
point ``demo = "supervisor.demo:register"`` is installed), else through ``python -m
supervisor.demo``. Every run gets a marker in its environment, which every process it starts
inherits; afterwards no process may still carry it (``/proc/PID/environ``), so nothing was left
behind, whatever its PID. Its temporary directory lives under a ``TMPDIR`` of the test's own,
which must be empty at the end.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from supervisor import demo
from supervisor.config import load_config
from supervisor.supervisor import Supervisor
from tests.fakes import FakeOpenAI, Reply, ToolCalls, call

ROOT = Path(__file__).resolve().parents[1]
#: Bounds every run of the demo (it takes a few seconds).
RUN_TIMEOUT = 60.0
MARKER_VAR = "A2A_DEMO_TEST_MARKER"
MODEL_VARS = ("A2A_MODEL", "A2A_MODEL_BASE_URL", "A2A_MODEL_API_KEY", "OPENAI_API_KEY")

pytestmark = [
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc (Linux)"),
    pytest.mark.slow,  # the demo starts its agents as processes
]


@functools.cache
def demo_command() -> tuple[str, ...]:
    """``a2a demo`` if the console script has the command, else ``python -m supervisor.demo``."""
    script = Path(sys.executable).with_name("a2a")
    if script.is_file():
        probe = subprocess.run(
            [str(script), "demo", "--help"], capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False
        )
        if probe.returncode == 0 and "--json" in probe.stdout:
            return (str(script), "demo")
    return (sys.executable, "-m", "supervisor.demo")


def processes_with(marker: str) -> list[int]:
    """PIDs of the processes (of this user) whose environment holds the marker."""
    wanted = f"{MARKER_VAR}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours
            continue
        if wanted in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


class Demo:
    """The environment of one demo run: no model, a marker, a TMPDIR and a working directory."""

    def __init__(self, tmp_path: Path) -> None:
        self.marker = uuid.uuid4().hex
        self.cwd = tmp_path / "cwd"
        self.tmpdir = tmp_path / "tmp"
        self.cwd.mkdir()
        self.tmpdir.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in MODEL_VARS}
        env.update({MARKER_VAR: self.marker, "TMPDIR": str(self.tmpdir), "COLUMNS": "200"})
        self.env = env

    def run(self, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*demo_command(), *argv],
            cwd=self.cwd,
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )

    def check_nothing_left(self) -> None:
        left = processes_with(self.marker)
        for pid in left:  # ours: started by the demo under test
            os.kill(pid, signal.SIGKILL)
        assert not left, f"processes left behind: {left}"
        assert list(self.tmpdir.iterdir()) == [], "the demo's temporary directory was not removed"
        assert list(self.cwd.iterdir()) == [], "the demo wrote into the working directory"


@pytest.fixture
def demo_env(tmp_path: Path) -> Iterator[Demo]:
    run = Demo(tmp_path)
    yield run
    for pid in processes_with(run.marker):  # a failed test must not leave them either
        os.kill(pid, signal.SIGKILL)


# ---- end to end, offline -------------------------------------------------------------------------


def test_demo_runs_end_to_end_offline_and_stops_everything(demo_env: Demo) -> None:
    proc = demo_env.run()
    out = proc.stdout
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{proc.stderr}"
    assert proc.stderr == ""
    # The agents started: name, binding, URL or command, PID.
    agents = {m[0]: m[1:] for m in re.findall(r"^  (files|web|code) +(\S+(?: \(\w+\))?)  (.+?)  pid (\d+)", out, re.M)}
    assert agents["files"][:1] == agents["web"][:1] == ("HTTP (JSONRPC)",), out
    assert agents["files"][1].startswith("http://127.0.0.1:") and agents["web"][1].startswith("http://127.0.0.1:")
    assert agents["code"][:2] == ("stdio", "a2a serve agents.code:agent --stdio"), out
    assert "no model: the offline planner plans" in out
    assert "TODO list (offline planner):" in out and "3. code · run_python" in out and "(after 2)" in out
    # The TODO list, each delegation, then the answer with the script's output.
    assert f"✓ 2. Write {demo.SCRIPT_NAME} to the workspace" in out
    assert f"files · Write {demo.SCRIPT_NAME}" in out and "· completed ·" in out
    assert f"code · run {demo.SCRIPT_NAME} with Python" in out
    assert "web · Fetch the demo page" in out
    answer = out[out.index("Answer") :]
    assert demo.EXPECTED_OUTPUT in answer
    assert "# a2a-net demo" in answer  # what the web agent fetched
    assert "completed · run " in answer
    stopped = re.search(r"Stopped files \(pid (\d+)\), web \(pid (\d+)\), code \(pid (\d+)\)", out)
    assert stopped, out
    assert sorted(stopped.groups()) == sorted(pid for *_, pid in agents.values())
    assert not any(alive(int(pid)) for pid in stopped.groups())
    demo_env.check_nothing_left()


def test_json_prints_json_lines_ending_with_the_answer_and_the_processes_stopped(demo_env: Demo) -> None:
    proc = demo_env.run("--json")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [line["event"] for line in lines]
    assert kinds[0] == "demo_started" and lines[0]["model"] is None
    assert kinds[-2:] == ["run_finished", "demo_stopped"]
    agents = {line["agent"]: line for line in lines if line["event"] == "demo_agent"}
    assert {name: a["binding"] for name, a in agents.items()} == {
        "files": "HTTP (JSONRPC)",
        "web": "HTTP (JSONRPC)",
        "code": "stdio",
    }
    assert agents["files"]["url"].startswith("http://127.0.0.1:") and agents["code"]["url"] is None
    assert agents["code"]["command"] == "a2a serve agents.code:agent --stdio"
    assert agents["code"]["skills"] == ["run_python"]
    plan = next(line for line in lines if line["event"] == "plan_updated")
    assert [(i["agent"], i["skill"], i["depends_on"]) for i in plan["items"]] == [
        ("web", "fetch", []),
        ("files", "write", []),
        ("code", "run_python", ["2"]),
    ]
    finished = lines[-2]
    assert finished["status"] == "completed" and demo.EXPECTED_OUTPUT in finished["final"]
    assert finished["metrics"]["delegations"] == 3
    stopped = lines[-1]["processes"]
    assert {p["pid"] for p in stopped} == {a["pid"] for a in agents.values()}
    assert all(p["returncode"] is not None and not alive(p["pid"]) for p in stopped)
    demo_env.check_nothing_left()


def test_a_failing_agent_gives_a_one_line_error_and_still_stops_everything(demo_env: Demo) -> None:
    # The web agent reads this at each call: its fetch fails, the run ends partial.
    proc = demo_env.run("--json", A2A_WEB_MAX_BYTES="not-a-number")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("a2a demo: the run ended partial: item 1 (web)")
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["event"] == "demo_stopped" and len(lines[-1]["processes"]) == 3
    assert demo.EXPECTED_OUTPUT in lines[-2]["final"]  # what did work is still reported
    demo_env.check_nothing_left()


# ---- with a model ---------------------------------------------------------------------------------


def fake_model(body: dict[str, Any]) -> ToolCalls | Reply:
    """Plans the demo's objective, accepts every result, and answers from what it was shown."""
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    prompt = str(body["messages"][-1]["content"])
    if tools == ["update_todo"]:
        page = re.search(r"Fetch the demo page (\S+) with", prompt)
        assert page is not None, prompt
        return ToolCalls(
            call(
                "update_todo",
                items=[
                    {"id": "page", "description": "fetch the page", "agent": "web", "skill": "fetch"}
                    | {"arguments": {"url": page.group(1)}},
                    {"id": "write", "description": "write the script", "agent": "files", "skill": "write"}
                    | {"arguments": {"path": demo.SCRIPT_NAME, "content": demo.SCRIPT}},
                    {"id": "run", "description": "run the script", "agent": "code", "skill": "run_python"}
                    | {"arguments": {"code": demo.SCRIPT}, "depends_on": ["write"]},
                ],
            )
        )
    if tools == ["reflect"]:
        ids = re.findall(r"^- (\S+) \[review\]", prompt, re.MULTILINE)
        return ToolCalls(*(call("reflect", item_id=i, verdict="accept", reason="fine") for i in ids))
    if demo.EXPECTED_OUTPUT in prompt:
        return Reply(f"The model read the script's output: {demo.EXPECTED_OUTPUT}")
    return Reply("The model was not shown the script's output.")


async def test_with_a_model_configured_the_model_plans_and_answers(demo_env: Demo) -> None:
    async with FakeOpenAI([fake_model] * 30) as model:
        process = await asyncio.create_subprocess_exec(
            *demo_command(),
            "--json",
            cwd=demo_env.cwd,
            env={**demo_env.env, **model.env()},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        requests = list(model.requests)
    assert process.returncode == 0, stderr.decode()
    lines = [json.loads(line) for line in stdout.decode().splitlines()]
    assert lines[0]["event"] == "demo_started" and lines[0]["model"] == model.model
    started = next(line for line in lines if line["event"] == "run_started")
    assert started["model"] == model.model
    assert any(line["event"] == "model_called" for line in lines)
    finished = next(line for line in lines if line["event"] == "run_finished")
    assert finished["final"] == f"The model read the script's output: {demo.EXPECTED_OUTPUT}"
    assert requests[0].tool_names == ["update_todo"]
    demo_env.check_nothing_left()


# ---- the parts -------------------------------------------------------------------------------------


def test_help_names_the_options() -> None:
    proc = subprocess.run([*demo_command(), "--help"], capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert proc.returncode == 0 and "--json" in proc.stdout and "--offline" in proc.stdout


def test_the_objective_is_one_step_per_line_and_each_fits_the_progress_display() -> None:
    lines = demo.objective("http://127.0.0.1:1/").splitlines()
    assert len(lines) == 3 and all(len(line) <= 120 for line in lines)  # descriptions are cut at 120
    assert lines[1].endswith(demo.SCRIPT) and lines[2].endswith(demo.SCRIPT)
    ran = subprocess.run([sys.executable, "-c", demo.SCRIPT], capture_output=True, text=True, timeout=30, check=True)
    assert ran.stdout.strip() == demo.EXPECTED_OUTPUT


async def test_an_agent_that_does_not_start_is_reported_with_its_stderr(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    process = await demo.start_process(
        [sys.executable, "-c", "import sys; sys.stderr.write('cannot listen: address in use\\n')"], log
    )
    child = demo.Child("x", "a2a serve x", "HTTP", process.pid, process=process, log=log)
    await asyncio.wait_for(process.wait(), RUN_TIMEOUT)
    with pytest.raises(demo.DemoError, match=r"the x agent \(a2a serve x\) did not start: cannot listen: address"):
        await demo.wait_for_url(child)
    await demo.stop_child(child)
    assert child.returncode == 0


async def test_stop_child_kills_what_ignores_sigterm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(demo, "STOP_GRACE", 0.5)
    process = await demo.start_process(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(60)",
        ],
        tmp_path / "stubborn.log",
    )
    assert await demo.first_line(process, RUN_TIMEOUT) == b"ready\n"
    child = demo.Child("stubborn", "sleep", "HTTP", process.pid, process=process)
    await asyncio.wait_for(demo.stop_child(child), RUN_TIMEOUT)
    assert child.returncode == -signal.SIGKILL and not alive(process.pid)


async def test_the_example_configuration_runs_the_same_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``examples/supervisor.yaml``: files and web by URL, code over stdio, as in the demo."""
    for name in MODEL_VARS:
        monkeypatch.delenv(name, raising=False)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    children: list[demo.Child] = []
    page, page_url = await demo.serve_page(demo.PAGE)
    try:
        files = await demo.spawn_http_agent(
            "files", "agents.files:agent", {"A2A_FILES_WORKSPACE": str(workspace)}, tmp_path, children
        )
        web = await demo.spawn_http_agent(
            "web", "agents.web:agent", {"A2A_WEB_ALLOW": "127.0.0.1/32"}, tmp_path, children
        )
        monkeypatch.setenv("A2A_FILES_URL", await demo.wait_for_url(files))
        monkeypatch.setenv("A2A_WEB_URL", await demo.wait_for_url(web))
        monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        config = load_config(ROOT / "examples" / "supervisor.yaml")
        kinds = {a.name: a.kind for a in config.agents}
        assert kinds == {"files": "url", "web": "url", "code": "command"}
        sup = Supervisor(config=config, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run(demo.objective(page_url)), RUN_TIMEOUT)
    finally:
        await page.cleanup()
        await asyncio.gather(*(demo.stop_child(c) for c in children))
    assert result.status == "completed", result.final
    assert demo.EXPECTED_OUTPUT in result.final
    assert (workspace / demo.SCRIPT_NAME).read_text() == demo.SCRIPT
    assert all(c.returncode is not None for c in children)


# ---- interrupted ------------------------------------------------------------------------------------


async def _start(demo_env: Demo) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *demo_command(),
        "--json",
        cwd=demo_env.cwd,
        env=demo_env.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _read_until(process: asyncio.subprocess.Process, kind: str) -> dict[str, Any]:
    assert process.stdout is not None
    while True:
        line = await asyncio.wait_for(process.stdout.readline(), RUN_TIMEOUT)
        assert line, f"the demo ended before printing {kind!r}"
        event = json.loads(line)
        if event["event"] == kind:
            return event


async def _finish(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    try:
        return await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_ctrl_c_while_the_agents_start_stops_them_and_exits_130(demo_env: Demo) -> None:
    process = await _start(demo_env)
    await _read_until(process, "demo_started")  # the HTTP agents are being started now
    process.send_signal(signal.SIGINT)
    stdout, stderr = await _finish(process)
    assert process.returncode == 130
    assert stderr.decode().strip().splitlines()[-1] == "a2a demo: interrupted"
    last = json.loads(stdout.decode().splitlines()[-1])
    assert last["event"] == "demo_stopped"
    assert all(p["returncode"] is not None for p in last["processes"])
    demo_env.check_nothing_left()


async def test_a_demo_killed_outright_leaves_no_agent_behind(demo_env: Demo) -> None:
    process = await _start(demo_env)
    await _read_until(process, "demo_agent")  # all three agents are up
    process.kill()
    await _finish(process)
    # The HTTP agents get SIGTERM from the kernel (PR_SET_PDEATHSIG); the stdio agent sees its
    # input end. Both take a moment: wait, within a bound.
    for _ in range(150):  # 15 s at most
        left = processes_with(demo_env.marker)
        if not left:
            break
        await asyncio.sleep(0.1)
    assert not left, f"processes left behind: {left}"
