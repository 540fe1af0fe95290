"""Files sent with a message (parts with a filename): the code agent runs or reads them, the files
agent saves them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, Agent, RetryPolicy, ServerConfig
from a2a.types import Part, Task, TaskState
from agents import code, files

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the code agent needs POSIX process groups")

WAIT = 30.0
PROGRAM = "print('primes:', [n for n in range(2, 20) if all(n % d for d in range(2, n))])\n"


async def send(agent: Agent, parts: list[Part]) -> Task:
    async with A2AServer(agent, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
            task = await client.send(parts)
    assert isinstance(task, Task)
    return task


def call(tool: str, **arguments: Any) -> Part:
    return Part(data={"tool": tool, "arguments": arguments}, media_type="application/json")


def text_of(task: Task, name: str) -> str:
    artifact = next(a for a in task.artifacts or [] if a.name == name)
    return "".join(p.text for p in artifact.parts if isinstance(p.text, str))


def status_text(task: Task) -> str:
    message = task.status.message
    return "".join(p.text for p in message.parts if isinstance(p.text, str)) if message else ""


def test_the_skills_that_take_files_accept_any_media_type(tmp_path: Path) -> None:
    (run,) = code.make_agent().build_card([]).skills
    assert "*/*" in run.input_modes and "file (string" in run.description
    skills = {s.id: s for s in files.make_agent(tmp_path).build_card([]).skills}
    assert "*/*" in skills["write"].input_modes
    assert "*/*" not in skills["read"].input_modes


async def test_the_code_agent_runs_a_received_file() -> None:
    program = Part(text=PROGRAM, filename="primes.py", media_type="text/x-python")
    task = await send(code.make_agent(), [program, call("run_python", file="primes.py")])
    assert task.status.state == TaskState.COMPLETED, status_text(task)
    assert text_of(task, "stdout") == "primes: [2, 3, 5, 7, 11, 13, 17, 19]\n"
    assert [a.name for a in task.artifacts or []] == ["result", "stdout", "stderr"]  # nothing new: none returned


async def test_received_files_are_in_the_working_directory_and_new_ones_come_back() -> None:
    data = Part(raw=b"3\n4\n", filename="numbers.txt", media_type="application/octet-stream")
    program = "total = sum(int(x) for x in open('numbers.txt'))\nopen('total.txt', 'w').write(str(total))\n"
    task = await send(code.make_agent(), [data, call("run_python", code=program)])
    assert task.status.state == TaskState.COMPLETED, status_text(task)
    assert [a.name for a in task.artifacts or []] == ["result", "stdout", "stderr", "file:total.txt"]
    assert text_of(task, "file:total.txt") == "7"


async def test_running_a_file_that_was_not_sent_is_rejected() -> None:
    other = Part(text="x = 1\n", filename="other.py")
    task = await send(code.make_agent(), [other, call("run_python", file="primes.py")])
    assert task.status.state == TaskState.REJECTED
    assert "no file named 'primes.py' was sent with the message (files sent: other.py)" in status_text(task)


async def test_the_files_agent_saves_a_received_file(tmp_path: Path) -> None:
    program = Part(text=PROGRAM, filename="primes.py", media_type="text/x-python")
    task = await send(files.make_agent(tmp_path), [program, call("write", path="scripts/primes.py")])
    assert task.status.state == TaskState.COMPLETED, status_text(task)
    assert (tmp_path / "scripts" / "primes.py").read_text() == PROGRAM
    binary = Part(raw=b"\x00\x01\x02", filename="blob.bin")
    task = await send(files.make_agent(tmp_path), [binary, call("write", path="copy.bin")])  # the only one sent
    assert task.status.state == TaskState.COMPLETED, status_text(task)
    assert (tmp_path / "copy.bin").read_bytes() == b"\x00\x01\x02"


async def test_a_write_with_neither_content_nor_a_file_is_rejected(tmp_path: Path) -> None:
    task = await send(files.make_agent(tmp_path), [call("write", path="a.txt")])
    assert task.status.state == TaskState.REJECTED
    assert "'content' is required, unless the message carries the file" in status_text(task)
    assert not (tmp_path / "a.txt").exists()
