"""The supervisor's LangGraph ``StateGraph``: small nodes, one job each.

::

    START -> discover -> plan ------> delegate <-> reflect -> synthesize -> END     (plan_upfront)
                      \\-> converse -> act -> delegate -> reflect -> converse ...    (conversational)

- **discover** resolves the agents (``Registry.discover``); a required agent that is down ends
  the run here.
- **plan** (``plan_upfront``) makes the TODO list with the model's ``update_todo`` tool, or with
  the offline planner; on a re-plan, finished items stay and pending ones may change.
- **delegate** is the sliding pool: it starts every ready item while fewer than
  ``max_concurrency`` are in flight, waits for the next change (a remote task id to checkpoint,
  an item finished, cancellation, the wall-time budget), applies it and returns, so the state
  is checkpointed as delegations progress. Delegations keep running across its invocations.
- **reflect** (``plan_upfront``) judges each finished item: accept, retry once with a corrected
  instruction, re-plan, or give up with a reason (the model's ``reflect`` tool, or fixed rules).
  In ``conversational`` mode it hands the finished delegations back to the model as tool results.
- **converse** / **act** (``conversational``): one model turn, then its tool calls
  (``update_todo``, ``retrieve_agents``, ``delegate``, ``reflect``, ``finish``).
- **synthesize** writes the final answer (the model, or the offline assembly when there is no
  model, the run was cancelled or a budget ran out) and the run's status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Required, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import ValidationError

from . import events as ev
from .delegation import ItemDone, Job, RecordUpdate, outcome_of
from .delegation_record import Delegation, DelegationData, delegations_in
from .model import (
    CONVERSE_SYSTEM,
    PLAN_SYSTEM,
    REFLECT_SYSTEM,
    SYNTHESIZE_SYSTEM,
    Delegate,
    Finish,
    Reflect,
    RetrieveAgents,
    TodoEntry,
    UpdateTodo,
    catalog_text,
    items_text,
    system_prompt,
)
from .offline import assemble, plan_offline
from .quoting import quote, quote_json
from .runtime import RunCanceled, RunContext, budget_exhausted, totals
from .state import FINAL_ITEM_STATES, Item, SupervisorState, new_item
from .tokens import ContextBudgetError, ContextPiece, build_delegation_text

__all__ = ["build_graph", "context_of", "set_fallback_context"]

log = logging.getLogger("supervisor.graph")

Update = dict[str, Any]

# ---- helpers ---------------------------------------------------------------------------------

#: Makes the run context for a thread when the graph is run without one (LangGraph Studio).
_fallback_context: Callable[[str], RunContext] | None = None
_fallback_contexts: dict[str, RunContext] = {}


def set_fallback_context(factory: Callable[[str], RunContext] | None) -> None:
    """For hosts that run the compiled graph themselves (LangGraph Studio): how to make a context."""
    global _fallback_context
    _fallback_context = factory
    _fallback_contexts.clear()


def context_of(runtime: Runtime[RunContext]) -> RunContext:
    if runtime.context is not None:
        return runtime.context
    if _fallback_context is None:
        raise RuntimeError("the supervisor graph needs its RunContext: run it through Supervisor, or see studio.py")
    thread = str(get_config().get("configurable", {}).get("thread_id", "default"))
    if thread not in _fallback_contexts:
        _fallback_contexts[thread] = _fallback_context(thread)
    return _fallback_contexts[thread]


def _items(state: SupervisorState) -> dict[str, Item]:
    return dict(state.get("items") or {})


def _plan_event(rt: RunContext, items: Sequence[Item], reason: str) -> None:
    rt.emit(
        ev.PlanUpdated(
            run_id=rt.run_id,
            reason=reason,
            items=[{k: i[k] for k in ("id", "description", "agent", "skill", "depends_on", "status")} for i in items],
        )
    )


def _item_event(rt: RunContext, item: Item, detail: str | None = None) -> None:
    rt.emit(
        ev.ItemStatus(
            run_id=rt.run_id,
            item_id=item["id"],
            status=item["status"],
            agent=item["agent"],
            detail=detail or item["error"],
        )
    )


def _catalog(rt: RunContext, query: str) -> str:
    """The agents the model is shown: all, or the best-ranked ones when there are many."""
    available = rt.registry.available()
    size = rt.settings.catalog_size
    if len(available) > size:
        ranked = [m.agent for m in rt.registry.retrieve(query, k=None)]
        names = list(dict.fromkeys(ranked))[:size]
        available = [e for e in available if e.name in names] or available[:size]
    return catalog_text(available, limit=min(rt.settings.peer_text_chars, 2000))


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


def _entries_to_items(rt: RunContext, entries: Sequence[TodoEntry], existing: dict[str, Item]) -> dict[str, Item]:
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
        )
    return changed


def _route(rt: RunContext, item: Item) -> tuple[str | None, str | None]:
    """The item's agent and skill: as planned when available, else the best-ranked skill."""
    entry = rt.registry.get(item["agent"])
    if entry is not None and entry.up:
        skill = item["skill"] if entry.skill(item["skill"]) is not None else None
        if skill is None and entry.skills:
            ranked = [m for m in rt.registry.retrieve(item["instruction"], k=None) if m.agent == entry.name]
            skill = ranked[0].skill_id if ranked else entry.skills[0].id
        return entry.name, skill
    matches = rt.registry.retrieve(item["instruction"], k=1)
    if matches:
        return matches[0].agent, matches[0].skill_id
    available = rt.registry.available()
    if entry is None and item["agent"] is None and available:
        return available[0].name, available[0].skills[0].id if available[0].skills else None
    return None, None


