"""``a2a supervise``: the live tree, ``--json`` lines, exit codes, Ctrl-C, resume."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import signal
import sys
from pathlib import Path

import pytest
from rich.console import Console

from a2a import A2AClient
from a2a.types import TaskState
from supervisor import events as ev
from supervisor.cli import build_parser, register, run
from supervisor.ui import LiveView
from tests.supervisor.agents import WAIT, Probe, serving, worker

ROOT = Path(__file__).resolve().parents[2]


def args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["supervise", *argv])


def test_register_adds_the_supervise_subcommand() -> None:
    parser = argparse.ArgumentParser(prog="a2a")
    register(parser.add_subparsers(dest="command"))
    parsed = parser.parse_args(
        ["supervise", "do it", "-c", "s.yaml", "--agent", "http://a", "--agent", "http://b", "--json", "--resume", "r1"]
    )
    assert parsed.func is run
    assert (parsed.objective, parsed.config, parsed.agent, parsed.json, parsed.resume) == (
        "do it",
        "s.yaml",
        ["http://a", "http://b"],
        True,
        "r1",
    )


async def test_json_prints_one_event_per_line_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    async with serving(worker("A"), worker("B")) as urls:
        code = await run(args("work on apples; work on pears", "--agent", urls[0], "--agent", urls[1], "--json"))
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    kinds = [line["event"] for line in lines]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert {"plan_updated", "delegation_started", "delegation_progress", "delegation_finished"} <= set(kinds)
    assert lines[-1]["status"] == "completed" and lines[-1]["metrics"]["delegations"] == 2


async def test_the_live_view_shows_the_tree_then_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    async with serving(worker("A")) as (url,):
        code = await run(args("work on apples", "--agent", url, "--batch"))
    out = capsys.readouterr().out
    assert code == 0
    assert "Objective: work on apples" in out and "✓ 1. work on apples" in out
    assert "Answer" in out and "A did: work on apples" in out and "completed · run " in out


async def test_a_failed_run_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = await run(args("work", "--agent", "http://127.0.0.1:9", "--json"))
    assert code == 1
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "failed"


async def test_config_errors_and_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "sup.yaml"
    bad.write_text("supervisor:\n  mode: nope\n")
    assert await run(args("x", "-c", str(bad))) == 2
    assert f"{bad}:2: supervisor.mode: Input should be" in capsys.readouterr().err
    assert await run(args()) == 2
    assert "give an objective, or --resume RUN_ID" in capsys.readouterr().err
    assert await run(args("--resume", "unknown-run", "--agent", "http://127.0.0.1:9")) == 2
    assert "no run 'unknown-run'" in capsys.readouterr().err


@pytest.mark.slow
async def test_ctrl_c_cancels_the_run_and_every_remote_task(tmp_path: Path) -> None:
    probe = Probe(hold=True)
    async with serving(worker("A", probe), worker("B", probe)) as urls:
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "supervisor",
            "supervise",
            "work on apples; work on pears",
            "--agent",
            urls[0],
            "--agent",
            urls[1],
            "--json",
            "--batch",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None
        tasks: dict[str, str] = {}
        try:
            async with asyncio.timeout(WAIT):
                while len(tasks) < 2:
                    event = json.loads(await child.stdout.readline())
                    if event["event"] == "delegation_progress" and event["task_id"]:
                        tasks[event["agent"]] = event["task_id"]
                await probe.wait_until(lambda p: p.in_flight == 2)
                child.send_signal(signal.SIGINT)
                rest = (await child.stdout.read()).decode().splitlines()
                code = await child.wait()
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
        states = []
        for agent, task_id in tasks.items():
            url = urls[["A", "B"].index(agent)]  # agents given by URL are named after their cards
            async with A2AClient(url) as client:
                states.append((await client.get_task(task_id)).status.state)
    assert code == 130
    assert json.loads(rest[-1])["status"] == "canceled"
    assert states == [TaskState.CANCELED, TaskState.CANCELED]


def test_the_live_tree_has_one_line_per_delegation() -> None:
    now = [100.0]
    view = LiveView(clock=lambda: now[0])
    run_id = "r1"
    for event in [
        ev.RunStarted(run_id=run_id, objective="fruit", mode="plan_upfront", strategy="adaptive", model=None),
        ev.AgentStatus(run_id=run_id, agent="Gone", status="down", transport="", skills=[], error="refused"),
        ev.PlanUpdated(
            run_id=run_id,
            items=[
                {
                    "id": "1",
                    "description": "apples",
                    "agent": "A",
                    "skill": "work",
                    "depends_on": [],
                    "status": "pending",
                },
                {
                    "id": "2",
                    "description": "pie",
                    "agent": "B",
                    "skill": "work",
                    "depends_on": ["1"],
                    "status": "pending",
                },
            ],
        ),
        ev.DelegationStarted(
            run_id=run_id,
            delegation_id="1.1.0",
            item_id="1",
            agent="A",
            skill="work",
            description="apples",
            message_id="m",
        ),
        ev.DelegationRetrying(
            run_id=run_id, delegation_id="1.1.0", item_id="1", agent="A", attempt=1, error="HTTP 503", delay=0.2
        ),
        ev.DelegationProgress(
            run_id=run_id,
            delegation_id="1.1.0",
            item_id="1",
            agent="A",
            state="working",
            task_id="t",
            text="peeling",
            events=2,
            attempts=2,
        ),
    ]:
        view.handle(event)
    now[0] = 103.5
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(view.render())
    text = console.export_text()
    assert "Objective: fruit" in text
    assert "⠿ 1. apples  (A)" in text
    assert 'A · apples · working · 3.5s · 2 attempts · "peeling"' in text
    assert "· 2. pie  (B) waits for 1" in text
    assert "agent Gone is down: refused" in text
    view.handle(
        ev.DelegationFinished(
            run_id=run_id,
            delegation_id="1.1.0",
            item_id="1",
            agent="A",
            state="completed",
            duration=3.5,
            attempts=2,
            events=4,
            input_tokens=10,
            output_tokens=5,
            cost_usd=0.0,
        )
    )
    console.print(view.render())
    assert "A · apples · completed · 3.5s · 2 attempts · 15 tok" in console.export_text()


def test_importing_the_cli_does_not_load_langgraph() -> None:
    """The a2a command imports supervisor.cli for every invocation: it must stay light."""
    import subprocess

    heavy = "('langgraph', 'langchain_core', 'openai')"
    code = f"import sys, supervisor.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
