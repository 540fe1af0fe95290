"""The assistant: a general agent that answers through a model, with the tool sets chosen at start.

Serve it with ``a2a serve agents.assistant:agent`` (add ``--stdio`` for the stdio binding). Its
tools come from the environment of its process:

- ``A2A_ASSISTANT_TOOLS``: a comma-separated choice of tool sets, ``files``, ``code`` and
  ``web`` (the tools of ``agents.files``, ``agents.code`` and ``agents.web``). Unset, empty or
  ``none``: a plain assistant with no tools. An unknown name stops the agent at start with an
  error that lists the valid ones.
- ``A2A_ASSISTANT_WORKSPACE`` (else ``A2A_FILES_WORKSPACE``): the files tools' directory, created
  if missing. Unset: a fresh directory under the temp dir, whose path is written to **stderr**.

The model is set as for every built-in agent (``A2A_MODEL``, ``A2A_MODEL_BASE_URL``,
``A2A_MODEL_API_KEY``...; see ``agents.llm``), and its token use and cost go to the task's
``a2a-net/usage`` metadata. In code, or from a command line that passes options as strings::

    make_agent(["files", "code"], workspace=Path("work"))
    make_agent(tools="files,code", workspace="work", max_file_bytes="65536", model="gpt-4o-mini")

so the supervisor can run specialists that hold only the tools they need.

How it answers (the ``agents._tools`` contract):

- **plain text** runs the model (a ReAct loop over the chosen tools; one model call when there
  are none); the answer is an artifact named ``answer``. With no model configured the task ends
  ``TASK_STATE_FAILED`` with an explanation, never a made-up answer.
- **structured input** ``{"tool": name, "arguments": {...}}`` runs one of the chosen tools with
  no model at all (a tool that was not chosen is REJECTED, naming the ones that were).
- **per request, fewer tools**: the message metadata key ``a2a-net/tools`` (``a2a.metadata.TOOLS_KEY``)
  narrows the tools of that one request, like nua's ``tool_names``: a list of tool set names
  (``["files"]``) and/or tool names (``["read", "run_python"]``); ``[]`` means none (one plain model
  call). Only tools the assistant has may be named; anything else is REJECTED, naming what it has.
  The ``assist`` skill's description says so, so a caller reading the card can find it.

The card's first skill is ``assist`` (plain text, with the model), followed by one skill per tool.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2a import RequestContext
from a2a.metadata import TOOLS_KEY
from a2a.server import Skill
from a2a.types import UNSET, AgentSkill

from . import code as code_agent
from . import files as files_agent
from . import web as web_agent
from ._tools import ArgumentError, Tool, ToolAgent
from .llm import ENV_VARS, ModelConfigError, ModelSettings, usage_of

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage

__all__ = [
    "TOOLSETS",
    "TOOLS_ENV",
    "WORKSPACE_ENV",
    "AssistantAgent",
    "ToolsetError",
    "agent",
    "from_env",
    "make_agent",
    "parse_toolsets",
]

TOOLS_ENV = "A2A_ASSISTANT_TOOLS"
WORKSPACE_ENV = "A2A_ASSISTANT_WORKSPACE"
#: The tool sets an assistant can be given, and what each one does.
TOOLSETS: dict[str, str] = {
    "files": "read, write, edit, list and delete files in one workspace directory",
    "code": "run Python programs in a separate process with time, CPU, memory and output limits",
    "web": "fetch web pages as markdown, search the web (Tavily) and scrape pages (Firecrawl)",
}
#: What a caller may ask for in plain text, per tool set (the card's examples).
EXAMPLES: dict[str, str] = {
    "files": "write a short README for this project to README.md",
    "code": "compute the 30th Fibonacci number with Python",
    "web": "fetch https://example.com and summarise it",
}
NO_TOOLS = ("", "none")


class ToolsetError(ValueError):
    """A tool set name that does not exist; the message lists the valid ones."""


# ---- choosing the tools ------------------------------------------------------------------


def parse_toolsets(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """``"files, code"`` or ``["files", "code"]`` -> ``("files", "code")``.

    Names are case-insensitive, repeats are dropped, ``None``, ``""`` and ``"none"`` mean no
    tools. Raises ``ToolsetError`` naming the unknown names and the valid ones.
    """
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else list(value)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ToolsetError(f"tool set names must be strings, got {type(item).__name__} {item!r}")
        name = item.strip().lower()
        if name not in names:
            names.append(name)
    if len(names) == 1 and names[0] in NO_TOOLS:
        return ()
    unknown = [n for n in names if n not in TOOLSETS]
    if unknown:
        shown = ", ".join(repr(n) for n in unknown)
        raise ToolsetError(
            f"unknown tool set {shown}; choose from {', '.join(TOOLSETS)} (comma-separated, e.g. 'files,code'), "
            "or none for a plain assistant"
        )
    return tuple(names)


def _positive_int(value: int | str, option: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{option} must be a whole number of bytes, got {value!r}") from None
    if number <= 0:
        raise ValueError(f"{option} must be more than 0, got {number}")
    return number


def _model_settings(model: ModelSettings | str | None) -> ModelSettings | None:
    """A model name (from a command line) takes the other settings from the environment."""
    if model is None or isinstance(model, ModelSettings):
        return model
    if not model.strip():
        raise ValueError("model must name a model (e.g. 'gpt-4o-mini'), or be left out to read A2A_MODEL")
    settings = ModelSettings.from_env({**os.environ, ENV_VARS["model"]: model.strip()})
    assert settings is not None
    return settings


# ---- the agent ---------------------------------------------------------------------------


def _extract_text(message: AIMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content if isinstance(b, str | dict))


@dataclass
class AssistantAgent(ToolAgent):
    """A general assistant; ``toolsets`` are the tool sets it was given (``tools`` their tools)."""

    toolsets: tuple[str, ...] = ()
    #: The files tools' workspace (``None`` without the files tools).
    workspace: files_agent.Workspace | None = None
    #: The names of each tool set's tools (what ``a2a-net/tools`` may name).
    toolset_tools: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.tools:
            self.default_input_modes = ["text/plain"]  # no tool to take structured input
        self.skills.insert(0, Skill(self._assist_card(), self.execute, wants_text=False))

    def _assist_card(self) -> AgentSkill:
        narrowing = ""
        if self.toolsets:
            using = "; ".join(f"{name}: {TOOLSETS[name]}" for name in self.toolsets)
            tools = f"using its tools as needed ({using})"
            sets = ", ".join(f"{name} ({', '.join(self.toolset_tools.get(name, []))})" for name in self.toolsets)
            narrowing = (
                f" Per request, the caller may narrow its tools with the message metadata key {TOOLS_KEY}: a list "
                f"of tool set or tool names among {sets}, or [] for none; other names are rejected."
            )
        else:
            tools = "with no tools (it knows only what the model knows)"
        examples = ["explain the difference between a process and a thread"]
        examples += [EXAMPLES[name] for name in self.toolsets]
        return AgentSkill(
            id="assist",
            name="Assist",
            description=(
                f"Ask in plain language: a model answers, {tools}. Needs a model ({ENV_VARS['model']}); "
                f"without one the task fails with an explanation.{narrowing}"
            ),
            tags=["assistant", "general", *self.toolsets],
            examples=examples,
            input_modes=["text/plain"],
            output_modes=list(self.default_output_modes),
        )

    def tools_for(self, ctx: RequestContext) -> list[Tool]:
        """All its tools, or those the message's ``a2a-net/tools`` names (tool sets or tools)."""
        metadata = ctx.message.metadata or {}
        if TOOLS_KEY not in metadata:
            return self.tools
        return self.select_tools(metadata[TOOLS_KEY])

    def select_tools(self, names: Any) -> list[Tool]:
        """The tools ``names`` (tool set or tool names) stand for; ``ArgumentError`` for anything else."""
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ArgumentError(
                f"{TOOLS_KEY} must be a list of tool set or tool names, got {type(names).__name__}", argument=TOOLS_KEY
            )
        own = {t.name for t in self.tools}
        chosen: set[str] = set()
        unknown: list[str] = []
        for name in names:
            key = name.strip()
            if key.lower() in self.toolset_tools:
                chosen.update(self.toolset_tools[key.lower()])
            elif key in own:
                chosen.add(key)
            else:
                unknown.append(name)
        if unknown:
            has = "; ".join(f"{s}: {', '.join(self.toolset_tools[s])}" for s in self.toolsets) or "no tools"
            raise ArgumentError(
                f"{TOOLS_KEY} names {', '.join(repr(n) for n in unknown)}, which this assistant does not have "
                f"(it has {has})",
                argument=TOOLS_KEY,
            )
        return [t for t in self.tools if t.name in chosen]

    async def execute(self, ctx: RequestContext) -> None:
        try:
            chosen = self.tools_for(ctx)
        except ArgumentError as exc:
            await ctx.reject(str(exc))
            return
        if chosen:
            await super().execute(ctx)  # structured input, or the ReAct loop over the chosen tools
            return
        if any(part.data is not UNSET for part in ctx.message.parts):
            why = "no tools" if not self.tools else f"no tools for this request ({TOOLS_KEY} is [])"
            await ctx.reject(self.usage_help(f"This assistant has {why} to run structured input with."))
            return
        if not ctx.text.strip():
            await ctx.reject(self.usage_help("The message is empty."))
            return
        settings = await self._settings_or_fail(ctx)
        if settings is not None:
            await self._answer_without_tools(ctx, settings)

    async def _settings_or_fail(self, ctx: RequestContext) -> ModelSettings | None:
        try:
            settings = self.model or ModelSettings.from_env()
        except ModelConfigError as exc:
            await ctx.fail(self.usage_help(f"The model settings are invalid ({exc}), so natural language is off."))
            return None
        if settings is None:
            await ctx.fail(
                self.usage_help(
                    f"No model is configured ({ENV_VARS['model']} is not set), so this assistant cannot answer; "
                    "it never makes up an answer."
                )
            )
        return settings

    async def _answer_without_tools(self, ctx: RequestContext, settings: ModelSettings) -> None:
        """One model call. (Not the ReAct loop: it would offer the model an empty ``tools`` list,
        which OpenAI's API refuses.)"""
        import openai
        from langchain_core.messages import HumanMessage, SystemMessage

        await ctx.working()
        try:
            async with settings.open_chat_model() as chat:
                reply = await chat.ainvoke([SystemMessage(self.instructions), HumanMessage(ctx.text)])
        except openai.OpenAIError as exc:
            await ctx.fail(f"The model endpoint {settings.endpoint} failed: {exc}")
            return
        input_tokens, output_tokens = usage_of(reply)
        model_name = (reply.response_metadata or {}).get("model_name") or settings.model
        ctx.report_usage(
            input_tokens, output_tokens, cost_usd=settings.cost(input_tokens, output_tokens), model=model_name
        )
        answer = _extract_text(reply).strip()
        if not answer:
            await ctx.fail("The model ended without an answer (an empty reply).")
            return
        await ctx.artifact(answer, name="answer")
        await ctx.complete()

    def usage_help(self, reason: str) -> str:
        if self.tools:
            return super().usage_help(reason)
        return (
            f"{reason} This assistant was started with no tools, so it answers only through a model: configure "
            f"an OpenAI-compatible model for its process by setting {ENV_VARS['model']} (the model name) and "
            f"{ENV_VARS['api_key']} or OPENAI_API_KEY, plus {ENV_VARS['base_url']} for an endpoint other than "
            f"OpenAI's, then send plain text. To give it tools that also work without a model, start it with "
            f"{TOOLS_ENV}={','.join(TOOLSETS)} (or some of them)."
        )


