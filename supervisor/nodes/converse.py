"""**converse** (``conversational``): one turn of the model, which answers or calls its tools
(``update_todo``, ``retrieve_agents``, ``delegate``, ``reflect``, ``finish``; ``act`` runs them).
Finished delegations come back to it as the results of the tool calls that started them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from ..compaction import cut_point, digest, fold_digest, message_tokens, text_of, with_summary
from ..model import CONVERSE_SYSTEM, SUMMARIZE_SYSTEM, TOOLS, system_prompt
from ..quoting import quote
from ..runtime import RunCanceled, RunContext, budget_exhausted, context_of
from ..state import FINAL_ITEM_STATES, Item, SupervisorState, Usage, new_usage
from ..tokens import shorten
from ..workspace import listing, run_files
from .prompting import catalog, earlier_turns
from .todo import Update, items_of

__all__ = ["after_converse", "converse", "tool_results"]


async def converse(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    update: Update = {}
    history = list(state.get("messages") or [])
    if not history:
        first = HumanMessage(f"Objective:\n{state['objective']}")
        history, update["messages"] = [first], [first]
    if rt.model is None:
        return {**update, "stop": "no_model", "error": "conversational mode needs a model (none is configured)"}
    stop = budget_exhausted(state, rt)
    if stop:
        return {**update, "stop": stop}
    system = SystemMessage(
        system_prompt(CONVERSE_SYSTEM) + "\n\nAgents (the best matches for the objective; "
        f"retrieve_agents finds others):\n{catalog(rt, state['objective'])}{earlier_turns(rt, state)}"
        f"{_files_of_run(rt, state)}"
    )
    try:
        shown, summary, usage = await _shown(rt, state, history, system)
        if summary is not None:
            update["summary"] = summary
        response, usage = await rt.call_model("converse", [system, *shown], list(TOOLS), usage)
    except RunCanceled as exc:
        return {**update, "stop": str(exc)}
    update["messages"] = [*update.get("messages", []), response]
    update["usage"] = usage
    if not response.tool_calls:
        update["final"] = response.text if hasattr(response, "text") else str(response.content)
    return update


async def _shown(
    rt: RunContext, state: SupervisorState, history: Sequence[BaseMessage], system: SystemMessage
) -> tuple[list[BaseMessage], dict[str, Any] | None, Usage]:
    """The conversation to show the model: the objective with the summary of the folded turns, then
    the newest turns whole (``supervisor.compaction``); the new summary when turns were folded."""
    count, budget = rt.token_counter, rt.settings.messages_tokens
    usage = Usage(**(state.get("usage") or new_usage()))
    summary = state.get("summary") or {"covered": 1, "text": ""}
    covered = min(max(1, int(summary["covered"])), len(history))
    text = str(summary["text"])
    summary_room = budget // 5
    room = budget - count(text_of(system)) - message_tokens(history[0], count) - summary_room
    cut = cut_point(history, start=covered, room=max(0, room), count=count)
    new: dict[str, Any] | None = None
    if cut > covered:
        text, usage = await _summarize(rt, state, history[covered:cut], text, summary_room, usage)
        usage["summaries"] = usage.get("summaries", 0) + 1
        new, covered = {"covered": cut, "text": text}, cut
    return [with_summary(history[0], text), *history[covered:]], new, usage


async def _summarize(
    rt: RunContext, state: SupervisorState, turns: Sequence[BaseMessage], old: str, room: int, usage: Usage
) -> tuple[str, Usage]:
    """The summary of the earlier turns and ``turns``, within ``room`` tokens."""
    choice = rt.settings.summaries
    if rt.model is None or choice == "rules":
        return fold_digest(old, digest(turns), room=room, count=rt.token_counter), usage
    lines = digest(turns, limit=rt.settings.peer_text_chars)
    steps = quote(lines, source="supervisor", kind="earlier steps", limit=len(lines))
    prompt = (
        f"Objective:\n{state['objective']}\n\nSummary so far:\n{old or '(none)'}\n\nSteps to add:\n{steps}\n\n"
        f"Answer with the new summary only, at most {room * 3} characters."
    )
    messages = [SystemMessage(system_prompt(SUMMARIZE_SYSTEM)), HumanMessage(prompt)]
    response, usage = await rt.call_model("summarize", messages, (), usage)
    text = response.text if hasattr(response, "text") else str(response.content)
    return (text if rt.token_counter(text) <= room else shorten(text, room, rt.token_counter)), usage


def _files_of_run(rt: RunContext, state: SupervisorState) -> str:
    """The run's files so far (names, types, sizes; never their content), for delegate's ``files``.
    Their names come from agents: quoted as data like any peer text."""
    files = run_files(state, items_of(state))
    if not files:
        return ""
    text = quote(listing(files), source="workspace", kind="files of this run", limit=rt.settings.peer_text_chars)
    return f"\n\nFiles of this run (newest first; name them in delegate's files to send them with a task):\n{text}"


async def after_converse(state: SupervisorState) -> str:
    if state.get("stop") or state.get("final") is not None:
        return "synthesize"
    return "act"


def tool_results(state: SupervisorState, rt: RunContext) -> Update:
    """Finished delegations answer the model's tool calls that started them."""
    changed: dict[str, Item] = {}
    messages = []
    limit = rt.settings.peer_text_chars
    for item in items_of(state).values():
        if item["tool_call_id"] and item["status"] in FINAL_ITEM_STATES:
            if item["status"] == "done":
                content = quote(
                    item["result"] or "(no output)",
                    source=item["agent"] or "?",
                    kind=f"result of item {item['id']}",
                    limit=limit,
                )
            else:
                content = f"Item {item['id']} {item['status']}: " + quote(
                    item["error"] or "(no reason given)", source=item["agent"] or "?", kind="error", limit=limit
                )
            messages.append(ToolMessage(content, tool_call_id=item["tool_call_id"]))
            changed[item["id"]] = {**item, "tool_call_id": None}
    return {"items": changed, "messages": messages}
