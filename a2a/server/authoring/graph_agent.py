"""An existing LangGraph graph served as an A2A agent: ``Agent.from_graph(graph, "Name")``.

Each message runs the compiled graph once, on the checkpointer thread named by the task's
``contextId`` (so a conversation continues across its tasks, as the graph's own memory):

- the graph's input is built from the message (``input=``; by default
  ``{"messages": [{"role": "user", "content": TEXT}]}``, what a message-state graph takes);
- each node's update is published as it streams, as a WORKING status naming the node;
- an ``interrupt(value)`` in a node makes the task INPUT_REQUIRED, with ``value`` as the
  question (text, or JSON data); the follow-up message (same task id) resumes the graph with
  ``Command(resume=...)`` (its data part if it has one, else its text);
- when the graph finishes, its final state becomes the task's artifact (``output=``; by
  default the last message's content for a message-state graph, else the state as JSON) and the
  task completes; an exception in the graph fails the task with its message;
- cancelling the task cancels the graph's run (its nodes see ``asyncio.CancelledError``).

A graph compiled without a checkpointer is given an in-memory one (conversations then last as
long as the process); compile it with a durable one (``SqliteSaver``, ``PostgresSaver``) to keep
them across restarts. One task at a time per conversation: two tasks running at once in one
context would share one thread of the graph.

LangGraph is imported only when a graph is served (``pip install 'a2a-net[supervisor]'``
brings it); this module never imports the supervisor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .agent import Agent
from .context import RequestContext

if TYPE_CHECKING:
    from langgraph.pregel import Pregel

__all__ = ["GraphInput", "GraphOutput", "graph_agent", "message_input", "message_output"]

#: Builds the graph's input from the message that starts a run (a new task, or a follow-up that
#: does not answer an interrupt).
GraphInput = Callable[[RequestContext], Any]
#: Makes the task's artifact from the graph's final state (``None``: no artifact).
GraphOutput = Callable[[Any], Any]

_MISSING = "serving a LangGraph graph needs langgraph: pip install 'a2a-net[supervisor]' brings it"


def message_input(ctx: RequestContext) -> dict[str, Any]:
    """The default input: the message's text as a user message, for a message-state graph."""
    return {"messages": [{"role": "user", "content": ctx.text}]}


def message_output(state: Any) -> Any:
    """The default output: the last message's content in a message-state graph, else the state."""
    if isinstance(state, Mapping):
        messages = state.get("messages")
        if isinstance(messages, list) and messages:
            last = messages[-1]
            content = last.get("content") if isinstance(last, Mapping) else getattr(last, "content", None)
            if content is not None:
                return content
        return dict(state)
    return state


def graph_agent(
    graph: Pregel[Any, Any, Any, Any],
    name: str,
    description: str = "",
    *,
    input: GraphInput = message_input,  # noqa: A002 - the graph's own word for it
    output: GraphOutput = message_output,
    **agent_options: Any,
) -> Agent:
    """An ``Agent`` that runs ``graph`` (a compiled LangGraph graph) for each message.

    ``agent_options`` are ``Agent``'s (``version``, ``provider``, ...). See the module's
    docstring for what is published when.
    """
    try:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.pregel import Pregel
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    if not isinstance(graph, Pregel):
        hint = " (a StateGraph: serve graph.compile())" if callable(getattr(graph, "compile", None)) else ""
        raise TypeError(f"Agent.from_graph takes a compiled LangGraph graph, not {type(graph).__name__}{hint}")
    if graph.checkpointer is None:
        graph = graph.copy(update={"checkpointer": InMemorySaver()})
    runner = _GraphRunner(graph, input, output)
    # Questions, answers and results may be JSON as well as text.
    agent_options.setdefault("default_input_modes", ["text/plain", "application/json"])
    agent_options.setdefault("default_output_modes", ["text/plain", "application/json"])
    return Agent(name, description or f"The LangGraph graph {graph.name!r}", handler=runner.run, **agent_options)


class _GraphRunner:
    """Runs the graph for one message at a time and publishes what it does."""

    def __init__(self, graph: Pregel[Any, Any, Any, Any], make_input: GraphInput, make_output: GraphOutput) -> None:
        self.graph = graph
        self.make_input = make_input
        self.make_output = make_output

    async def run(self, ctx: RequestContext) -> None:
        config: Any = {"configurable": {"thread_id": ctx.context_id}}
        graph_input = await self._input(ctx, config)
        async for update in self.graph.astream(graph_input, config, stream_mode="updates"):
            if not isinstance(update, Mapping):
                continue
            asked = update.get("__interrupt__")
            if asked:
                await ctx.require_input(_question(asked[0].value))
                return  # the graph waits on its checkpointer thread for the answer
            for node in update:
                await ctx.working(str(node))
        state = await self.graph.aget_state(config)
        result = self.make_output(state.values)
        if result is not None:
            await ctx.artifact(result, name="result")
        await ctx.complete()

    async def _input(self, ctx: RequestContext, config: Any) -> Any:
        """The message as the graph's input: the answer to a pending interrupt, or a new run."""
        if ctx.task is not None:
            from langgraph.types import Command

            pending = await self.graph.aget_state(config)
            if any(task.interrupts for task in pending.tasks):
                return Command(resume=ctx.data if ctx.data is not None else ctx.text)
        return self.make_input(ctx)


def _question(value: Any) -> Any:
    """An interrupt's value as the task's question: text as it is, anything else as JSON data."""
    return "input required" if value is None else value
