"""The supervisor as an A2A agent: another supervisor (or any client) can delegate to it.

It passes the hop count on: a message that arrives with ``a2a-net/depth = n`` starts a run at
depth ``n``, whose own delegations carry ``n + 1``, so a chain of supervisors stops at
``max_depth`` instead of looping. Cancelling its task cancels the run (and, through it, every
remote task that run has in flight). Token use and cost of the whole run are reported in the
task's ``a2a-net/usage`` metadata. While it works, the caller is sent WORKING status updates
with the plan and each step (``progress_line``), not only "planning" and then the answer.

::

    from a2a import A2AServer
    from supervisor import Supervisor
    from supervisor.agent import supervisor_agent

    server = A2AServer(supervisor_agent(Supervisor.from_yaml("supervisor.yaml")))
"""

from __future__ import annotations

from a2a import Agent, RequestContext
from a2a.metadata import DEPTH_KEY

from .delegation import RUN_KEY
from .events import DelegationStarted, Event, ItemStatus, PlanUpdated, RunFinished
from .supervisor import Supervisor

__all__ = ["progress_line", "supervisor_agent"]


def _depth(ctx: RequestContext) -> int:
    value = (ctx.message.metadata or {}).get(DEPTH_KEY, 0)
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


def progress_line(event: Event) -> str | None:
    """A WORKING status text for the caller of a supervisor served as an agent, or ``None``."""
    if isinstance(event, PlanUpdated):
        steps = "; ".join(f"{i['id']}. {i['description']} ({i.get('agent') or 'no agent'})" for i in event.items)
        return f"plan: {steps}"
    if isinstance(event, DelegationStarted):
        return f"item {event.item_id}: delegated to {event.agent}: {event.description}"
    if isinstance(event, ItemStatus) and event.status in ("done", "failed", "skipped", "canceled"):
        return f"item {event.item_id}: {event.status}" + (f" ({event.detail})" if event.detail else "")
    return None


def supervisor_agent(
    supervisor: Supervisor,
    *,
    name: str = "Supervisor",
    description: str = "Plans an objective into tasks and delegates them to other agents, then answers.",
) -> Agent:
    agent = Agent(name, description)

    @agent.skill(
        "supervise",
        name="Supervise",
        description="Give an objective in plain text; it is planned, delegated to agents and answered.",
        # "general": it takes any objective (an offline planner above routes unmatched steps to it).
        tags=["plan", "delegate", "supervisor", "orchestrate", "general"],
        examples=["Summarise README.md and list the TODOs in src/"],
    )
    async def supervise(ctx: RequestContext) -> None:
        await ctx.working("planning")
        result = None
        parent = (ctx.message.metadata or {}).get(RUN_KEY)
        parent_run_id = parent if isinstance(parent, str) and parent else None
        async for event in supervisor.stream(ctx.text, depth=_depth(ctx), parent_run_id=parent_run_id):
            if isinstance(event, RunFinished):
                result = event.result
            else:
                line = progress_line(event)
                if line is not None:  # the caller sees the plan and each step as they happen
                    await ctx.working(line)
        assert result is not None
        m = result.metrics
        ctx.report_usage(
            m.agent_input_tokens + m.model_input_tokens,
            m.agent_output_tokens + m.model_output_tokens,
            cost_usd=m.total_cost_usd,
        )
        await ctx.artifact(result.final, name="answer")
        if result.status in ("completed", "partial"):
            await ctx.complete(f"run {result.run_id}: {result.status}")
        else:
            reasons = [result.error] if result.error else [f"{i.id}: {i.error}" for i in result.missing if i.error]
            await ctx.fail(f"run {result.run_id} {result.status}: {'; '.join(reasons) or 'see the answer'}")

    return agent
