"""**discover**: resolve the agents (``Registry.discover``); a required agent that is down ends the run here."""

from __future__ import annotations

from collections.abc import Iterable

from langgraph.runtime import Runtime

from .. import events as ev
from ..conversation import new_turn
from ..registry import AgentEntry
from ..runtime import RunContext, context_of
from ..state import SupervisorState
from .todo import Update

__all__ = ["after_discover", "discover", "report_agents"]


def report_agents(rt: RunContext, entries: Iterable[AgentEntry]) -> None:
    """An ``agent_status`` event for each agent: up or down (with the reason), its transport and skills."""
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
                unsupported_version=entry.unsupported_version,
            )
        )


async def discover(state: SupervisorState, runtime: Runtime[RunContext]) -> Update:
    rt = context_of(runtime)
    entries = await rt.registry.discover()
    report_agents(rt, entries)
    update: Update = {"agents": [e.summary() for e in entries]}
    if state.get("run_id") != rt.run_id:  # a host's input is only the objective
        update["run_id"] = rt.run_id
    if state.get("status") is not None:
        # The thread's last run has finished: this run is the conversation's next turn.
        update.update(new_turn(state))
    down = [e for e in entries if e.config.required and not e.up]
    if down:
        reasons = "; ".join(f"{e.name}: {e.error}" for e in down)
        update.update(stop="required_agent_down", error=f"required agent unavailable ({reasons})")
    elif not any(e.up for e in entries):
        reasons = "; ".join(f"{e.name}: {e.error}" for e in entries) or "none is configured"
        update.update(stop="no_agents", error=f"no agent is available ({reasons})")
    return update


async def after_discover(state: SupervisorState, runtime: Runtime[RunContext]) -> str:
    if state.get("stop"):
        return "synthesize"
    return "converse" if context_of(runtime).mode == "conversational" else "plan"
