"""**act** (``conversational``): run the tool calls of the model's last turn. A ``delegate`` call
becomes a pending item that the delegate node starts; its result answers the call later."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langgraph.runtime import Runtime
from pydantic import ValidationError

from .. import events as ev
from ..model import Delegate, Finish, Reflect, RetrieveAgents, UpdateTodo
from ..quoting import quote_json
from ..runtime import RunContext, context_of
from ..state import FINAL_ITEM_STATES, Item, SupervisorState, new_item
from ..workspace import run_files
from .delegate import ready
from .todo import Update, entries_to_items, items_of, plan_event

__all__ = ["act", "after_act"]


async def act(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    last = (state.get("messages") or [])[-1]
    assert isinstance(last, AIMessage)
    items = items_of(state)
    update: Update = {"items": {}, "messages": []}
    for tool_call in last.tool_calls:
        call: dict[str, Any] = dict(tool_call)
        try:
            answer = _act_one(rt, state, call, items, update)
        except ValidationError as exc:
            answer = f"invalid arguments for {call['name']}: {exc}"
        if answer is not None:
            update["messages"].append(ToolMessage(answer, tool_call_id=call["id"]))
    return update


async def after_act(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    if state.get("stop") or state.get("final") is not None:
        return "synthesize"
    if ready(context_of(runtime), items_of(state)):
        return "delegate"
    return "converse"


def _act_one(
    rt: RunContext, state: SupervisorState, call: dict[str, Any], items: dict[str, Item], update: Update
) -> str | None:
    """One tool call; returns the tool's answer, or ``None`` when a delegation will answer later."""
    name = call["name"]
    if name == "update_todo":
        args = UpdateTodo.model_validate(call["args"])
        added = entries_to_items(rt, args.items, items)
        items.update(added)
        update["items"].update(added)
        plan_event(rt, list(items.values()), "update_todo")
        return f"TODO list updated ({len(added)} item(s))"
    if name == "retrieve_agents":
        return _act_retrieve(rt, call)
    if name in ("delegate", "reflect"):
        result = _act_delegate(rt, state, call, items) if name == "delegate" else _act_reflect(rt, call, items)
        if isinstance(result, str):
            return result
        items[result["id"]] = update["items"][result["id"]] = result
        if result["status"] == "pending" and result["tool_call_id"] == call["id"]:
            return None
        return f"item {result['id']} is now {result['status']}"
    if name == "finish":
        update["final"] = Finish.model_validate(call["args"]).answer
        return "finished"
    return f"unknown tool {name!r}"


def _act_delegate(rt: RunContext, state: SupervisorState, call: dict[str, Any], items: dict[str, Item]) -> str | Item:
    args = Delegate.model_validate(call["args"])
    if rt.registry.get(args.agent) is None:
        known = ", ".join(e.name for e in rt.registry.available())
        return f"there is no agent named {args.agent!r}; available agents: {known}"
    if args.files:
        made = run_files(state, items)
        missing = [name for name in args.files if name not in made]
        if missing:
            return (
                f"no file named {', '.join(map(repr, missing))} in this run; its files: {', '.join(made) or 'none yet'}"
            )
    existing = items.get(args.item_id or "")
    # A pending item is taken over by this call only if no other call of the model already
    # claimed it: a second ``delegate`` for the same item (in this turn or while the first is
    # still waiting) becomes an item of its own, so that each call gets its own answer.
    free = existing is not None and existing["status"] == "pending" and not existing["tool_call_id"]
    item_id = existing["id"] if existing is not None and free else _conversation_item_id(items)
    return new_item(
        item_id,
        args.description,
        instruction=args.task,
        agent=args.agent,
        skill=args.skill,
        arguments=args.arguments,
        tool_call_id=call["id"],
        tools=args.tools,
        files=args.files,
    )


def _act_reflect(rt: RunContext, call: dict[str, Any], items: dict[str, Item]) -> str | Item:
    args = Reflect.model_validate(call["args"])
    item = items.get(args.item_id)
    if item is None:
        return f"there is no item {args.item_id!r}"
    rt.emit(ev.Reflected(run_id=rt.run_id, item_id=item["id"], verdict=args.verdict, reason=args.reason))
    if args.verdict == "retry" and item["status"] in FINAL_ITEM_STATES:
        return {
            **item,
            "status": "pending",
            "corrected": True,
            "note": args.reason,
            "tool_call_id": call["id"],
            "instruction": args.instruction or item["instruction"],
            "error": None,
        }
    status = (
        "done"
        if args.verdict == "accept" and item["result"] is not None
        else ("failed" if args.verdict == "give_up" else item["status"])
    )
    return {**item, "status": status, "note": args.reason}


def _act_retrieve(rt: RunContext, call: dict[str, Any]) -> str:
    args = RetrieveAgents.model_validate(call["args"])
    matches = rt.registry.retrieve(args.query, k=args.k)
    found = [
        {
            "agent": m.agent,
            "skill": m.skill_id,
            "name": m.skill_name,
            "description": m.description,
            "score": round(m.score, 3),
        }
        for m in matches
    ]
    return (
        quote_json(found, source="agent cards", kind="retrieve_agents results", limit=rt.settings.peer_text_chars)
        if found
        else "no agent matches"
    )


def _conversation_item_id(items: dict[str, Item]) -> str:
    n = len(items) + 1
    while f"c{n}" in items:
        n += 1
    return f"c{n}"
