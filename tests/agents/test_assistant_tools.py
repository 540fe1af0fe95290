"""Per-request tools of the assistant: the message metadata key ``a2a-net/tools`` narrows them."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, RetryPolicy, ServerConfig
from a2a.metadata import TOOLS_KEY
from a2a.types import Message, Part, Role, Task, TaskState
from agents.assistant import AssistantAgent, make_agent
from agents.code import Limits
from tests.fakes import FakeOpenAI, Reply, ToolCalls, call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the code tools need POSIX process groups")

WAIT = 30.0
LIMITS = Limits(timeout=20, cpu_seconds=20, memory_bytes=256 * 1024 * 1024, output_bytes=4096, max_concurrent=2)


@pytest.fixture(autouse=True)
def _no_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("A2A_MODEL", "A2A_MODEL_BASE_URL", "A2A_MODEL_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


async def ask(assistant: AssistantAgent, parts: list[Part], tools: Any) -> Task:
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=parts, metadata={TOOLS_KEY: tools})
    async with A2AServer(assistant, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
            task = await client.send(message)
    assert isinstance(task, Task)
    return task


def status_text(task: Task) -> str:
    message = task.status.message
    return "".join(p.text for p in message.parts if isinstance(p.text, str)) if message else ""


def test_the_assist_skill_declares_the_key_and_the_names_it_takes(tmp_path: Path) -> None:
    assistant = make_agent(["files", "code"], workspace=tmp_path, code_limits=LIMITS)
    assist = assistant.build_card([]).skills[0]
    assert assist.id == "assist"
    assert TOOLS_KEY in assist.description
    assert "files (read, write, edit, list, delete)" in assist.description
    assert "code (run_python)" in assist.description
    assert TOOLS_KEY not in make_agent().build_card([]).skills[0].description  # nothing to narrow


async def test_the_model_is_offered_only_the_tools_the_request_names(tmp_path: Path) -> None:
    async with FakeOpenAI([ToolCalls(call("write", path="x.txt", content="x")), Reply("I cannot write.")]) as model:
        assistant = make_agent(["files", "code"], workspace=tmp_path, code_limits=LIMITS, model=model.settings())
        task = await ask(assistant, [Part(text="save x to x.txt")], ["code"])
    assert task.status.state == TaskState.COMPLETED, task.status
    first, second = model.requests
    assert first.tool_names == ["run_python"]
    assert (
        "tool 'write' is not among the tools of this request" in second.last_message()["content"]
    )  # not run, though the agent has it
    assert not (tmp_path / "x.txt").exists()


async def test_tool_names_and_tool_set_names_mix(tmp_path: Path) -> None:
    async with FakeOpenAI([Reply("ok")]) as model:
        assistant = make_agent(["files", "code"], workspace=tmp_path, code_limits=LIMITS, model=model.settings())
        task = await ask(assistant, [Part(text="look")], ["read", "Code"])
    assert task.status.state == TaskState.COMPLETED, task.status
    (request,) = model.requests
    assert request.tool_names == ["read", "run_python"]


async def test_an_empty_list_is_one_plain_model_call(tmp_path: Path) -> None:
    async with FakeOpenAI([Reply("Paris.")]) as model:
        assistant = make_agent(["files"], workspace=tmp_path, model=model.settings())
        task = await ask(assistant, [Part(text="the capital of France?")], [])
    assert task.status.state == TaskState.COMPLETED, task.status
    (request,) = model.requests
    assert "tools" not in request.body


async def test_structured_input_for_a_tool_outside_the_request_is_rejected(tmp_path: Path) -> None:
    assistant = make_agent(["files", "code"], workspace=tmp_path, code_limits=LIMITS)
    write = Part(data={"tool": "write", "arguments": {"path": "a.txt", "content": "x"}})
    task = await ask(assistant, [write], ["code"])
    assert task.status.state == TaskState.REJECTED
    assert "tool 'write' is not among the tools of this request (run_python)" in status_text(task)
    assert not (tmp_path / "a.txt").exists()
    allowed = await ask(assistant, [write], ["files"])
    assert allowed.status.state == TaskState.COMPLETED
    assert (tmp_path / "a.txt").read_text() == "x"


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        (["web"], "names 'web', which this assistant does not have (it has files: read, write, edit, list, delete)"),
        ("files", f"{TOOLS_KEY} must be a list of tool set or tool names, got str"),
        ([1], f"{TOOLS_KEY} must be a list of tool set or tool names"),
    ],
)
async def test_names_it_does_not_have_are_rejected(tmp_path: Path, tools: Any, message: str) -> None:
    task = await ask(make_agent(["files"], workspace=tmp_path), [Part(text="hello")], tools)
    assert task.status.state == TaskState.REJECTED
    assert message in status_text(task)