# ---- building one ------------------------------------------------------------------------

BASE_INSTRUCTIONS = """You are a helpful, general-purpose assistant. Answer accurately and concisely.
When you are not sure and have no tool to find out, say so rather than guess."""


def _instructions(toolsets: tuple[str, ...], workspace: files_agent.Workspace | None) -> str:
    if not toolsets:
        return BASE_INSTRUCTIONS + "\nYou have no tools: answer from what you know."
    lines = [
        BASE_INSTRUCTIONS,
        "",
        "Use your tools when they help; when a tool reports an error, correct the call or explain the problem.",
    ]
    if workspace is not None:
        lines.append(
            f"- Files (read, write, edit, list, delete) live in one workspace directory, {workspace.root}; paths "
            "are relative to it and cannot leave it. Prefer edit for small changes (read the file first and copy "
            "the text to replace exactly)."
        )
    if "code" in toolsets:
        where = (
            f" To use a workspace file from Python, open it by its absolute path under {workspace.root}."
            if workspace is not None
            else ""
        )
        lines.append(
            "- run_python runs a Python program in a fresh, empty directory of its own: print the results you "
            f"need and include everything (imports, data) in each program; on failure read stderr and fix it.{where}"
        )
    if "web" in toolsets:
        lines.append(
            "- fetch reads a page as markdown, search finds pages, scrape reads pages that need JavaScript; cite "
            "the URLs you used. Some addresses are refused and pages can be cut at a size limit: say so."
        )
    lines.append("Finish with a short answer that reports the result.")
    return "\n".join(lines)


