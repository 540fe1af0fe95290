"""What the graph's nodes need besides the state: the run's context (LangGraph ``context=``).

None of it is checkpointed: the registry (clients, processes), the pool of delegations in
flight, the model, the event sink and the cancel switch belong to one process. A resumed run
gets a new ``RunContext`` and finds everything else in the checkpoint.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.config import get_config
from langgraph.runtime import Runtime

from . import events as ev
from .compaction import bound_prompt, prompt_tokens
from .config import SupervisorConfig
from .delegation import Delegator
from .model import ModelHandle, model_failure, tool_specs, usage_of
from .registry import Registry
from .state import SupervisorState, Usage, new_usage
from .strategy import Strategy, strategy_named
from .tokens import TokenCounter, estimate_tokens

__all__ = [
    "CAPS",
    "RunCanceled",
    "RunContext",
    "budget_exhausted",
    "context_of",
    "stop_reason",
    "steps_used",
    "totals",
]

#: Budgets that stop new work but let the work in flight finish (within ``budget.wall_time``).
CAPS = frozenset({"budget:max_steps", "budget:tokens", "budget:cost_usd"})

T = TypeVar("T")


class RunCanceled(Exception):
    """The run was cancelled while a node was waiting (for the model, or for delegations)."""


@dataclass
class RunContext:
    run_id: str
    config: SupervisorConfig
    registry: Registry
    delegator: Delegator
    model: ModelHandle | None
    emit: Callable[[ev.Event], None]
    depth: int = 0
    interactive: bool = False
    token_counter: TokenCounter = estimate_tokens
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    #: Monotonic start of this process's part of the run (the wall-time budget counts from here).
    started: float = field(default_factory=time.monotonic)
    #: Budgets already reported as exhausted (each is reported once).
    exhausted: set[str] = field(default_factory=set)
    #: ``supervisor.hooks`` objects (the model-call hooks are run here; the delegator runs the others).
    hooks: list[Any] = field(default_factory=list)
    #: Ask for approvals with a LangGraph ``interrupt`` (a run a host drives: it resumes the thread
    #: with the answer), rather than through an ``ApprovalHook``.
    approve_by_interrupt: bool = False

    @property
    def settings(self) -> Any:
        return self.config.supervisor

    @property
    def mode(self) -> str:
        return str(self.config.supervisor.mode)

    @property
    def strategy(self) -> Strategy:
        return strategy_named(self.config.supervisor.strategy)

    @property
    def use_model_reflection(self) -> bool:
        reflection = self.config.supervisor.reflection
        return self.model is not None and reflection in ("auto", "model")

    def wall_time_left(self) -> float | None:
        limit = self.config.supervisor.budget.wall_time
        return None if limit is None else max(0.0, limit - (time.monotonic() - self.started))

    async def interruptible(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` unless the run is cancelled first (then ``RunCanceled``)."""
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self.cancel.wait())
        try:
            await asyncio.wait({work, stop}, timeout=self.wall_time_left(), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if work.done():
            return work.result()
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        raise RunCanceled("canceled" if self.cancel.is_set() else "budget:wall_time")

    async def call_model(
        self, purpose: str, messages: Sequence[BaseMessage], tools: Sequence[str] = (), usage: Usage | None = None
    ) -> tuple[AIMessage, Usage]:
        """One model call, counted (tokens, cost, a step) and reported as a ``model_called`` event."""
        assert self.model is not None
        specs = tool_specs(*tools, agents=self.registry.available()) if tools else []
        runnable: Any = self.model.model.bind_tools(specs) if specs else self.model.model
        began = time.monotonic()
        messages = list(messages)
        for hook in self.hooks:
            if (before := getattr(hook, "before_model", None)) is not None:
                messages = list(await before(purpose, messages))
        budget = self.config.supervisor.messages_tokens
        size = prompt_tokens(messages, self.token_counter)
        cut = size > budget
        if cut:
            messages = bound_prompt(messages, budget=budget, count=self.token_counter)
            size = prompt_tokens(messages, self.token_counter)
        try:
            response = await self.interruptible(runnable.ainvoke(messages))
        except Exception as exc:
            failure = model_failure(self.model, exc)
            if failure is None:
                raise
            raise failure from None  # one line naming the endpoint; the client's traceback says no more
        if not isinstance(response, AIMessage):
            response = AIMessage(content=str(getattr(response, "content", response)))
        for hook in self.hooks:
            if (after := getattr(hook, "after_model", None)) is not None:
                response = await after(purpose, response)
        input_tokens, output_tokens = usage_of(response)
        cost = self.model.cost(input_tokens, output_tokens)
        total = Usage(**(usage or new_usage()))
        total["model_calls"] += 1
        total["model_input_tokens"] += input_tokens
        total["model_output_tokens"] += output_tokens
        total["model_cost_usd"] += cost
        total["prompt_budget"] = budget
        total["prompt_tokens_max"] = max(total.get("prompt_tokens_max", 0), size)
        total["prompts_cut"] = total.get("prompts_cut", 0) + cut
        self.emit(
            ev.ModelCalled(
                run_id=self.run_id,
                purpose=purpose,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost,
                duration=time.monotonic() - began,
            )
        )
        return response, total


def context_of(runtime: Runtime[Any]) -> RunContext:
    """The run's context: the live one ``Supervisor`` passes, or one built from the serialisable
    settings a host gives (LangGraph Server, Studio, a parent graph: ``supervisor.hosted``)."""
    if isinstance(runtime.context, RunContext):
        return runtime.context
    from .hosted import hosted_context, settings_from

    config = get_config()
    configurable = dict(config.get("configurable") or {})
    # One context per run: a host's run id when it gives one, else the thread.
    thread = str(configurable.get("thread_id") or "default")
    key = str(configurable.get("run_id") or config.get("run_id") or thread)
    return hosted_context(settings_from(runtime.context, configurable), key, thread)


def totals(state: SupervisorState) -> dict[str, float]:
    """Tokens, cost and steps used so far: the model's plus what the agents reported."""
    usage = state.get("usage") or new_usage()
    # The raw records, not Delegation objects: this runs at every step, over every delegation.
    records = list((state.get("delegations") or {}).values())
    agent_in = sum(r.get("input_tokens") or 0 for r in records)
    agent_out = sum(r.get("output_tokens") or 0 for r in records)
    return {
        "tokens": usage["model_input_tokens"] + usage["model_output_tokens"] + agent_in + agent_out,
        "cost_usd": usage["model_cost_usd"] + sum(r.get("cost_usd") or 0.0 for r in records),
        "steps": usage["model_calls"] + len(records),
    }


def steps_used(state: SupervisorState) -> int:
    """Model calls plus delegations so far (what ``max_steps`` counts), without reading any record."""
    return (state.get("usage") or new_usage())["model_calls"] + len(state.get("delegations") or {})


def stop_reason(stop: str, config: SupervisorConfig) -> str:
    """Why a run stopped, in words naming the setting (``budget:max_steps`` -> the step cap ...)."""
    settings = config.supervisor
    names = {
        "budget:max_steps": f"the step cap was reached (supervisor.max_steps: {settings.max_steps})",
        "budget:tokens": f"the token budget ran out (supervisor.budget.tokens: {settings.budget.tokens})",
        "budget:cost_usd": f"the cost budget ran out (supervisor.budget.cost_usd: {settings.budget.cost_usd})",
        "budget:wall_time": "the wall-time limit was reached "
        f"(supervisor.budget.wall_time: {settings.budget.wall_time}s)",
        "canceled": "the run was canceled",
    }
    return names.get(stop, stop)


def budget_exhausted(state: SupervisorState, rt: RunContext, *, extra_steps: int = 0) -> str | None:
    """``budget:<name>`` for the first budget that has run out (and a ``budget_exhausted`` event)."""
    settings = rt.config.supervisor
    # Summing every delegation's usage at every step costs O(items): only when a budget needs it.
    needs_sums = settings.budget.tokens is not None or settings.budget.cost_usd is not None
    used = totals(state) if needs_sums else {"tokens": 0.0, "cost_usd": 0.0, "steps": steps_used(state)}
    checks: list[tuple[str, float, float | None]] = [  # the wall time first: it cancels, the others stop new work
        ("wall_time", time.monotonic() - rt.started, settings.budget.wall_time),
        ("tokens", used["tokens"], settings.budget.tokens),
        ("cost_usd", used["cost_usd"], settings.budget.cost_usd),
        ("max_steps", used["steps"] + extra_steps, settings.max_steps),
    ]
    for name, value, limit in checks:
        if limit is not None and value >= limit:
            if name not in rt.exhausted:
                rt.exhausted.add(name)
                rt.emit(ev.BudgetExhausted(run_id=rt.run_id, budget=name, used=value, limit=limit))
            return f"budget:{name}"
    return None
