"""The offline planner: plans, routes and synthesizes without a model.

Used when no model endpoint is configured (or with ``offline: true`` / ``--offline``). It is a
real mode with fixed, documented rules, so a run is reproducible and needs no API key:

**1. Split the objective into steps.**

- An objective of several lines is one step per non-empty line; list markers (``1.``, ``2)``,
  ``-``, ``*``, ``•``) are removed.
- A one-line objective is split into sentences (at ``.``, ``!`` or ``?`` followed by a space
  and a capital letter, and at ``;``), and each sentence at the sequencing words ``then``,
  ``and then``, ``after that``, ``afterwards``, ``next``, ``finally``.
- At most ``MAX_STEPS`` (1000) steps are made; the rest of the text stays in the last one. (How
  many of them may run is ``supervisor.max_steps``: a step budget, not a planning limit.)

**2. Dependencies.** A step depends on the step before it when it was split off by a sequencing
word, starts with one, or refers back (``the result``, ``the output``, ``it``, ``that``,
``above``, ``previous``); ``step N`` makes it depend on step N. Under a strategy that does not
follow dependencies (``parallel``) they are dropped (every step runs at once).

**3. Route each step** to the best-ranked skill (``supervisor.ranking``). Among the agents
offering a skill with that same id and a score of at least 80% of the best, the one with the
fewest steps so far is chosen, so identical agents share the work. A step that matches no
skill goes to the available agent with the fewest steps (its first skill).

**4. Structured input.** When the chosen skill accepts ``application/json`` and its card shows
its arguments (a JSON example ``{"tool": ..., "arguments": {...}}`` among the skill's examples,
and/or ``Arguments: name (type, required)`` in its description), the arguments are filled from
the step: paths (``notes.txt``, ``src/app.py``) for ``path``/``file``-like names, the first URL
for ``url``-like names, a fenced code block or the text after the first ``:`` for
``code``/``content``/``text``-like names, the two quoted strings of "change 'a' to 'b'" for
``old_text``/``new_text``, ``true`` for booleans named in the step (``recursive``), the first
integer for integer arguments, and the whole step for ``query``/``question``-like names. If a
required argument cannot be filled the step is sent as plain text instead.

**5. Synthesize** by assembling the results in plan order: each step's description, the agent
that did it, and its result (quoted, capped at ``supervisor.peer_text_chars``), then a list of
what is missing (failed, skipped or cancelled steps, with their reasons).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .quoting import cap
from .registry import Registry, SkillInfo
from .state import Item, new_item
from .strategy import Strategy

__all__ = ["MAX_STEPS", "Step", "assemble", "extract_arguments", "plan_offline", "split_objective"]

MAX_STEPS = 1000
#: Agents whose matching skill has the best skill's id and at least this share of its score share the work.
SHARE_SCORE = 0.8

_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|;\s*")
_SEQUENCE = re.compile(r"(?:,\s*|\s+)(?:and then|then|after that|afterwards|next|finally)[,:]?\s+", re.IGNORECASE)
_LEADING_SEQUENCE = re.compile(r"^(?:and then|then|after that|afterwards|next|finally)[,:]?\s+", re.IGNORECASE)
_BACKREF = re.compile(r"\b(?:the result|the results|the output|it|that|above|previous)\b", re.IGNORECASE)
_STEP_REF = re.compile(r"\bstep\s+(\d+)\b", re.IGNORECASE)

_PATH = re.compile(
    r"(?<![\w/:])(?:~?[\w.\-]+/)*[\w\-]+\.[A-Za-z0-9]{1,8}\b"  # a file name with an extension, maybe in dirs
    r"|(?<![\w:])(?:\.{1,2}|~)?/?[\w.\-]+(?:/[\w.\-]+)*/(?!\w)"  # a directory written with a trailing slash
    r"|(?<![\w:])(?:\.{1,2}|~)?/?[\w.\-]+(?:/[\w.\-]+)+"  # a path with slashes
)
_URL = re.compile(r"https?://[^\s'\"<>)]+")
_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'|\u201c([^\u201d]*)\u201d|\u2018([^\u2019]*)\u2019")
_CODE_BLOCK = re.compile(r"```[\w+-]*\n?(.*?)```", re.DOTALL)
_INTEGER = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_ARG_DOC = re.compile(r"(\w+) \(([^,()]+(?:\([^)]*\))?[^,()]*), (required|default [^)]*)\)")

_PATH_NAMES = ("path", "file", "filename", "directory", "dir", "folder", "source", "target", "destination", "src")
_URL_NAMES = ("url", "uri", "link", "href", "address")
_BODY_NAMES = ("code", "content", "text", "body", "program", "script", "source_code", "data", "input")
_QUERY_NAMES = ("query", "question", "prompt", "q", "topic", "task", "instruction", "request", "message", "search")


@dataclass(frozen=True)
class Step:
    text: str
    #: Indexes (0-based) of the steps this one depends on.
    depends_on: tuple[int, ...] = ()


def _clean(text: str) -> str:
    return _LEADING_SEQUENCE.sub("", _MARKER.sub("", text).strip()).strip().rstrip(".").strip()


def split_objective(objective: str, *, max_steps: int = MAX_STEPS) -> list[Step]:
    """The objective as steps, by the rules in this module's docstring."""
    lines = [line for line in objective.splitlines() if line.strip()]
    pieces: list[tuple[str, bool]] = []  # (text, split off by a sequencing word)
    if len(lines) > 1:
        pieces = [(line, bool(_LEADING_SEQUENCE.match(_MARKER.sub("", line).strip()))) for line in lines]
    else:
        for sentence in _SENTENCE.split(objective.strip()):
            parts = _SEQUENCE.split(sentence)
            starts_sequenced = bool(_LEADING_SEQUENCE.match(sentence.strip()))
            pieces.extend((part, i > 0 or starts_sequenced) for i, part in enumerate(parts))
    steps: list[Step] = []
    for raw, sequenced in pieces:
        text = _clean(raw)
        if not text:
            continue
        if len(steps) == max_steps:
            last = steps[-1]
            steps[-1] = Step(f"{last.text}. {text}", last.depends_on)
            continue
        steps.append(Step(text, _dependencies(text, len(steps), sequenced)))
    return steps or [Step(objective.strip() or "(empty objective)")]


