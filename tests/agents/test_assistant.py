"""The assistant: tool sets chosen at start, no model -> FAILED, the model using the chosen tools only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import agents.assistant
from a2a import A2AClient, A2AServer, RetryPolicy, ServerConfig
from a2a.errors import ContentTypeNotSupportedError
from a2a.metadata import USAGE_KEY
from a2a.types import Part, Task, TaskState
from agents.assistant import TOOLS_ENV, WORKSPACE_ENV, AssistantAgent, ToolsetError, make_agent, parse_toolsets
from agents.code import Limits
from agents.llm import ModelConfigError
from tests.fakes import Failure, FakeOpenAI, Reply, Step, ToolCalls, call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the code tools need POSIX process groups")

WAIT = 30.0
LIMITS = Limits(timeout=20, cpu_seconds=20, memory_bytes=256 * 1024 * 1024, output_bytes=4096, max_concurrent=2)
FILE_TOOLS = ["read", "write", "edit", "list", "delete"]
MODEL_VARS = ("A2A_MODEL", "A2A_MODEL_BASE_URL", "A2A_MODEL_API_KEY", "OPENAI_API_KEY", "A2A_MODEL_TEMPERATURE")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*MODEL_VARS, TOOLS_ENV, WORKSPACE_ENV, "A2A_FILES_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path / "ws"


def use_model(monkeypatch: pytest.MonkeyPatch, model: FakeOpenAI) -> None:
    for name, value in model.env().items():
        monkeypatch.setenv(name, value)


async def ask(assistant: AssistantAgent, content: str | list[Part]) -> Task:
    async with A2AServer(assistant, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
            task = await client.send(content)
    assert isinstance(task, Task)
    return task


def tool_call(tool: str, **arguments: Any) -> list[Part]:
    return [Part(data={"tool": tool, "arguments": arguments})]


def status_text(task: Task) -> str:
    assert task.status.message is not None
    return task.status.message.text


def artifact_text(task: Task, name: str) -> str:
    part = next(a.parts[0] for a in task.artifacts or [] if a.name == name)
    assert isinstance(part.text, str)
    return part.text


# ---- choosing the tools ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ()),
        ("", ()),
        ("none", ()),
        (" None ", ()),
        ("files", ("files",)),
        ("files,code", ("files", "code")),
        (" Files , CODE, files ", ("files", "code")),
        (["web", "files"], ("web", "files")),
        ("code,files,web", ("code", "files", "web")),
    ],
)
def test_tool_sets_from_a_string_or_a_list(value: Any, expected: tuple[str, ...]) -> None:
    assert parse_toolsets(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("files,shell", r"unknown tool set 'shell'; choose from files, code, web"),
        ("sql, shell", r"unknown tool set 'sql', 'shell'; choose from files, code, web"),
        ("files,", r"unknown tool set ''"),
        ("files,none", r"unknown tool set 'none'"),
        (["files", 3], r"tool set names must be strings, got int 3"),
    ],
)
def test_bad_tool_set_names_list_the_valid_ones(value: Any, message: str) -> None:
    with pytest.raises(ToolsetError, match=message):
        parse_toolsets(value)
    with pytest.raises(ValueError, match=message):  # ToolsetError is a ValueError: the CLI reports it in one line
        make_agent(value)


def test_bad_tool_set_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ToolsetError, match=r"A2A_ASSISTANT_TOOLS='files,bash': unknown tool set 'bash'; choose"):
        agents.assistant.from_env({TOOLS_ENV: "files,bash"})


@pytest.mark.slow
def test_serving_with_a_bad_tool_set_stops_with_a_one_line_error() -> None:
    env = {**os.environ, TOOLS_ENV: "code,browser"}
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", "agents.assistant:agent", "--stdio"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert "unknown tool set 'browser'; choose from files, code, web" in done.stderr
    assert "Traceback" not in done.stderr


def test_module_agent_is_built_from_the_environment_on_first_use(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOLS_ENV, "files,code")
    monkeypatch.setenv(WORKSPACE_ENV, str(ws))
    vars(agents.assistant).pop("agent", None)
    try:
        assert not ws.exists()
        built = agents.assistant.agent
        assert built.toolsets == ("files", "code")
        assert built.workspace is not None and built.workspace.root == ws.resolve()
        assert agents.assistant.agent is built  # made once
    finally:
        vars(agents.assistant).pop("agent", None)


def test_files_workspace_variable_is_the_fallback(ws: Path) -> None:
    built = agents.assistant.from_env({TOOLS_ENV: "files", "A2A_FILES_WORKSPACE": str(ws)})
    assert built.workspace is not None and built.workspace.root == ws.resolve()
    plain = agents.assistant.from_env({"A2A_FILES_WORKSPACE": str(ws / "unused")})
    assert plain.workspace is None and not (ws / "unused").exists()


def test_options_may_come_from_a_command_line_as_strings(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("A2A_MODEL_INPUT_PRICE", "0.5")
    built = make_agent(tools="files,code", workspace=str(ws), max_file_bytes="2048", model="small-model")
    assert [t.name for t in built.tools] == [*FILE_TOOLS, "run_python"]
    assert built.workspace is not None and built.workspace.max_file_bytes == 2048
    assert ws.is_dir()
    assert built.model is not None
    assert (built.model.model, built.model.base_url, built.model.input_price) == (
        "small-model",
        "http://127.0.0.1:9/v1",
        0.5,
    )


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"tools": "files", "max_file_bytes": "lots"}, ValueError, r"max_file_bytes must be a whole number.*'lots'"),
        ({"tools": "files", "max_file_bytes": "0"}, ValueError, r"max_file_bytes must be more than 0"),
        ({"tools": "code", "workspace": "somewhere"}, ValueError, r"workspace is for the files tools.*tools: code"),
        ({"tools": "", "code_limits": LIMITS}, ValueError, r"code_limits is for the code tools.*tools: none"),
        ({"model": " "}, ValueError, r"model must name a model"),
        ({"model": "gpt-4o-mini"}, ModelConfigError, r"no API key for model 'gpt-4o-mini'"),
    ],
)
def test_invalid_options_are_refused_at_start(options: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        make_agent(**options)


# ---- the card --------------------------------------------------------------------------------


def test_plain_assistant_card_has_one_text_skill() -> None:
    card = make_agent().build_card([])
    assert [s.id for s in card.skills] == ["assist"]
    assert card.default_input_modes == ["text/plain"]
    assist = card.skills[0]
    assert assist.input_modes == ["text/plain"]
    assert "with no tools" in assist.description and "A2A_MODEL" in assist.description
    assert "no tools" in card.description


def test_card_lists_assist_then_the_chosen_tools(ws: Path) -> None:
    assistant = make_agent(["files", "code"], workspace=ws, code_limits=LIMITS)
    card = assistant.build_card([])
    assert [s.id for s in card.skills] == ["assist", *FILE_TOOLS, "run_python"]
    assert card.default_input_modes == ["application/json", "text/plain"]
    assist = card.skills[0]
    assert assist.input_modes == ["text/plain"]  # the supervisor sends it text, never a tool call
    assert assist.tags == ["assistant", "general", "files", "code"]
    assert "files: read, write" in assist.description and "code: run Python" in assist.description
    assert "web" not in assist.description
    assert assist.examples is not None and len(assist.examples) == 3
    for skill in card.skills[1:]:
        takes_files = skill.id in ("write", "run_python")  # they use files sent with the message
        assert skill.input_modes == ["application/json", "text/plain", *(["*/*"] if takes_files else [])]
        structured = json.loads((skill.examples or ["{}"])[-1])
        assistant.tool(skill.id).validate(structured["arguments"])
    assert str(ws.resolve()) in assistant.instructions  # the model knows where the files are


def test_web_tools_are_offered_when_chosen() -> None:
    assistant = make_agent("web")
    assert [s.card.id for s in assistant.skills] == ["assist", "fetch", "search", "scrape"]
    assert "fetch reads a page" in assistant.instructions


# ---- without a model -------------------------------------------------------------------------


async def test_text_without_a_model_fails_with_an_explanation() -> None:
    task = await ask(make_agent(), "what is the capital of France?")
    assert task.status.state == TaskState.FAILED
    text = status_text(task)
    assert "No model is configured (A2A_MODEL is not set)" in text
    assert "never makes up an answer" in text
    assert "OPENAI_API_KEY" in text and "A2A_ASSISTANT_TOOLS=files,code,web" in text
    assert not task.artifacts
    assert USAGE_KEY not in (task.metadata or {})


async def test_text_with_tools_but_no_model_fails_and_explains_structured_input(ws: Path) -> None:
    task = await ask(make_agent("files,code", workspace=ws, code_limits=LIMITS), "list my files")
    assert task.status.state == TaskState.FAILED
    text = status_text(task)
    assert "No model is configured" in text
    assert '{"tool": "read", "arguments": {"path": "notes.txt"}}' in text
    assert "read, write, edit, list, delete, run_python" in text
    assert not task.artifacts


async def test_invalid_model_settings_fail_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_MODEL", "some-model")  # no key, no base URL
    task = await ask(make_agent(), "hello")
    assert task.status.state == TaskState.FAILED
    assert "The model settings are invalid" in status_text(task) and "A2A_MODEL_API_KEY" in status_text(task)


async def test_structured_tool_calls_work_without_a_model(ws: Path) -> None:
    assistant = make_agent("files,code", workspace=ws, code_limits=LIMITS)
    async with A2AServer(assistant, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
            written = await client.send(tool_call("write", path="hello.py", content="print('hi')\n"))
            ran = await client.send(tool_call("run_python", code="print(6 * 7)"))
            outside = await client.send(tool_call("read", path="../secret"))
    assert isinstance(written, Task) and isinstance(ran, Task) and isinstance(outside, Task)
    assert written.status.state == TaskState.COMPLETED
    assert (ws / "hello.py").read_text() == "print('hi')\n"
    assert ran.status.state == TaskState.COMPLETED
    assert artifact_text(ran, "stdout") == "42\n"
    assert outside.status.state == TaskState.REJECTED and "'..'" in status_text(outside)


async def test_plain_assistant_refuses_structured_input() -> None:
    # Its card accepts text/plain only: the server refuses a data part before the agent runs
    # (spec §3.1.1: "A Media Type provided in the request's message parts is not supported").
    with pytest.raises(ContentTypeNotSupportedError, match="application/json"):
        await ask(make_agent(), tool_call("read", path="a.txt"))


async def test_a_tool_that_was_not_chosen_is_rejected() -> None:
    task = await ask(make_agent("code", code_limits=LIMITS), tool_call("write", path="a.txt", content="x"))
    assert task.status.state == TaskState.REJECTED
    assert "unknown tool 'write'; this agent offers: run_python" in status_text(task)


# ---- with a model ----------------------------------------------------------------------------


async def test_model_writes_a_file_runs_code_and_answers(ws: Path) -> None:
    data = ws / "data.txt"
    script: list[Step] = [
        ToolCalls(call("write", path="data.txt", content="hello from the workspace\n")),
        ToolCalls(call("run_python", code=f"print(open({str(data)!r}).read().upper(), end='')")),
        Reply("The program printed HELLO FROM THE WORKSPACE.", input_tokens=20, output_tokens=9),
    ]
    async with FakeOpenAI(script) as model:
        settings = model.settings(input_price=1.0, output_price=2.0)
        assistant = make_agent(["files", "code"], workspace=ws, code_limits=LIMITS, model=settings)
        task = await ask(assistant, "write a greeting to data.txt, then print it in capitals with Python")
    assert task.status.state == TaskState.COMPLETED, task.status
    assert data.read_text() == "hello from the workspace\n"
    assert [a.name for a in task.artifacts or []] == ["write", "result", "stdout", "stderr", "answer"]
    assert artifact_text(task, "stdout") == "HELLO FROM THE WORKSPACE\n"
    assert artifact_text(task, "answer") == "The program printed HELLO FROM THE WORKSPACE."
    usage = (task.metadata or {})[USAGE_KEY]
    assert usage == {"inputTokens": 42, "outputTokens": 23, "costUsd": pytest.approx(88e-6), "model": "fake-model"}
    first, second, third = model.requests
    assert first.tool_names == [*FILE_TOOLS, "run_python"]
    system = first.messages[0]
    assert assistant.workspace is not None
    assert system["role"] == "system" and str(assistant.workspace.root) in system["content"]
    assert "created data.txt" in second.last_message()["content"]
    assert "HELLO FROM THE WORKSPACE" in third.last_message()["content"]


async def test_code_only_assistant_is_never_offered_the_file_tools() -> None:
    script: list[Step] = [
        ToolCalls(call("write", path="sneaky.txt", content="x")),  # a tool it was not offered
        Reply("I can only run Python, not write files."),
    ]
    async with FakeOpenAI(script) as model:
        assistant = make_agent("code", code_limits=LIMITS, model=model.settings())
        task = await ask(assistant, "save 'x' to sneaky.txt")
    assert assistant.workspace is None
    assert task.status.state == TaskState.COMPLETED
    assert [a.name for a in task.artifacts or []] == ["answer"]
    first, second = model.requests
    assert first.tool_names == ["run_python"]
    refusal = second.last_message()
    assert refusal["role"] == "tool"
    assert "unknown tool 'write'; this agent offers: run_python" in refusal["content"]


async def test_plain_assistant_answers_in_one_call_with_no_tools_offered() -> None:
    async with FakeOpenAI([Reply("Paris.", input_tokens=5, output_tokens=2)]) as model:
        task = await ask(make_agent(model=model.settings(output_price=10.0)), "what is the capital of France?")
    assert task.status.state == TaskState.COMPLETED, task.status
    assert [a.name for a in task.artifacts or []] == ["answer"]
    assert artifact_text(task, "answer") == "Paris."
    assert (task.metadata or {})[USAGE_KEY] == {
        "inputTokens": 5,
        "outputTokens": 2,
        "costUsd": pytest.approx(20e-6),
        "model": "fake-model",
    }
    (request,) = model.requests
    assert "tools" not in request.body  # OpenAI refuses an empty tools list
    assert [m["role"] for m in request.messages] == ["system", "user"]
    assert "no tools" in request.messages[0]["content"]


async def test_plain_assistant_reports_a_failing_endpoint() -> None:
    async with FakeOpenAI([Failure(503, "overloaded today")]) as model:
        task = await ask(make_agent(model=model.settings()), "hello")
    assert task.status.state == TaskState.FAILED
    assert f"The model endpoint {model.base_url} failed" in status_text(task)
    assert "overloaded today" in status_text(task)
    assert not task.artifacts


async def test_plain_assistant_refuses_an_empty_reply() -> None:
    async with FakeOpenAI([Reply("  ")]) as model:
        task = await ask(make_agent(model=model.settings()), "hello")
    assert task.status.state == TaskState.FAILED
    assert "without an answer" in status_text(task)
    assert (task.metadata or {})[USAGE_KEY]["inputTokens"] == 11  # the call was still paid for


# ---- over stdio ------------------------------------------------------------------------------


@pytest.fixture
async def stdio_model(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as model:
        use_model(monkeypatch, model)
        yield model


@pytest.mark.slow
async def test_over_stdio_with_tools_from_the_environment(
    ws: Path, stdio_model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``a2a serve agents.assistant:agent --stdio`` as a child, its tools chosen by its environment."""
    monkeypatch.setenv(TOOLS_ENV, "files,code")
    monkeypatch.setenv(WORKSPACE_ENV, str(ws))
    stdio_model.add(ToolCalls(call("run_python", code="print(sum(range(10)))")), Reply("The sum is 45."))
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", "agents.assistant:agent", "--stdio"]
    async with A2AClient.stdio(argv, retry=RetryPolicy.none(), timeout=WAIT) as client:
        card = await client.get_card()
        assert [s.id for s in card.skills] == ["assist", *FILE_TOOLS, "run_python"]
        written = await client.send(tool_call("write", path="note.txt", content="over stdio"))
        asked = await client.send("add the numbers below 10")
    assert isinstance(written, Task) and isinstance(asked, Task)
    assert written.status.state == TaskState.COMPLETED
    assert (ws / "note.txt").read_text() == "over stdio"
    assert asked.status.state == TaskState.COMPLETED, asked.status
    assert artifact_text(asked, "stdout") == "45\n"
    assert artifact_text(asked, "answer") == "The sum is 45."
    assert (asked.metadata or {})[USAGE_KEY] == {"inputTokens": 22, "outputTokens": 14, "model": "fake-model"}
    assert stdio_model.requests[0].tool_names == [*FILE_TOOLS, "run_python"]


@pytest.mark.slow
async def test_over_stdio_plain_assistant_without_a_model_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [sys.executable, "-m", "a2a.cli.main", "serve", "agents.assistant:agent", "--stdio"]
    async with A2AClient.stdio(argv, retry=RetryPolicy.none(), timeout=WAIT) as client:
        card = await client.get_card()
        task = await client.send("hello?")
    assert [s.id for s in card.skills] == ["assist"]
    assert isinstance(task, Task)
    assert task.status.state == TaskState.FAILED
    assert "No model is configured" in status_text(task)
