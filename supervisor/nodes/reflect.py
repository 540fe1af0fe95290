"""**reflect**: judge each finished item (``plan_upfront``): accept it, retry it once with a
corrected instruction, re-plan, or give up with a reason (the model's ``reflect`` tool, or the
fixed rules). In ``conversational`` mode the finished delegations go back to the model instead,
as the answers to its tool calls (``converse.tool_results``)."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from .. import events as ev
from ..delegation_record import Delegation
from ..model import REFLECT_SYSTEM, Reflect, items_text, system_prompt
from ..runtime import RunCanceled, RunContext, budget_exhausted, context_of
from ..state import Item, SupervisorState
from .converse import tool_results
from .prompting import valid_calls
from .todo import Update, item_event, items_of, note_result

__all__ = ["after_reflect", "judge_by_rules", "reflect"]


async def reflect(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    if rt.mode == "conversational":
        return tool_results(state, rt)
    items = items_of(state)
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
        note_result(variables, judged)
        item_event(rt, judged)
    update.update(items=changed, variables=variables, replan=replan)
    return update


async def after_reflect(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    rt = context_of(runtime)
    if state.get("stop"):
        return "synthesize"
    if rt.mode == "conversational":
        return "converse"
    if state.get("replan") and state.get("replans", 0) < rt.settings.max_replans and rt.model is not None:
        return "plan"
    items = items_of(state)
    if rt.delegator.in_flight or any(i["status"] in ("running", "pending", "review") for i in items.values()):
        return "delegate"
    return "synthesize"


def judge_by_rules(rt: RunContext, item: Item, record: Delegation | None) -> Item:
    """An item under review, judged by the fixed rules (what ``reflect`` does without a model;
    the delegate node does it as the item finishes, sparing the run a step per item)."""
    verdict, reason, instruction = _rule_verdict(item, record)
    return _judge(rt, item, verdict, reason, instruction)


#: A completed task whose answer opens by saying the work was not done ("I could not ...",
#: "Sorry, I am unable to ..."): a refusal, whatever its task state says.
_REFUSAL = re.compile(
    r"^\W*(?:(?:sorry|unfortunately|apologies)\b[\s,.!:;-]*)?(?:(?:i|we)(?:'m| am| was| were)? "
    r"(?:can(?:no|')t|could ?n(?:o|')t|(?:am |was |were |are )?(?:unable|not able)|did ?n(?:o|')t manage)\b"
    r"|(?:sorry|unfortunately)\b)",
    re.IGNORECASE,
)


def refused(result: str | None) -> bool:
    """Whether a completed answer says it could not do the work (its first sentence)."""
    return bool(_REFUSAL.match((result or "").strip()[:200]))


def _rule_verdict(item: Item, record: Delegation | None) -> tuple[str, str, str | None]:
    """Fixed rules: accept a non-empty completed result that does not say it could not do the work;
    retry a failed, empty or refusing one once; else give up."""
    state = record.state if record else ""
    refusal = state == "completed" and refused(item["result"])
    if state == "completed" and (item["result"] or "").strip() and not refusal:
        return "accept", "completed", None
    retryable = state in ("completed", "failed", "rejected")
    if refusal and (item["corrected"] or not retryable):
        first = (item["result"] or "").strip().splitlines()[0][:200]
        return "give_up", f"the agent said it could not do it: {first}", None
    if retryable and not item["corrected"]:
        problem = (
            "the answer said the work could not be done"
            if refusal
            else "the answer was empty"
            if state == "completed"
            else (item["error"] or f"the task ended {state}")
        )
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
    for call_id, verdict in valid_calls(response, "reflect", Reflect, replies):
        verdicts[verdict.item_id] = verdict
        replies.append(ToolMessage("noted", tool_call_id=call_id))
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
