"""Rank agents' skills against a query (``retrieve_agents``), so a large catalog stays small.

A small BM25 over each skill's text: the words of the query are matched against the skill's
id, name and tags (weight 3), its description and examples (weight 1), and the agent's name
(weight 2) and description (weight 0.5). Words are lower-cased, split on anything that is not
a letter or digit, stripped of a few English endings (``-s``, ``-es``, ``-ing``, ``-ed``) and
stop words. Ties keep catalog order. No model, no network: the same answer every time.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Match", "SkillDoc", "rank", "terms"]

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = (
    "a an and are as at be by do does for from how i in into is it its me my of on or our please that the their "
    "them then this to us was we what when which who will with you your"
)
_STOP = frozenset(_STOP_WORDS.split(" "))
_K1, _B = 1.2, 0.75
_WEIGHTS = {"title": 3.0, "body": 1.0, "agent": 2.0, "agent_body": 0.5}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The words of ``text`` as the ranker sees them."""
    return list(_terms(text))


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> tuple[str, ...]:
    # The same skill texts are read for every step routed and every item started: remembered.
    return tuple(_stem(w) for w in _WORD.findall(text.lower().replace("_", " ")) if w not in _STOP)


@dataclass(frozen=True)
class SkillDoc:
    """What is known about one skill of one agent."""

    agent: str
    skill_id: str | None
    skill_name: str
    skill_description: str
    tags: Sequence[str]
    examples: Sequence[str]
    agent_description: str

    def fields(self) -> dict[str, Sequence[str]]:
        return {
            "title": _terms(" ".join([self.skill_id or "", self.skill_name, *self.tags])),
            "body": _terms(" ".join([self.skill_description, *self.examples])),
            "agent": _terms(self.agent),
            "agent_body": _terms(self.agent_description),
        }


@dataclass(frozen=True)
class Match:
    agent: str
    skill_id: str | None
    skill_name: str
    description: str
    score: float


def rank(query: str, docs: Iterable[SkillDoc], k: int | None = None) -> list[Match]:
    """The skills that match ``query``, best first (only those with a positive score)."""
    docs = list(docs)
    if not docs:
        return []
    wanted = set(_terms(query))
    indexed = [(doc, doc.fields()) for doc in docs]
    lengths = [sum(len(f) for f in fields.values()) for _, fields in indexed]
    average = (sum(lengths) / len(lengths)) or 1.0
    frequency: Counter[str] = Counter()
    for _, fields in indexed:
        frequency.update({t for f in fields.values() for t in f})
    n = len(docs)
    scored = []
    for position, ((doc, fields), length) in enumerate(zip(indexed, lengths, strict=True)):
        score = 0.0
        for term in wanted:
            tf = sum(_WEIGHTS[name] * words.count(term) for name, words in fields.items())
            if tf == 0:
                continue
            idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
            score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / average))
        if score > 0:
            scored.append(
                (-score, position, Match(doc.agent, doc.skill_id, doc.skill_name, doc.skill_description, score))
            )
    scored.sort(key=lambda s: (s[0], s[1]))
    matches = [m for _, _, m in scored]
    return matches[:k] if k is not None else matches
