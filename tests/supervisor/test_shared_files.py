"""Files produced by one delegation reach the delegations that depend on them as A2A parts, and
the built-in agents (served over HTTP) use them: the code agent runs a file the files agent was
given, the files agent saves a file the code agent made."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from agents import code, files
from supervisor import RunResult, Supervisor
from tests.supervisor.agents import WAIT, serving

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
