"""The offline planner: plans, routes and synthesizes without a model.

Used when no model endpoint is configured (or with ``offline: true`` / ``--offline``). It is a
real mode with fixed, documented rules, so a run is reproducible and needs no API key:

**1. Split the objective into steps.**

- Fenced code blocks and URLs are set aside first, so that no rule splits inside them; a line
  that is only a code block belongs to the step before it.
- An objective of several lines is one step per non-empty line; list markers (``1.``, ``2)``,
  ``-``, ``*``, ``•``) are removed.
- A one-line objective is split into sentences (at ``.``, ``!`` or ``?`` followed by a space
  and a capital letter, and at ``;``), and each sentence at the sequencing words ``then``,
  ``and then``, ``after that``, ``afterwards``, ``next``, ``finally``.
- Each piece is split again at ``,`` or ``and`` followed by an action verb
  (``supervisor.offline_routing``), in its words before a ``: `` only (what follows is content).
- At most ``MAX_STEPS`` (1000) steps are made; the rest of the text stays in the last one. (How
  many of them may run is ``supervisor.max_steps``: a step budget, not a planning limit.)

**2. Dependencies.** A step depends on the step before it when it was split off by a sequencing
word, starts with one, or refers back (``the result``, ``the output``, ``the summary``, ``it``,
``that``, ``above``, ``previous``); on the two before for ``both``/``them``; on every step before
for ``all the results``/``everything``; ``step N`` makes it depend on step N. Under a strategy
that does not follow dependencies (``parallel``) they are dropped, except for a step that takes
its input from them (rule 4).

**3. Route each step** by its action verb (``supervisor.offline_routing``). A step no skill
matches goes to the only agent when there is one; otherwise it is not given to anyone: it is
planned as a failed item that says why. A step whose skill takes one URL or one path (its card's
arguments) and which lists several, joined by ``,`` or ``and`` only ("Fetch A and B"), becomes
one step per value ("Fetch A", "Fetch B"); a step that depended on it depends on all of them.

**4. Structured input.** When the chosen skill accepts ``application/json`` and its card shows
its arguments (a JSON example ``{"tool": ..., "arguments": {...}}`` among the skill's examples,
and/or ``Arguments: name (type, required)`` in its description), the arguments are filled from
the step: paths (``notes.txt``, ``src/app.py``) for ``path``/``file``-like names, the first URL
(without the sentence's punctuation) for ``url``-like names, a fenced code block (whole) or the
text after the first ``:`` for ``code``/``content``/``text``-like names, the two quoted strings
of "change 'a' to 'b'" for ``old_text``/``new_text``, ``true`` for booleans named in the step
(``recursive``), the first integer for integer arguments, and the whole step for
``query``/``question``-like names. A required content-like argument the step does not give is
taken, when the step starts, from the results of the steps it depends on (the item's
``inputs``): "save the result to out.txt" after a computation writes what it printed. Any other
missing required argument: the step is sent as plain text instead.

**5. Synthesize** by assembling the results in plan order: each step's description, the agent
that did it, and its result (quoted, capped at ``supervisor.peer_text_chars``), then a list of
what is missing: every step without a result, with its reason (its error, or why it has none:
not started before the run ended, a step it depends on did not finish ...). Nothing of the
objective is left out silently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .offline_routing import ACTIONS, NEEDS_A_MODEL, route_step
from .quoting import cap
from .registry import Registry, SkillInfo
from .state import Item, new_item
from .strategy import Strategy
from .workspace import FILE_SOURCE

__all__ = [
    "MAX_STEPS",
    "PREVIOUS_TURN",
    "Step",
    "assemble",
    "extract_arguments",
    "fill_arguments",
    "plan_offline",
    "split_objective",
]

MAX_STEPS = 1000
#: In an item's ``inputs``: the results of the conversation's previous turn (not an item of this one).
PREVIOUS_TURN = "@previous-turn"
#: Agents whose matching skill has the best skill's id and at least this share of its score share the work.
SHARE_SCORE = 0.8

_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|;\s*")
_SEQUENCE = re.compile(r"(?:,\s*|\s+)(?:and then|then|after that|afterwards|next|finally)[,:]?\s+", re.IGNORECASE)
_LEADING_SEQUENCE = re.compile(r"^(?:and then|then|after that|afterwards|next|finally)[,:]?\s+", re.IGNORECASE)
_BACKREF = re.compile(
    r"\b(?:the result|the results|the output|the summary|the page|the value|them|it|that|above|previous)\b",
    re.IGNORECASE,
)
_STEP_REF = re.compile(r"\bstep\s+(\d+)\b", re.IGNORECASE)

_PATH = re.compile(
    r"(?<![\w/:])(?:~?[\w.\-]+/)*[\w\-]+\.[A-Za-z0-9]{1,8}\b"  # a file name with an extension, maybe in dirs
    r"|(?<![\w:])(?:\.{1,2}|~)?/?[\w.\-]+(?:/[\w.\-]+)*/(?!\w)"  # a directory written with a trailing slash
    r"|(?<![\w:])(?:\.{1,2}|~)?/?[\w.\-]+(?:/[\w.\-]+)+"  # a path with slashes
)
_URL_RUN = re.compile(r"https?://[^\s'\"<>`]+")


def _url_end(url: str) -> int:
    """Where a URL written in a sentence ends: without the sentence's punctuation after it
    (``page.html,`` or ``(see https://x/a).``), keeping brackets that are its own (``/a_(b)``)."""
    end = len(url)
    while end:
        last = url[end - 1]
        opening = {")": "(", "]": "["}.get(last)
        unbalanced = opening is not None and url[:end].count(opening) < url[:end].count(last)
        if last not in ".,;:!?*" and not unbalanced:
            break
        end -= 1
    return end


def _urls(text: str) -> list[tuple[int, int]]:
    """Where the URLs of ``text`` are, each as ``_url_end`` delimits it."""
    return [(m.start(), m.start() + _url_end(m.group(0))) for m in _URL_RUN.finditer(text)]


def _first_url(text: str) -> str | None:
    found = _urls(text)
    return text[found[0][0] : found[0][1]] if found else None


def _replace_urls(text: str, replace: Callable[[str], str]) -> str:
    out, at = [], 0
    for start, end in _urls(text):
        out += [text[at:start], replace(text[start:end])]
        at = end
    return "".join([*out, text[at:]])


_QUOTED = re.compile(r"\"([^\"]*)\"|'([^']*)'|\u201c([^\u201d]*)\u201d|\u2018([^\u2019]*)\u2019")
#: A fenced block's code; a language tag counts only on the fence's own line (```print(1)``` is code).
_CODE_BLOCK = re.compile(r"```(?:[\w+-]*\n)?(.*?)```", re.DOTALL)
_FENCED = re.compile(r"```.*?```", re.DOTALL)
_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")
#: ``, fetch``, ``, and save``, `` and compare``: a new step when an action verb follows.
_VERB_SPLIT = re.compile(
    r"(?:,\s*(?:and\s+)?|\s+and\s+)(?=(?:"
    + "|".join(sorted({*ACTIONS, *NEEDS_A_MODEL}, key=len, reverse=True))
    + r")\b)",
    re.IGNORECASE,
)
#: ``both``: the two steps before; ``all the results``, ``everything``: every step before.
_BOTH_BACKREF = re.compile(r"\b(?:both|them)\b", re.IGNORECASE)
_ALL_BACKREF = re.compile(
    r"\b(?:all (?:the |of the )?(?:results|outputs|values)|all of them|everything)\b", re.IGNORECASE
)
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
    #: It refers back ("it", "the result"): with no step before it, to the conversation's last turn.
    refers_back: bool = False


def _clean(text: str) -> str:
    return _LEADING_SEQUENCE.sub("", _MARKER.sub("", text).strip()).strip().rstrip(".").strip()


def _protect(objective: str) -> tuple[str, list[str]]:
    """Fenced code blocks (and URLs) replaced by placeholders, so that no rule splits inside them."""
    kept: list[str] = []

    def keep(text: str) -> str:
        kept.append(text)
        return f"\x00{len(kept) - 1}\x00"

    return _replace_urls(_FENCED.sub(lambda m: keep(m.group(0)), objective), keep), kept


def _restore(text: str, kept: list[str]) -> str:
    return _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)


def _split_sentence(sentence: str) -> list[tuple[str, bool]]:
    """A sentence at sequencing words, then at ``,``/``and`` before an action verb (``fetch a, and fetch b``)."""
    pieces: list[tuple[str, bool]] = []
    starts_sequenced = bool(_LEADING_SEQUENCE.match(sentence.strip()))
    for i, part in enumerate(_SEQUENCE.split(sentence)):
        # Only the words before a ``: `` are split: what follows it is content (code, text to write).
        head, colon, content = part.partition(": ")
        split = _VERB_SPLIT.split(head)
        split[-1] += colon + content
        for j, piece in enumerate(split):
            # A step split off before a verb is not sequenced by that: ``fetch a, and fetch b`` may run at once.
            pieces.append((piece, (i > 0 or starts_sequenced) and j == 0))
    return pieces


def split_objective(objective: str, *, max_steps: int = MAX_STEPS) -> list[Step]:
    """The objective as steps, by the rules in this module's docstring."""
    protected, kept = _protect(objective)
    lines: list[str] = []
    for line in protected.splitlines():
        if lines and line.strip() and not _PLACEHOLDER.sub("", line).strip():
            lines[-1] += "\n" + line  # a line that is only a code block belongs to the step before it
        elif line.strip():
            lines.append(line)
    pieces: list[tuple[str, bool]] = []  # (text, split off by a sequencing word)
    if len(lines) > 1:
        for line in lines:
            line = _MARKER.sub("", line).strip()
            starts = bool(_LEADING_SEQUENCE.match(line))
            split = _split_sentence(line)
            pieces.extend((text, starts or sequenced) for text, sequenced in split)
    else:
        for sentence in _SENTENCE.split(protected.strip()):
            pieces.extend(_split_sentence(sentence))
    steps: list[Step] = []
    for raw, sequenced in pieces:
        cleaned = _clean(raw)
        text = _restore(cleaned, kept)
        if not text:
            continue
        if len(steps) == max_steps:
            last = steps[-1]
            steps[-1] = Step(f"{last.text}. {text}", last.depends_on)
            continue
        # Back-references are looked for in the words of the step, not in the code or content it carries.
        head = _PLACEHOLDER.sub(" ", cleaned).partition(": ")[0]
        back = any(r.search(head) for r in (_BACKREF, _BOTH_BACKREF, _ALL_BACKREF))
        steps.append(Step(text, _dependencies(head, len(steps), sequenced), back))
    return steps or [Step(objective.strip() or "(empty objective)")]


def _dependencies(text: str, index: int, sequenced: bool) -> tuple[int, ...]:
    explicit = {int(n) - 1 for n in _STEP_REF.findall(text) if 0 < int(n) <= index}
    if explicit:
        return tuple(sorted(explicit))
    if index > 0 and _ALL_BACKREF.search(text):
        return tuple(range(index))
    if index > 1 and _BOTH_BACKREF.search(text):
        return (index - 2, index - 1)
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
        return _first_url(step)
    if _named(name, _PATH_NAMES):
        without_urls = _replace_urls(step, lambda _url: " ")
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


def fill_arguments(step: str, skill: SkillInfo) -> tuple[dict[str, Any], list[str]] | None:
    """Arguments for a structured skill from the step's text, and the required ones it lacks
    (``None``: the skill takes text, or its card does not show its arguments)."""
    if not skill.structured:
        return None
    template, required, types = _argument_template(skill)
    if not template:
        return None
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(step)]
    arguments: dict[str, Any] = {}
    missing: list[str] = []
    for name, example in template.items():
        value = _value_for(name, example, types.get(name, ""), step, quoted)
        if value is not None:
            arguments[name] = value
        elif name in required:
            missing.append(name)
    return arguments, missing


