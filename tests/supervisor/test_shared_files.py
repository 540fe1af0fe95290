"""Files produced by one delegation reach the delegations that depend on them as A2A parts, and
the built-in agents (served over HTTP) use them: the code agent runs a file the files agent was
given, the files agent saves a file the code agent made. In conversational mode the model sees
the run's files listed and names those to send."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from a2a.types import UNSET, Message
from agents import code, files
from supervisor import RunResult, Supervisor
from supervisor.delegation import Delegator
from tests.fakes import Failure, FakeOpenAI, ToolCalls, call
from tests.supervisor.agents import WAIT, serving
from tests.supervisor.test_bugs import _unanswered
from tests.supervisor.test_model import model_settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the code agent needs POSIX process groups")

SCRIPT = "print('primes:', [n for n in range(2, 20) if all(n % d for d in range(2, n))])"


async def run(workspace: Path, objective: str, **options: Any) -> RunResult:
    async with serving(files.make_agent(workspace), code.make_agent()) as (files_url, code_url):
        sup = Supervisor(
            [{"name": "Files", "url": files_url}, {"name": "Code", "url": code_url}],
            checkpoint={"backend": "memory"},
            **options,
        )
        return await asyncio.wait_for(sup.run(objective), WAIT)


def delegation(result: RunResult, item_id: str) -> Any:
    return next(d for d in result.delegations if d.item_id == item_id)


async def test_write_a_program_then_run_it_the_file_goes_as_a_part(tmp_path: Path) -> None:
    result = await run(tmp_path, f"Write primes.py to the workspace: {SCRIPT}\nRun primes.py with Python")
    assert result.status == "completed", result.final
    _write, run_it = result.items
    assert run_it.depends_on == ["1"]
    assert delegation(result, "2").arguments == {"file": "primes.py"}  # no code: the code agent ran the part
    assert (tmp_path / "primes.py").read_text() == SCRIPT
    assert "primes: [2, 3, 5, 7, 11, 13, 17, 19]" in (run_it.result or "")


async def test_a_file_the_code_agent_made_is_saved_by_the_files_agent(tmp_path: Path) -> None:
    program = "```python\nopen('report.csv', 'w').write('a,b\\n1,2\\n')\nprint('written')\n```"
    result = await run(tmp_path, f"Run this with Python: {program}\nThen save report.csv")
    assert result.status == "completed", result.final
    save = delegation(result, "2")
    assert (save.agent, save.skill, save.arguments) == ("Files", "write", {"path": "report.csv"})
    assert (tmp_path / "report.csv").read_text() == "a,b\n1,2\n"  # the file, not the program's output


async def test_files_over_the_bound_are_left_out_and_named(tmp_path: Path) -> None:
    result = await run(
        tmp_path,
        f"Write primes.py to the workspace: {SCRIPT}\nRun primes.py with Python",
        attachments_bytes=10,
    )
    assert result.status != "completed"
    run_it = delegation(result, "2")
    assert "Files not attached, over supervisor.attachments_bytes: primes.py" in run_it.text
    assert "no file named 'primes.py' was sent with the message" in (result.items[1].error or "")


# ---- conversational mode: the model sees the run's files and names those to send ---------------


def spy_messages(monkeypatch: pytest.MonkeyPatch) -> list[Message]:
    """Every message the supervisor sends to an agent, as it goes out."""
    sent: list[Message] = []
    original = Delegator._message

    def message(self: Delegator, record: Any, files: Any = ()) -> Message:
        built = original(self, record, files)
        sent.append(built)
        return built

    monkeypatch.setattr(Delegator, "_message", message)
    return sent


def system_prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def delegate_call(agent: str, skill: str, task: str, **extra: Any) -> Any:
    return call("delegate", agent=agent, skill=skill, task=task, description=task, **extra)


async def converse(workspace: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, objective: str) -> RunResult:
    async with serving(files.make_agent(workspace), code.make_agent()) as (files_url, code_url):
        sup = Supervisor(
            [{"name": "Files", "url": files_url}, {"name": "Code", "url": code_url}],
            mode="conversational",
            model=model_settings(fake, monkeypatch, max_retries=0),
            checkpoint={"backend": "memory"},
        )
        return await asyncio.wait_for(sup.run(objective), WAIT)


def write_then_run(**run_extra: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """The model's turns: write primes.py (files), then run it (code) with ``run_extra``, then finish."""
    bodies: list[dict[str, Any]] = []

    def turn(answer: Any) -> Any:
        def step(body: dict[str, Any]) -> Any:
            bodies.append(body)
            bad = _unanswered(body)
            return Failure(400, f"tool calls not answered exactly once: {bad}") if bad else answer

        return step

    script = [
        turn(
            ToolCalls(
                delegate_call("Files", "write", "write primes.py", arguments={"path": "primes.py", "content": SCRIPT})
            )
        ),
        turn(
            ToolCalls(
                delegate_call("Code", "run_python", "run primes.py", arguments={"file": "primes.py"}, **run_extra)
            )
        ),
        turn(ToolCalls(call("finish", answer="ran primes.py"))),
    ]
    return script, bodies