def _dependencies(text: str, index: int, sequenced: bool) -> tuple[int, ...]:
    explicit = {int(n) - 1 for n in _STEP_REF.findall(text) if 0 < int(n) <= index}
    if explicit:
        return tuple(sorted(explicit))
    if index > 0 and (sequenced or _BACKREF.search(text)):
        return (index - 1,)
    return ()


# ---- structured input ----------------------------------------------------------------------


def _argument_template(skill: SkillInfo) -> tuple[dict[str, Any], set[str], dict[str, str]]:
    """Argument names (with example values), the required ones, and their documented types."""
    template: dict[str, Any] = {}
    for example in skill.examples:
        try:
            value = json.loads(example)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("arguments"), dict):
            template = dict(value["arguments"])
            break
    required, types = set(), {}
    for name, kind, need in _ARG_DOC.findall(skill.description):
        types[name] = kind
        template.setdefault(name, None)
        if need == "required":
            required.add(name)
    return template, required, types


def _named(name: str, family: Sequence[str]) -> bool:
    lowered = name.lower()
    return lowered in family or any(lowered.endswith("_" + f) or lowered.startswith(f + "_") for f in family)


def _body(step: str, quoted: list[str]) -> str | None:
    block = _CODE_BLOCK.search(step)
    if block:
        return block.group(1).strip("\n")
    if ":" in step:
        head, _, tail = step.partition(":")
        if tail.strip() and not head.rstrip().endswith(("http", "https")):
            return tail.strip()
    return quoted[-1] if quoted else None