def extract_arguments(step: str, skill: SkillInfo) -> dict[str, Any] | None:
    """Arguments for a structured skill from the step's text, or ``None`` (send it as text)."""
    filled = fill_arguments(step, skill)
    if filled is None or filled[1]:
        return None
    return filled[0]


# ---- planning ------------------------------------------------------------------------------


def _files_named(step: str, written: dict[str, str]) -> list[str]:
    """Files of the run (written by earlier steps) that the step names."""
    return [p for p in _PATH.findall(_replace_urls(step, lambda _url: " ")) if p in written]


def _structured_input(
    step: Step, skill: SkillInfo | None, ids: list[str], continues: bool, written: dict[str, str]
) -> tuple[dict[str, Any] | None, dict[str, list[str]]]:
    """The arguments, and which of them come from the results of the steps this one depends on
    (a write step after a fetch writes what was fetched: rule 4) or, for a step that refers back
    with nothing before it in a conversation's later turn, from the last turn's results."""
    filled = fill_arguments(step.text, skill) if skill else None
    if filled is None:
        return None, {}
    arguments, missing = filled
    named = _files_named(step.text, written)
    if not missing and any(value in named for value in arguments.values()):
        return arguments, {}  # it names a file of the run in an argument: the file goes as a part
    if not missing:
        # A content-like argument the skill does not require (it could take a file part instead)
        # is still filled from the steps this one depends on, as a required one would be.
        template, required, _types = _argument_template(skill) if skill else ({}, set(), {})
        missing = [n for n in template if n not in arguments and n not in required and _named(n, _BODY_NAMES)]
        if not missing or not (step.depends_on or (continues and step.refers_back)):
            return arguments, {}
    if all(_named(name, _BODY_NAMES) for name in missing):
        if named:  # "run primes.py" after "write primes.py: ...": the file's content (supervisor.workspace)
            return arguments, {name: [FILE_SOURCE + p for p in named] for name in missing}
        if step.depends_on:
            return arguments, {name: [ids[d] for d in step.depends_on] for name in missing}
        if continues and step.refers_back:
            return arguments, {name: [PREVIOUS_TURN] for name in missing}
    return None, {}


