"""A trivial LangGraph graph for LangGraph Server's A2A endpoint: echoes the last message, no model.

Served by ``langgraph dev`` (``peers/langgraph_env.py``). LangGraph's A2A endpoint requires a
``messages`` field in the graph's input; the reply is an AI message with the user's text.
``ask`` interrupts the graph (``interrupt``: the endpoint's input-required); the answer, sent to
the same task and context, resumes it and the reply is ``answered: <answer>``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt


def echo(state: MessagesState) -> dict[str, Any]:
    last = state["messages"][-1]
    text = last.content if isinstance(last.content, str) else str(last.content)
    if text.strip() == "ask":
        answer = interrupt("which one?")
        return {"messages": [AIMessage(content=f"answered: {answer}")]}
    return {"messages": [AIMessage(content=f"echo: {text}")]}


builder = StateGraph(MessagesState)
builder.add_node("echo", echo)
builder.add_edge(START, "echo")
builder.add_edge("echo", END)
graph = builder.compile()
