"""Agent authoring: a card plus an ``execute(context)``; a decorator serves the simple case.

The simple case::

    agent = Agent("Greeter", "Says hello")

    @agent.skill(tags=["greeting"])
    async def greet(text: str) -> str:
        return f"Hello, {text}!"

A skill function may take the message text (one parameter annotated ``str``), the
``RequestContext`` (one unannotated parameter, or one annotated ``RequestContext``), or typed
arguments (``async def forecast(city: str, days: int = 3)``, plus optionally a
``RequestContext`` parameter), filled from a data part ``{"skill": id, "arguments": {...}}`` and
validated (-32602 names a bad argument); their JSON Schema is published in the card (the
``SKILL_ARGUMENTS_EXTENSION`` extension). A signature that cannot be served is a ``TypeError``
when the skill is decorated. A skill may return text, JSON data, ``Part``s (the task
completes with them as an artifact), a ``Message`` (a plain reply, no task) or ``None``; it may
be a generator whose chunks stream into one artifact, each published as soon as it is
yielded (an empty chunk flagged ``lastChunk`` closes the artifact when the generator returns);
if it raises, the task fails with the exception's message. The full case subclasses ``Agent`` and overrides ``execute``.

Task or message: by default a message creates its task at once (SUBMITTED, saved, the first
stream event), so slow work can be listed, fetched and cancelled before it publishes anything.
A skill that may answer with a plain ``Message`` says so: ``replies=True`` on the decorator, or
a return annotation naming ``Message`` (``-> Message``); its task then appears only when it
publishes a task event, as a reply leaves none. ``Agent(replies=True)`` does the same for an
agent with a ``handler`` or its own ``execute``.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import CoroutineType
from typing import Any

import msgspec

from ...errors import InvalidParamsError
from ...metadata import OWNER_SKILL_KEY, SKILL_ARGUMENTS_EXTENSION, SKILL_KEY
from ...types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    Message,
    SecurityRequirement,
    SecurityScheme,
    Task,
)
from .context import RequestContext

__all__ = ["Agent", "Skill", "SkillParameters", "SKILL_ARGUMENTS_EXTENSION", "SKILL_METADATA_KEY", "skill_arguments"]

#: Message metadata key naming the skill to run when an agent has several.
SKILL_METADATA_KEY = SKILL_KEY

SkillFunction = Callable[..., Any]

#: What closes a generator skill's artifact: an empty text chunk, flagged ``lastChunk``.
CLOSING_CHUNK = ""


def skill_arguments(message: Message) -> dict[str, Any] | None:
    """The structured arguments a message carries: the first data part's ``arguments`` object."""
    for part in message.parts:
        if isinstance(part.data, dict) and "arguments" in part.data:
            arguments = part.data["arguments"]
            if not isinstance(arguments, dict):
                raise InvalidParamsError("arguments must be a JSON object of the skill's parameters")
            return arguments
    return None


@dataclass(frozen=True, slots=True)
class SkillParameters:
    """A skill's typed parameters: validated by msgspec, published as a JSON Schema."""

    skill_id: str
    arguments: type[msgspec.Struct]
    #: The parameter that receives the ``RequestContext``, if any.
    context: str | None
    schema: dict[str, Any]

    def validate(self, arguments: dict[str, Any]) -> msgspec.Struct:
        try:
            return msgspec.convert(arguments, self.arguments)
        except msgspec.ValidationError as exc:
            where = str(exc).replace("`$.", "`arguments.")
            raise InvalidParamsError(f"Invalid arguments for skill {self.skill_id!r}: {where}") from None

    def call(self, function: SkillFunction, arguments: dict[str, Any], ctx: RequestContext) -> Any:
        values = self.validate(arguments)
        kwargs = {name: getattr(values, name) for name in values.__struct_fields__}
        if self.context is not None:
            kwargs[self.context] = ctx
        return function(**kwargs)