_SEPARATOR = re.compile(r"^(?:\s*,\s*|\s*,?\s+(?:and|&)\s+|\s+)$", re.IGNORECASE)


def _values_of_kind(text: str, name: str) -> list[tuple[int, int]]:
    """Where the step's words (before a ``: ``) name a URL, or a path, for the argument ``name``."""
    head = len(text.partition(": ")[0])
    if _named(name, _URL_NAMES):
        spans = _urls(text)
    elif _named(name, _PATH_NAMES):
        blank = _replace_urls(text, lambda url: " " * len(url))
        spans = [(m.start(), m.end()) for m in _PATH.finditer(blank)]
    else:
        return []
    return [(start, end) for start, end in spans if end <= head]


def _one_per_value(step: Step, registry: Registry) -> list[str]:
    """``Fetch A and B`` as ``Fetch A`` and ``Fetch B`` when its skill takes one URL (or path) and the
    step lists several, joined by ``,``/``and`` only; otherwise the step's text alone."""
    route = route_step(step.text, registry, Counter(), share=SHARE_SCORE)
    entry = registry.get(route.agent)
    skill = entry.skill(route.skill) if entry else None
    filled = fill_arguments(step.text, skill) if skill else None
    if filled is None:
        return [step.text]
    for name in filled[0]:
        spans = _values_of_kind(step.text, name)
        if len(spans) < 2:
            continue
        between = [step.text[spans[i][1] : spans[i + 1][0]] for i in range(len(spans) - 1)]
        if all(_SEPARATOR.match(gap) for gap in between):
            start, end = spans[0][0], spans[-1][1]
            return [step.text[:start] + step.text[a:b] + step.text[end:] for a, b in spans]
    return [step.text]


