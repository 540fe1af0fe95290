"""Agent authoring: a card plus an ``execute(context)``; a decorator serves the simple case.

The simple case::

    agent = Agent("Greeter", "Says hello")

    @agent.skill(tags=["greeting"])
    async def greet(text: str) -> str:
        return f"Hello, {text}!"

A skill function may take the message text (a parameter annotated ``str``) or the
``RequestContext`` (any other parameter). It may return text, JSON data, ``Part``s (the task
completes with them as an artifact), a ``Message`` (a plain reply, no task) or ``None``; it may
be a generator whose chunks stream into one artifact; if it raises, the task fails with the
exception's message. The full case subclasses ``Agent`` and overrides ``execute``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import CoroutineType
from typing import Any

from ..metadata import SKILL_KEY
from ..types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    Message,
    SecurityRequirement,
    SecurityScheme,
)
from .context import RequestContext

__all__ = ["Agent", "Skill", "SKILL_METADATA_KEY"]

#: Message metadata key naming the skill to run when an agent has several.
SKILL_METADATA_KEY = SKILL_KEY

SkillFunction = Callable[..., Any]


@dataclass(slots=True)
class Skill:
    card: AgentSkill
    function: SkillFunction
    wants_text: bool

    async def run(self, ctx: RequestContext) -> None:
        argument: Any = ctx.text if self.wants_text else ctx
        result = self.function(argument)
        if type(result) is CoroutineType:  # the usual skill, an ``async def``: one cheap check
            await _publish_result(ctx, await result)
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
    """Each chunk is appended to one artifact; one chunk is held back so the last gets ``lastChunk``."""
    artifact_id: str | None = None
    pending: Any = None
    have_pending = False
    async for chunk in chunks:
        if have_pending:
            artifact_id = await ctx.artifact(pending, artifact_id=artifact_id, append=artifact_id is not None)
        pending, have_pending = chunk, True
    if have_pending:
        await ctx.artifact(pending, artifact_id=artifact_id, append=artifact_id is not None, last_chunk=True)
    if not ctx.finished:
        await ctx.complete()


async def _publish_result(ctx: RequestContext, result: Any) -> None:
    if isinstance(result, Message):
        await ctx.reply(result)
        return
    if result is not None:
        await ctx.artifact(result)
    if not ctx.finished:
        await ctx.complete()


def _wants_text(function: SkillFunction) -> bool:
    params = list(inspect.signature(function).parameters.values())
    if not params:
        raise TypeError(f"skill {function.__name__}() must take one parameter: the text or the RequestContext")
    annotation = params[0].annotation
    return annotation is str or annotation == "str"


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
    ) -> Callable[[SkillFunction], SkillFunction]:
        """Register a function as a skill; the first one registered is the default."""

        def register(function: SkillFunction) -> SkillFunction:
            skill_id = id or function.__name__
            card = AgentSkill(
                id=skill_id,
                name=name or skill_id.replace("_", " ").title(),
                description=description or inspect.getdoc(function) or skill_id,
                tags=list(tags) or [skill_id],
                examples=list(examples) or None,
                input_modes=list(input_modes) if input_modes else None,
                output_modes=list(output_modes) if output_modes else None,
            )
            self.skills.append(Skill(card, function, _wants_text(function)))
            return function

        return register

    def select_skill(self, message: Message) -> str | None:
        """The skill a message asks for, else the default (first) skill.

        Asked for by message metadata ``skillId``, or by a data part ``{"skill": id}`` or
        ``{"tool": id, "arguments": {...}}`` (structured input).
        """
        wanted = (message.metadata or {}).get(SKILL_METADATA_KEY)
        if wanted is None:
            for part in message.parts:
                if isinstance(part.data, dict):
                    named = part.data.get("skill", part.data.get("tool"))
                    if isinstance(named, str):
                        wanted = named
                        break
        if wanted is not None:
            return str(wanted)
        return self.skills[0].card.id if self.skills else None

    async def execute(self, ctx: RequestContext) -> None:
        """Handle one message. Override this (or pass ``handler``) for full control."""
        if self.handler is not None:
            await self.handler(ctx)
            return
        for skill in self.skills:
            if skill.card.id == ctx.skill_id:
                await skill.run(ctx)
                return
        known = ", ".join(s.card.id for s in self.skills) or "none"
        await ctx.reject(f"Unknown skill {ctx.skill_id!r}; this agent offers: {known}")

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
        return AgentCard(
            name=self.name,
            description=self.description or self.name,
            version=self.version,
            supported_interfaces=interfaces,
            capabilities=AgentCapabilities(
                streaming=self.streaming,
                push_notifications=push_notifications,
                extended_agent_card=extended_agent_card,
                extensions=self.extensions or None,
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
