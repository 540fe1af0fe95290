"""The supervisor's LangGraph ``StateGraph``: this module only wires the nodes of ``supervisor/nodes/``.

::

    START -> discover -> plan ------> delegate <-> reflect -> synthesize -> END     (plan_upfront)
                      \\-> converse -> act -> delegate -> reflect -> converse ...    (conversational)

One module per node, each describing its job: ``discover`` (resolve the agents), ``plan`` (the
TODO list), ``delegate`` (the sliding pool of delegations), ``reflect`` (judge each result),
``converse`` and ``act`` (the model's turn and its tool calls), ``synthesize`` (the answer).
"""

from __future__ import annotations

import functools
from typing import Any, Required, TypedDict

from langgraph.graph import END, START, StateGraph

from .hosted import GraphSettings
from .nodes.act import act, after_act
from .nodes.converse import after_converse, converse
from .nodes.delegate import after_delegate, delegate
from .nodes.discover import after_discover, discover
from .nodes.plan import after_plan, plan
from .nodes.reflect import after_reflect, reflect
from .nodes.synthesize import synthesize
from .state import SupervisorState

__all__ = ["SupervisorInput", "build_graph", "compiled", "graph"]


class SupervisorInput(TypedDict, total=False):
    """What a run starts from (LangGraph Studio shows this as the input form)."""

    objective: Required[str]
    #: The hop count of the request that started the run (0: a person).
    depth: int
    run_id: str
    #: The run of the supervisor that delegated this one, when nested.
    parent_run_id: str
    started_at: float


def build_graph() -> StateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(
        # The context a host may give is serialisable settings (``supervisor.hosted``); the
        # ``Supervisor`` class passes its live ``RunContext`` instead, which LangGraph hands through.
        SupervisorState,
        context_schema=GraphSettings,
        input_schema=SupervisorInput,
    )
    graph.add_node("discover", discover)
    graph.add_node("plan", plan)
    graph.add_node("converse", converse)
    graph.add_node("act", act)
    graph.add_node("delegate", delegate)
    graph.add_node("reflect", reflect)
    graph.add_node("synthesize", synthesize)
    graph.add_edge(START, "discover")
    graph.add_conditional_edges("discover", after_discover, ["plan", "converse", "synthesize"])
    graph.add_conditional_edges("plan", after_plan, ["delegate", "synthesize"])
    graph.add_conditional_edges("converse", after_converse, ["act", "synthesize"])
    graph.add_conditional_edges("act", after_act, ["delegate", "converse", "synthesize"])
    graph.add_conditional_edges("delegate", after_delegate, ["delegate", "reflect", "synthesize"])
    graph.add_conditional_edges("reflect", after_reflect, ["delegate", "plan", "converse", "synthesize"])
    graph.add_edge("synthesize", END)
    return graph


def graph() -> Any:
    """The compiled graph, for hosts and parent graphs: ``builder.add_node("supervise", graph())``.

    It takes ``{"objective": ...}`` and runs with the agents of its settings (``supervisor.hosted``);
    the parent's checkpointer, if any, checkpoints it too.
    """
    return build_graph().compile()


@functools.cache
def _compiled_once() -> Any:
    return build_graph().compile()


def compiled(checkpointer: Any) -> Any:
    """The graph compiled with ``checkpointer``: compiled once per process (compiling reads every
    node's signature and type hints: tens of milliseconds, as much as a short run), then copied."""
    return _compiled_once().copy({"checkpointer": checkpointer})