@dataclass(slots=True)
class Skill:
    card: AgentSkill
    function: SkillFunction
    wants_text: bool
    #: Typed parameters (``None``: the function takes the text or the context, as ``wants_text`` says).
    parameters: SkillParameters | None = None
    #: May answer with a plain ``Message`` (so its task is created only at its first task event).
    replies: bool = False

    def check(self, message: Message, task: Task | None) -> None:
        """Refuse (-32602) a message whose arguments this skill would not accept, before it runs."""
        if self.parameters is None:
            return
        arguments = _arguments_for(message, task)
        if arguments is not None or not self.wants_text:
            self.parameters.validate(arguments or {})

    def _invoke(self, ctx: RequestContext) -> Any:
        if self.parameters is not None:
            arguments = _arguments_for(ctx.message, ctx.task)
            if arguments is not None or not self.wants_text:
                return self.parameters.call(self.function, arguments or {}, ctx)
        return self.function(ctx.text if self.wants_text else ctx)

    async def run(self, ctx: RequestContext) -> None:
        # ``_invoke``'s usual case inline (a skill taking the text or the context): one call fewer.
        if self.parameters is None:
            result = self.function(ctx.message.text if self.wants_text else ctx)
        else:
            result = self._invoke(ctx)
        if type(result) is CoroutineType:  # the usual skill, an ``async def``: one cheap check
            result = await result
            if result is None and ctx.finished:
                return  # it published its own answer (``_publish_result`` would do nothing)
            await _publish_result(ctx, result)
            return
        if inspect.isasyncgen(result):
            await _stream_chunks(ctx, result)
            return
        if inspect.isgenerator(result):
            await _stream_chunks(ctx, _aiter(result))
            return
        if inspect.isawaitable(result):
            result = await result
        await _publish_result(ctx, result)


async def _aiter(gen: Iterator[Any]) -> AsyncIterator[Any]:
    for item in gen:
        yield item


async def _stream_chunks(ctx: RequestContext, chunks: AsyncIterator[Any]) -> None:
    """Each chunk is appended to one artifact the moment it is yielded; when the generator
    returns, an empty closing chunk flagged ``lastChunk`` says the artifact is whole.

    No chunk is held back to flag the last one: a skill that yields and then works delivers
    what it yielded at once, and a task cancelled meanwhile keeps every chunk yielded before.
    """
    artifact_id: str | None = None
    async for chunk in chunks:
        artifact_id = await ctx.artifact(chunk, artifact_id=artifact_id, append=artifact_id is not None)
    if ctx.finished:  # the skill ended the task itself
        return
    if artifact_id is not None:
        await ctx.artifact(CLOSING_CHUNK, artifact_id=artifact_id, append=True, last_chunk=True)
    await ctx.complete()


async def _publish_result(ctx: RequestContext, result: Any) -> None:
    if isinstance(result, Message):
        await ctx.reply(result)
        return
    if result is not None:
        await ctx.artifact(result)
    if not ctx.finished:
        await ctx.complete()


def _arguments_for(message: Message, task: Task | None) -> dict[str, Any] | None:
    """A message's arguments; a follow-up without any keeps those of the message that started the task."""
    arguments = skill_arguments(message)
    if arguments is None and task is not None:
        for earlier in task.history or []:
            arguments = skill_arguments(earlier)
            if arguments is not None:
                break
    return arguments


def _is_context(annotation: Any) -> bool:
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "RequestContext"
    return annotation is RequestContext


def _resolve(function: SkillFunction, param: inspect.Parameter) -> Any:
    """The parameter's type; a string annotation (``from __future__ import annotations``) evaluated."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return Any
    if not isinstance(annotation, str):
        return annotation
    namespace = {**vars(builtins), **getattr(function, "__globals__", {})}
    try:
        return eval(annotation, namespace)  # the author's own annotation, evaluated as typing.get_type_hints does
    except (NameError, AttributeError, SyntaxError, TypeError) as exc:
        raise TypeError(
            f"skill {function.__name__}(): cannot resolve the annotation of {param.name!r}: {exc}"
        ) from None


def _signature(skill_id: str, function: SkillFunction) -> tuple[bool, SkillParameters | None]:
    """How to call a skill: ``(wants_text, typed parameters)``; a ``TypeError`` if it cannot be served."""
    params = list(inspect.signature(function).parameters.values())
    if len(params) == 1:
        only = params[0]
        if only.annotation is inspect.Parameter.empty or _is_context(only.annotation):
            return False, None  # the RequestContext shape
        if only.kind not in (only.POSITIONAL_OR_KEYWORD, only.KEYWORD_ONLY):
            # Cannot be filled by name, but served as before: the text (``str``) or the context.
            return only.annotation in (str, "str"), None
    context: str | None = None
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"skill {function.__name__}(): parameter {param.name!r} cannot be filled by name; "
                "use named parameters (the arguments) and at most one RequestContext"
            )
        if _is_context(param.annotation):
            if context is not None:
                raise TypeError(f"skill {function.__name__}() takes the RequestContext twice")
            context = param.name
            continue
        kind = _resolve(function, param)
        if param.default is inspect.Parameter.empty:
            fields.append((param.name, kind))
        else:
            fields.append((param.name, kind, param.default))
    arguments = msgspec.defstruct(
        f"{skill_id}_arguments", fields, kw_only=True, forbid_unknown_fields=True, module=__name__
    )
    try:
        schema = _inline_schema(arguments)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"skill {function.__name__}(): its parameters cannot be filled from JSON: {exc}") from None
    wants_text = context is None and len(fields) == 1 and _resolve(function, params[0]) is str
    return wants_text, SkillParameters(skill_id, arguments, context, schema)


def _inline_schema(arguments: type[msgspec.Struct]) -> dict[str, Any]:
    """The arguments' JSON Schema as one object (nested types stay under ``$defs``)."""
    schema = msgspec.json.schema(arguments)
    defs: dict[str, Any] = dict(schema.get("$defs", {}))
    top = dict(defs.pop(arguments.__name__, schema))
    top.pop("title", None)
    if defs:
        top["$defs"] = defs
    return top


