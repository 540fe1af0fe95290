"""**delegate**: the sliding pool of delegations.

It starts every ready item while fewer than the strategy's capacity are in flight, waits for the
next change (a remote task id to checkpoint, an item finished, cancellation, the wall-time
budget), applies it and returns, so the state is checkpointed as delegations progress.
Delegations keep running across its invocations (``supervisor.delegation.Delegator``); after a
restart, items that were running are picked up again by their remote task, never resent.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from .. import events as ev
from ..delegation import ItemDone, Job, RecordUpdate, outcome_of
from ..delegation_record import Delegation, delegations_in
from ..offline import PREVIOUS_TURN
from ..runtime import CAPS, RunContext, budget_exhausted, context_of, steps_used, stop_reason
from ..state import Item, SupervisorState
from ..tokens import ContextBudgetError, ContextPiece, build_delegation_text
from ..workspace import FILE_SOURCE, Attachments, attachments, named_in, produced_files, run_files, workspace_file
from .batch import BROKEN, StepBatch, may_start
from .reflect import judge_by_rules
from .todo import Update, item_event, items_of, note_result

__all__ = ["after_delegate", "delegate", "ready"]


async def delegate(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    batch = StepBatch(rt, state)
    stop = "canceled" if rt.cancel.is_set() else budget_exhausted(state, rt)
    if stop is None or stop in CAPS:
        if stop is None:
            _approvals(rt, batch)
        # After a restart: items that were running have no delegation in this process yet (a cap
        # stops new work, not what was already sent).
        for item in [i for i in batch.items.values() if i["status"] == "running" and rt.delegator.orphaned(i["id"])]:
            batch.set(_start(rt, batch.view, item, batch.items))
        stop = await _rounds(rt, batch, capped=stop)
    if stop is not None:
        _apply_updates(rt, batch, await rt.delegator.cancel_all(stop_reason(stop, rt.config)))
        for item in batch.items.values():
            if item["status"] == "running":
                batch.changed[item["id"]] = {**item, "status": "canceled"}
    update: Update = {"items": batch.changed, "delegations": batch.records, "variables": batch.variables}
    if batch.contexts:
        update["contexts"] = batch.contexts
    if stop is not None:
        update["stop"] = stop
    return update


async def _rounds(rt: RunContext, batch: StepBatch, capped: str | None = None) -> str | None:
    """Start what may start, wait for the next change, apply it; again, within one step, while
    the oldest change is younger than ``checkpoint.interval``; then the step returns (and is saved).

    A LangGraph step and its checkpoint cost more than a delegation to a fast agent: with one step
    per change, the supervisor's overhead was that of the step. Batched, one step carries every
    change of its interval. A resume finds the run at most ``interval`` older than it was: an item
    whose start or end was not saved yet is sent again with the same ``messageId``, which the agent
    answers with the task it already has (as it did before for a crash between a send and the
    first change saved). Returns why the run stops, if it does.

    A cap (``max_steps``, ``budget.tokens``, ``budget.cost_usd``: ``CAPS``) stops the starting of
    new items, not the delegations in flight: they run on (within ``budget.wall_time``), and once
    none is left the cap is returned, so that the run ends naming it."""
    interval = rt.config.supervisor.checkpoint.interval
    # A step that may stop for an interrupt (an approval) stays one round: an interrupted node
    # loses its writes, and with them the delegations its earlier rounds would have started.
    one_round = interval <= 0 or rt.approve_by_interrupt
    deadline: float | None = None
    while True:
        if deadline is not None and capped is None:  # a later round: a budget may have run out meanwhile
            stop = "canceled" if rt.cancel.is_set() else budget_exhausted(batch.view, rt)
            if stop is not None and stop not in CAPS:
                return stop
            capped = stop
        _skip_blocked(rt, batch)
        if capped is None:
            steps_left = rt.settings.max_steps - steps_used(batch.view)
            for item in batch.ready(min(_capacity(rt), max(0, steps_left))):
                batch.set(_start(rt, batch.view, item, batch.items))
        if not rt.delegator.in_flight and rt.delegator.updates.empty():
            # A cap that left nothing undone (its last items were in flight) stopped nothing.
            return capped if any(i["status"] == "pending" for i in batch.items.values()) else None
        timeout = rt.wall_time_left()
        if deadline is not None:
            left = max(0.0, deadline - time.monotonic())
            timeout = left if timeout is None else min(timeout, left)
        updates = await rt.delegator.next_updates(rt.cancel, timeout)
        _apply_updates(rt, batch, updates)
        if rt.cancel.is_set():
            return "canceled"
        if not updates:
            if rt.wall_time_left() == 0:
                budget_exhausted(batch.view, rt)  # (reports it)
                return "budget:wall_time"
            return None  # the interval has passed with nothing new: save what changed
        if one_round or (rt.use_model_reflection and any(i["status"] == "review" for i in batch.changed.values())):
            return None  # the reflect step must see it now
        if deadline is None:
            deadline = time.monotonic() + interval
        elif time.monotonic() >= deadline:
            return None  # changes keep coming: save them all the same


async def after_delegate(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    rt = context_of(runtime)
    if state.get("stop"):
        return "synthesize"
    items = items_of(state)
    statuses = {i["status"] for i in items.values()}
    if "review" in statuses:
        return "reflect"
    if rt.delegator.in_flight or "running" in statuses or ready(rt, items):
        return "delegate"
    if rt.mode == "conversational":
        return "reflect"
    return "synthesize"


def ready(rt: RunContext, items: dict[str, Item]) -> list[Item]:
    """Pending items that may start now: those the model delegated (conversational), else every
    pending item whose dependencies are done (all of them under a strategy that ignores dependencies)."""
    conversational, follows = rt.mode == "conversational", rt.strategy.follows_dependencies
    return [i for i in items.values() if may_start(i, items, conversational, follows)]


def _approvals(rt: RunContext, batch: StepBatch) -> None:
    """For a host's run: ask, with a LangGraph ``interrupt``, before an item goes to an agent with
    ``approval: true``. Done first in the node, before anything starts, because the node runs
    again from its beginning when the host resumes it with the answer (``Command(resume=...)``)."""
    if not rt.approve_by_interrupt:
        return
    for item in ready(rt, batch.items):
        entry = rt.registry.get(item["agent"])
        if entry is None or not entry.config.approval or item.get("approved") is not None:
            continue
        answer = interrupt(
            {"approve": {"item_id": item["id"], "agent": entry.name, "instruction": item["instruction"]}}
        )
        if answer is True or str(answer).strip().lower() in ("y", "yes", "true", "approve", "approved"):
            item = {**item, "approved": True}
        else:
            item = {**item, "approved": False, "status": "failed"}
            item["error"] = f"vetoed: delegating to {entry.name} was not approved"
            item_event(rt, item)
        batch.set(item)


def _capacity(rt: RunContext) -> int:
    return max(0, rt.strategy.capacity(rt.settings.max_concurrency) - rt.delegator.in_flight)


def _skip_blocked(rt: RunContext, batch: StepBatch) -> None:
    """Pending items whose dependency failed (or was skipped) will never run: skip them (looked
    for only when an item has failed since the last look)."""
    if not batch.broken:
        return
    batch.broken = False
    if not rt.strategy.follows_dependencies or rt.mode == "conversational":
        return
    items = batch.items
    progress = True
    while progress:
        progress = False
        for item in batch.pending():
            broken = [d for d in item["depends_on"] if d in items and items[d]["status"] in BROKEN]
            if broken:
                item = {**item, "status": "skipped", "error": f"depends on item {broken[0]}, which did not succeed"}
                batch.set(item)
                item_event(rt, item)
                progress = True
    batch.broken = False


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
    arguments = record.arguments if record else _arguments(state, item, items)
    contexts = dict(state.get("contexts") or {})
    # The files of the items it depends on, and those it names, as parts (found again from the
    # state after a restart).
    files = _files_for(rt, state, item, items, agent, skill)
    if files.left_out and record is None:
        text += f"\n\n(Files not attached, over supervisor.attachments_bytes: {', '.join(files.left_out)}.)"
    if files.by_url and record is None:
        text += f"\n\n(Files sent by URL only, the supervisor could not fetch them: {'; '.join(files.by_url)}.)"
    job = Job(item["id"], item["description"], agent, skill, text, arguments, dispatch, resume, contexts)
    tools = record.tools if record else _tools(rt, item, agent)
    rt.delegator.start(dataclasses.replace(job, approved=bool(item.get("approved")), tools=tools, parts=files.parts))
    started: Item = {**item, "status": "running", "agent": agent, "skill": skill, "dispatches": dispatch}
    if not resumed:
        item_event(rt, started)
    return started


def _files_for(
    rt: RunContext, state: SupervisorState, item: Item, items: dict[str, Item], agent: str, skill: str | None
) -> Attachments:
    """The files of the items it depends on; and the run's files it names: those the model listed
    in ``delegate``'s ``files``, else (a model's delegation) those its task or arguments name."""
    named = item.get("files")
    if named is None and item["tool_call_id"]:
        named = named_in(run_files(state, items), item["instruction"], item["arguments"])
    if not item["depends_on"] and not named:
        return Attachments([], [], [])
    entry = rt.registry.get(agent)
    info = entry.skill(skill) if entry is not None else None
    if info is None:
        return Attachments([], [], [])
    return attachments(state, item, items, info.input_modes, rt.settings.attachments_bytes, named or ())


def _tools(rt: RunContext, item: Item, agent: str) -> list[str] | None:
    """The agent's tools for this delegation: the item's choice (the plan's, the model's), else the
    agent's configured ``tools``, else none sent."""
    if "tools" in item:
        return item["tools"]
    entry = rt.registry.get(agent)
    return list(entry.config.tools) if entry is not None and entry.config.tools is not None else None


