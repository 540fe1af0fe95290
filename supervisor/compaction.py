"""The model's prompt within ``supervisor.messages_tokens``, in every mode.

A prompt's size is what the model reads: each message's text **plus** the arguments of the tool
calls the model made (the ``delegate`` calls carry whole tasks) **plus** the tool results. The
tool definitions sent beside the messages are fixed and not counted.

Two steps keep it within the budget:

1. **Summary of the oldest turns** (``conversational``, ``converse``): when the model's own
   conversation no longer fits, its oldest turns (an assistant message with the results of its tool
   calls, never split) are folded into a running summary, shown with the objective. The summary
   is written by the model (a ``summarize`` call) when there is one and ``supervisor.summaries``
   allows it, else deterministically: one line per tool call and per result. It is kept in the
   state (``summary``), so each turn is summarised once; folding leaves half the room free, so a
   summary is not needed at every turn.
2. **A hard bound** (``bound_prompt``, on every model call: plan, reflect, synthesize, converse,
   summarize): when the messages are still over the budget, the tokens are shared among them by
   water-filling and each message larger than its share keeps its beginning and end, with a marker
   saying how much was left out; for a tool call, its long string arguments are cut the same way,
   so the call stays valid JSON.

The run's metrics say how the budget was used: the budget, the largest prompt sent, how many
prompts were cut and how many summaries were written (``RunMetrics.prompt_*``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from .quoting import cap
from .tokens import TokenCounter, shorten, water_fill

__all__ = [
    "bound_prompt",
    "cut_point",
    "digest",
    "fold_digest",
    "message_tokens",
    "prompt_tokens",
    "text_of",
    "with_summary",
]

#: Fewest tokens a message is cut to (its marker needs about that much).
_FLOOR = 24
_CUT = " [... {n} characters left out to fit supervisor.messages_tokens ...] "


def text_of(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else json.dumps(message.content, ensure_ascii=False)


def _calls_tokens(message: BaseMessage, count: TokenCounter) -> int:
    if not isinstance(message, AIMessage):
        return 0
    return sum(count(c["name"]) + count(json.dumps(c["args"], ensure_ascii=False)) for c in message.tool_calls)


def message_tokens(message: BaseMessage, count: TokenCounter) -> int:
    """The tokens of one message: its text and its tool calls' names and arguments."""
    return count(text_of(message)) + _calls_tokens(message, count)


def prompt_tokens(messages: Sequence[BaseMessage], count: TokenCounter) -> int:
    return sum(message_tokens(m, count) for m in messages)


# ---- the hard bound -----------------------------------------------------------------------------


