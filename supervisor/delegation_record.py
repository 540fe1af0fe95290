"""One delegation of a TODO item to an agent, recorded: the one type for it.

The delegator fills a ``Delegation`` in as the remote task progresses; everything else reads a
view of it:

- the graph's state keeps ``as_state()`` (plain JSON-like values, so every checkpointer can
  store it) and reads it back with ``from_state()`` / ``delegations_in(state)``;
- ``RunResult.delegations`` lists the records themselves;
- the progress events are ``started_event()``, ``progress_event()``, ``retrying_event()``,
  ``question_event()`` and ``finished_event()``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import events as ev

__all__ = ["ACTIVE_DELEGATION_STATES", "Delegation", "DelegationData", "delegations_in"]

#: Delegation states in which a remote task may still be running.
ACTIVE_DELEGATION_STATES = frozenset({"starting", "submitted", "working", "input_required"})

#: A delegation as the graph's state (and so the checkpoint) holds it: ``Delegation.as_state()``.
DelegationData = dict[str, Any]


@dataclass(kw_only=True)
class Delegation:
    """One delegation of an item to an agent (a failover is a new delegation), with its metrics."""

    #: ``ITEM.DISPATCH.HOP``: the item, its dispatch (a corrected retry dispatches again), its failover.
    id: str
    item_id: str
    agent: str
    skill: str | None
    message_id: str
    #: The exact text and structured arguments sent, so a resumed run can send the same again.
    text: str
    arguments: dict[str, Any] | None
    task_id: str | None = None
    context_id: str | None = None
    #: starting, submitted, working, input_required, auth_required, completed, failed, rejected,
    #: canceled, timeout, error, refused.
    state: str = "starting"
    status_text: str | None = None
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    duration: float = 0.0
    attempts: int = 0
    events: int = 0
    #: Token use and cost as the agent reports them (``a2a-net/usage``).
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    failover_from: str | None = None
    #: What the agent returned: its text, and its JSON data if it sent some.
    result: str | None = None
    data: Any = None
    #: Every artifact received (the A2A ``Artifact`` as JSON).
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    #: Several messages of one task (answers to INPUT_REQUIRED) each have their own id.
    turn: int = 0
    #: The agent's tools sent with it (``a2a-net/tools``), if any.
    tools: list[str] | None = None

    @property
    def hop(self) -> int:
        """How many failovers of this dispatch came before this delegation (the last part of its id)."""
        return int(self.id.rsplit(".", 1)[1])

    @property
    def active(self) -> bool:
        """Its remote task may still be running."""
        return self.state in ACTIVE_DELEGATION_STATES

    # ---- the graph's state --------------------------------------------------------------

    def as_state(self) -> DelegationData:
        # Field by field, containers copied one level: ``dataclasses.asdict`` copied every value
        # recursively, which cost as much as the rest of recording a delegation. The record never
        # changes a container in place (it assigns new ones), so one level is enough.
        data = {name: getattr(self, name) for name in _FIELDS}
        for name in ("arguments", "artifacts", "tools"):
            value = data[name]
            if value is not None:
                data[name] = value.copy()
        return data

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Delegation:
        return cls(**data)

    # ---- progress events ----------------------------------------------------------------

    def started_event(self, run_id: str, description: str) -> ev.DelegationStarted:
        return ev.DelegationStarted(
            run_id=run_id,
            delegation_id=self.id,
            item_id=self.item_id,
            agent=self.agent,
            skill=self.skill,
            description=description,
            message_id=self.message_id,
            failover_from=self.failover_from,
            reattached=self.state != "starting" and self.task_id is not None,
        )

    def progress_event(self, run_id: str) -> ev.DelegationProgress:
        return ev.DelegationProgress(
            run_id=run_id,
            delegation_id=self.id,
            item_id=self.item_id,
            agent=self.agent,
            state=self.state,
            task_id=self.task_id,
            text=self.status_text,
            events=self.events,
            attempts=self.attempts,
        )

    def retrying_event(self, run_id: str, error: BaseException, delay: float) -> ev.DelegationRetrying:
        return ev.DelegationRetrying(
            run_id=run_id,
            delegation_id=self.id,
            item_id=self.item_id,
            agent=self.agent,
            attempt=self.attempts,
            error=str(error),
            delay=delay,
        )

    def question_event(self, run_id: str) -> ev.InputRequested:
        """The agent's question (its status text) for the user; ``Supervisor.answer`` takes the reply."""
        return ev.InputRequested(
            run_id=run_id,
            delegation_id=self.id,
            item_id=self.item_id,
            agent=self.agent,
            question=self.status_text or "(the agent asks for more input)",
        )

    def finished_event(self, run_id: str) -> ev.DelegationFinished:
        return ev.DelegationFinished(
            run_id=run_id,
            delegation_id=self.id,
            item_id=self.item_id,
            agent=self.agent,
            state=self.state,
            duration=self.duration,
            attempts=self.attempts,
            events=self.events,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            error=self.error,
        )


def delegations_in(state: Mapping[str, Any]) -> list[Delegation]:
    """The delegations a graph state holds, in the order they were recorded."""
    return [Delegation.from_state(data) for data in (state.get("delegations") or {}).values()]


#: The fields of a ``Delegation``, in order (what ``as_state`` writes).
_FIELDS = tuple(f.name for f in dataclasses.fields(Delegation))