def _value_for(name: str, example: Any, kind: str, step: str, quoted: list[str]) -> Any:
    lowered = name.lower()
    if lowered == "old_text" and len(quoted) >= 2:
        return quoted[0]
    if lowered == "new_text" and len(quoted) >= 2:
        return quoted[1]
    if _named(name, _URL_NAMES):
        url = _URL.search(step)
        return url.group(0) if url else None
    if _named(name, _PATH_NAMES):
        without_urls = _URL.sub(" ", step)
        path = _PATH.search(without_urls)
        return path.group(0) if path else None
    if _named(name, _BODY_NAMES):
        return _body(step, quoted)
    if _named(name, _QUERY_NAMES):
        return step
    if isinstance(example, bool) or kind.strip() == "boolean":
        return True if re.search(rf"\b{re.escape(lowered)}\w*\b", step, re.IGNORECASE) else None
    if (isinstance(example, int) and not isinstance(example, bool)) or kind.strip() == "integer":
        number = _INTEGER.search(step)
        return int(number.group(1)) if number else None
    return None


def extract_arguments(step: str, skill: SkillInfo) -> dict[str, Any] | None:
    """Arguments for a structured skill from the step's text, or ``None`` (send it as text)."""
    if not skill.structured:
        return None
    template, required, types = _argument_template(skill)
    if not template:
        return None
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(step)]
    arguments: dict[str, Any] = {}
    for name, example in template.items():
        value = _value_for(name, example, types.get(name, ""), step, quoted)
        if value is not None:
            arguments[name] = value
        elif name in required:
            return None
    return arguments if arguments or not required else None


# ---- planning ------------------------------------------------------------------------------


def _route(step: str, registry: Registry, load: Counter[str]) -> tuple[str | None, str | None]:
    matches = registry.retrieve(step, k=None)
    if matches:
        best = matches[0]
        same = [m for m in matches if m.skill_id == best.skill_id and m.score >= SHARE_SCORE * best.score]
        chosen = min(same, key=lambda m: load[m.agent])
        return chosen.agent, chosen.skill_id
    available = registry.available()
    if not available:
        return None, None
    entry = min(available, key=lambda e: load[e.name])
    skills = entry.skills
    return entry.name, skills[0].id if skills else None


def plan_offline(
    objective: str, registry: Registry, *, strategy: Strategy, max_steps: int = MAX_STEPS, prefix: str = ""
) -> list[Item]:
    """The TODO list for ``objective``: split, dependencies, routing and structured input."""
    steps = split_objective(objective, max_steps=max_steps)
    load: Counter[str] = Counter()
    items: list[Item] = []
    for index, step in enumerate(steps):
        agent, skill_id = _route(step.text, registry, load)
        if agent:
            load[agent] += 1
        entry = registry.get(agent)
        skill = entry.skill(skill_id) if entry else None
        depends = [f"{prefix}{d + 1}" for d in step.depends_on] if strategy.follows_dependencies else []
        items.append(
            new_item(
                f"{prefix}{index + 1}",
                cap(step.text, 120),
                instruction=step.text,
                agent=agent,
                skill=skill_id,
                arguments=extract_arguments(step.text, skill) if skill else None,
                depends_on=depends,
            )
        )
    return items


def assemble(objective: str, items: Sequence[Item], *, limit: int, stop: str | None = None) -> str:
    """The final answer without a model: every result in plan order, then what is missing."""
    lines = [f"Objective: {objective}", ""]
    missing = []
    for item in items:
        who = f" ({item['agent']})" if item["agent"] else ""
        if item["status"] == "done":
            result = cap((item["result"] or "").strip() or "(no output)", limit)
            lines.append(f"{item['id']}. {item['description']}{who}:")
            lines.extend("   " + line for line in result.splitlines() or [""])
        else:
            partial = (item["result"] or "").strip().replace("\n", " ")
            missing.append(
                f"- {item['id']}. {item['description']}{who}: {item['status']}"
                + (f": {item['error']}" if item["error"] else "")
                + (f" (partial result: {cap(partial, 200)})" if partial else "")
            )
    if stop:
        lines += ["", f"The run stopped early: {stop}."]
    if missing:
        lines += ["", "Missing:", *missing]
    return "\n".join(lines).rstrip()