def _asked_for(message: Message, request_metadata: dict[str, Any] | None) -> str | None:
    """The skill id a message names: metadata ``skillId`` (message, then request), or a data part."""
    # Each source looked at only when present (no empty dict made per message for a miss).
    for metadata in (message.metadata, request_metadata):
        if metadata:
            named = metadata.get(SKILL_METADATA_KEY)
            if named is not None:
                return str(named)
    for part in message.parts:
        if isinstance(part.data, dict):
            named = part.data.get("skill", part.data.get("tool"))
            if isinstance(named, str):
                return named
    return None


def _returns_message(function: SkillFunction) -> bool:
    """Whether the return annotation names ``Message`` (``-> Message``, ``-> Message | None``)."""
    annotation = inspect.signature(function).return_annotation
    if annotation is inspect.Signature.empty:
        return False
    if isinstance(annotation, str):  # postponed annotations: read the name, evaluate nothing
        return "Message" in annotation.replace("|", " ").replace("[", " ").replace("]", " ").split()
    return annotation is Message or Message in getattr(annotation, "__args__", ())


@dataclass
class Agent:
    """An A2A agent: its identity (for the card) and how it executes a message."""

    name: str
    description: str = ""
    version: str = "1.0.0"
    streaming: bool = True
    default_input_modes: list[str] = field(default_factory=lambda: ["text/plain"])
    default_output_modes: list[str] = field(default_factory=lambda: ["text/plain"])
    provider: AgentProvider | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    extensions: list[AgentExtension] = field(default_factory=list)
    #: Returned by GetExtendedAgentCard to authenticated callers (``None``: not configured).
    extended_card: AgentCard | None = None
    #: Declare ``capabilities.extendedAgentCard`` even without a card (callers then get -32007).
    #: Either way the card declares it only where callers authenticate (the server has a scheme).
    declare_extended_card: bool = False
    skills: list[Skill] = field(default_factory=list)
    #: Set to handle every message with one coroutine instead of skills.
    handler: Callable[[RequestContext], Awaitable[None]] | None = None
    #: A ``handler`` or overridden ``execute`` may answer with a plain ``Message``: its task is
    #: then created at its first task event instead of at once (skills declare it themselves).
    replies: bool = False

    @classmethod
    def from_graph(
        cls,
        graph: Any,
        name: str,
        description: str = "",
        *,
        input: Callable[[RequestContext], Any] | None = None,  # noqa: A002 - the graph's own word for it
        output: Callable[[Any], Any] | None = None,
        **options: Any,
    ) -> Agent:
        """An agent that runs a compiled LangGraph graph for each message (``a2a.server.authoring.graph_agent``
        says how: input, WORKING updates, ``interrupt()`` as INPUT_REQUIRED, the contextId as the
        checkpointer thread). ``input`` builds the graph's input from the ``RequestContext``,
        ``output`` the artifact from its final state; ``options`` are this class's fields.
        Needs langgraph (``pip install 'a2a-net[supervisor]'``)."""
        from .graph_agent import graph_agent, message_input, message_output

        return graph_agent(
            graph, name, description, input=input or message_input, output=output or message_output, **options
        )

    def skill(
        self,
        id: str | None = None,  # noqa: A002 - mirrors the card field
        *,
        name: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        examples: Sequence[str] = (),
        input_modes: Sequence[str] | None = None,
        output_modes: Sequence[str] | None = None,
        replies: bool | None = None,
    ) -> Callable[[SkillFunction], SkillFunction]:
        """Register a function as a skill; the first one registered is the default.

        ``replies``: the skill may answer with a plain ``Message`` (default: whether its return
        annotation names ``Message``); any other skill's task exists from the first moment.
        """

        def register(function: SkillFunction) -> SkillFunction:
            skill_id = id or function.__name__
            wants_text, parameters = _signature(skill_id, function)
            modes = list(input_modes) if input_modes else None
            if modes is None and parameters is not None and "application/json" not in self.default_input_modes:
                # Typed arguments come as a data part: the card says the skill takes JSON too.
                modes = [*self.default_input_modes, "application/json"]
            card = AgentSkill(
                id=skill_id,
                name=name or skill_id.replace("_", " ").title(),
                description=description or inspect.getdoc(function) or skill_id,
                tags=list(tags) or [skill_id],
                examples=list(examples) or None,
                input_modes=modes,
                output_modes=list(output_modes) if output_modes else None,
            )
            may_reply = _returns_message(function) if replies is None else replies
            self.skills.append(Skill(card, function, wants_text, parameters, replies=may_reply))
            return function

        return register

    def select_skill(
        self, message: Message, task: Task | None = None, request_metadata: dict[str, Any] | None = None
    ) -> str | None:
        """The skill for a message: the task's owning skill for a follow-up, else the one the
        message asks for, else the default (first) skill. Refuses (-32602) arguments the skill
        would not accept, and a follow-up that names another skill than the task's.

        Asked for by message (or request) metadata ``skillId``, or by a data part
        ``{"skill": id, "arguments": {...}}`` or ``{"tool": id, "arguments": {...}}``.
        """
        wanted = _asked_for(message, request_metadata)
        owner = (task.metadata or {}).get(OWNER_SKILL_KEY) if task is not None else None
        if isinstance(owner, str):
            if wanted is not None and wanted != owner:
                raise InvalidParamsError(
                    f"Task {task.id if task else ''} belongs to skill {owner!r}; a follow-up cannot ask for {wanted!r}"
                )
            wanted = owner
        chosen = wanted if wanted is not None else (self.skills[0].card.id if self.skills else None)
        for skill in self.skills:
            if skill.card.id == chosen and skill.parameters is not None:  # only typed ones check
                skill.check(message, task)
        return chosen

    def skill_arguments_extension(self) -> AgentExtension | None:
        """The card extension publishing each typed skill's arguments schema (none without typed skills)."""
        schemas = {s.card.id: s.parameters.schema for s in self.skills if s.parameters is not None}
        if not schemas:
            return None
        return AgentExtension(
            uri=SKILL_ARGUMENTS_EXTENSION,
            description="JSON Schema of each skill's arguments; send them as a data part "
            '{"skill": id, "arguments": {...}}',
            params={"skills": schemas},
        )

    def may_reply(self, skill_id: str | None) -> bool:
        """Whether a message for ``skill_id`` may be answered with a plain ``Message`` (then its
        task is created lazily, at the first task event); otherwise the task exists at once."""
        if self.handler is not None or not self.skills:
            return self.replies
        for skill in self.skills:
            if skill.card.id == skill_id:
                return skill.replies
        return False

    def execute(self, ctx: RequestContext) -> Awaitable[None]:
        """Handle one message. Override this (an ``async def`` does), or pass ``handler``, for
        full control."""
        # Not a coroutine itself: it hands back the skill's, so a run that waits (an open
        # stream) holds one frame fewer.
        if self.handler is not None:
            return self.handler(ctx)
        for skill in self.skills:
            if skill.card.id == ctx.skill_id:
                return skill.run(ctx)
        known = ", ".join(s.card.id for s in self.skills) or "none"
        return ctx.reject(f"Unknown skill {ctx.skill_id!r}; this agent offers: {known}")

    @property
    def offers_extended_card(self) -> bool:
        return self.extended_card is not None or self.declare_extended_card

    def build_card(
        self,
        interfaces: list[AgentInterface],
        *,
        security_schemes: dict[str, SecurityScheme] | None = None,
        security_requirements: list[SecurityRequirement] | None = None,
        push_notifications: bool = False,
        extended_agent_card: bool = False,
    ) -> AgentCard:
        skills = [s.card for s in self.skills] or [
            AgentSkill(id="default", name=self.name, description=self.description or self.name, tags=["general"])
        ]
        extensions = self.extensions
        arguments_extension = self.skill_arguments_extension()
        if arguments_extension is not None:
            extensions = [*extensions, arguments_extension]
        return AgentCard(
            name=self.name,
            description=self.description or self.name,
            version=self.version,
            supported_interfaces=interfaces,
            capabilities=AgentCapabilities(
                streaming=self.streaming,
                push_notifications=push_notifications,
                extended_agent_card=extended_agent_card,
                extensions=extensions or None,
            ),
            default_input_modes=self.default_input_modes,
            default_output_modes=self.default_output_modes,
            skills=skills,
            provider=self.provider,
            documentation_url=self.documentation_url,
            icon_url=self.icon_url,
            security_schemes=security_schemes or None,
            security_requirements=security_requirements or None,
        )