async def test_conversational_the_model_names_a_file_of_the_run_and_it_goes_as_a_part(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = spy_messages(monkeypatch)
    script, bodies = write_then_run(files=["primes.py"])
    async with FakeOpenAI(script) as fake:
        result = await converse(tmp_path, fake, monkeypatch, "Write primes.py, then run it")
    assert result.status == "completed", result.final
    # The model saw the file listed (name, type, size, maker), never its content, before the run call.
    assert "Files of this run" not in system_prompt(bodies[0]), bodies[1]["messages"][-1]
    size = len(SCRIPT.encode())
    assert f"- primes.py (text/x-python, {size} bytes; from item c1)" in system_prompt(bodies[1])
    assert SCRIPT not in system_prompt(bodies[1])
    # The code agent was sent the file as a part, and ran it.
    to_code = [m for m in sent if any(p.data is not UNSET and p.data.get("tool") == "run_python" for p in m.parts)]
    assert [(p.filename, p.text) for p in to_code[0].parts if p.filename] == [("primes.py", SCRIPT)]
    run_it = next(i for i in result.items if i.agent == "Code")
    assert "primes: [2, 3, 5, 7, 11, 13, 17, 19]" in (run_it.result or "")
    assert (tmp_path / "primes.py").read_text() == SCRIPT


async def test_conversational_a_file_the_call_names_is_sent_without_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = spy_messages(monkeypatch)
    script, _ = write_then_run()  # no "files": the argument {"file": "primes.py"} names it
    async with FakeOpenAI(script) as fake:
        result = await converse(tmp_path, fake, monkeypatch, "Write primes.py, then run it")
    assert result.status == "completed", result.final
    assert any(p.filename == "primes.py" for m in sent for p in m.parts)
    assert "primes: [2, 3, 5, 7, 11, 13, 17, 19]" in (result.items[-1].result or "")


async def test_conversational_files_empty_sends_none_and_an_unknown_name_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers: list[str] = []

    def unknown(body: dict[str, Any]) -> Any:
        return ToolCalls(
            delegate_call("Code", "run_python", "run it", arguments={"file": "nope.py"}, files=["nope.py"])
        )

    def record(body: dict[str, Any]) -> Any:
        answers.append(str(body["messages"][-1]["content"]))
        return ToolCalls(
            delegate_call("Code", "run_python", "run primes.py", arguments={"file": "primes.py"}, files=[])
        )

    def finish(body: dict[str, Any]) -> Any:
        answers.append(str(body["messages"][-1]["content"]))
        return ToolCalls(call("finish", answer="done"))

    script = [
        ToolCalls(
            delegate_call("Files", "write", "write primes.py", arguments={"path": "primes.py", "content": SCRIPT})
        ),
        unknown,
        record,
        finish,
    ]
    async with FakeOpenAI(script) as fake:
        await converse(tmp_path, fake, monkeypatch, "Write primes.py, then run it")
    assert answers[0] == "no file named 'nope.py' in this run; its files: primes.py"
    assert "no file named 'primes.py' was sent with the message" in answers[1]  # files=[]: none sent