def _cut_strings(value: Any, limit: int) -> Any:
    """``value`` with every string longer than ``limit`` characters cut to its head and tail."""
    if isinstance(value, str) and len(value) > limit:
        head, tail = limit * 2 // 3, limit // 3
        return value[:head] + _CUT.format(n=len(value) - head - tail) + (value[len(value) - tail :] if tail else "")
    if isinstance(value, dict):
        return {k: _cut_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cut_strings(v, limit) for v in value]
    return value


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return max((_longest_string(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return max((_longest_string(v) for v in value), default=0)
    return 0


def _shrink_calls(message: AIMessage, share: int, count: TokenCounter) -> AIMessage:
    """``message`` with its text and its tool calls' string arguments cut to fit ``share`` tokens."""
    text = text_of(message)
    calls: list[dict[str, Any]] = [dict(c) for c in message.tool_calls]
    text_share = max(_FLOOR, share // 4) if calls else share
    if count(text) > text_share:
        text = shorten(text, text_share, count)

    def size(limit: int) -> int:
        cut = [json.dumps(_cut_strings(c["args"], limit), ensure_ascii=False) for c in calls]
        return sum(count(c["name"]) + count(args) for c, args in zip(calls, cut, strict=True))

    room = share - count(text)
    low, high = 0, max((_longest_string(c["args"]) for c in calls), default=0)
    if size(high) > room:
        while low < high:  # the longest cut that fits
            middle = (low + high + 1) // 2
            low, high = (middle, high) if size(middle) <= room else (low, middle - 1)
        calls = [{**c, "args": _cut_strings(c["args"], low)} for c in calls]
    return AIMessage(content=text, tool_calls=calls, id=message.id)


def _shrink(message: BaseMessage, share: int, count: TokenCounter) -> BaseMessage:
    share = max(_FLOOR, share)
    if isinstance(message, AIMessage):
        return _shrink_calls(message, share, count)
    text = shorten(text_of(message), share, count)
    if isinstance(message, ToolMessage):
        return ToolMessage(text, tool_call_id=message.tool_call_id, id=message.id)
    return type(message)(content=text, id=message.id)


def bound_prompt(messages: Sequence[BaseMessage], *, budget: int, count: TokenCounter) -> list[BaseMessage]:
    """``messages`` within ``budget`` tokens: the larger messages cut (see the module's docstring).

    Messages that fit their share are untouched; the order, the roles and the pairing of tool calls
    with their results never change. A prompt of more messages than the budget has room for even at
    ``_FLOOR`` tokens each may stay over it (``converse`` folds old turns first, so it never is).
    """
    shown = list(messages)
    for attempt in range(4):  # a cut message may come out a little over its share (markers): again, tighter
        sizes = [message_tokens(m, count) for m in shown]
        if sum(sizes) <= budget:
            break
        shares = water_fill(sizes, max(0, budget - attempt * (budget // 16)))
        pairs = zip(shown, sizes, shares, strict=True)
        shown = [m if size <= share else _shrink(m, share, count) for m, size, share in pairs]
    return shown


# ---- folding the oldest turns -------------------------------------------------------------------


def _answered_by(messages: Sequence[BaseMessage]) -> dict[str, int]:
    return {m.tool_call_id: i for i, m in enumerate(messages) if isinstance(m, ToolMessage)}


def cut_point(messages: Sequence[BaseMessage], *, start: int, room: int, count: TokenCounter) -> int:
    """Where to fold: the index before which ``messages[start:]`` is summarised (``start``: nothing).

    Nothing is folded while ``messages[start:]`` fits ``room``. Past it, the fold keeps the newest
    turns that fit half of ``room`` (at least the newest turn). A turn is never split: a cut never
    leaves a tool result after it whose call is before it.
    """
    sizes = [message_tokens(m, count) for m in messages]
    if sum(sizes[start:]) <= room:
        return start
    answered = _answered_by(messages)
    valid = []
    last_answer = -1  # the latest index answering a call made before the current position
    for index in range(start, len(messages)):
        if index > start and last_answer < index and not isinstance(messages[index], ToolMessage):
            valid.append(index)
        message = messages[index]
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                last_answer = max(last_answer, answered.get(str(call["id"]), -1))
    if not valid:
        return start
    tail = 0
    suffix = {}
    for index in range(len(messages) - 1, start - 1, -1):
        tail += sizes[index]
        suffix[index] = tail
    fitting = [k for k in valid if suffix[k] <= room // 2]
    return fitting[0] if fitting else valid[-1]


def _line(message: BaseMessage, limit: int) -> list[str]:
    if isinstance(message, AIMessage):
        lines = [f"you said: {cap(text_of(message), limit)}"] if text_of(message).strip() else []
        for call in message.tool_calls:
            args = call["args"]
            if call["name"] == "delegate":
                what = f"delegate to {args.get('agent')}: {cap(str(args.get('task', '')), limit)}"
            else:
                what = f"{call['name']}({cap(json.dumps(args, ensure_ascii=False), limit)})"
            lines.append(f"you called {what}")
        return lines
    if isinstance(message, ToolMessage):
        return [f"result: {cap(text_of(message), limit)}"]
    return [f"{message.type}: {cap(text_of(message), limit)}"]


def digest(messages: Sequence[BaseMessage], *, limit: int = 160) -> str:
    """The deterministic summary of some turns: one line per tool call and per result."""
    return "\n".join(line for m in messages for line in _line(m, limit))


def fold_digest(old: str, new: str, *, room: int, count: TokenCounter) -> str:
    """``old`` and ``new`` summary lines within ``room`` tokens: the oldest lines go first, counted."""
    lines = [line for line in [*old.splitlines(), *new.splitlines()] if line and not line.startswith("(")]
    dropped = int(old.split(" ", 2)[1]) if old.startswith("(earlier: ") else 0
    while lines and count("\n".join(lines)) + 16 > room:
        lines.pop(0)
        dropped += 1
    head = [f"(earlier: {dropped} older step(s) not shown)"] if dropped else []
    return "\n".join([*head, *lines])


def with_summary(first: BaseMessage, summary: str) -> BaseMessage:
    """The objective's message with the summary of the folded turns after it."""
    if not summary:
        return first
    return HumanMessage(
        f"{text_of(first)}\n\nSummary of the earlier steps of this run (their full messages are left out to "
        f"keep the prompt within supervisor.messages_tokens):\n{summary}",
        id=first.id,
    )
