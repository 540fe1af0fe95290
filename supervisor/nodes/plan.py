"""**plan** (``plan_upfront``): make the TODO list with the model's ``update_todo`` tool, or with the
offline planner. On a re-plan, finished items stay and pending ones may change."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from ..model import PLAN_SYSTEM, UpdateTodo, items_text, system_prompt
from ..offline import plan_offline
from ..runtime import RunCanceled, RunContext, budget_exhausted, context_of
from ..state import Item, SupervisorState
from .prompting import catalog, earlier_turns, valid_calls
from .todo import Update, entries_to_items, items_of, plan_event

__all__ = ["after_plan", "plan"]

log = logging.getLogger(__name__)


async def plan(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    existing = items_of(state)
    replanning = bool(existing)
    if rt.model is None:
        if replanning:
            return {}
        continues = bool(state.get("history"))
        planned = plan_offline(state["objective"], rt.registry, strategy=rt.strategy, continues=continues)
        items = _acyclic({i["id"]: i for i in planned})
        plan_event(rt, list(items.values()), "offline planner")
        return {"items": items}
    stop = budget_exhausted(state, rt)
    if stop:
        return {"stop": stop}
    try:
        changed, usage, messages = await _model_plan(state, rt, existing)
    except RunCanceled as exc:
        return {"stop": str(exc)}
    if not changed and not replanning:
        log.warning("the model made no plan; using the offline planner")
        planned = plan_offline(state["objective"], rt.registry, strategy=rt.strategy)
        changed = {i["id"]: i for i in planned}
    merged = _acyclic({**existing, **changed})
    if not rt.strategy.follows_dependencies:
        merged = {k: {**v, "depends_on": []} for k, v in merged.items()}
    update_items = {k: v for k, v in merged.items() if k in changed or existing.get(k) != v}
    plan_event(rt, list(merged.values()), "re-plan" if replanning else "model plan")
    return {
        "items": update_items,
        "usage": usage,
        "messages": messages,
        "replans": state.get("replans", 0) + (1 if replanning else 0),
    }


async def _model_plan(
    state: SupervisorState, rt: RunContext, existing: dict[str, Item]
) -> tuple[dict[str, Item], Any, list[Any]]:
    prompt = (
        f"Objective:\n{state['objective']}{earlier_turns(rt, state)}\n\n"
        f"Agents you can delegate to:\n{catalog(rt, state['objective'])}"
    )
    if existing:
        prompt += (
            "\n\nThe current TODO list (finished items stay; you may change pending items and add new "
            f"ones):\n{items_text(list(existing.values()), rt.settings.peer_text_chars)}"
        )
    messages = [SystemMessage(system_prompt(PLAN_SYSTEM, rt.strategy)), HumanMessage(prompt)]
    response, usage = await rt.call_model("plan", messages, ["update_todo"], state.get("usage"))
    changed: dict[str, Item] = {}
    replies: list[Any] = [messages[1], response]
    for call_id, update in valid_calls(response, "update_todo", UpdateTodo, replies):
        changed.update(entries_to_items(rt, update.items, {**existing, **changed}))
        for removed in update.remove:
            if removed in existing and existing[removed]["status"] == "pending":
                changed[removed] = {**existing[removed], "status": "skipped", "error": "removed by re-plan"}
        replies.append(ToolMessage("TODO list updated", tool_call_id=call_id))
    return changed, usage, replies


async def after_plan(state: SupervisorState) -> str:
    return "synthesize" if state.get("stop") or not state.get("items") else "delegate"


def _acyclic(items: dict[str, Item]) -> dict[str, Item]:
    """Drop dependencies on unknown items and those that would close a cycle."""
    fixed: dict[str, Item] = {}
    for item_id, item in items.items():
        deps = [d for d in dict.fromkeys(item["depends_on"]) if d in items and d != item_id]
        fixed[item_id] = {**item, "depends_on": deps}
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(node: str) -> None:
        visiting.add(node)
        keep = []
        for dep in fixed[node]["depends_on"]:
            if dep in visiting:
                log.warning("dropping the dependency of %s on %s: it would close a cycle", node, dep)
                continue
            if dep not in done:
                visit(dep)
            keep.append(dep)
        fixed[node]["depends_on"] = keep
        visiting.discard(node)
        done.add(node)

    for node in fixed:
        if node not in done:
            visit(node)
    return fixed
