"""Model settings, the ReAct loop over an agent's tools, and the fake OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from a2a import A2AClient, A2AServer, RetryPolicy, ServerConfig
from a2a.metadata import USAGE_KEY
from a2a.types import Part, Task, TaskState, TaskStatusUpdateEvent
from agents._tools import Tool, ToolAgent, ToolError, ToolResult, text_output
from agents.files import make_agent as files_agent
from agents.llm import ModelConfigError, ModelSettings
from tests.fakes import Failure, FakeOpenAI, Reply, ToolCall, ToolCalls, call

WAIT = 30.0


class AddArgs(BaseModel):
    a: int = Field(description="first number")
    b: int = Field(description="second number")


async def add(args: AddArgs) -> ToolResult:
    if args.a < 0:
        raise ToolError("negative numbers are not supported")
    return ToolResult(f"{args.a} + {args.b} = {args.a + args.b}", [text_output("sum", str(args.a + args.b))])


def adder(model: ModelSettings | None = None) -> ToolAgent:
    tool = Tool("add", "Adds two integers.", AddArgs, add, example_arguments={"a": 1, "b": 2})
    return ToolAgent(name="Adder", description="Adds numbers.", tools=[tool], instructions="You add.", model=model)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("A2A_MODEL", "A2A_MODEL_BASE_URL", "A2A_MODEL_API_KEY", "OPENAI_API_KEY", "A2A_MODEL_TEMPERATURE"):
        monkeypatch.delenv(name, raising=False)


async def ask(agent: ToolAgent, content: str | list[Part]) -> Task:
    async with A2AServer(agent, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
            task = await client.send(content)
    assert isinstance(task, Task)
    return task


def status_text(task: Task) -> str:
    assert task.status.message is not None
    return task.status.message.text


@pytest.fixture
async def model() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as fake:
        yield fake


# ---- settings -------------------------------------------------------------------------------


def test_no_model_without_a2a_model() -> None:
    assert ModelSettings.from_env({}) is None
    assert ModelSettings.from_env({"OPENAI_API_KEY": "sk-x", "A2A_MODEL": "  "}) is None


def test_settings_from_env() -> None:
    settings = ModelSettings.from_env(
        {
            "A2A_MODEL": "gpt-4o-mini",
            "OPENAI_API_KEY": "sk-fallback",
            "A2A_MODEL_TEMPERATURE": "0.2",
            "A2A_MODEL_MAX_STEPS": "5",
            "A2A_MODEL_INPUT_PRICE": "0.15",
            "A2A_MODEL_OUTPUT_PRICE": "0.6",
        }
    )
    assert settings is not None
    assert (settings.model, settings.temperature, settings.max_steps, settings.base_url) == (
        "gpt-4o-mini",
        0.2,
        5,
        None,
    )
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "sk-fallback"
    assert settings.cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    assert "sk-fallback" not in repr(settings)
    own = ModelSettings.from_env({"A2A_MODEL": "m", "A2A_MODEL_API_KEY": "mine", "OPENAI_API_KEY": "theirs"})
    assert own is not None and own.api_key is not None and own.api_key.get_secret_value() == "mine"


def test_local_endpoint_needs_no_key_and_cost_is_none_without_prices() -> None:
    settings = ModelSettings.from_env({"A2A_MODEL": "llama3", "A2A_MODEL_BASE_URL": "http://127.0.0.1:11434/v1"})
    assert settings is not None and settings.api_key is None
    assert settings.cost(10, 10) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"A2A_MODEL": "m"}, "no API key for model 'm': set A2A_MODEL_API_KEY or OPENAI_API_KEY"),
        ({"A2A_MODEL": "m", "A2A_MODEL_API_KEY": "k", "A2A_MODEL_TEMPERATURE": "hot"}, "A2A_MODEL_TEMPERATURE: "),
        ({"A2A_MODEL": "m", "A2A_MODEL_API_KEY": "k", "A2A_MODEL_TEMPERATURE": "3"}, "A2A_MODEL_TEMPERATURE: "),
        ({"A2A_MODEL": "m", "A2A_MODEL_BASE_URL": "localhost:1234"}, "A2A_MODEL_BASE_URL: "),
        ({"A2A_MODEL": "m", "A2A_MODEL_API_KEY": "k", "A2A_MODEL_MAX_STEPS": "0"}, "A2A_MODEL_MAX_STEPS: "),
    ],
)
def test_invalid_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ModelConfigError, match=message):
        ModelSettings.from_env(env)


# ---- without a model ------------------------------------------------------------------------


async def test_text_without_a_model_fails_with_both_ways() -> None:
    task = await ask(adder(), "add 2 and 3")
    assert task.status.state == TaskState.FAILED
    text = status_text(task)
    assert text.startswith("No model is configured (A2A_MODEL is not set)")
    assert '{"tool": "add", "arguments": {"a": 1, "b": 2}}' in text
    assert "A2A_MODEL_BASE_URL" in text


async def test_invalid_model_settings_fail_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_MODEL", "m")
    task = await ask(adder(), "add 2 and 3")
    assert task.status.state == TaskState.FAILED
    assert "The model settings are invalid (model settings: no API key" in status_text(task)


async def test_structured_input_needs_no_model() -> None:
    task = await ask(adder(), [Part(data={"tool": "add", "arguments": {"a": 2, "b": 3}})])
    assert task.status.state == TaskState.COMPLETED
    assert task.artifacts is not None and task.artifacts[0].parts[0].text == "5"
    assert not (task.metadata or {}).get(USAGE_KEY)


async def test_empty_message_is_rejected() -> None:
    task = await ask(adder(), "   ")
    assert task.status.state == TaskState.REJECTED
    assert "The message is empty." in status_text(task)


# ---- the ReAct loop -------------------------------------------------------------------------


async def test_tool_call_then_answer(model: FakeOpenAI) -> None:
    model.add(ToolCalls(call("add", a=2, b=3)), Reply("2 + 3 is 5."))
    task = await ask(adder(model.settings()), "what is 2 + 3?")
    assert task.status.state == TaskState.COMPLETED
    assert [a.name for a in task.artifacts or []] == ["sum", "answer"]
    first, second = model.requests
    assert first.body["model"] == "fake-model"
    assert first.messages == [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": "what is 2 + 3?"},
    ]
    [tool] = first.body["tools"]
    assert tool["function"]["name"] == "add"
    assert tool["function"]["parameters"]["required"] == ["a", "b"]
    assert second.last_message()["content"] == "2 + 3 = 5\n[sum]\n5"
    assert second.headers["Authorization"] == "Bearer fake-key"


async def test_streamed_status_shows_each_tool_call(model: FakeOpenAI) -> None:
    model.add(ToolCalls(call("add", a=1, b=1), call("add", a=2, b=2)), Reply("2 and 4"))
    async with A2AServer(adder(model.settings()), config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
            events = [e.payload async for e in client.stream("add 1+1 and 2+2")]
    updates = [e for e in events if isinstance(e, TaskStatusUpdateEvent)]
    notes = [u.status.message.text for u in updates if u.status.message is not None]
    assert notes == ['add {"a": 1, "b": 1}', 'add {"a": 2, "b": 2}']
    assert updates[-1].status.state == TaskState.COMPLETED


async def test_tool_errors_are_shown_to_the_model_so_it_can_recover(model: FakeOpenAI) -> None:
    model.add(
        ToolCalls(call("add", a=-1, b=2)),
        ToolCalls(call("add", a="one", b=2)),
        ToolCalls(call("subtract", a=1, b=2)),
        ToolCalls(ToolCall("add", {}, raw_arguments='{"a": 1, "b":')),
        ToolCalls(ToolCall("add", {}, raw_arguments='{"a": 1, "b": 2}')),
        Reply("1 + 2 = 3"),
    )
    task = await ask(adder(model.settings()), "add")
    assert task.status.state == TaskState.COMPLETED
    shown = [r.last_message() for r in model.requests[1:]]
    assert shown[0]["content"] == "Error: negative numbers are not supported"
    assert shown[1]["content"].startswith("Error: invalid arguments: 'a' Input should be a valid integer")
    assert shown[2]["content"] == "Error: unknown tool 'subtract'; this agent offers: add"
    assert shown[3]["content"].startswith("Error: the call to 'add' was not run: ")
    assert model.requests[4].messages[-2]["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b":'
    assert shown[4]["content"].startswith("1 + 2 = 3")


async def test_usage_adds_up_with_cost(model: FakeOpenAI) -> None:
    model.add(
        ToolCalls(call("add", a=1, b=2), input_tokens=1000, output_tokens=100),
        Reply("3", input_tokens=2000, output_tokens=50),
    )
    task = await ask(adder(model.settings(input_price=3.0, output_price=15.0)), "1+2")
    assert task.metadata is not None
    usage = task.metadata[USAGE_KEY]
    assert (usage["inputTokens"], usage["outputTokens"], usage["model"]) == (3000, 150, "fake-model")
    assert usage["costUsd"] == pytest.approx((3000 * 3.0 + 150 * 15.0) / 1e6)


async def test_retry_after_a_503(model: FakeOpenAI) -> None:
    model.add(Failure(503), Reply("fine"))
    task = await ask(adder(model.settings(max_retries=1)), "hi")
    assert task.status.state == TaskState.COMPLETED
    assert len(model.requests) == 2


async def test_endpoint_failure_fails_the_task_and_names_the_endpoint(model: FakeOpenAI) -> None:
    model.add(Failure(503, "overloaded"))
    task = await ask(adder(model.settings()), "hi")
    assert task.status.state == TaskState.FAILED
    assert f"The model endpoint {model.base_url} failed" in status_text(task)
    assert "overloaded" in status_text(task)


async def test_wrong_key_fails(model: FakeOpenAI) -> None:
    task = await ask(adder(model.settings(api_key="wrong")), "hi")
    assert task.status.state == TaskState.FAILED
    assert "invalid API key" in status_text(task)


async def test_step_limit(model: FakeOpenAI) -> None:
    model.add(*[ToolCalls(call("add", a=1, b=1)) for _ in range(3)])
    task = await ask(adder(model.settings(max_steps=2)), "loop forever")
    assert task.status.state == TaskState.FAILED
    assert "more than 2 steps" in status_text(task) and "A2A_MODEL_MAX_STEPS" in status_text(task)
    assert len(model.requests) == 2
    usage = (task.metadata or {})[USAGE_KEY]
    assert usage["inputTokens"] == 22  # what was used before giving up is still reported


async def test_empty_answer_fails(model: FakeOpenAI) -> None:
    model.add(Reply(""))
    task = await ask(adder(model.settings()), "say nothing")
    assert task.status.state == TaskState.FAILED
    assert "empty reply" in status_text(task)


async def test_settings_from_the_environment(model: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in model.env().items():
        monkeypatch.setenv(name, value)
    model.add(Reply("hello"))
    task = await ask(adder(), "hi")
    assert task.status.state == TaskState.COMPLETED


async def test_files_agent_recovers_from_an_ambiguous_edit(model: FakeOpenAI, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x = 1\ny = 1\n")
    model.add(
        ToolCalls(call("edit", path="a.txt", old_text="= 1", new_text="= 2")),
        ToolCalls(call("edit", path="a.txt", old_text="= 1", new_text="= 2", replace_all=True)),
        Reply("Both set to 2."),
    )
    task = await ask(files_agent(tmp_path, model=model.settings()), "set everything to 2 in a.txt")
    assert task.status.state == TaskState.COMPLETED
    assert "ambiguous: found 2 times" in model.requests[1].last_message()["content"]
    assert (tmp_path / "a.txt").read_text() == "x = 2\ny = 2\n"


async def test_cancel_during_a_model_call(model: FakeOpenAI) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def held(_body: dict[str, Any]) -> Reply:
        entered.set()
        await release.wait()
        return Reply("too late")

    model.add(held)
    try:
        async with A2AServer(adder(model.settings()), config=ServerConfig(port=0)) as server:
            assert server.url is not None
            async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=WAIT) as client:
                started = await client.send("hi", return_immediately=True)
                assert isinstance(started, Task)
                async with asyncio.timeout(WAIT):
                    await entered.wait()
                canceled = await client.cancel_task(started.id)
                assert canceled.status.state == TaskState.CANCELED
    finally:
        release.set()


def test_tool_names_must_be_unique() -> None:
    tool = adder().tools[0]
    with pytest.raises(ValueError, match="repeated: add"):
        ToolAgent(name="Twice", tools=[tool, tool])


# ---- the fake endpoint itself ---------------------------------------------------------------


async def test_fake_streams_like_openai(model: FakeOpenAI) -> None:
    from langchain_core.messages import HumanMessage

    model.add(ToolCalls(call("add", a=1, b=2)), Reply("three"))
    async with model.settings().open_chat_model() as chat:
        streaming = chat.model_copy(update={"streaming": True, "stream_usage": True})
        bound = streaming.bind_tools([adder().tools[0].openai_schema()])
        first = await bound.ainvoke([HumanMessage("1+2")])
        second = await streaming.ainvoke([HumanMessage("again")])
    assert first.tool_calls[0]["name"] == "add" and first.tool_calls[0]["args"] == {"a": 1, "b": 2}
    assert second.content == "three"
    assert second.usage_metadata is not None and second.usage_metadata["input_tokens"] == 11
    assert model.requests[0].body["stream"] is True


async def test_fake_says_when_its_script_is_used_up(model: FakeOpenAI) -> None:
    task = await ask(adder(model.settings()), "hi")
    assert task.status.state == TaskState.FAILED
    assert "script is used up" in status_text(task)
