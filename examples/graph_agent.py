"""An existing LangGraph graph served as an A2A agent, with ``Agent.from_graph``.

The graph below knows nothing of A2A: a message-state graph whose first node asks for the
user's name with LangGraph's ``interrupt()`` and whose second node greets. Served as an agent,
the message's text becomes the graph's input, each node shows as a WORKING status, the
``interrupt()`` makes the task INPUT_REQUIRED, the answer (a follow-up with the task's id)
resumes the graph, and the last message becomes the task's artifact. The graph's checkpointer
thread is the task's contextId: a later task in the same conversation finds the name already
known and is not asked again.

Serve it with ``a2a serve examples/graph_agent.py:agent``; then
``a2a send http://127.0.0.1:8000 "hello"`` asks for a name, ``a2a send http://127.0.0.1:8000
"Ada" --task-id ID`` answers. Needs langgraph (``pip install 'a2a-net[supervisor]'``).
"""

# No ``from __future__ import annotations``: LangGraph reads the State's annotations at run time.
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

from a2a import Agent


class State(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    name: str


def ask_name(state: State) -> dict[str, Any]:
    if state.get("name"):
        return {}  # known from earlier in this conversation
    return {"name": str(interrupt("What is your name?")).strip()}


def greet(state: State) -> dict[str, Any]:
    said = state["messages"][-1].content
    return {"messages": [{"role": "assistant", "content": f"Hello, {state['name']}! You said: {said}"}]}


builder = StateGraph(State)
builder.add_node("ask_name", ask_name)
builder.add_node("greet", greet)
builder.add_edge(START, "ask_name")
builder.add_edge("ask_name", "greet")
builder.add_edge("greet", END)
graph = builder.compile(checkpointer=InMemorySaver(), name="greeter")

agent = Agent.from_graph(graph, "GraphGreeter", "A LangGraph graph that asks your name, then greets you")
