"""Typed progress events: what ``Supervisor.stream()`` yields and ``a2a supervise --json`` prints.

Every event has a ``kind`` (its name on the wire, e.g. ``delegation_started``), the ``run_id``
and the time ``at`` (seconds since the epoch). ``to_dict()`` gives the JSON object printed by
``--json``: ``{"event": kind, "run_id": ..., "at": ..., <fields>}``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from .result import RunResult

__all__ = [
    "AgentStatus",
    "BudgetExhausted",
    "CheckpointSaved",
    "CircuitOpened",
    "ContextCompressed",
    "DelegationFinished",
    "DelegationProgress",
    "DelegationRetrying",
    "DelegationStarted",
    "Event",
    "Failover",
    "InputRequested",
    "ItemStatus",
    "ModelCalled",
    "PlanUpdated",
    "Reflected",
    "RunFinished",
    "RunStarted",
]


@dataclass(frozen=True, kw_only=True)
class Event:
    kind: ClassVar[str] = "event"
    run_id: str
    at: float = field(default_factory=time.time)
    #: The run of the supervisor that delegated to this one (``a2a-net/runId`` of the message
    #: that started it), when this run is nested; left out of ``to_dict`` otherwise.
    parent_run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "result"}
        if data["parent_run_id"] is None:
            del data["parent_run_id"]
        return {"event": self.kind, **data}


@dataclass(frozen=True, kw_only=True)
class RunStarted(Event):
    kind: ClassVar[str] = "run_started"
    objective: str
    mode: str
    strategy: str
    #: The model's name, or ``None`` for the offline planner.
    model: str | None
    resumed: bool = False


@dataclass(frozen=True, kw_only=True)
class AgentStatus(Event):
    """An agent was resolved (``up``), could not be (``down``), or was added/removed."""

    kind: ClassVar[str] = "agent_status"
    agent: str
    status: str
    transport: str
    skills: list[str]
    required: bool = False
    error: str | None = None
    #: The A2A version the agent speaks, when that is why it is down.
    unsupported_version: str | None = None


@dataclass(frozen=True, kw_only=True)
class PlanUpdated(Event):
    kind: ClassVar[str] = "plan_updated"
    #: Each item: ``{id, description, agent, skill, depends_on, status}``.
    items: list[dict[str, Any]]
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ItemStatus(Event):
    kind: ClassVar[str] = "item_status"
    item_id: str
    status: str
    agent: str | None = None
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class DelegationStarted(Event):
    kind: ClassVar[str] = "delegation_started"
    delegation_id: str
    item_id: str
    agent: str
    skill: str | None
    description: str
    message_id: str
    #: The agent this item failed over from, if any.
    failover_from: str | None = None
    #: True when a resumed run follows a remote task it had started before (no new send).
    reattached: bool = False


@dataclass(frozen=True, kw_only=True)
class DelegationProgress(Event):
    """A stream event arrived: the remote task's state and its latest status text."""

    kind: ClassVar[str] = "delegation_progress"
    delegation_id: str
    item_id: str
    agent: str
    state: str
    task_id: str | None
    text: str | None
    events: int
    attempts: int


@dataclass(frozen=True, kw_only=True)
class DelegationRetrying(Event):
    kind: ClassVar[str] = "delegation_retrying"
    delegation_id: str
    item_id: str
    agent: str
    attempt: int
    error: str
    delay: float


@dataclass(frozen=True, kw_only=True)
class DelegationFinished(Event):
    kind: ClassVar[str] = "delegation_finished"
    delegation_id: str
    item_id: str
    agent: str
    state: str
    duration: float
    attempts: int
    events: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Failover(Event):
    kind: ClassVar[str] = "failover"
    item_id: str
    from_agent: str
    to_agent: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class CircuitOpened(Event):
    kind: ClassVar[str] = "circuit_opened"
    agent: str
    failures: int
    reset_after: float


@dataclass(frozen=True, kw_only=True)
class InputRequested(Event):
    """A remote task asks a question. Answer with ``Supervisor.answer(delegation_id, text)``."""

    kind: ClassVar[str] = "input_requested"
    delegation_id: str
    item_id: str
    agent: str
    question: str


@dataclass(frozen=True, kw_only=True)
class Reflected(Event):
    kind: ClassVar[str] = "reflected"
    item_id: str
    #: ``accept``, ``retry``, ``replan`` or ``give_up``.
    verdict: str
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ModelCalled(Event):
    kind: ClassVar[str] = "model_called"
    purpose: str
    input_tokens: int
    output_tokens: int
    cost_usd: float
    duration: float


@dataclass(frozen=True, kw_only=True)
class ContextCompressed(Event):
    kind: ClassVar[str] = "context_compressed"
    item_id: str
    budget: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, kw_only=True)
class BudgetExhausted(Event):
    kind: ClassVar[str] = "budget_exhausted"
    budget: str
    used: float
    limit: float


@dataclass(frozen=True, kw_only=True)
class CheckpointSaved(Event):
    """The run's state is saved with these remote tasks in flight (a resume would reattach to them).

    Sent when the set of checkpointed in-flight tasks changes, only when a checkpointer is used.
    """

    kind: ClassVar[str] = "checkpoint_saved"
    #: Delegation id -> remote task id, for every delegation that may still be running.
    tasks: dict[str, str]


@dataclass(frozen=True, kw_only=True)
class RunFinished(Event):
    kind: ClassVar[str] = "run_finished"
    #: ``completed``, ``partial``, ``failed`` or ``canceled``.
    status: str
    final: str
    error: str | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    #: The whole result (not in ``to_dict``; the JSON line carries ``metrics`` instead).
    result: RunResult | None = None