def _arguments(state: SupervisorState, item: Item, items: dict[str, Item]) -> dict[str, Any] | None:
    """The item's arguments, with those it takes from other items' results filled in."""
    inputs = item.get("inputs") or {}
    if not inputs or item["arguments"] is None:
        return item["arguments"]
    filled = dict(item["arguments"])
    path = filled.get("path")
    if isinstance(path, str) and _dependency_made(state, item, items, path):
        return filled  # "save out.txt" after a step that made out.txt: the file itself goes as a part
    for name, sources in inputs.items():
        outputs = [output_of(state, items[s]) for s in sources if s in items and items[s]["status"] == "done"]
        files = [
            workspace_file(state, items, s.removeprefix(FILE_SOURCE)) for s in sources if s.startswith(FILE_SOURCE)
        ]
        if any(f is not None for f in files):  # a file of the run named by the step: its content, as is
            filled[name] = "".join(f for f in files if f is not None)
            continue
        if PREVIOUS_TURN in sources and state.get("history"):
            last = (state.get("history") or [])[-1]
            outputs += [i["output"] for i in last["items"] if i["status"] == "done" and i.get("output")]
        filled[name] = "\n".join(o.rstrip("\n") for o in outputs) + ("\n" if outputs else "")
    return filled


def _dependency_made(state: SupervisorState, item: Item, items: dict[str, Item], path: str) -> bool:
    records = state.get("delegations") or {}
    for dependency in item["depends_on"]:
        source = items.get(dependency)
        if source is not None and source["status"] == "done" and source["delegations"]:
            record = records.get(source["delegations"][-1])
            if record and path in produced_files(dict(record)):
                return True
    return False


