"""The graph's state: plain JSON-like values, so that every checkpointer can store it.

``items`` (the TODO list), ``delegations`` (the delegation log) and ``variables`` are maps
merged key by key, so a node returns only what it changed. ``messages`` is the supervisor's
own conversation with its model; the agents' conversations live in their remote tasks and are
never mixed into it.

The maps (and ``history``) are LangGraph ``DeltaChannel`` s: a checkpoint stores what a step
changed (its writes), not the whole map again, and the map is rebuilt by replaying the writes
since the last snapshot (one every ``SNAPSHOT_EVERY`` updates). So a step's checkpoint costs what
it changed, not what the run holds: with the whole map saved at every step, a run of n items
costs O(n) per step and O(n²) in all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.graph.message import add_messages

from .delegation_record import DelegationData

__all__ = [
    "FINAL_ITEM_STATES",
    "RESET",
    "Turn",
    "append",
    "Item",
    "ItemStatus",
    "SupervisorState",
    "Usage",
    "merge",
    "merge_nested",
    "new_item",
    "new_usage",
]

#: pending: not started (waiting for its dependencies or a free slot); running: delegated;
#: review: finished, waiting for reflection; done / failed: final; skipped: a dependency failed;
#: canceled: the run was cancelled while it ran.
ItemStatus = Literal["pending", "running", "review", "done", "failed", "skipped", "canceled"]
FINAL_ITEM_STATES = frozenset({"done", "failed", "skipped", "canceled"})


class Item(TypedDict):
    id: str
    #: Short, for people (the progress tree); the instruction is what the agent is sent.
    description: str
    instruction: str
    agent: str | None
    skill: str | None
    #: Structured input for the skill (sent as ``{"tool": skill, "arguments": ...}``), if any.
    arguments: dict[str, Any] | None
    depends_on: list[str]
    status: str
    result: str | None
    data: Any
    error: str | None
    #: How many times it was dispatched (a corrected retry dispatches it again).
    dispatches: int
    corrected: bool
    #: Ids of its delegations, in order (failovers included).
    delegations: list[str]
    #: Why reflection decided what it did.
    note: str
    #: The model's tool call this item answers (conversational mode).
    tool_call_id: str | None
    #: Arguments filled from the results of other items when it starts: argument name -> item ids
    #: (the offline planner's "save the result to out.txt" after a step that computed it).
    inputs: NotRequired[dict[str, list[str]]]
    #: The answer to the approval asked by a LangGraph interrupt (agents with ``approval: true``).
    approved: NotRequired[bool]
    #: The agent's tools for this delegation (``a2a-net/tools``), when the plan or the model chose them.
    tools: NotRequired[list[str]]
    #: Files of the run to send with it, by name (the model's ``delegate`` ``files``; ``supervisor.workspace``).
    files: NotRequired[list[str]]


class Usage(TypedDict):
    steps: int
    #: ``messages_tokens`` as the run's model calls had it (``supervisor.compaction``).
    prompt_budget: NotRequired[int]
    #: The largest prompt sent to the model, in tokens.
    prompt_tokens_max: NotRequired[int]
    #: Model calls whose prompt had to be cut to ``messages_tokens``.
    prompts_cut: NotRequired[int]
    #: Summaries of the oldest turns written (by the model or deterministically).
    summaries: NotRequired[int]
    model_calls: int
    model_input_tokens: int
    model_output_tokens: int
    model_cost_usd: float
    agent_input_tokens: int
    agent_output_tokens: int
    agent_cost_usd: float


def new_usage() -> Usage:
    return Usage(
        steps=0,
        model_calls=0,
        model_input_tokens=0,
        model_output_tokens=0,
        model_cost_usd=0.0,
        agent_input_tokens=0,
        agent_output_tokens=0,
        agent_cost_usd=0.0,
        prompt_budget=0,
        prompt_tokens_max=0,
        prompts_cut=0,
        summaries=0,
    )


#: A key that, in a map a node returns, empties the map first (a new turn of a conversation).
RESET = "__reset__"


def merge(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    """Key by key: a node returns only the entries it changed (``{RESET: True}`` starts afresh)."""
    if new and new.get(RESET):
        return {k: v for k, v in new.items() if k != RESET}
    return {**(old or {}), **(new or {})}


def merge_nested(old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any]:
    if new and new.get(RESET):
        old, new = {}, {k: v for k, v in new.items() if k != RESET}
    merged = dict(old or {})
    for key, value in (new or {}).items():
        merged[key] = {**merged.get(key, {}), **value} if isinstance(value, dict) else value
    return merged


def append(old: list[Any] | None, new: list[Any] | None) -> list[Any]:
    return [*(old or []), *(new or [])]


#: A map channel writes a full snapshot every this many updates (replay after a restart is bounded by it).
SNAPSHOT_EVERY = 200


def _batched(pairwise: Callable[[Any, Any], Any]) -> Callable[[Any, Sequence[Any]], Any]:
    """A ``DeltaChannel`` reducer (state, [writes]) from a pairwise one, applied in order (so two
    batches one after the other give what their concatenation gives)."""

    def reduce(state: Any, writes: Sequence[Any]) -> Any:
        for write in writes:
            state = pairwise(state, write)
        return state

    reduce.__name__ = f"batched_{pairwise.__name__}"
    return reduce


_merge_all = _batched(merge)
_merge_nested_all = _batched(merge_nested)
_append_all = _batched(append)


def _deltas(reducer: Callable[[Any, Sequence[Any]], Any]) -> DeltaChannel[Any]:
    return DeltaChannel(reducer, snapshot_frequency=SNAPSHOT_EVERY)


class Turn(TypedDict):
    """One finished run of a conversation (a thread), as later runs of it see it."""

    run_id: str
    objective: str
    status: str
    final: str
    #: Each item: id, description, agent, status, and its output (what a later step may use).
    items: list[dict[str, Any]]


class SupervisorState(TypedDict, total=False):
    run_id: str
    objective: str
    #: Hop count of the request that started this run (0 when a person started it).
    depth: int
    #: The run of the supervisor that delegated this one (``a2a-net/runId``), when nested.
    parent_run_id: str
    started_at: float
    #: The agents as discovery found them (name, status, transport, skills, error).
    agents: list[dict[str, Any]]
    items: Annotated[dict[str, Item], _deltas(_merge_all)]
    #: Each ``Delegation.as_state()``, by delegation id.
    delegations: Annotated[dict[str, DelegationData], _deltas(_merge_all)]
    #: Results keyed by agent, then by item id (data when the agent returned JSON, else text).
    variables: Annotated[dict[str, dict[str, Any]], _deltas(_merge_nested_all)]
    messages: Annotated[list[AnyMessage], add_messages]
    usage: Usage
    replans: int
    #: Set by reflect when a verdict asked for a re-plan (read by the edge after it).
    replan: bool
    #: Why the loop stopped early: ``canceled``, ``budget:<name>``, ``required_agent_down`` ...
    stop: str | None
    final: str | None
    status: str | None
    error: str | None
    #: The earlier runs of this thread (a conversation), oldest first; kept in full here, digested
    #: in prompts (``supervisor.conversation``).
    history: Annotated[list[Turn], _deltas(_append_all)]
    #: The summary of the oldest turns of the model's conversation in this run (``converse``):
    #: ``{"covered": n, "text": ...}``, the first ``n`` messages being the objective and the turns folded.
    summary: dict[str, Any] | None
    #: The A2A ``contextId`` of each agent in this thread, so that an agent sees one conversation too.
    contexts: Annotated[dict[str, str], _deltas(_merge_all)]


def new_item(
    item_id: str,
    description: str,
    *,
    instruction: str | None = None,
    agent: str | None = None,
    skill: str | None = None,
    arguments: dict[str, Any] | None = None,
    depends_on: list[str] | None = None,
    tool_call_id: str | None = None,
    inputs: dict[str, list[str]] | None = None,
    tools: list[str] | None = None,
    files: list[str] | None = None,
) -> Item:
    item = Item(
        id=item_id,
        description=description,
        instruction=instruction or description,
        agent=agent,
        skill=skill,
        arguments=arguments,
        depends_on=list(depends_on or []),
        status="pending",
        result=None,
        data=None,
        error=None,
        dispatches=0,
        corrected=False,
        delegations=[],
        note="",
        tool_call_id=tool_call_id,
    )
    if inputs:
        item["inputs"] = {name: list(ids) for name, ids in inputs.items()}
    if tools is not None:
        item["tools"] = list(tools)
    if files is not None:
        item["files"] = list(files)
    return item
