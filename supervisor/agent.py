"""The supervisor as an A2A agent: another supervisor (or any client) can delegate to it.

It passes the hop count on: a message that arrives with ``a2a-net/depth = n`` starts a run at
depth ``n``, whose own delegations carry ``n + 1``, so a chain of supervisors stops at
``max_depth`` instead of looping. Cancelling its task cancels the run (and, through it, every
remote task that run has in flight). Token use and cost of the whole run are reported in the
task's ``a2a-net/usage`` metadata.

::

    from a2a import A2AServer
    from supervisor import Supervisor
    from supervisor.agent import supervisor_agent

    server = A2AServer(supervisor_agent(Supervisor.from_yaml("supervisor.yaml")))
"""

from __future__ import annotations

from a2a import Agent, RequestContext
from a2a.metadata import DEPTH_KEY

from .supervisor import Supervisor

__all__ = ["supervisor_agent"]


def _depth(ctx: RequestContext) -> int:
    value = (ctx.message.metadata or {}).get(DEPTH_KEY, 0)
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return 0


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
        result = await supervisor.run(ctx.text, depth=_depth(ctx))
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
