"""An agent card as the model is shown it: a structural summary that fits a budget.

A card can be long (many skills, long descriptions, many examples). Cutting its JSON at a
character count leaves the model a broken document and hides the skills at the end; instead the
summary keeps the structure (name, description, each skill's id, name, description and
examples) and shrinks it in steps until it fits: fewer examples, then shorter texts, then
skills listed by id only. The result is always valid JSON and says what it left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .registry import AgentEntry, SkillInfo

__all__ = ["entry_summary", "summarize_card"]

#: The shrinking steps: (examples per skill, characters per description, characters per example).
_LEVELS: tuple[tuple[int, int, int], ...] = ((3, 400, 200), (2, 200, 120), (1, 120, 80), (0, 80, 0), (0, 40, 0))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def _skill(skill: SkillInfo, examples: int, chars: int, example_chars: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": skill.id,
        "name": _short(skill.name, 80),
        "description": _short(skill.description, chars),
    }
    if skill.tags:
        entry["tags"] = [_short(t, 40) for t in skill.tags[:8]]
    if examples and skill.examples:
        entry["examples"] = [_short(e, example_chars) for e in skill.examples[:examples]]
    if skill.structured:
        entry["structured_input"] = True
    return entry


def _dump(card: dict[str, Any]) -> str:
    return json.dumps(card, ensure_ascii=False)


def summarize_card(name: str, description: str, skills: Sequence[SkillInfo], budget: int) -> dict[str, Any]:
    """The card's summary whose JSON is at most ``budget`` characters when that is possible at all."""
    card: dict[str, Any] = {}
    for examples, chars, example_chars in _LEVELS:
        card = {
            "agent": name,
            "description": _short(description, chars * 2),
            "skills": [_skill(s, examples, chars, example_chars) for s in skills],
        }
        if len(_dump(card)) <= budget:
            return card
    # Still too long: name the skills by id only, as many as fit, and say how many are left out.
    head: dict[str, Any] = {"agent": name, "description": _short(description, 80)}
    shown = len(skills)
    while True:
        card = {**head, "skill_ids": [s.id for s in skills[:shown]]}
        if shown < len(skills):
            card["skills_not_shown"] = len(skills) - shown
        if shown <= 1 or len(_dump(card)) <= budget:
            return card
        shown -= 1


def entry_summary(entry: AgentEntry, budget: int) -> dict[str, Any]:
    return summarize_card(entry.name, entry.description, entry.skills, budget)
