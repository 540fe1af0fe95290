"""How the CLI shows A2A objects to people (and, with --json, to scripts)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ..metadata import SKILL_ARGUMENTS_EXTENSION
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

__all__ = ["binding_name", "part_text", "print_json", "show", "show_event", "state_name"]


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
    # An empty text part shows nothing (a streamed artifact's closing chunk is one).
    return "\n".join(part_text(p) for p in parts if p.text != "")


def _artifact(artifact: Artifact, number: int, of: int) -> str:
    """A named artifact under its name; an unnamed one bare, or numbered when there are several
    (its id, which nobody reads, only with --json)."""
    title = artifact.name or (f"artifact {number}" if of > 1 else None)
    return (f"[{title}]\n" if title else "") + _parts(artifact.parts)


def binding_name(binding: str) -> str:
    """The name ``--binding`` takes: ``WEBSOCKET`` for ``https://a2a-net.dev/bindings/websocket/v1``
    (``STDIO`` for the stdio one); the standard names as they are."""
    if "://" not in binding:
        return binding
    parts = [p for p in binding.split("/") if p]
    return (parts[-2] if len(parts) >= 2 else binding).upper()


def state_name(state: Any) -> str:
    return str(state.value).removeprefix("TASK_STATE_").lower().replace("_", "-")


def show(obj: Any, out: TextIO = sys.stdout) -> None:
    if isinstance(obj, Message):
        out.write(_parts(obj.parts) + "\n")
    elif isinstance(obj, Task):
        out.write(f"task {obj.id}  {state_name(obj.status.state)}\n")
        if obj.status.message is not None:
            out.write(_parts(obj.status.message.parts) + "\n")
        artifacts = obj.artifacts or []
        for number, artifact in enumerate(artifacts, 1):
            out.write(_artifact(artifact, number, len(artifacts)) + "\n")
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
        out.write(f"  {binding_name(interface.protocol_binding):<10} {version:<8} {interface.url}\n")
    caps = card.capabilities
    out.write(f"  streaming: {bool(caps.streaming)}  push: {bool(caps.push_notifications)}\n")
    if card.security_schemes:
        out.write(f"  auth: {', '.join(card.security_schemes)}\n")
    schemas = _argument_schemas(card)
    for skill in card.skills:
        arguments = _arguments(schemas.get(skill.id))
        out.write(f"  skill {skill.id}{arguments}: {skill.description}\n")


def _argument_schemas(card: AgentCard) -> dict[str, Any]:
    """Each typed skill's arguments schema, from a2a-net's skill-arguments card extension."""
    for extension in card.capabilities.extensions or []:
        if extension.uri == SKILL_ARGUMENTS_EXTENSION and isinstance(extension.params, dict):
            skills = extension.params.get("skills")
            return skills if isinstance(skills, dict) else {}
    return {}


def _arguments(schema: Any) -> str:
    """``(city: string, days: integer = 3)`` for a skill's arguments schema ("" without one)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return ""
    required = set(schema.get("required") or ())
    shown = []
    for name, spec in schema["properties"].items():
        spec = spec if isinstance(spec, dict) else {}
        kind = _type_name(spec)
        default = f" = {encode(spec['default']).decode()}" if "default" in spec else ""
        shown.append(f"{name}: {kind}{default}" + ("" if name in required or default else "?"))
    return f"({', '.join(shown)})"


def _type_name(spec: dict[str, Any]) -> str:
    """A JSON Schema's type in a word or two: ``string``, ``array of integer``, ``Address``, ``string | null``."""
    if "$ref" in spec:
        return str(spec["$ref"]).rsplit("/", 1)[-1]
    if "enum" in spec:
        return " | ".join(encode(v).decode() for v in spec["enum"])
    for union in ("anyOf", "oneOf"):
        if isinstance(spec.get(union), list):
            return " | ".join(_type_name(s) for s in spec[union] if isinstance(s, dict))
    kind = spec.get("type", "any")
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type_name(spec['items'])}"
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


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
