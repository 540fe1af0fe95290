"""Tools, and the agent that serves them: the contract every built-in agent shares.

A built-in agent is a set of **tools**. Each tool is one skill of the agent's card (the skill id
is the tool name; the card gives its description, the arguments it takes, tags, examples, and
input modes ``application/json`` and ``text/plain``). A message can use the tools two ways:

**Structured input** (no model needed: scripts, the offline planner). A data part names one tool
and its arguments::

    {"tool": "write", "arguments": {"path": "hello.py", "content": "print('hi')"}}

(``"skill"`` is accepted in place of ``"tool"``.) The arguments are validated (pydantic) before
the tool runs. The task then ends:

- ``TASK_STATE_COMPLETED``: the results are the task's artifacts (text, JSON data, or a file
  part with its media type), and the status message is a one-line summary;
- ``TASK_STATE_REJECTED``: the request was refused before anything was done: an unknown tool,
  a missing or invalid argument (the message names it), a path outside the workspace;
- ``TASK_STATE_FAILED``: the tool ran and could not do it (a file not found, a text to replace
  not found); the message says why.

**Natural language** (a text message, no tool data part). A LangGraph ReAct loop lets a model
call the *same* tools (see ``agents.llm`` for the ``A2A_MODEL*`` settings). Each tool call
shows as a ``TASK_STATE_WORKING`` status, its results become artifacts as above, the model's
final answer is an artifact named ``answer``, and the model's token use (and cost, when prices
are configured) is in the task's metadata under ``a2a-net/usage``. With no model configured, the
task ends ``TASK_STATE_FAILED`` with a message that explains both ways to use the agent.

Writing a tool::

    class Greeting(BaseModel):
        name: str = Field(description="who to greet")

    async def greet(args: Greeting) -> ToolResult:
        return ToolResult(f"greeted {args.name}", [text_output("greeting", f"Hello, {args.name}!")])

    tools = [Tool("greet", "Greets someone.", Greeting, greet, examples=["say hello to Ada"])]
    agent = ToolAgent(name="Greeter", description="...", tools=tools, instructions="...")

A tool raises ``ArgumentError`` (REJECTED) or ``ToolError`` (FAILED) with a message that says
what went wrong and what to do instead.

**Files sent with the message** (parts with a ``filename``, inline text or bytes) are the request's
received files: a tool built with ``accepts_files=True`` (its skill then accepts any media type)
reads them with ``received_files()`` / ``received_file(name)`` — the code agent runs or reads
them, the files agent saves them. Parts that only carry a ``url`` are not fetched.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import mimetypes
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic
from pydantic import BaseModel

from a2a import Agent, RequestContext
from a2a.server import Skill
from a2a.types import UNSET, AgentSkill, Message, Part

if TYPE_CHECKING:
    from .llm import ModelSettings

__all__ = [
    "STRUCTURED_MODES",
    "ArgumentError",
    "Output",
    "Tool",
    "ToolAgent",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "data_output",
    "file_output",
    "file_part",
    "human_size",
    "in_thread",
    "progress_sink",
    "publish",
    "received_files",
    "streaming_progress",
    "structured_call",
    "text_output",
    "truncate_text",
]

#: Input modes of every tool skill: a JSON data part (structured) or text (natural language).
STRUCTURED_MODES = ["application/json", "text/plain"]
#: How much of a text a model is shown at most (the artifact always has all of it).
MODEL_VIEW_CHARS = 20_000


class ToolError(Exception):
    """The tool ran and could not do what was asked (the task ends FAILED)."""


class ArgumentError(ToolError):
    """The request was refused before anything was done (the task ends REJECTED).

    ``argument`` names the offending argument, when there is one (the message names it too).
    """

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        self.argument = argument
        super().__init__(message)


# ---- results ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """One artifact a tool produces."""

    name: str
    parts: list[Part]
    description: str | None = None
    metadata: dict[str, Any] | None = None


def text_output(name: str, text: str, *, media_type: str = "text/plain", filename: str | None = None) -> Output:
    return Output(name, [Part(text=text, media_type=media_type, filename=filename)])


def data_output(name: str, data: Any) -> Output:
    return Output(name, [Part(data=data, media_type="application/json")])


def file_part(filename: str, content: bytes) -> Part:
    """UTF-8 text (without NUL bytes) as a text part, anything else as raw bytes; with its media type."""
    guessed = mimetypes.guess_type(filename)[0]
    if b"\x00" not in content:
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return Part(text=text, media_type=guessed or "text/plain", filename=filename)
    return Part(raw=content, media_type=guessed or "application/octet-stream", filename=filename)


def file_output(filename: str, content: bytes, *, name: str | None = None) -> Output:
    return Output(name or filename, [file_part(filename, content)])


def human_size(size: int) -> str:
    """``1048576`` -> ``1 MiB`` (for messages people read)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def truncate_text(text: str, limit: int = MODEL_VIEW_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"


def _render_part(part: Part) -> str:
    if isinstance(part.text, str):
        return truncate_text(part.text)
    if part.data is not UNSET:
        return truncate_text(json.dumps(part.data, ensure_ascii=False))
    size = len(part.raw) if isinstance(part.raw, bytes) else 0
    return f"<{part.media_type or 'binary'} file {part.filename or ''}, {size} bytes, returned as an artifact>"


@dataclass
class ToolResult:
    """What a tool returns: a one-line summary for people, and the artifacts.

    ``for_model`` is what a model is shown (by default the summary and each output, capped).
    """

    summary: str
    outputs: list[Output] = field(default_factory=list)
    for_model: str | None = None

    def model_view(self) -> str:
        if self.for_model is not None:
            return self.for_model
        lines = [self.summary]
        for output in self.outputs:
            lines.append(f"[{output.name}]")
            lines.extend(_render_part(p) for p in output.parts)
        return "\n".join(lines)


# ---- tools -----------------------------------------------------------------------------

ArgsT = TypeVar("ArgsT", bound=BaseModel)
ToolFunction = Callable[[Any], Awaitable[ToolResult]]


def in_thread(function: Callable[[ArgsT], ToolResult]) -> Callable[[ArgsT], Awaitable[ToolResult]]:
    """Run a blocking tool function (disk I/O) in a worker thread."""

    @functools.wraps(function)
    async def run(args: ArgsT) -> ToolResult:
        return await asyncio.to_thread(function, args)

    return run


def _schema_type(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " or ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    if "anyOf" in prop:
        return " or ".join(_schema_type(p) for p in prop["anyOf"])
    if prop.get("type") == "array":
        return f"array of {_schema_type(prop.get('items', {}))}"
    return str(prop.get("type", "any"))


def _describe_argument(name: str, prop: dict[str, Any], required: bool) -> str:
    need = "required" if required else f"default {json.dumps(prop.get('default'))}"
    text = f"{name} ({_schema_type(prop)}, {need})"
    return f"{text}: {prop['description']}" if prop.get("description") else text


def _validation_message(exc: pydantic.ValidationError) -> tuple[str | None, str]:
    problems = []
    first: str | None = None
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or None
        first = first or where
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "missing":
            message = "is required"
        elif error["type"] == "extra_forbidden":
            message = "is not an argument of this tool"
        problems.append(f"{where!r} {message}" if where else message)
    return first, "invalid arguments: " + "; ".join(problems)


@dataclass
class Tool:
    """One operation of an agent: a name, what it does, its arguments (a pydantic model), and
    an async function from validated arguments to a ``ToolResult``."""

    name: str
    description: str
    arguments: type[BaseModel]
    function: ToolFunction
    tags: Sequence[str] = ()
    #: Natural-language examples; a structured example is added from ``example_arguments``.
    examples: Sequence[str] = ()
    example_arguments: dict[str, Any] | None = None
    output_modes: Sequence[str] = ("application/json",)
    #: It uses files received with the message (``received_files``): its skill accepts any media type.
    accepts_files: bool = False

    def validate(self, raw: Any) -> BaseModel:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ArgumentError(f"'arguments' must be a JSON object, got {type(raw).__name__}", argument="arguments")
        try:
            return self.arguments.model_validate(raw)
        except pydantic.ValidationError as exc:
            argument, message = _validation_message(exc)
            raise ArgumentError(message, argument=argument) from None

    async def run(self, raw_arguments: Any) -> ToolResult:
        """Validate, then run; errors are ``ArgumentError`` or ``ToolError``."""
        args = self.validate(raw_arguments)
        try:
            return await self.function(args)
        except ToolError:
            raise
        except OSError as exc:
            raise ToolError(f"{self.name}: {exc.strerror or exc}") from exc

    def arguments_text(self) -> str:
        """The arguments in one line, for the card (the schema itself is what a model is offered)."""
        schema = self.arguments.model_json_schema()
        props: dict[str, Any] = schema.get("properties", {})
        if not props:
            return "Arguments: none."
        required = set(schema.get("required", []))
        described = (_describe_argument(n, p, n in required) for n, p in props.items())
        return "Arguments: " + "; ".join(described) + "."

    def skill_card(self) -> AgentSkill:
        examples = list(self.examples)
        if self.example_arguments is not None:
            examples.append(json.dumps({"tool": self.name, "arguments": self.example_arguments}))
        return AgentSkill(
            id=self.name,
            name=self.name.replace("_", " ").title(),
            description=f"{self.description} {self.arguments_text()}",
            tags=list(self.tags) or [self.name],
            examples=examples or None,
            input_modes=[*STRUCTURED_MODES, *(["*/*"] if self.accepts_files else [])],
            output_modes=list(self.output_modes),
        )

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI function definition (what a model is offered)."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        function = {"name": self.name, "description": self.description, "parameters": parameters}
        return {"type": "function", "function": function}


# ---- structured input ------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    tool: str
    arguments: Any


def structured_call(message: Message) -> ToolCall | None:
    """The tool call a message's data part asks for, or ``None`` when it has no data part.

    Raises ``ArgumentError`` for a data part that is not ``{"tool": name, "arguments": {...}}``.
    """
    for part in message.parts:
        if part.data is UNSET:
            continue
        data = part.data
        name = data.get("tool", data.get("skill")) if isinstance(data, dict) else None
        if not isinstance(name, str):
            raise ArgumentError(
                'a data part must be {"tool": "<tool name>", "arguments": {...}}; '
                "send plain text instead to ask in natural language",
            )
        extra = set(data) - {"tool", "skill", "arguments"}
        if extra:
            raise ArgumentError(
                f"unexpected keys {sorted(extra)} in the data part; put the tool's arguments under 'arguments'"
            )
        return ToolCall(name, data.get("arguments"))
    return None


#: The files the message being handled carried, by name (set by ``ToolAgent.execute``).
_received: ContextVar[dict[str, bytes] | None] = ContextVar("a2a_net_received_files", default=None)


def files_of(message: Message) -> dict[str, bytes]:
    """The files a message carries inline: each part with a ``filename`` and text or raw bytes.

    (A part that only points at a ``url`` is not fetched: an agent has no business reaching out to
    addresses a caller names; it is not a received file.) The server's message size limit bounds them.
    """
    found: dict[str, bytes] = {}
    for part in message.parts:
        if not part.filename:
            continue
        if isinstance(part.raw, bytes):
            found[part.filename] = part.raw
        elif isinstance(part.text, str):
            found[part.filename] = part.text.encode("utf-8", "surrogatepass")
    return found


def received_files() -> dict[str, bytes]:
    """The files the request being handled carried (name -> content; empty when none): a tool
    that takes a file (the code agent's ``run_python``, the files agent's ``write``) reads them here."""
    return dict(_received.get() or {})


def received_file(name: str) -> bytes | None:
    """The received file ``name`` (matched whole, then by its last path component), or the only
    received file when ``name`` is empty; ``None`` when there is no such file."""
    files = received_files()
    if not name:
        return next(iter(files.values())) if len(files) == 1 else None
    if name in files:
        return files[name]
    base = name.rsplit("/", 1)[-1]
    matches = [content for filename, content in files.items() if filename.rsplit("/", 1)[-1] == base]
    return matches[0] if len(matches) == 1 else None


#: Where the running tool's progress goes (set around one tool run for a task; else nothing).
_progress: ContextVar[Callable[[str], None] | None] = ContextVar("a2a_net_tool_progress", default=None)


def progress_sink() -> Callable[[str], None] | None:
    """The running tool's progress reporter: call it with text as it comes (a program's output)
    and the task streams it as WORKING status updates; ``None`` when nobody follows (a direct
    ``ToolAgent.call``). Read it in the tool's own task: callbacks of the event loop may run in
    another context."""
    return _progress.get()


@contextlib.asynccontextmanager
async def streaming_progress(ctx: RequestContext) -> AsyncIterator[None]:
    """While inside, what the tool reports is published as WORKING updates of ``ctx``'s task:
    one at a time, with what arrived meanwhile joined, so a chatty tool costs few events."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    async def pump() -> None:
        ended = False
        while not ended:
            texts = [await queue.get()]
            while not queue.empty():
                texts.append(queue.get_nowait())
            ended = None in texts  # the tool has returned: publish what is left, then stop
            text = "".join(t for t in texts if t is not None)
            if text:
                await ctx.working(text)

    token = _progress.set(queue.put_nowait)
    pumping = asyncio.create_task(pump())
    try:
        yield
    except BaseException:
        pumping.cancel()  # the run is failing or canceled: its progress no longer matters
        raise
    finally:
        _progress.reset(token)
        queue.put_nowait(None)
        await asyncio.gather(pumping, return_exceptions=True)


async def publish(ctx: RequestContext, result: ToolResult) -> None:
    """Each output of ``result`` as an artifact of the task."""
    for output in result.outputs:
        await ctx.artifact(output.parts, name=output.name, metadata=output.metadata)


# ---- the agent -------------------------------------------------------------------------


@dataclass
class ToolAgent(Agent):
    """An agent made of tools: structured input runs one tool, text runs the model over all of them."""

    tools: list[Tool] = field(default_factory=list)
    #: The system prompt of the natural-language mode (what the agent is for, how to answer).
    instructions: str = ""
    #: Model settings for natural language; ``None`` reads them from the environment per message.
    model: ModelSettings | None = None

    def __post_init__(self) -> None:
        names = [t.name for t in self.tools]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"tool names must be unique within an agent; repeated: {', '.join(doubled)}")
        self.default_input_modes = list(STRUCTURED_MODES)
        # The skills are the card's view of the tools; ``execute`` routes every message itself.
        self.skills.extend(Skill(t.skill_card(), self.execute, wants_text=False) for t in self.tools)

    def tool(self, name: str, tools: Sequence[Tool] | None = None) -> Tool:
        """The tool ``name`` among ``tools`` (default: all of the agent's)."""
        offered = self.tools if tools is None else tools
        for tool in offered:
            if tool.name == name:
                return tool
        known = ", ".join(t.name for t in offered) or "none"
        if tools is not None and any(t.name == name for t in self.tools):
            raise ArgumentError(f"tool {name!r} is not among the tools of this request ({known})", argument="tool")
        raise ArgumentError(f"unknown tool {name!r}; this agent offers: {known}", argument="tool")

    def tools_for(self, ctx: RequestContext) -> list[Tool]:
        """The tools one request may use: all of them here; an agent that lets the caller choose
        (the assistant, with ``a2a-net/tools``) narrows them, raising ``ArgumentError`` for a bad choice."""
        return self.tools

    async def call(self, name: str, arguments: Any = None) -> ToolResult:
        """Run one tool directly (no task): what structured input does, for Python callers."""
        return await self.tool(name).run(arguments)

    async def execute(self, ctx: RequestContext) -> None:
        token = _received.set(files_of(ctx.message))
        try:
            await self._execute(ctx)
        finally:
            _received.reset(token)

    async def _execute(self, ctx: RequestContext) -> None:
        try:
            tools = self.tools_for(ctx)
            call = structured_call(ctx.message)
            if call is not None:
                await self._run_tool(ctx, self.tool(call.tool, tools), call.arguments)
                return
        except ArgumentError as exc:
            await ctx.reject(str(exc))
            return
        if not ctx.text.strip():
            await ctx.reject(self.usage_help("The message is empty."))
            return
        from .llm import run_natural_language  # langchain is imported only when a model is used

        await run_natural_language(self, ctx, tools)

    async def _run_tool(self, ctx: RequestContext, tool: Tool, arguments: Any) -> None:
        await ctx.working(f"running {tool.name}")
        try:
            async with streaming_progress(ctx):
                result = await tool.run(arguments)
        except ArgumentError as exc:
            await ctx.reject(f"{tool.name}: {exc}")
            return
        except ToolError as exc:
            await ctx.fail(f"{tool.name}: {exc}")
            return
        await publish(ctx, result)
        await ctx.complete(result.summary)

    def usage_help(self, reason: str) -> str:
        """Explains both ways to use this agent (for messages it cannot act on)."""
        names = ", ".join(t.name for t in self.tools)
        example = next((t for t in self.tools if t.example_arguments is not None), None)
        shown = (
            json.dumps({"tool": example.name, "arguments": example.example_arguments})
            if example
            else '{"tool": "<name>", "arguments": {...}}'
        )
        return (
            f"{reason} Use this agent in one of two ways: "
            f"(1) structured input, no model needed: send a data part such as {shown} "
            f"naming one of its tools ({names}; the agent card lists each tool's arguments); or "
            "(2) natural language: configure an OpenAI-compatible model for the agent's process by setting "
            "A2A_MODEL (the model name) and A2A_MODEL_API_KEY or OPENAI_API_KEY, plus A2A_MODEL_BASE_URL "
            "for an endpoint other than OpenAI's, then send plain text."
        )
