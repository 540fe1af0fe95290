"""The TODO list as the nodes share it: read from the state, built from the model's entries, reported."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import events as ev
from ..model import TodoEntry
from ..runtime import RunContext
from ..state import Item, SupervisorState, new_item

__all__ = ["Update", "entries_to_items", "item_event", "items_of", "note_result", "plan_event"]

#: What a node returns: the state's keys it changed.
Update = dict[str, Any]


def items_of(state: SupervisorState) -> dict[str, Item]:
    """A copy of the TODO list, by item id (a node changes its copy and returns what it changed)."""
    return dict(state.get("items") or {})


def entries_to_items(rt: RunContext, entries: Sequence[TodoEntry], existing: dict[str, Item]) -> dict[str, Item]:
    """The items the model's ``update_todo`` entries make or change (only pending items may change)."""
    changed: dict[str, Item] = {}
    for entry in entries:
        old = existing.get(entry.id)
        if old is not None and old["status"] != "pending":
            continue  # started or finished items are history: the model may not rewrite them
        agent = entry.agent if rt.registry.get(entry.agent) is not None else None
        changed[entry.id] = new_item(
            entry.id,
            entry.description,
            instruction=entry.instruction,
            agent=agent,
            skill=entry.skill,
            arguments=entry.arguments,
            depends_on=entry.depends_on,
            tool_call_id=old["tool_call_id"] if old else None,
            tools=entry.tools,
        )
    return changed


def note_result(variables: dict[str, dict[str, Any]], item: Item) -> None:
    """A done item's result becomes a variable of its agent (its data if the agent sent JSON, else its text)."""
    if item["status"] == "done" and item["agent"]:
        variables.setdefault(item["agent"], {})[item["id"]] = (
            item["data"] if item["data"] is not None else item["result"]
        )


def plan_event(rt: RunContext, items: Sequence[Item], reason: str) -> None:
    """Report the whole TODO list (a ``plan_updated`` event)."""
    rt.emit(
        ev.PlanUpdated(
            run_id=rt.run_id,
            reason=reason,
            items=[{k: i[k] for k in ("id", "description", "agent", "skill", "depends_on", "status")} for i in items],
        )
    )


def item_event(rt: RunContext, item: Item, detail: str | None = None) -> None:
    """Report one item's status (an ``item_status`` event)."""
    rt.emit(
        ev.ItemStatus(
            run_id=rt.run_id,
            item_id=item["id"],
            status=item["status"],
            agent=item["agent"],
            detail=detail or item["error"],
        )
    )
