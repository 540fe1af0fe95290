"""A skill's signature is judged when it is decorated: a shape we cannot serve is a TypeError
then, not a failure at the first call; the existing shapes keep their meaning."""

from __future__ import annotations

from typing import Any

import pytest

from a2a import Agent, RequestContext
from a2a.errors import InvalidParamsError
from a2a.server.authoring.agent import skill_arguments
from a2a.types import Message, Part, Role


class Opaque:
    """A type JSON cannot fill."""


def _message(*parts: Part) -> Message:
    return Message(message_id="m1", role=Role.USER, parts=list(parts))


@pytest.mark.parametrize(
    "function",
    [
        pytest.param(lambda city, *values: None, id="var-positional"),
        pytest.param(lambda city, **values: None, id="var-keyword"),
        pytest.param(lambda city, days, /: None, id="positional-only"),
    ],
)
def test_variadic_parameters_are_refused_at_decoration(function: Any) -> None:
    with pytest.raises(TypeError, match="cannot be filled by name"):
        Agent("A").skill("s")(function)


def test_a_type_json_cannot_fill_is_refused_at_decoration() -> None:
    async def weigh(thing: Opaque, grams: int) -> None: ...

    with pytest.raises(TypeError, match="cannot be filled from JSON"):
        Agent("A").skill()(weigh)


def test_an_unresolvable_annotation_is_refused_at_decoration() -> None:
    async def weigh(thing: NoSuchType, grams: int) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match="cannot resolve the annotation of 'thing'"):
        Agent("A").skill()(weigh)


def test_two_request_contexts_are_refused_at_decoration() -> None:
    async def twice(a: RequestContext, b: RequestContext) -> None: ...

    with pytest.raises(TypeError, match="twice"):
        Agent("A").skill()(twice)


def test_the_existing_shapes_keep_their_meaning() -> None:
    agent = Agent("A")

    @agent.skill()
    async def greet(text: str) -> str:
        return text

    @agent.skill()
    async def full(ctx: RequestContext) -> None: ...

    @agent.skill()
    async def bare(ctx) -> None: ...  # type: ignore[no-untyped-def]

    text, context, unannotated = agent.skills
    assert text.wants_text and text.parameters is not None, "text, or a `text` argument"
    assert not context.wants_text and context.parameters is None
    assert not unannotated.wants_text and unannotated.parameters is None


def test_arguments_must_be_an_object() -> None:
    with pytest.raises(InvalidParamsError, match="JSON object"):
        skill_arguments(_message(Part(data={"skill": "s", "arguments": [1, 2]})))
    assert skill_arguments(_message(Part(text="hi"))) is None


def test_a_text_skill_without_arguments_gets_the_text_and_is_not_validated() -> None:
    agent = Agent("A")

    @agent.skill()
    async def greet(text: str) -> str:
        return text

    assert agent.select_skill(_message(Part(text="world"))) == "greet"
    with pytest.raises(InvalidParamsError, match="text"):
        agent.select_skill(_message(Part(data={"skill": "greet", "arguments": {"text": 1}})))