def output_of(state: SupervisorState, item: Item) -> str:
    """What an item produced, as another item's input: a program's standard output when its
    agent returned one (an artifact named ``stdout``), else its result text."""
    records = state.get("delegations") or {}
    latest = records.get(item["delegations"][-1]) if item["delegations"] else None
    for artifact in (latest or {}).get("artifacts") or []:
        if artifact.get("name") == "stdout":
            return "".join(p.get("text") or "" for p in artifact.get("parts") or [])
    return item["result"] or ""


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
    item_event(rt, failed)
    return failed


def _apply_updates(rt: RunContext, batch: StepBatch, updates: Sequence[Any]) -> None:
    items, changed = batch.items, batch.changed
    for update in updates:
        if isinstance(update, RecordUpdate):
            record = update.record
            batch.record(record.as_state())
            if record.context_id:
                batch.context(record.agent, record.context_id)
            item = changed.get(record.item_id) or items.get(record.item_id)
            if item is not None and record.id not in item["delegations"]:
                batch.set({**item, "delegations": [*item["delegations"], record.id]})
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
            if status == "review" and not rt.use_model_reflection:
                # Judged by the fixed rules at once: no reflect step (and checkpoint) per item.
                item_event(rt, item)
                delegations = batch.view.get("delegations") or {}
                latest = delegations.get(item["delegations"][-1]) if item["delegations"] else None
                item = judge_by_rules(rt, item, Delegation.from_state(latest) if latest else None)
            batch.set(item)
            note_result(batch.variables, item)
            item_event(rt, item)
