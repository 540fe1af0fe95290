"""Durable runs: a supervisor killed mid-run is resumed; remote tasks in flight are reattached, not resent."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from supervisor import RunNotFoundError, Supervisor, events
from tests.supervisor.agents import WAIT, Probe, serving, worker

ROOT = Path(__file__).resolve().parents[2]


def write_config(path: Path, urls: list[str], db: Path, **settings: Any) -> Path:
    config = {
        "supervisor": {"strategy": "parallel", "max_concurrency": 2, "checkpoint": {"path": str(db)}, **settings},
        "agents": [{"name": name, "url": url} for name, url in zip("AB", urls, strict=True)],
        "a2a": {"retry": {"initial_backoff": 0.01, "max_backoff": 0.05}},
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def read_events(stream: asyncio.StreamReader, until: Any) -> list[dict[str, Any]]:
    seen = []
    async with asyncio.timeout(WAIT):
        while True:
            line = await stream.readline()
            assert line, f"the supervisor exited early; it printed: {seen}"
            seen.append(json.loads(line))
            if until(seen[-1]):
                return seen


@pytest.mark.slow
async def test_a_supervisor_killed_mid_run_resumes_without_sending_any_task_twice(tmp_path: Path) -> None:
    probe = Probe(hold=True)
    async with serving(worker("A", probe), worker("B", probe)) as urls:
        config = write_config(tmp_path / "supervisor.yaml", urls, tmp_path / "runs.sqlite")
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "supervisor",
            "supervise",
            "work on apples; work on pears; work on plums",
            "-c",
            str(config),
            "--json",
            "--batch",
            "--run-id",
            "run-1",
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert child.stdout is not None
            printed = await read_events(
                child.stdout, lambda e: e["event"] == "checkpoint_saved" and len(e["tasks"]) == 2
            )
            await probe.wait_until(lambda p: p.in_flight == 2)
            os.kill(child.pid, signal.SIGKILL)  # mid-run: two tasks in flight, one item not started
        finally:
            if child.returncode is None:
                child.kill()
            await asyncio.wait_for(child.wait(), WAIT)
        saved = printed[-1]["tasks"]

        sup = Supervisor.from_yaml(config)
        before = await sup.get_run("run-1")
        assert before is not None and sorted(i.status for i in before.items) == ["pending", "running", "running"]

        seen: list[events.Event] = []
        async for event in sup.stream_resume("run-1"):
            seen.append(event)
            reattached = [e for e in seen if isinstance(e, events.DelegationStarted) and e.reattached]
            if len(reattached) == 2:
                probe.release()
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed", result.final
    assert seen[0].resumed  # type: ignore[attr-defined]
    reattached = {e.delegation_id for e in seen if isinstance(e, events.DelegationStarted) and e.reattached}
    assert reattached == set(saved)
    assert {d.id: d.task_id for d in result.delegations if d.id in saved} == saved
    # On the agents' side: three items, three executions, no message executed twice.
    assert sum(probe.executions.values()) == 3 and set(probe.executions.values()) == {1}
    assert sorted(probe.started) == ["work on apples", "work on pears", "work on plums"]


async def test_resuming_a_finished_run_returns_its_result(tmp_path: Path) -> None:
    probe = Probe()
    async with serving(worker("A", probe), worker("B", probe)) as urls:
        config = write_config(tmp_path / "supervisor.yaml", urls, tmp_path / "runs.sqlite")
        sup = Supervisor.from_yaml(config)
        first = await asyncio.wait_for(sup.run("work on apples", run_id="done-1"), WAIT)
        again = await asyncio.wait_for(Supervisor.from_yaml(config).resume("done-1"), WAIT)
    assert first.status == again.status == "completed"
    assert again.final == first.final and sum(probe.executions.values()) == 1


async def test_resuming_an_unknown_run_is_an_error(tmp_path: Path) -> None:
    sup = Supervisor([worker("A")], checkpoint={"path": str(tmp_path / "runs.sqlite")})
    with pytest.raises(RunNotFoundError, match="no run 'nope'"):
        await sup.resume("nope")


async def test_a_run_id_cannot_be_reused_for_a_new_run(tmp_path: Path) -> None:
    from supervisor import RunExistsError

    sup = Supervisor([worker("A")], checkpoint={"path": str(tmp_path / "runs.sqlite")})
    await asyncio.wait_for(sup.run("work on apples", run_id="r"), WAIT)
    with pytest.raises(RunExistsError):
        await sup.run("work on pears", run_id="r")


async def test_the_cli_resumes_a_run_by_its_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from supervisor.cli import build_parser, run

    async with serving(worker("A"), worker("B")) as urls:
        config = write_config(tmp_path / "supervisor.yaml", urls, tmp_path / "runs.sqlite")
        await asyncio.wait_for(Supervisor.from_yaml(config).run("work on apples", run_id="cli-1"), WAIT)
        code = await run(build_parser().parse_args(["supervise", "--resume", "cli-1", "-c", str(config), "--json"]))
    assert code == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["status"] == "completed"
