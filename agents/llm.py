"""The model behind natural-language requests: its settings, and the ReAct loop over an agent's tools.

Settings come from the environment of the agent's process (or a ``ModelSettings`` given in code):

- ``A2A_MODEL``: the model name, e.g. ``gpt-4o-mini``. Unset: no model (natural language then
  fails with an explanation; structured input works as ever).
- ``A2A_MODEL_BASE_URL``: an OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:11434/v1``
  (Ollama), vLLM, LiteLLM, OpenRouter... Unset: OpenAI.
- ``A2A_MODEL_API_KEY``: the endpoint's key; falls back to ``OPENAI_API_KEY``. May be left unset
  when a base URL is given (local servers need none).
- ``A2A_MODEL_TEMPERATURE``: sampling temperature, 0 to 2 (unset: the endpoint's default).
- ``A2A_MODEL_TIMEOUT``: seconds per model call (default 60).
- ``A2A_MODEL_MAX_RETRIES``: retries of a failed call: 429, 5xx, connection errors (default 2).
- ``A2A_MODEL_MAX_STEPS``: model turns per task before giving up (default 12).
- ``A2A_MODEL_INPUT_PRICE`` and ``A2A_MODEL_OUTPUT_PRICE``: USD per million input / output
  tokens; when either is set the cost is reported too.

Reusing them elsewhere (the supervisor)::

    settings = ModelSettings.from_env()        # None: no model; ModelConfigError: a bad value
    async with settings.open_chat_model() as chat:
        reply = await chat.ainvoke(messages)
    ctx.report_usage(*usage_of(reply), cost_usd=settings.cost(*usage_of(reply)), model=settings.model)

Each model call's token use (and cost, when a price is set) is added to the task's metadata under
``a2a-net/usage`` (``RequestContext.report_usage``), so a caller sees what a task cost.

The loop is a small LangGraph ``StateGraph``: a ``model`` node (the chat model, offered the
agent's tools) and a ``tools`` node (runs the calls it asked for, in order, publishes their
results as artifacts, and shows the model what they returned, errors included, so it can correct
itself), until the model answers without calling a tool. langchain and langgraph are imported
only when a model is actually used.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, SecretStr

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.runnables import Runnable
    from langchain_openai import ChatOpenAI
    from langgraph.graph.state import CompiledStateGraph

    from a2a import RequestContext

    from ._tools import Tool, ToolAgent

__all__ = [
    "ENV_VARS",
    "ModelConfigError",
    "ModelSettings",
    "build_react_graph",
    "run_natural_language",
    "usage_of",
]

#: Which environment variable sets which ``ModelSettings`` field.
ENV_VARS: dict[str, str] = {
    "model": "A2A_MODEL",
    "base_url": "A2A_MODEL_BASE_URL",
    "api_key": "A2A_MODEL_API_KEY",
    "temperature": "A2A_MODEL_TEMPERATURE",
    "timeout": "A2A_MODEL_TIMEOUT",
    "max_retries": "A2A_MODEL_MAX_RETRIES",
    "max_steps": "A2A_MODEL_MAX_STEPS",
    "input_price": "A2A_MODEL_INPUT_PRICE",
    "output_price": "A2A_MODEL_OUTPUT_PRICE",
}
FALLBACK_API_KEY_VAR = "OPENAI_API_KEY"
#: Sent when the endpoint needs no key (the OpenAI client insists on one).
NO_KEY = "not-needed"


class ModelConfigError(ValueError):
    """The model settings are present but wrong; the message names the variable to fix."""


class ModelSettings(BaseModel):
    """How to reach an OpenAI-compatible chat model, and what its tokens cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1, description="the model name")
    base_url: str | None = Field(None, pattern=r"^https?://", description="OpenAI-compatible base URL (.../v1)")
    api_key: SecretStr | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    timeout: float = Field(60.0, gt=0, le=3600)
    max_retries: int = Field(2, ge=0, le=10)
    max_steps: int = Field(12, ge=1, le=200)
    input_price: float | None = Field(None, ge=0, description="USD per million input tokens")
    output_price: float | None = Field(None, ge=0, description="USD per million output tokens")

    @pydantic.model_validator(mode="after")
    def _needs_a_key_or_an_endpoint(self) -> ModelSettings:
        if self.api_key is None and self.base_url is None:
            raise ValueError(
                f"no API key for model {self.model!r}: set {ENV_VARS['api_key']} or {FALLBACK_API_KEY_VAR}, "
                f"or {ENV_VARS['base_url']} for an endpoint that needs none"
            )
        return self

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelSettings | None:
        """The settings in ``env`` (default ``os.environ``); ``None`` when ``A2A_MODEL`` is unset.

        Raises ``ModelConfigError`` naming the variable when a value is invalid.
        """
        env = os.environ if env is None else env
        values = {name: env[var].strip() for name, var in ENV_VARS.items() if env.get(var, "").strip()}
        if "model" not in values:
            return None
        if "api_key" not in values and env.get(FALLBACK_API_KEY_VAR, "").strip():
            values["api_key"] = env[FALLBACK_API_KEY_VAR].strip()
        try:
            return cls.model_validate(values)
        except pydantic.ValidationError as exc:
            raise ModelConfigError(_env_errors(exc)) from None

    @property
    def endpoint(self) -> str:
        return self.base_url or "https://api.openai.com/v1"

    def chat_model(self, *, http_client: Any = None) -> ChatOpenAI:
        """A ``ChatOpenAI`` for these settings. Prefer ``open_chat_model``, which closes its connections."""
        from langchain_openai import ChatOpenAI

        options: dict[str, Any] = {}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if http_client is not None:
            options["http_async_client"] = http_client
        return ChatOpenAI(
            model=self.model,
            base_url=self.base_url,
            api_key=self.api_key or SecretStr(NO_KEY),
            timeout=self.timeout,
            max_retries=self.max_retries,
            **options,
        )

    @contextlib.asynccontextmanager
    async def open_chat_model(self) -> AsyncIterator[ChatOpenAI]:
        """A chat model with an HTTP client of its own, closed on exit.

        (langchain-openai otherwise shares one cached client per endpoint across event loops,
        and never closes it.)
        """
        import openai

        client = openai.DefaultAsyncHttpxClient(timeout=self.timeout)
        try:
            yield self.chat_model(http_client=client)
        finally:
            await client.aclose()

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """USD for this many tokens, or ``None`` when no price is configured."""
        if self.input_price is None and self.output_price is None:
            return None
        return (input_tokens * (self.input_price or 0.0) + output_tokens * (self.output_price or 0.0)) / 1_000_000