def _fresh_workspace() -> Path:
    path = Path(tempfile.mkdtemp(prefix="a2a-assistant-"))
    sys.stderr.write(f"a2a assistant: workspace {path}\n")  # stdout may carry the protocol
    return path


def _build_tools(
    toolsets: tuple[str, ...],
    workspace: Path | str | None,
    max_file_bytes: int,
    code_limits: code_agent.Limits | None,
    web_settings: web_agent.WebSettings | None,
) -> tuple[list[Tool], files_agent.Workspace | None, dict[str, list[str]]]:
    """The tools of ``toolsets``, the files workspace, and which tools each tool set brought."""
    tools: dict[str, list[Tool]] = {}
    ws: files_agent.Workspace | None = None
    for name in toolsets:
        if name == "files":
            root = Path(workspace).expanduser() if workspace is not None else _fresh_workspace()
            ws = files_agent.Workspace(root, max_file_bytes=max_file_bytes)
            tools[name] = files_agent.make_tools(ws)
        elif name == "code":
            tools[name] = code_agent.make_tools(code_limits)
        else:
            tools[name] = web_agent.make_tools(web_settings)
    flat = [tool for group in tools.values() for tool in group]
    return flat, ws, {name: [t.name for t in group] for name, group in tools.items()}


def _check_unused(toolsets: tuple[str, ...], options: Mapping[str, tuple[str, Any]]) -> None:
    """An option given for a tool set that was not chosen is a mistake, not something to ignore."""
    for option, (toolset, value) in options.items():
        if value is not None and toolset not in toolsets:
            chosen = ", ".join(toolsets) or "none"
            raise ValueError(
                f"{option} is for the {toolset} tools, which this assistant does not have (tools: {chosen})"
            )