def _expanded(steps: list[Step], registry: Registry, max_steps: int) -> list[Step]:
    """The steps with every step that lists several values for a one-value skill made one step per
    value (``_one_per_value``); a step that depended on it depends on all of them."""
    new_index: list[list[int]] = []
    out: list[Step] = []
    for step in steps:
        texts = _one_per_value(step, registry) if len(steps) + len(out) < max_steps else [step.text]
        depends = tuple(n for d in step.depends_on for n in new_index[d])
        new_index.append(list(range(len(out), len(out) + len(texts))))
        out.extend(Step(text, depends, step.refers_back) for text in texts)
    return out


def plan_offline(
    objective: str,
    registry: Registry,
    *,
    strategy: Strategy,
    max_steps: int = MAX_STEPS,
    prefix: str = "",
    continues: bool = False,
) -> list[Item]:
    """The TODO list for ``objective``: split, dependencies, routing and structured input.

    A step no agent can do is planned as a failed item saying why, never handed to some agent."""
    steps = _expanded(split_objective(objective, max_steps=max_steps), registry, max_steps)
    ids = [f"{prefix}{index + 1}" for index in range(len(steps))]
    load: Counter[str] = Counter()
    items: list[Item] = []
    written: dict[str, str] = {}  # file -> the id of the step that writes it
    for index, step in enumerate(steps):
        route = route_step(step.text, registry, load, share=SHARE_SCORE)
        if route.agent:
            load[route.agent] += 1
        entry = registry.get(route.agent)
        skill = entry.skill(route.skill) if entry else None
        arguments, inputs = _structured_input(step, skill, ids, continues, written)
        # Dependencies stay, even under a strategy that ignores them, for a step that takes its
        # input from them: it cannot run before they have their results.
        depends = [ids[d] for d in step.depends_on] if strategy.follows_dependencies or inputs else []
        for source in [s for sources in inputs.values() for s in sources if s.startswith(FILE_SOURCE)]:
            writer = written[source.removeprefix(FILE_SOURCE)]
            depends += [] if writer in depends else [writer]
        # An argument naming a file an earlier step writes ({"file": "primes.py"}): that step comes
        # first, and its file is sent along as a part (``supervisor.workspace.attachments``).
        for value in (arguments or {}).values():
            maker = written.get(value) if isinstance(value, str) else None
            depends += [] if maker is None or maker in depends else [maker]
        path = (arguments or {}).get("path")
        if isinstance(path, str) and ((arguments or {}).get("content") is not None or "content" in inputs):
            written[path] = ids[index]
        item = new_item(
            ids[index],
            cap(step.text, 120),
            instruction=step.text,
            agent=route.agent,
            skill=route.skill,
            arguments=arguments,
            depends_on=depends,
            inputs=inputs,
        )
        if route.agent is None:
            item = {**item, "status": "failed", "error": f"could not do this step: {route.reason}"}
        items.append(item)
    return items


#: Why an item without an error of its own has no result (``assemble``: nothing missing goes unexplained).
_WHY_NOT_DONE = {
    "pending": "not started before the run ended",
    "running": "still running when the run ended",
    "review": "its result was not checked before the run ended",
    "skipped": "a step it depends on did not finish",
    "canceled": "canceled before it finished",
    "failed": "it failed without giving a reason",
}


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
            reason = item["error"] or _WHY_NOT_DONE.get(item["status"], "no result")
            missing.append(
                f"- {item['id']}. {item['description']}{who}: {item['status']}: {reason}"
                + (f" (partial result: {cap(partial, 200)})" if partial else "")
            )
    if stop:
        lines += ["", f"The run stopped early: {stop}."]
    if missing:
        lines += ["", "Missing:", *missing]
    return "\n".join(lines).rstrip()
