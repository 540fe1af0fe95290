"""What one delegate step has changed so far, over the rounds of its checkpoint interval.

The delegate step runs several rounds (start what may start, wait, apply what changed) before it
returns and is checkpointed. Each round must be cheap whatever the size of the run: the state's
maps are copied once per step, not per round, changes are made in place on those copies, and the
next items to start are found from a cursor over the TODO list, not by scanning all of it.
"""

from __future__ import annotations

from typing import Any

from ..delegation_record import DelegationData
from ..runtime import RunContext
from ..state import Item, SupervisorState
from .todo import items_of

__all__ = ["StepBatch", "may_start"]

#: Statuses that make the items depending on it unable to run.
BROKEN = frozenset({"failed", "skipped", "canceled"})


def may_start(item: Item, items: dict[str, Item], conversational: bool, follows_dependencies: bool) -> bool:
    """A pending item that may start now: one the model delegated (conversational), else one whose
    dependencies are done (any, under a strategy that ignores dependencies)."""
    if item["status"] != "pending":
        return False
    if conversational:
        return bool(item["tool_call_id"])
    if not follows_dependencies:
        return True
    return all(items[d]["status"] == "done" for d in item["depends_on"] if d in items)


class StepBatch:
    def __init__(self, rt: RunContext, state: SupervisorState) -> None:
        self.items = items_of(state)
        #: The items this step changed (its write to ``items``).
        self.changed: dict[str, Item] = {}
        #: The delegation records this step changed (its write to ``delegations``).
        self.records: dict[str, DelegationData] = {}
        self.variables: dict[str, dict[str, Any]] = {}
        #: The agents' context ids this step learnt (its write to ``contexts``).
        self.contexts: dict[str, str] = {}
        self._delegations = dict(state.get("delegations") or {})
        self._all_contexts = dict(state.get("contexts") or {})
        #: The state with this step's changes, for what a later round reads (records, context ids).
        self.view: SupervisorState = {
            **state,
            "items": self.items,
            "delegations": self._delegations,
            "contexts": self._all_contexts,
        }
        self._order = list(self.items)
        #: Every item before it has left ``pending`` (moved back when one returns to it: a retry).
        self._cursor = 0
        #: An item failed (or was skipped, canceled): its dependents may have to be skipped.
        self.broken = True
        self._conversational = rt.mode == "conversational"
        self._follows = rt.strategy.follows_dependencies

    def set(self, item: Item) -> None:
        """Record a changed item."""
        old = self.items.get(item["id"])
        self.items[item["id"]] = self.changed[item["id"]] = item
        if item["status"] == "pending" and (old is None or old["status"] != "pending"):
            self._cursor = min(self._cursor, self._order.index(item["id"]))
        if item["status"] in BROKEN:
            self.broken = True

    def record(self, data: DelegationData) -> None:
        self.records[data["id"]] = self._delegations[data["id"]] = data

    def context(self, agent: str, context_id: str) -> None:
        """An agent's context id, written when it is new to the thread."""
        if self._all_contexts.get(agent) != context_id:
            self.contexts[agent] = self._all_contexts[agent] = context_id

    def pending(self) -> list[Item]:
        """The pending items, in the order of the TODO list."""
        order, items = self._order, self.items
        while self._cursor < len(order) and items[order[self._cursor]]["status"] != "pending":
            self._cursor += 1
        return [items[order[i]] for i in range(self._cursor, len(order)) if items[order[i]]["status"] == "pending"]

    def ready(self, limit: int) -> list[Item]:
        """Up to ``limit`` items that may start now, in the order of the TODO list."""
        found: list[Item] = []
        if limit <= 0:
            return found
        order, items = self._order, self.items
        while self._cursor < len(order) and items[order[self._cursor]]["status"] != "pending":
            self._cursor += 1
        for i in range(self._cursor, len(order)):
            item = items[order[i]]
            if may_start(item, items, self._conversational, self._follows):
                found.append(item)
                if len(found) == limit:
                    break
        return found
