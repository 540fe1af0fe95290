"""What a run returns: the answer, the TODO list, every delegation with its metrics, and totals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from .delegation_record import Delegation, delegations_in
from .state import Item, SupervisorState, new_usage

__all__ = ["AgentMetrics", "Delegation", "RunMetrics", "RunResult", "TodoItem", "result_from_state"]


@dataclass(frozen=True)
class TodoItem:
    id: str
    description: str
    instruction: str
    #: pending, running, review, done, failed, skipped or canceled.
    status: str
    agent: str | None
    skill: str | None
    depends_on: list[str]
    result: str | None
    data: Any
    error: str | None
    #: Why reflection accepted, retried or gave up.
    note: str
    delegations: list[str]


@dataclass(frozen=True)
class AgentMetrics:
    delegations: int = 0
    completed: int = 0
    failed: int = 0
    attempts: int = 0
    events: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    busy_seconds: float = 0.0


@dataclass(frozen=True)
class RunMetrics:
    """Everything rolled up for the run: the agents' reported use plus the supervisor's own model."""

    delegations: int
    completed: int
    failed: int
    attempts: int
    retries: int
    failovers: int
    events: int
    agent_input_tokens: int
    agent_output_tokens: int
    agent_cost_usd: float
    model_calls: int
    model_input_tokens: int
    model_output_tokens: int
    model_cost_usd: float
    total_tokens: int
    total_cost_usd: float
    per_agent: dict[str, AgentMetrics] = field(default_factory=dict)
    #: The model's prompt budget (``messages_tokens``) and how it was used: the largest prompt sent
    #: (tokens, as counted for the budget), the prompts that had to be cut, the summaries written.
    prompt_budget: int = 0
    prompt_tokens_max: int = 0
    prompts_cut: int = 0
    summaries: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RunResult:
    run_id: str
    objective: str
    #: completed (every item done), partial (some results, some missing), failed, or canceled.
    status: str
    final: str
    items: list[TodoItem]
    delegations: list[Delegation]
    #: Results keyed by agent, then item id (JSON data when the agent returned some, else text).
    variables: dict[str, dict[str, Any]]
    #: Every artifact received, keyed by agent (the A2A ``Artifact`` as JSON).
    artifacts: dict[str, list[dict[str, Any]]]
    metrics: RunMetrics
    error: str | None = None
    #: Why the run stopped early (``canceled``, ``budget:tokens`` ...), if it did.
    stopped: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"

    @property
    def missing(self) -> list[TodoItem]:
        return [i for i in self.items if i.status != "done"]

    def item(self, item_id: str) -> TodoItem:
        return next(i for i in self.items if i.id == item_id)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _item(item: Item) -> TodoItem:
    return TodoItem(
        id=item["id"],
        description=item["description"],
        instruction=item["instruction"],
        status=item["status"],
        agent=item["agent"],
        skill=item["skill"],
        depends_on=list(item["depends_on"]),
        result=item["result"],
        data=item["data"],
        error=item["error"],
        note=item["note"],
        delegations=list(item["delegations"]),
    )


def _per_agent(records: list[Delegation]) -> dict[str, AgentMetrics]:
    totals: dict[str, dict[str, Any]] = {}
    for r in records:
        t = totals.get(r.agent)
        if t is None:  # (not ``setdefault``: that would build the zeros for every record)
            t = totals[r.agent] = dict(vars(AgentMetrics()))  # its fields are numbers: no deep copy needed
        t["delegations"] += 1
        t["completed"] += r.state == "completed"
        t["failed"] += r.state != "completed"
        t["attempts"] += r.attempts
        t["events"] += r.events
        t["input_tokens"] += r.input_tokens
        t["output_tokens"] += r.output_tokens
        t["cost_usd"] += r.cost_usd
        t["busy_seconds"] += r.duration
    return {name: AgentMetrics(**values) for name, values in totals.items()}


def metrics_of(state: Mapping[str, Any]) -> RunMetrics:
    records = delegations_in(state)
    usage = state.get("usage") or new_usage()
    agent_in = sum(r.input_tokens for r in records)
    agent_out = sum(r.output_tokens for r in records)
    agent_cost = sum(r.cost_usd for r in records)
    attempts = sum(r.attempts for r in records)
    return RunMetrics(
        delegations=len(records),
        completed=sum(r.state == "completed" for r in records),
        failed=sum(r.state != "completed" for r in records),
        attempts=attempts,
        retries=max(0, attempts - len(records)),
        failovers=sum(r.failover_from is not None for r in records),
        events=sum(r.events for r in records),
        agent_input_tokens=agent_in,
        agent_output_tokens=agent_out,
        agent_cost_usd=agent_cost,
        model_calls=usage["model_calls"],
        model_input_tokens=usage["model_input_tokens"],
        model_output_tokens=usage["model_output_tokens"],
        model_cost_usd=usage["model_cost_usd"],
        total_tokens=agent_in + agent_out + usage["model_input_tokens"] + usage["model_output_tokens"],
        total_cost_usd=agent_cost + usage["model_cost_usd"],
        per_agent=_per_agent(records),
        prompt_budget=usage.get("prompt_budget", 0),
        prompt_tokens_max=usage.get("prompt_tokens_max", 0),
        prompts_cut=usage.get("prompts_cut", 0),
        summaries=usage.get("summaries", 0),
    )


def result_from_state(state: SupervisorState | Mapping[str, Any]) -> RunResult:
    items = [_item(i) for i in (state.get("items") or {}).values()]
    records = delegations_in(state)
    artifacts: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.artifacts:
            artifacts.setdefault(r.agent, []).extend(r.artifacts)
    stop = state.get("stop")
    return RunResult(
        run_id=state.get("run_id", ""),
        objective=state.get("objective", ""),
        status=state.get("status") or "failed",
        final=state.get("final") or "",
        items=items,
        delegations=records,
        variables={k: dict(v) for k, v in (state.get("variables") or {}).items()},
        artifacts=artifacts,
        metrics=metrics_of(state),
        error=state.get("error"),
        stopped=stop,
    )