def make_agent(
    tools: str | Iterable[str] | None = None,
    *,
    model: ModelSettings | str | None = None,
    workspace: Path | str | None = None,
    max_file_bytes: int | str | None = None,
    code_limits: code_agent.Limits | None = None,
    web_settings: web_agent.WebSettings | None = None,
    name: str = "Assistant",
    instructions: str | None = None,
) -> AssistantAgent:
    """An assistant with these tool sets (``"files,code"`` or ``["files", "code"]``; default none).

    Every option that can come from a command line may be a string:

    - ``model``: ``ModelSettings``, or a model name (the rest from the ``A2A_MODEL*`` environment);
      ``None`` reads the environment at each message;
    - ``workspace`` (files): the directory, created if missing (default: a fresh temp directory,
      printed to stderr); ``max_file_bytes`` (files): the size limit per file (default 1 MiB);
    - ``code_limits`` (code) and ``web_settings`` (web), in code only: ``agents.code.Limits`` and
      ``agents.web.WebSettings`` (default: the code agent's limits; the web settings of the
      environment, read at each call);
    - ``name`` and ``instructions`` (the system prompt) replace the defaults.

    Raises ``ToolsetError`` for an unknown tool set, ``ValueError`` for an option that is invalid
    or belongs to a tool set not chosen, ``agents.llm.ModelConfigError`` for bad model settings.
    """
    toolsets = parse_toolsets(tools)
    _check_unused(
        toolsets,
        {
            "workspace": ("files", workspace),
            "max_file_bytes": ("files", max_file_bytes),
            "code_limits": ("code", code_limits),
            "web_settings": ("web", web_settings),
        },
    )
    file_limit = files_agent.DEFAULT_MAX_FILE_BYTES
    if max_file_bytes is not None:
        file_limit = _positive_int(max_file_bytes, "max_file_bytes")
    settings = _model_settings(model)
    chosen, ws, by_set = _build_tools(toolsets, workspace, file_limit, code_limits, web_settings)
    has = f"its tools: {'; '.join(TOOLSETS[t] for t in toolsets)}" if toolsets else "no tools"
    modes = dict.fromkeys(["text/plain", *(mode for tool in chosen for mode in tool.output_modes)])
    return AssistantAgent(
        name=name,
        description=f"A general assistant that answers in plain language through a model, with {has}.",
        tools=chosen,
        instructions=instructions or _instructions(toolsets, ws),
        default_output_modes=list(modes),
        model=settings,
        toolsets=toolsets,
        workspace=ws,
        toolset_tools=by_set,
    )


def from_env(env: Mapping[str, str] | None = None) -> AssistantAgent:
    """The assistant ``A2A_ASSISTANT_TOOLS`` and ``A2A_ASSISTANT_WORKSPACE`` describe (see above)."""
    env = os.environ if env is None else env
    try:
        toolsets = parse_toolsets(env.get(TOOLS_ENV))
    except ToolsetError as exc:
        raise ToolsetError(f"{TOOLS_ENV}={env.get(TOOLS_ENV)!r}: {exc}") from None
    configured = env.get(WORKSPACE_ENV, "").strip() or env.get(files_agent.WORKSPACE_ENV, "").strip()
    workspace = configured if configured and "files" in toolsets else None
    return make_agent(toolsets, workspace=workspace)


#: The agent ``a2a serve agents.assistant:agent`` serves; made on first access by ``__getattr__``.
agent: AssistantAgent


def __getattr__(name: str) -> AssistantAgent:
    """``agent`` is made on first use, not on import: importing this module for ``make_agent``
    neither reads ``A2A_ASSISTANT_TOOLS`` nor creates a workspace."""
    if name != "agent":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    built = from_env()
    globals()["agent"] = built
    return built
