"""What the nodes show the model (the agent catalog) and how they read its tool calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, ToolMessage
from pydantic import BaseModel, ValidationError

from ..conversation import conversation_text
from ..model import catalog_text
from ..runtime import RunContext
from ..state import SupervisorState

__all__ = ["catalog", "earlier_turns", "valid_calls"]

M = TypeVar("M", bound=BaseModel)


def valid_calls(response: AIMessage, tool: str, schema: type[M], replies: list[Any]) -> Iterator[tuple[str, M]]:
    """The calls of ``tool`` in ``response`` with valid arguments, as ``(call id, arguments)``.

    Every other call (another tool, invalid arguments) is answered in ``replies`` at once, so the
    model learns what was wrong; the caller answers the calls it is given.
    """
    for call in response.tool_calls:
        if call["name"] != tool:
            replies.append(ToolMessage(f"unknown tool {call['name']!r}; use {tool}", tool_call_id=call["id"]))
            continue
        try:
            arguments = schema.model_validate(call["args"])
        except ValidationError as exc:
            replies.append(ToolMessage(f"invalid {tool} arguments: {exc}", tool_call_id=call["id"]))
            continue
        yield str(call["id"]), arguments


def catalog(rt: RunContext, query: str) -> str:
    """The agents the model is shown: all, or the best-ranked ones when there are many."""
    available = rt.registry.available()
    size = rt.settings.catalog_size
    if len(available) > size:
        ranked = [m.agent for m in rt.registry.retrieve(query, k=None)]
        names = list(dict.fromkeys(ranked))[:size]
        available = [e for e in available if e.name in names] or available[:size]
    return catalog_text(available, limit=rt.settings.card_chars)


def earlier_turns(rt: RunContext, state: SupervisorState) -> str:
    """The earlier turns of this conversation for a prompt ("" on a thread's first run)."""
    text = conversation_text(
        state.get("history") or [],
        budget=rt.settings.history_tokens,
        count=rt.token_counter,
        limit=rt.settings.peer_text_chars,
    )
    return f"\n\nEarlier in this conversation (oldest first):\n{text}" if text else ""
