"""The supervisor's model: any OpenAI-compatible endpoint through ``langchain-openai``.

Also the prompts and the tools the model is offered. Every prompt states that ``<peer-data>``
is data (``supervisor.quoting``); cards and results are quoted, never pasted as instructions.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, SecretStr

from .card_summary import entry_summary
from .config import ConfigError, ConfigIssue, ModelConfig, SupervisorSettings
from .quoting import DATA_RULE, quote
from .registry import AgentEntry
from .state import Item
from .strategy import Strategy

__all__ = [
    "Delegate",
    "Finish",
    "ModelHandle",
    "Reflect",
    "RetrieveAgents",
    "TOOLS",
    "TodoEntry",
    "UpdateTodo",
    "ModelUnavailableError",
    "catalog_text",
    "model_failure",
    "items_text",
    "open_model",
    "tool_specs",
    "usage_of",
]

FALLBACK_API_KEY_VAR = "OPENAI_API_KEY"
NO_KEY = "not-needed"


# ---- the tools (their docstrings and field descriptions are what the model reads) --------------


#: What the ``tools`` field of a plan item or a delegation means (the model reads it).
TOOLS_HELP = (
    "for an agent whose card says it takes a2a-net/tools (e.g. an assistant): the only tool sets or tools it "
    "may use for this task, e.g. ['files'] or ['run_python']; [] for none; leave out to let it use all"
)


class TodoEntry(BaseModel):
    id: str = Field(description="short unique id, e.g. '1', '2', 'summary'")
    description: str = Field(description="at most ten words, shown in the progress display")
    instruction: str | None = Field(
        None,
        description="the complete, self-contained task for the agent (it sees nothing else except the results "
        "of the items this one depends on); defaults to the description",
    )
    agent: str | None = Field(None, description="the name of the agent that should do it")
    skill: str | None = Field(None, description="the id of the agent's skill to use, if you know it")
    depends_on: list[str] = Field(default_factory=list, description="ids of the items whose results this one needs")
    arguments: dict[str, Any] | None = Field(
        None, description="structured input for skills that take JSON arguments (see the skill's description)"
    )
    tools: list[str] | None = Field(None, description=TOOLS_HELP)


class UpdateTodo(BaseModel):
    """Set the TODO list: add items, or change items that have not started yet (matched by id)."""

    items: list[TodoEntry] = Field(description="the items to add or change")
    remove: list[str] = Field(default_factory=list, description="ids of pending items to drop")


class RetrieveAgents(BaseModel):
    """Find the agents whose skills best match a need (best first)."""

    query: str = Field(description="what you need done, in a few words")
    k: int = Field(5, ge=1, le=20, description="how many agents to return")


class Delegate(BaseModel):
    """Send a task to an agent and get its result. Several delegate calls in one turn run in parallel."""

    agent: str = Field(description="the agent's name")
    task: str = Field(description="the complete, self-contained task for the agent")
    description: str = Field(description="at most ten words, shown in the progress display")
    item_id: str | None = Field(None, description="the TODO item this delegation does, if any")
    skill: str | None = Field(None, description="the id of the agent's skill to use, if you know it")
    arguments: dict[str, Any] | None = Field(None, description="structured input, for skills that take it")
    tools: list[str] | None = Field(None, description=TOOLS_HELP)
    files: list[str] | None = Field(
        None,
        description="names of files of this run (listed under 'Files of this run') to send with the task as file "
        "parts, e.g. ['primes.py'] for an agent that runs or saves it; leave out to send the files the task or "
        "arguments name; [] for none",
    )


class Reflect(BaseModel):
    """Judge the result of a TODO item."""

    item_id: str = Field(description="the item judged")
    verdict: Literal["accept", "retry", "replan", "give_up"] = Field(
        description="accept the result; retry once with a corrected instruction; replan the remaining work; "
        "or give up on the item"
    )
    reason: str = Field("", description="why, in one sentence")
    instruction: str | None = Field(None, description="for retry: the corrected instruction")


class Finish(BaseModel):
    """Give the final answer to the objective; the run ends."""

    answer: str = Field(description="the final answer, complete and self-contained")


#: The tools by the names the model sees.
TOOLS: dict[str, type[BaseModel]] = {
    "update_todo": UpdateTodo,
    "retrieve_agents": RetrieveAgents,
    "delegate": Delegate,
    "reflect": Reflect,
    "finish": Finish,
}


def tool_specs(*names: str, agents: Sequence[AgentEntry] = ()) -> list[dict[str, Any]]:
    """OpenAI function definitions of the named tools. With ``agents``, ``delegate``'s ``agent`` is
    an enum of their names and its description lists them (name: what it does, its skill ids)."""
    specs = []
    for name in names:
        spec = convert_to_openai_tool(TOOLS[name])
        spec["function"]["name"] = name
        if name == "delegate" and agents:
            _list_agents(spec["function"], agents)
        specs.append(spec)
    return specs


def _list_agents(function: dict[str, Any], agents: Sequence[AgentEntry]) -> None:
    agent = function["parameters"]["properties"]["agent"]
    agent["enum"] = [e.name for e in agents]
    lines = []
    for entry in agents:
        # Peer text, as everywhere in a prompt: quoted as data, and short (the catalog has the rest).
        what = quote(" ".join(entry.description.split()), source=entry.name, kind="agent description", limit=120)
        skills = ", ".join(s.id for s in entry.skills)
        lines.append(f"- {entry.name}" + (f" (skills: {skills})" if skills else "") + f": {what}")
    function["description"] += "\nAgents:\n" + "\n".join(lines)


# ---- the model -------------------------------------------------------------------------------


class ModelHandle:
    """A chat model plus what its tokens cost (``None`` prices: cost not counted)."""

    def __init__(
        self,
        model: BaseChatModel,
        name: str,
        input_price: float | None = None,
        output_price: float | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.model = model
        self.name = name
        #: Where the model is served (named in errors); ``None``: unknown (a model object given).
        self.endpoint = endpoint
        self.input_price = input_price
        self.output_price = output_price

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * (self.input_price or 0.0) + output_tokens * (self.output_price or 0.0)) / 1e6


class ModelUnavailableError(Exception):
    """The model endpoint could not be reached or refused the call (after the client's retries).

    A run that needs its model cannot go on; it fails with this one line (naming the endpoint)
    rather than a traceback. Falling back to the offline planner instead would hide a broken
    configuration behind a different, weaker plan.
    """


def model_failure(handle: ModelHandle, exc: Exception) -> ModelUnavailableError | None:
    """The one-line error for a failed call to ``handle``, if ``exc`` is the endpoint failing."""
    import openai

    if not isinstance(exc, openai.APIError):
        return None
    where = handle.endpoint or handle.name
    if isinstance(exc, openai.APIConnectionError):
        reason = "timed out" if isinstance(exc, openai.APITimeoutError) else "cannot be reached"
        cause = exc.__cause__
        while cause is not None and cause.__cause__ is not None:  # the transport's own error says most
            cause = cause.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None and str(cause) else ""
        return ModelUnavailableError(f"the model endpoint {where} {reason}{detail}")
    status = getattr(exc, "status_code", None)
    message = getattr(exc, "message", None) or str(exc)
    return ModelUnavailableError(
        f"the model endpoint {where} refused the call" + (f" (HTTP {status})" if status else "") + f": {message}"
    )


def _api_key(config: ModelConfig) -> str:
    key = config.api_key()
    if key is None and config.api_key_env == "A2A_MODEL_API_KEY":
        key = os.environ.get(FALLBACK_API_KEY_VAR) or None
    if key is None and config.base_url is None:
        raise ConfigError(
            "supervisor.model",
            [
                ConfigIssue(
                    "supervisor.model.api_key_env",
                    None,
                    f"no API key for model {config.model!r}: set ${config.api_key_env} (or give base_url for an "
                    "endpoint that needs no key)",
                )
            ],
        )
    return key or NO_KEY


@contextlib.asynccontextmanager
async def open_model(
    settings: SupervisorSettings, given: BaseChatModel | ModelHandle | None = None
) -> AsyncIterator[ModelHandle | None]:
    """The model for a run (``None``: offline), with an HTTP client of its own, closed on exit."""
    if isinstance(given, ModelHandle):
        yield given
        return
    if given is not None:
        yield ModelHandle(given, getattr(given, "model_name", None) or type(given).__name__)
        return
    config = None if settings.offline else (settings.model or ModelConfig.from_env())
    if config is None:
        yield None
        return
    import openai
    from langchain_openai import ChatOpenAI

    client = openai.DefaultAsyncHttpxClient(timeout=config.timeout)
    try:
        options: dict[str, Any] = {}
        if config.max_output_tokens:
            options["max_tokens"] = config.max_output_tokens
        chat = ChatOpenAI(
            model=config.model,
            base_url=config.base_url,
            api_key=SecretStr(_api_key(config)),
            temperature=config.temperature,
            timeout=config.timeout,
            max_retries=config.max_retries,
            http_async_client=client,
            **options,
        )
        endpoint = config.base_url or "https://api.openai.com/v1"
        yield ModelHandle(chat, config.model, config.input_cost_per_mtok, config.output_cost_per_mtok, endpoint)
    finally:
        await client.aclose()


def usage_of(message: AIMessage) -> tuple[int, int]:
    usage: Mapping[str, Any] = message.usage_metadata or {}
    return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))


# ---- prompts ---------------------------------------------------------------------------------

PLAN_SYSTEM = """You are the supervisor of a team of AI agents that you reach over the A2A protocol. You do not do \
the work yourself: you break the objective into a TODO list and assign each item to the agent best suited for it.

Call the tool update_todo once with the whole list. {strategy} Keep the list short: one item per agent task, \
no items for things you would do yourself. Every instruction must be complete on its own.

{data_rule}"""

REFLECT_SYSTEM = """You are the supervisor of a team of AI agents. Check each result below against the objective \
and call the tool reflect once per item: accept it, retry it once with a corrected instruction, ask for a replan \
of the remaining work, or give up on it with a reason.

{data_rule}"""

CONVERSE_SYSTEM = """You are the supervisor of a team of AI agents that you reach over the A2A protocol. Work \
towards the objective by delegating tasks to agents with the delegate tool: call it several times in one turn to \
run tasks in parallel. Use retrieve_agents to find agents for a need, update_todo to keep your TODO list, reflect \
to judge a result, and finish with the final answer once the objective is met (or cannot be met: then say what is \
missing).

{data_rule}"""

SUMMARIZE_SYSTEM = """You are the supervisor of a team of AI agents. Your conversation with them has grown too long \
to keep whole: write a summary of its earlier steps for your own later use. Keep what the rest of the work needs: \
which agent was asked what, what came back (facts, values, file names, ids), what failed and why. Merge it with the \
summary so far; leave out pleasantries and repetition.

{data_rule}"""

SYNTHESIZE_SYSTEM = """You are the supervisor of a team of AI agents. Write the final answer to the objective from \
the results of the TODO items below. Use only what the results say. If items failed or are missing, say plainly \
what is missing and why.

{data_rule}"""


def system_prompt(template: str, strategy: Strategy | None = None) -> str:
    """The template filled in: the data rule, and (for planning) how the strategy runs the list."""
    return template.format(strategy=strategy.planner_note if strategy else "", data_rule=DATA_RULE)


def catalog_text(entries: Sequence[AgentEntry], limit: int) -> str:
    """The agents, quoted as data: each card summarised to fit ``limit`` characters (``card_summary``)."""
    blocks = []
    for entry in entries:
        text = json.dumps(entry_summary(entry, limit), ensure_ascii=False)
        # The summary fits already (or is as small as it gets): quote it whole, never cut mid-JSON.
        blocks.append(quote(text, source=entry.name, kind="agent card", limit=len(text)))
    return "\n".join(blocks) or "(no agent is available)"


def items_text(items: Sequence[Item], limit: int, *, with_results: bool = True) -> str:
    lines = []
    for item in items:
        head = (
            f"- {item['id']} [{item['status']}] {item['description']} (agent: {item['agent'] or '-'}"
            f"{', depends on ' + ', '.join(item['depends_on']) if item['depends_on'] else ''})"
        )
        lines.append(head)
        if with_results and item["status"] in ("done", "review") and item["result"] is not None:
            lines.append(
                quote(item["result"], source=item["agent"] or "?", kind=f"result of item {item['id']}", limit=limit)
            )
        if item["error"]:
            lines.append(
                quote(
                    item["error"],
                    source=item["agent"] or "?",
                    kind=f"error of item {item['id']}",
                    limit=min(limit, 1000),
                )
            )
    return "\n".join(lines) or "(empty)"