# ---- discover --------------------------------------------------------------------------------


async def discover(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    entries = await rt.registry.discover()
    for entry in entries:
        rt.emit(
            ev.AgentStatus(
                run_id=rt.run_id,
                agent=entry.name,
                status=entry.status,
                transport=entry.transport,
                skills=[s.id for s in entry.skills],
                required=entry.config.required,
                error=entry.error,
            )
        )
    update: Update = {"agents": [e.summary() for e in entries]}
    down = [e for e in entries if e.config.required and not e.up]
    if down:
        reasons = "; ".join(f"{e.name}: {e.error}" for e in down)
        update.update(stop="required_agent_down", error=f"required agent unavailable ({reasons})")
    elif not any(e.up for e in entries):
        reasons = "; ".join(f"{e.name}: {e.error}" for e in entries) or "none is configured"
        update.update(stop="no_agents", error=f"no agent is available ({reasons})")
    return update


def after_discover(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    if state.get("stop"):
        return "synthesize"
    return "converse" if context_of(runtime).mode == "conversational" else "plan"


# ---- plan (plan_upfront) -----------------------------------------------------------------------


async def plan(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    existing = _items(state)
    replanning = bool(existing)
    if rt.model is None:
        if replanning:
            return {}
        planned = plan_offline(state["objective"], rt.registry, strategy=rt.strategy)
        items = _acyclic({i["id"]: i for i in planned})
        _plan_event(rt, list(items.values()), "offline planner")
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
    _plan_event(rt, list(merged.values()), "re-plan" if replanning else "model plan")
    return {
        "items": update_items,
        "usage": usage,
        "messages": messages,
        "replans": state.get("replans", 0) + (1 if replanning else 0),
    }


async def _model_plan(
    state: SupervisorState, rt: RunContext, existing: dict[str, Item]
) -> tuple[dict[str, Item], Any, list[Any]]:
    prompt = f"Objective:\n{state['objective']}\n\nAgents you can delegate to:\n{_catalog(rt, state['objective'])}"
    if existing:
        prompt += (
            "\n\nThe current TODO list (finished items stay; you may change pending items and add new "
            f"ones):\n{items_text(list(existing.values()), rt.settings.peer_text_chars)}"
        )
    messages = [SystemMessage(system_prompt(PLAN_SYSTEM, rt.strategy)), HumanMessage(prompt)]
    response, usage = await rt.call_model("plan", messages, ["update_todo"], state.get("usage"))
    changed: dict[str, Item] = {}
    replies: list[Any] = [messages[1], response]
    for call in response.tool_calls:
        if call["name"] != "update_todo":
            replies.append(ToolMessage(f"unknown tool {call['name']!r}; use update_todo", tool_call_id=call["id"]))
            continue
        try:
            update = UpdateTodo.model_validate(call["args"])
        except ValidationError as exc:
            replies.append(ToolMessage(f"invalid update_todo arguments: {exc}", tool_call_id=call["id"]))
            continue
        changed.update(_entries_to_items(rt, update.items, {**existing, **changed}))
        for removed in update.remove:
            if removed in existing and existing[removed]["status"] == "pending":
                changed[removed] = {**existing[removed], "status": "skipped", "error": "removed by re-plan"}
        replies.append(ToolMessage("TODO list updated", tool_call_id=call["id"]))
    return changed, usage, replies


def after_plan(state: SupervisorState) -> str:
    return "synthesize" if state.get("stop") or not state.get("items") else "delegate"


# ---- delegate: the sliding pool --------------------------------------------------------------


def _ready(rt: RunContext, items: dict[str, Item]) -> list[Item]:
    pending = [i for i in items.values() if i["status"] == "pending"]
    if rt.mode == "conversational":
        return [i for i in pending if i["tool_call_id"]]
    if not rt.strategy.follows_dependencies:
        return pending
    return [i for i in pending if all(items[d]["status"] == "done" for d in i["depends_on"] if d in items)]


def _capacity(rt: RunContext) -> int:
    return max(0, rt.strategy.capacity(rt.settings.max_concurrency) - rt.delegator.in_flight)


def _skip_blocked(rt: RunContext, items: dict[str, Item], changed: dict[str, Item]) -> None:
    """Pending items whose dependency failed (or was skipped) will never run: skip them."""
    if not rt.strategy.follows_dependencies or rt.mode == "conversational":
        return
    progress = True
    while progress:
        progress = False
        for item in items.values():
            if item["status"] != "pending":
                continue
            broken = [
                d for d in item["depends_on"] if d in items and items[d]["status"] in ("failed", "skipped", "canceled")
            ]
            if broken:
                item = {**item, "status": "skipped", "error": f"depends on item {broken[0]}, which did not succeed"}
                items[item["id"]] = changed[item["id"]] = item
                _item_event(rt, item)
                progress = True


def _latest_record(state: SupervisorState, item: Item) -> Delegation | None:
    prefix = f"{item['id']}.{item['dispatches']}."
    mine = [r for r in delegations_in(state) if r.id.startswith(prefix)]
    return max(mine, key=lambda r: r.hop) if mine else None


def _delegation_text(rt: RunContext, item: Item, items: dict[str, Item]) -> str:
    pieces = [
        ContextPiece(d, items[d]["description"], items[d]["agent"] or "?", items[d]["result"] or "")
        for d in item["depends_on"]
        if d in items and items[d]["status"] == "done"
    ]
    built = build_delegation_text(
        item["instruction"],
        pieces,
        budget=rt.settings.context.tokens,
        on_overflow=rt.settings.context.on_overflow,
        count=rt.token_counter,
        label=f"item {item['id']}",
    )
    if built.compressed:
        rt.emit(
            ev.ContextCompressed(
                run_id=rt.run_id,
                item_id=item["id"],
                budget=rt.settings.context.tokens,
                tokens_before=built.tokens_before,
                tokens_after=built.tokens,
            )
        )
    return built.text


def _fail(rt: RunContext, item: Item, error: str) -> Item:
    failed: Item = {**item, "status": "failed", "error": error}
    _item_event(rt, failed)
    return failed


def _start(rt: RunContext, state: SupervisorState, item: Item, items: dict[str, Item]) -> Item:
    """Start (or, after a restart, pick up again) the delegation of one item."""
    resumed = item["status"] == "running"
    record = _latest_record(state, item) if resumed else None
    if record is not None and not record.active:
        # It finished before the restart, but the item never heard: use the outcome, send nothing.
        rt.delegator.updates.put_nowait(ItemDone(item["id"], outcome_of(record)))
        return item
    agent, skill = (record.agent, record.skill) if record else _route(rt, item)
    if agent is None:
        return _fail(rt, item, "no available agent offers a matching skill")
    dispatch = item["dispatches"] if resumed else item["dispatches"] + 1
    try:
        text = record.text if record else _delegation_text(rt, item, items)
    except ContextBudgetError as exc:
        return _fail(rt, item, str(exc))
    resume = record if record is not None and record.active else None
    rt.delegator.start(
        Job(
            item["id"],
            item["description"],
            agent,
            skill,
            text,
            record.arguments if record else item["arguments"],
            dispatch,
            resume,
        )
    )
    started: Item = {**item, "status": "running", "agent": agent, "skill": skill, "dispatches": dispatch}
    if not resumed:
        _item_event(rt, started)
    return started


def _apply_updates(
    rt: RunContext,
    state: SupervisorState,
    updates: Sequence[Any],
    items: dict[str, Item],
    changed: dict[str, Item],
    records: dict[str, DelegationData],
    variables: dict[str, Any],
) -> None:
    for update in updates:
        if isinstance(update, RecordUpdate):
            record = update.record
            records[record.id] = record.as_state()
            item = changed.get(record.item_id) or items.get(record.item_id)
            if item is not None and record.id not in item["delegations"]:
                item = {**item, "delegations": [*item["delegations"], record.id]}
                items[item["id"]] = changed[item["id"]] = item
        elif isinstance(update, ItemDone):
            item = changed.get(update.item_id) or items.get(update.item_id)
            if item is None:
                continue
            outcome = update.outcome
            reviewing = rt.mode == "plan_upfront" and outcome.status != "canceled" and not rt.delegator.canceling
            status = "review" if reviewing else outcome.status
            item = {
                **item,
                "status": status,
                "agent": outcome.agent or item["agent"],
                "result": outcome.result,
                "data": outcome.data,
                "error": outcome.error,
            }
            items[item["id"]] = changed[item["id"]] = item
            if status == "done" and item["agent"]:
                variables.setdefault(item["agent"], {})[item["id"]] = (
                    outcome.data if outcome.data is not None else outcome.result
                )
            _item_event(rt, item)


async def delegate(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    items = _items(state)
    changed: dict[str, Item] = {}
    records: dict[str, DelegationData] = {}
    variables: dict[str, Any] = {}
    stop = "canceled" if rt.cancel.is_set() else budget_exhausted(state, rt)
    if stop is None:
        _skip_blocked(rt, items, changed)
        # After a restart: items that were running have no delegation in this process yet.
        for item in [i for i in items.values() if i["status"] == "running" and rt.delegator.orphaned(i["id"])]:
            items[item["id"]] = changed[item["id"]] = _start(rt, state, item, items)
        steps_left = rt.settings.max_steps - int(totals(state)["steps"])
        for item in _ready(rt, items)[: min(_capacity(rt), max(0, steps_left))]:
            items[item["id"]] = changed[item["id"]] = _start(rt, state, item, items)
        if rt.delegator.in_flight or not rt.delegator.updates.empty():
            updates = await rt.delegator.next_updates(rt.cancel, rt.wall_time_left())
            _apply_updates(rt, state, updates, items, changed, records, variables)
            if rt.cancel.is_set():
                stop = "canceled"
            elif not updates and rt.wall_time_left() == 0:
                stop = budget_exhausted(state, rt) or "budget:wall_time"
    if stop is not None:
        _apply_updates(rt, state, await rt.delegator.cancel_all(), items, changed, records, variables)
        for item in items.values():
            if item["status"] == "running":
                changed[item["id"]] = {**item, "status": "canceled"}
    update: Update = {"items": changed, "delegations": records, "variables": variables}
    if stop is not None:
        update["stop"] = stop
    return update


def after_delegate(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    rt = context_of(runtime)
    if state.get("stop"):
        return "synthesize"
    items = _items(state)
    statuses = {i["status"] for i in items.values()}
    if "review" in statuses:
        return "reflect"
    if rt.delegator.in_flight or "running" in statuses or _ready(rt, items):
        return "delegate"
    if rt.mode == "conversational":
        return "reflect"
    return "synthesize"


# ---- reflect -----------------------------------------------------------------------------------


def _rule_verdict(item: Item, record: Delegation | None) -> tuple[str, str, str | None]:
    """Fixed rules: accept a non-empty completed result; retry a failed or empty one once; else give up."""
    state = record.state if record else ""
    if state == "completed" and (item["result"] or "").strip():
        return "accept", "completed", None
    retryable = state in ("completed", "failed", "rejected")
    if retryable and not item["corrected"]:
        problem = "the answer was empty" if state == "completed" else (item["error"] or f"the task ended {state}")
        instruction = (
            f"{item['instruction']}\n\nA previous attempt at this task did not succeed ({problem}). "
            "Please address that and try again."
        )
        return "retry", f"retrying once: {problem}", instruction
    return "give_up", item["error"] or f"the delegation ended {state or 'without a result'}", None


async def _model_verdicts(
    state: SupervisorState, rt: RunContext, review: list[Item]
) -> tuple[dict[str, Reflect], Any, list[Any]]:
    prompt = f"Objective:\n{state['objective']}\n\nItems to check:\n{items_text(review, rt.settings.peer_text_chars)}"
    messages = [SystemMessage(system_prompt(REFLECT_SYSTEM)), HumanMessage(prompt)]
    response, usage = await rt.call_model("reflect", messages, ["reflect"], state.get("usage"))
    verdicts: dict[str, Reflect] = {}
    replies: list[Any] = [messages[1], response]
    for call in response.tool_calls:
        if call["name"] != "reflect":
            replies.append(ToolMessage(f"unknown tool {call['name']!r}; use reflect", tool_call_id=call["id"]))
            continue
        try:
            verdict = Reflect.model_validate(call["args"])
            verdicts[verdict.item_id] = verdict
            replies.append(ToolMessage("noted", tool_call_id=call["id"]))
        except ValidationError as exc:
            replies.append(ToolMessage(f"invalid reflect arguments: {exc}", tool_call_id=call["id"]))
    return verdicts, usage, replies


def _judge(rt: RunContext, item: Item, verdict: str, reason: str, instruction: str | None) -> Item:
    rt.emit(ev.Reflected(run_id=rt.run_id, item_id=item["id"], verdict=verdict, reason=reason))
    if verdict == "retry" and not item["corrected"]:
        return {
            **item,
            "status": "pending",
            "corrected": True,
            "note": reason,
            "instruction": instruction or item["instruction"],
            "error": None,
        }
    if verdict == "accept" and item["result"] is not None:
        return {**item, "status": "done", "note": reason}
    if verdict == "replan" and item["error"] is None and item["result"] is not None:
        return {**item, "status": "done", "note": reason}
    return {**item, "status": "failed", "note": reason, "error": item["error"] or reason}


async def reflect(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    if rt.mode == "conversational":
        return _tool_results(state, rt)
    items = _items(state)
    review = [i for i in items.values() if i["status"] == "review"]
    update: Update = {}
    verdicts: dict[str, Reflect] = {}
    if review and rt.use_model_reflection and not budget_exhausted(state, rt):
        try:
            verdicts, update["usage"], update["messages"] = await _model_verdicts(state, rt, review)
        except RunCanceled as exc:
            update["stop"] = str(exc)
    records = state.get("delegations") or {}
    changed: dict[str, Item] = {}
    variables: dict[str, dict[str, Any]] = {}
    replan = False
    for item in review:
        chosen = verdicts.get(item["id"])
        data = records.get(item["delegations"][-1]) if item["delegations"] else None
        record = Delegation.from_state(data) if data else None
        verdict: str
        if chosen is not None:
            verdict, reason, instruction = chosen.verdict, chosen.reason, chosen.instruction
        else:
            verdict, reason, instruction = _rule_verdict(item, record)
        judged = _judge(rt, item, verdict, reason, instruction)
        replan = replan or verdict == "replan"
        changed[item["id"]] = judged
        if judged["status"] == "done" and judged["agent"]:
            variables.setdefault(judged["agent"], {})[item["id"]] = (
                judged["data"] if judged["data"] is not None else judged["result"]
            )
        _item_event(rt, judged)
    update.update(items=changed, variables=variables, replan=replan)
    return update


def after_reflect(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    rt = context_of(runtime)
    if state.get("stop"):
        return "synthesize"
    if rt.mode == "conversational":
        return "converse"
    if state.get("replan") and state.get("replans", 0) < rt.settings.max_replans and rt.model is not None:
        return "plan"
    items = _items(state)
    if rt.delegator.in_flight or any(i["status"] in ("running", "pending", "review") for i in items.values()):
        return "delegate"
    return "synthesize"


TOOL_NAMES = ("update_todo", "retrieve_agents", "delegate", "reflect", "finish")


# ---- converse / act (conversational) ------------------------------------------------------------


def _tool_results(state: SupervisorState, rt: RunContext) -> Update:
    """Finished delegations answer the model's tool calls that started them."""
    changed: dict[str, Item] = {}
    messages = []
    limit = rt.settings.peer_text_chars
    for item in _items(state).values():
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
        f"retrieve_agents finds others):\n{_catalog(rt, state['objective'])}"
    )
    try:
        response, usage = await rt.call_model("converse", [system, *history], list(TOOL_NAMES), state.get("usage"))
    except RunCanceled as exc:
        return {**update, "stop": str(exc)}
    update["messages"] = [*update.get("messages", []), response]
    update["usage"] = usage
    if not response.tool_calls:
        update["final"] = response.text if hasattr(response, "text") else str(response.content)
    return update


def after_converse(state: SupervisorState) -> str:
    if state.get("stop") or state.get("final") is not None:
        return "synthesize"
    return "act"


def _conversation_item_id(items: dict[str, Item]) -> str:
    n = len(items) + 1
    while f"c{n}" in items:
        n += 1
    return f"c{n}"


def _act_delegate(rt: RunContext, call: dict[str, Any], items: dict[str, Item]) -> str | Item:
    args = Delegate.model_validate(call["args"])
    if rt.registry.get(args.agent) is None:
        known = ", ".join(e.name for e in rt.registry.available())
        return f"there is no agent named {args.agent!r}; available agents: {known}"
    existing = items.get(args.item_id or "")
    item_id = existing["id"] if existing and existing["status"] == "pending" else _conversation_item_id(items)
    return new_item(
        item_id,
        args.description,
        instruction=args.task,
        agent=args.agent,
        skill=args.skill,
        arguments=args.arguments,
        tool_call_id=call["id"],
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


def _act_one(rt: RunContext, call: dict[str, Any], items: dict[str, Item], update: Update) -> str | None:
    """One tool call; returns the tool's answer, or ``None`` when a delegation will answer later."""
    name = call["name"]
    if name == "update_todo":
        args = UpdateTodo.model_validate(call["args"])
        added = _entries_to_items(rt, args.items, items)
        items.update(added)
        update["items"].update(added)
        _plan_event(rt, list(items.values()), "update_todo")
        return f"TODO list updated ({len(added)} item(s))"
    if name == "retrieve_agents":
        return _act_retrieve(rt, call)
    if name in ("delegate", "reflect"):
        result = (_act_delegate if name == "delegate" else _act_reflect)(rt, call, items)
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


async def act(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    last = (state.get("messages") or [])[-1]
    assert isinstance(last, AIMessage)
    items = _items(state)
    update: Update = {"items": {}, "messages": []}
    for tool_call in last.tool_calls:
        call: dict[str, Any] = dict(tool_call)
        try:
            answer = _act_one(rt, call, items, update)
        except ValidationError as exc:
            answer = f"invalid arguments for {call['name']}: {exc}"
        if answer is not None:
            update["messages"].append(ToolMessage(answer, tool_call_id=call["id"]))
    return update


def after_act(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    if state.get("stop") or state.get("final") is not None:
        return "synthesize"
    if _ready(context_of(runtime), _items(state)):
        return "delegate"
    return "converse"


# ---- synthesize --------------------------------------------------------------------------------


def _status(state: SupervisorState, items: Sequence[Item]) -> str:
    stop = state.get("stop") or ""
    if stop == "canceled":
        return "canceled"
    if stop in ("required_agent_down", "no_agents", "no_model"):
        return "failed"
    done = sum(1 for i in items if i["status"] == "done")
    if state.get("final") is not None and not stop:
        return "completed"  # the model called finish (or answered): its judgement ends the run
    if not items:
        return "failed"
    if done == len(items) and not stop:
        return "completed"
    return "partial" if done else "failed"


async def synthesize(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    items = list(_items(state).values())
    stop = state.get("stop")
    update: Update = {}
    final = state.get("final")
    if final is None and rt.model is not None and items and not stop and any(i["status"] == "done" for i in items):
        prompt = (
            f"Objective:\n{state['objective']}\n\nTODO items and their results:\n"
            f"{items_text(items, rt.settings.peer_text_chars)}"
        )
        try:
            response, update["usage"] = await rt.call_model(
                "synthesize",
                [SystemMessage(system_prompt(SYNTHESIZE_SYSTEM)), HumanMessage(prompt)],
                (),
                state.get("usage"),
            )
            final = response.text if hasattr(response, "text") else str(response.content)
        except RunCanceled as exc:
            stop = update["stop"] = str(exc)
    if final is None:
        reason = state.get("error") or (stop.replace("budget:", "the budget ran out: ") if stop else None)
        final = assemble(state["objective"], items, limit=rt.settings.peer_text_chars, stop=reason)
    update["status"] = _status({**state, "stop": update.get("stop", stop)}, items)
    update["final"] = final
    return update


# ---- the graph ---------------------------------------------------------------------------------


class SupervisorInput(TypedDict, total=False):
    """What a run starts from (LangGraph Studio shows this as the input form)."""

    objective: Required[str]
    #: The hop count of the request that started the run (0: a person).
    depth: int
    run_id: str
    started_at: float


def build_graph() -> StateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(
        SupervisorState, context_schema=RunContext, input_schema=SupervisorInput
    )
    graph.add_node("discover", discover)
    graph.add_node("plan", plan)
    graph.add_node("converse", converse)
    graph.add_node("act", act)
    graph.add_node("delegate", delegate)
    graph.add_node("reflect", reflect)
    graph.add_node("synthesize", synthesize)
    graph.add_edge(START, "discover")
    graph.add_conditional_edges("discover", after_discover, ["plan", "converse", "synthesize"])
    graph.add_conditional_edges("plan", after_plan, ["delegate", "synthesize"])
    graph.add_conditional_edges("converse", after_converse, ["act", "synthesize"])
    graph.add_conditional_edges("act", after_act, ["delegate", "converse", "synthesize"])
    graph.add_conditional_edges("delegate", after_delegate, ["delegate", "reflect", "synthesize"])
    graph.add_conditional_edges("reflect", after_reflect, ["delegate", "plan", "converse", "synthesize"])
    graph.add_edge("synthesize", END)
    return graph
