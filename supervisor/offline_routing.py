"""How the offline planner picks a skill for a step: by what the step asks to *do*.

Ranking skills by every word of a step (BM25) sends "In settings.txt change 'mode=dev' to
'mode=prod'" to ``read`` (the file name weighs more than the verb) and gives a step nothing
matches to any agent at all. Without a model the planner instead reads the step's action verb:

1. **The verb** is the step's first word when a skill carries it (``work on the answer``), else
   the first word (quoted text, code, URLs and paths left out) in ``ACTIONS`` or
   ``NEEDS_A_MODEL``; failing that, the step's first word.
2. **An action of ``ACTIONS``** (``change`` → edit, ``save`` → write, ``compute`` → run, ...)
   matches the skills whose id, tags or name carry one of its skill words. ``open``/``get``/``read``
   of a URL is a fetch.
3. **Any other verb** matches the skills whose id, tags or name carry that verb; a verb that is
   not in ``NEEDS_A_MODEL`` (a skill's own word, like ``paint`` or ``work``) may also match by
   the other words of the step.
4. **Nothing matched**: a skill tagged ``general`` (an assistant with its own model, a
   supervisor served as an agent) takes the step.
5. **Among the matches**, the best-ranked skill (BM25 over the step) wins; identical agents share
   the work.
6. **No match at all, and one agent there**: the step goes to it (the best-ranked of its skills,
   or its only one): it is the only one that could try. With several agents, a step no skill
   matches is one no agent can do: the planner says so, with the verb and the skills there are,
   instead of handing it to some agent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .registry import AgentEntry, Registry

__all__ = ["ACTIONS", "GENERAL_TAG", "NEEDS_A_MODEL", "Route", "route_step", "verb_of"]

#: Action verbs and the skill words (id, tag or name) that do them.
ACTIONS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("change", "replace", "edit", "modify", "substitute", "update"), ("edit",)),
    **dict.fromkeys(("write", "save", "store", "create", "put", "append"), ("write",)),
    **dict.fromkeys(("read", "show", "open", "cat", "display", "view"), ("read",)),
    **dict.fromkeys(("list",), ("list",)),
    **dict.fromkeys(("delete", "remove", "erase"), ("delete",)),
    **dict.fromkeys(("fetch", "download", "get", "retrieve", "visit"), ("fetch", "scrape")),
    **dict.fromkeys(("scrape",), ("scrape", "fetch")),
    **dict.fromkeys(("run", "execute", "compute", "calculate", "evaluate"), ("run_python", "execute", "run", "python")),
    **dict.fromkeys(("search", "google"), ("search",)),
}
#: The tag of a skill that takes any request (the assistant agent, a supervisor served as an agent).
GENERAL_TAG = "general"
#: Verbs of work that takes judgement (a model): routed only to a skill that names them.
NEEDS_A_MODEL = frozenset(
    {
        "summarise",
        "summarize",
        "compare",
        "translate",
        "explain",
        "analyse",
        "analyze",
        "describe",
        "review",
        "rewrite",
        "rephrase",
        "draft",
        "answer",
        "decide",
        "judge",
        "classify",
        "extract",
    }
)
#: Verbs that mean a fetch when the step has a URL.
_URL_VERBS = frozenset({"open", "get", "read", "show", "view", "visit", "download", "fetch", "retrieve"})

_NOT_WORDS = re.compile(
    r"```.*?```|`[^`]*`|https?://\S+|\"[^\"]*\"|'[^']*'|\u201c[^\u201d]*\u201d|\u2018[^\u2019]*\u2019"
    r"|\S+\.[A-Za-z0-9]{1,8}\b|\S*/\S*",
    re.DOTALL,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z_\-]*")
_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "or",
        "then",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "be",
        "is",
        "are",
        "was",
        "by",
        "from",
        "into",
        "as",
        "me",
        "my",
        "you",
        "your",
        "we",
        "our",
        "please",
        "all",
        "both",
        "each",
        "some",
        "any",
        "file",
        "files",
    ]
)


def _norm(word: str) -> str:
    word = word.lower().replace("ise", "ize")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def verb_of(step: str, skill_words: frozenset[str] = frozenset()) -> str | None:
    """The step's action verb (rule 1), lower-case."""
    words = [str(w).lower() for w in _WORD.findall(_NOT_WORDS.sub(" ", step))]
    if words and _norm(words[0]) in skill_words:
        return words[0]  # a step that starts with a skill's own word ("work on the answer")
    for word in words:
        if word in ACTIONS or word in NEEDS_A_MODEL:
            return word
    return words[0] if words else None