def _env_errors(exc: pydantic.ValidationError) -> str:
    problems = []
    for error in exc.errors(include_url=False):
        field = str(error["loc"][0]) if error["loc"] else ""
        where = ENV_VARS.get(field, "model settings")
        problems.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)


def usage_of(message: AIMessage) -> tuple[int, int]:
    """(input tokens, output tokens) of one model response (zeros when the endpoint sent none)."""
    usage: Mapping[str, Any] = message.usage_metadata or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


# ---- the ReAct graph -------------------------------------------------------------------


def build_react_graph(
    model: Runnable[Any, AIMessage],
    run_tool_call: Callable[[dict[str, Any]], Awaitable[ToolMessage]],
    on_response: Callable[[AIMessage], Awaitable[None]],
) -> CompiledStateGraph[Any]:
    """``model`` (already bound to the tools) -> ``tools`` -> ``model`` ... until no tool call."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    async def call_model(state: Any) -> dict[str, Any]:
        response = await model.ainvoke(state["messages"])
        await on_response(response)
        return {"messages": [response]}

    async def call_tools(state: Any) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        answers = [await run_tool_call(dict(call)) for call in last.tool_calls]
        answers.extend(_malformed_call(dict(call)) for call in last.invalid_tool_calls)
        return {"messages": answers}

    def route(state: Any) -> str:
        last = state["messages"][-1]
        wants_tools = isinstance(last, AIMessage) and (last.tool_calls or last.invalid_tool_calls)
        return "tools" if wants_tools else END

    # The nodes' ``state`` is annotated ``Any``: langgraph evaluates node annotations at runtime,
    # and langchain's names are imported only inside this function.
    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", call_tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile()


def _malformed_call(call: dict[str, Any]) -> ToolMessage:
    """What the model is told about a tool call whose arguments could not be parsed."""
    from langchain_core.messages import ToolMessage

    detail = call.get("error") or "the arguments are not a JSON object"
    return ToolMessage(
        content=f"Error: the call to {call.get('name')!r} was not run: {detail}. Send its arguments as a JSON object.",
        tool_call_id=call.get("id") or "",
        name=str(call.get("name")),
        status="error",
    )


def _text(message: AnyMessage) -> str:
    """The text of a message whose content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    blocks = (b if isinstance(b, str) else b.get("text", "") if b.get("type") == "text" else "" for b in content)
    return "".join(blocks)


