"""How the CLI shows A2A objects to people (and, with --json, to scripts)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ..protocol.codec import encode
from ..types import (
    UNSET,
    AgentCard,
    Artifact,
    ListTasksResponse,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)

__all__ = ["part_text", "print_json", "show", "show_event", "state_name"]


def print_json(obj: Any, out: TextIO = sys.stdout) -> None:
    out.write(encode(obj).decode() + "\n")
    out.flush()


def part_text(part: Part) -> str:
    if part.text is not UNSET:
        return str(part.text)
    if part.data is not UNSET:
        return encode(part.data).decode()
    if part.url is not UNSET:
        return f"<file {part.filename or ''} {part.url}>".replace("  ", " ")
    size = len(part.raw) if isinstance(part.raw, bytes) else 0
    return f"<{part.media_type or 'bytes'} {part.filename or ''} {size} bytes>".replace("  ", " ")


def _parts(parts: list[Part]) -> str:
    return "\n".join(part_text(p) for p in parts)


def _artifact(artifact: Artifact) -> str:
    title = artifact.name or artifact.artifact_id
    return f"[{title}]\n{_parts(artifact.parts)}"


def state_name(state: Any) -> str:
    return str(state.value).removeprefix("TASK_STATE_").lower().replace("_", "-")


def show(obj: Any, out: TextIO = sys.stdout) -> None:
    if isinstance(obj, Message):
        out.write(_parts(obj.parts) + "\n")
    elif isinstance(obj, Task):
        out.write(f"task {obj.id}  {state_name(obj.status.state)}\n")
        if obj.status.message is not None:
            out.write(_parts(obj.status.message.parts) + "\n")
        for artifact in obj.artifacts or []:
            out.write(_artifact(artifact) + "\n")
    elif isinstance(obj, ListTasksResponse):
        for task in obj.tasks:
            stamp = task.status.timestamp or ""
            out.write(f"{task.id}  {state_name(task.status.state):<15} {stamp}\n")
        out.write(f"({len(obj.tasks)} of {obj.total_size})")
        out.write(f"  next page: --page-token {obj.next_page_token}\n" if obj.next_page_token else "\n")
    elif isinstance(obj, AgentCard):
        _card(obj, out)
    else:
        print_json(obj, out)
    out.flush()


def _card(card: AgentCard, out: TextIO) -> None:
    out.write(f"{card.name} {card.version}\n{card.description}\n")
    for interface in card.supported_interfaces:
        # The version too: one agent may serve 1.0 and 0.3, and our client speaks both.
        version = f"A2A {interface.protocol_version or '1.0'}"
        out.write(f"  {interface.protocol_binding:<10} {version:<8} {interface.url}\n")
    caps = card.capabilities
    out.write(f"  streaming: {bool(caps.streaming)}  push: {bool(caps.push_notifications)}\n")
    if card.security_schemes:
        out.write(f"  auth: {', '.join(card.security_schemes)}\n")
    for skill in card.skills:
        out.write(f"  skill {skill.id}: {skill.description}\n")


def show_event(event: StreamResponse, out: TextIO = sys.stdout) -> None:
    """One line (or a few) per streamed event, written as it arrives."""
    payload = event.payload
    if isinstance(payload, Message):
        out.write(_parts(payload.parts) + "\n")
    elif isinstance(payload, Task):
        out.write(f"task {payload.id}  {state_name(payload.status.state)}\n")
    elif isinstance(payload, TaskStatusUpdateEvent):
        note = _parts(payload.status.message.parts) if payload.status.message else ""
        out.write(f"  {state_name(payload.status.state)}" + (f": {note}" if note else "") + "\n")
    elif isinstance(payload, TaskArtifactUpdateEvent):
        out.write(_parts(payload.artifact.parts) + "\n")
    out.flush()
