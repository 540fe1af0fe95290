"""Conversations: the runs of one thread, and what a later run sees of the earlier ones.

A run on a thread that already has a finished run is the next *turn*: it starts from empty work
(items, delegations, results, the model's messages; ``new_turn``) but keeps the thread's
``history`` (each earlier turn's objective, status, answer and item outputs) and each agent's
A2A ``contextId``. The planner and the conversational model are shown the history as
``conversation_text``, compacted to ``supervisor.history_tokens``:

- the newest turns are shown in full (objective, answer), as many as fit in half the budget;
- older turns as one line each (``turn 3: <objective> -> completed (files: write, code: run)``);
- when even those lines do not fit, the oldest are left out with a count saying so.

The digest is deterministic (the same history gives the same text); the full results stay in the
state's ``history``, where ``Supervisor.get_thread`` and a host can read them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from .quoting import cap, quote
from .state import RESET, Item, SupervisorState, Turn, new_usage

__all__ = ["conversation_text", "new_turn", "turn_of"]


def new_turn(state: SupervisorState) -> dict[str, Any]:
    """The update that starts the next turn of a thread whose last run has finished."""
    return {
        "items": {RESET: True},
        "delegations": {RESET: True},
        "variables": {RESET: True},
        "messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES)],
        "usage": new_usage(),
        "summary": None,
        "replans": 0,
        "replan": False,
        "stop": None,
        "final": None,
        "status": None,
        "error": None,
    }


def turn_of(
    state: SupervisorState, items: Sequence[Item], status: str, final: str, output: Callable[[Item], str]
) -> Turn:
    """The finished run as the thread's history keeps it."""
    return Turn(
        run_id=str(state.get("run_id") or ""),
        objective=str(state.get("objective") or ""),
        status=status,
        final=final,
        items=[
            {
                "id": i["id"],
                "description": i["description"],
                "agent": i["agent"],
                "status": i["status"],
                "output": output(i) if i["status"] == "done" else None,
            }
            for i in items
        ],
    )


def _digest(number: int, turn: Turn) -> str:
    done = [f"{i['agent']}: {i['description']}" for i in turn["items"] if i["status"] == "done"]
    return f"turn {number}: {cap(turn['objective'], 100)} -> {turn['status']}" + (
        f" ({cap('; '.join(done), 160)})" if done else ""
    )


def _full(number: int, turn: Turn, limit: int) -> str:
    answer = quote(turn["final"] or "(no answer)", source="supervisor", kind=f"answer of turn {number}", limit=limit)
    return f"turn {number}: {turn['objective']}\nstatus: {turn['status']}\n{answer}"


def conversation_text(history: Sequence[Turn], *, budget: int, count: Callable[[str], int], limit: int) -> str:
    """The earlier turns for a prompt, within ``budget`` tokens (see the module's docstring)."""
    if not history:
        return ""
    numbered = list(enumerate(history, start=1))
    head_cost = count(_left_out(len(history)))  # room for the line that says what was left out
    half = max(1, budget // 2 - head_cost)
    full: list[str] = []
    used = head_cost
    for number, turn in reversed(numbered):  # newest first, in full while they fit half the budget
        text, shown = _full(number, turn, limit), limit
        while count(text) > half and shown > 100 and not full:
            shown //= 2  # the newest turn is always shown: its answer is cut to fit
            text = _full(number, turn, shown)
        if used + count(text) > half + head_cost and full:
            break
        full.insert(0, text)
        used += count(text)
    older = numbered[: len(numbered) - len(full)]
    lines: list[str] = []
    for number, turn in reversed(older):  # then one line each, newest first, while they fit
        line = _digest(number, turn)
        if used + count(line) > budget:
            break
        lines.insert(0, line)
        used += count(line)
    left_out = len(older) - len(lines)
    return "\n".join([*([_left_out(left_out)] if left_out else []), *lines, *full])


def _left_out(n: int) -> str:
    return f"({n} earlier turn(s) not shown; their results stay in the run's history)"