def _short(arguments: Any, limit: int = 160) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _ReactRun:
    """One natural-language request: the model, the tools, and what gets published."""

    def __init__(
        self, agent: ToolAgent, ctx: RequestContext, settings: ModelSettings, tools: Sequence[Tool] | None = None
    ) -> None:
        self.agent = agent
        self.ctx = ctx
        self.settings = settings
        #: The tools this request may use (the caller may have narrowed the agent's).
        self.tools = list(agent.tools if tools is None else tools)

    async def on_response(self, response: AIMessage) -> None:
        input_tokens, output_tokens = usage_of(response)
        model_name = (response.response_metadata or {}).get("model_name") or self.settings.model
        self.ctx.report_usage(
            input_tokens, output_tokens, cost_usd=self.settings.cost(input_tokens, output_tokens), model=model_name
        )

    async def run_tool_call(self, call: dict[str, Any]) -> ToolMessage:
        from langchain_core.messages import ToolMessage

        from ._tools import ToolError, publish

        name, arguments = str(call.get("name")), call.get("args")
        await self.ctx.working(f"{name} {_short(arguments)}")
        try:
            result = await self.agent.tool(name, self.tools).run(arguments)
        except ToolError as exc:
            return ToolMessage(content=f"Error: {exc}", tool_call_id=call["id"], name=name, status="error")
        await publish(self.ctx, result)
        return ToolMessage(content=result.model_view(), tool_call_id=call["id"], name=name)

    async def run(self) -> None:
        import openai
        from langchain_core.messages import HumanMessage, SystemMessage
        from langgraph.errors import GraphRecursionError

        messages = [SystemMessage(self.agent.instructions or self.agent.description), HumanMessage(self.ctx.text)]
        await self.ctx.working()
        try:
            async with self.settings.open_chat_model() as chat:
                # OpenAI refuses an empty tool list: a tool-less agent talks to the plain model.
                schemas = [t.openai_schema() for t in self.tools]
                model = chat.bind_tools(schemas) if schemas else chat
                graph = build_react_graph(model, self.run_tool_call, self.on_response)
                state = await graph.ainvoke({"messages": messages}, {"recursion_limit": 2 * self.settings.max_steps})
        except GraphRecursionError:
            await self.ctx.fail(
                f"The model took more than {self.settings.max_steps} steps without a final answer "
                f"(raise {ENV_VARS['max_steps']} if the task needs more)."
            )
            return
        except openai.OpenAIError as exc:
            await self.ctx.fail(f"The model endpoint {self.settings.endpoint} failed: {exc}")
            return
        await self._answer(state["messages"][-1])

    async def _answer(self, last: AnyMessage) -> None:
        answer = _text(last).strip()
        if not answer:
            await self.ctx.fail("The model ended without an answer (an empty reply).")
            return
        await self.ctx.artifact(answer, name="answer")
        await self.ctx.complete()


async def run_natural_language(agent: ToolAgent, ctx: RequestContext, tools: Sequence[Tool] | None = None) -> None:
    """Answer a text message with the agent's model and ``tools`` (default: all of the agent's),
    or fail explaining how to use it."""
    try:
        settings = agent.model or ModelSettings.from_env()
    except ModelConfigError as exc:
        await ctx.fail(agent.usage_help(f"The model settings are invalid ({exc}), so natural language is off."))
        return
    if settings is None:
        await ctx.fail(
            agent.usage_help(
                f"No model is configured ({ENV_VARS['model']} is not set), so this agent cannot follow "
                "natural language; it never makes up an answer."
            )
        )
        return
    await _ReactRun(agent, ctx, settings, tools).run()
