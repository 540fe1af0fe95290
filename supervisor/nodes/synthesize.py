"""**synthesize**: write the final answer (the model, or the offline assembly when there is no
model, the run was cancelled or a budget ran out) and the run's status."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from ..conversation import turn_of
from ..hosted import release
from ..model import SYNTHESIZE_SYSTEM, items_text, system_prompt
from ..offline import assemble
from ..runtime import RunCanceled, RunContext, context_of, stop_reason
from ..state import Item, SupervisorState
from .delegate import output_of
from .todo import Update, items_of

__all__ = ["synthesize"]


async def synthesize(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    items = list(items_of(state).values())
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
        reason = state.get("error") or (stop_reason(stop, rt.config) if stop else None)
        final = assemble(state["objective"], items, limit=rt.settings.peer_text_chars, stop=reason)
    update["status"] = _status({**state, "stop": update.get("stop", stop)}, items)
    update["final"] = final
    update["history"] = [turn_of(state, items, update["status"], final, lambda i: output_of(state, i))]
    await release(rt)  # a host's run ends here (a Supervisor's run is ended by the Supervisor)
    return update


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