def _skill_words(entry: AgentEntry, skill_index: int) -> set[str]:
    skill = entry.skills[skill_index]
    words = {skill.id, *skill.tags, *_WORD.findall(skill.name)}
    return {_norm(w) for w in words if w}


@dataclass(frozen=True)
class Route:
    agent: str | None
    skill: str | None
    #: Why nothing matched (``agent`` is then ``None``).
    reason: str | None = None


def _candidates(step: str, verb: str | None, entries: Sequence[AgentEntry]) -> set[tuple[str, str]]:
    has_url = re.search(r"https?://", step) is not None
    if verb in _URL_VERBS and has_url:
        wanted = {_norm(w) for w in ACTIONS["fetch"]}
    elif verb in ACTIONS:
        wanted = {_norm(w) for w in ACTIONS[verb]}
    elif verb is not None:
        wanted = {_norm(verb)}
    else:
        wanted = set()
    found = {(e.name, s.id) for e in entries for i, s in enumerate(e.skills) if _skill_words(e, i) & wanted}
    if not found and verb not in ACTIONS and verb not in NEEDS_A_MODEL:
        # A verb of no known action: a skill may still be named by another word of the step (rule 3).
        words = {_norm(w) for w in _WORD.findall(_NOT_WORDS.sub(" ", step)) if w.lower() not in _STOP}
        found = {(e.name, s.id) for e in entries for i, s in enumerate(e.skills) if _skill_words(e, i) & words}
    if not found:
        # Rule 5: a generalist (an assistant with its own model, a nested supervisor) takes the rest.
        found = {(e.name, s.id) for e in entries for s in e.skills if GENERAL_TAG in s.tags}
    return found


def _skills_there_are(entries: Sequence[AgentEntry]) -> str:
    listed = [f"{e.name} ({', '.join(s.id for s in e.skills) or 'no skills'})" for e in entries]
    return "; ".join(listed) or "no agent is available"


def _the_only_agent(step: str, registry: Registry, entry: AgentEntry) -> Route:
    """Rule 6: with one agent there, a step no skill matches goes to it (its best-ranked skill for the
    step, or its only one; with several and none ranked, no skill id: the agent decides)."""
    ranked = [m for m in registry.retrieve(step, k=None) if m.agent == entry.name]
    if ranked:
        return Route(entry.name, ranked[0].skill_id)
    return Route(entry.name, entry.skills[0].id if len(entry.skills) == 1 else None)


def route_step(step: str, registry: Registry, load: Counter[str], *, share: float) -> Route:
    """The agent and skill for ``step`` (rules 1-4), or why there is none."""
    entries = registry.available()
    words = frozenset(w for e in entries for i in range(len(e.skills)) for w in _skill_words(e, i))
    verb = verb_of(step, words)
    found = _candidates(step, verb, entries)
    if not found and len(entries) == 1 and entries[0].skills:
        return _the_only_agent(step, registry, entries[0])
    if not found:
        doing = f"to {verb}" if verb else "for this step"
        why = "" if verb not in NEEDS_A_MODEL else " (this needs a model: configure one, or an agent with such a skill)"
        return Route(
            None, None, f"no available agent offers a skill {doing}{why}; skills: {_skills_there_are(entries)}"
        )
    ranked = [m for m in registry.retrieve(step, k=None) if (m.agent, m.skill_id) in found]
    if not ranked:  # matched by verb, but BM25 shares no word: take them in registry order
        order = [e.name for e in entries]
        first = min(found, key=lambda c: order.index(c[0]))
        peers = [c for c in found if c[1] == first[1]]
        agent, skill = min(peers, key=lambda c: (load[c[0]], order.index(c[0])))
        return Route(agent, skill)
    best = ranked[0]
    same = [m for m in ranked if m.skill_id == best.skill_id and m.score >= share * best.score]
    chosen = min(same, key=lambda m: load[m.agent])
    return Route(chosen.agent, chosen.skill_id)
