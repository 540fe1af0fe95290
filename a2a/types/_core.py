"""Tasks, messages, parts, artifacts and the stream events (A2A 1.0 data model)."""

from __future__ import annotations

import enum
from typing import Any

from ._base import UNSET, UnsetType, Wire, check_oneof

__all__ = [
    "INTERRUPTED_STATES",
    "TERMINAL_STATES",
    "Artifact",
    "Message",
    "Part",
    "Role",
    "SendMessageResponse",
    "StreamResponse",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
]

Metadata = dict[str, Any]


class Role(enum.StrEnum):
    UNSPECIFIED = "ROLE_UNSPECIFIED"
    USER = "ROLE_USER"
    AGENT = "ROLE_AGENT"


class TaskState(enum.StrEnum):
    UNSPECIFIED = "TASK_STATE_UNSPECIFIED"
    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    COMPLETED = "TASK_STATE_COMPLETED"
    FAILED = "TASK_STATE_FAILED"
    CANCELED = "TASK_STATE_CANCELED"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    REJECTED = "TASK_STATE_REJECTED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATES

    @property
    def is_interrupted(self) -> bool:
        return self in INTERRUPTED_STATES


TERMINAL_STATES = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})
INTERRUPTED_STATES = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})


class Part(Wire):
    """One piece of content: exactly one of ``text``, ``raw``, ``url`` or ``data``."""

    text: str | UnsetType = UNSET
    raw: bytes | UnsetType = UNSET
    url: str | UnsetType = UNSET
    # google.protobuf.Value: any JSON value, null included, so "absent" needs UNSET.
    data: Any = UNSET
    metadata: Metadata | None = None
    filename: str | None = None
    media_type: str | None = None

    def __post_init__(self) -> None:
        # Most parts are text: settled with four identity tests (every part passes through here).
        if self.text is not UNSET and self.raw is UNSET and self.url is UNSET and self.data is UNSET:
            return
        check_oneof(self, "Part", ("text", "raw", "url", "data"))


class Message(Wire):
    message_id: str
    role: Role
    parts: list[Part]
    context_id: str | None = None
    task_id: str | None = None
    metadata: Metadata | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None

    @property
    def text(self) -> str:
        """The text parts joined by newlines (empty when there are none)."""
        if len(self.parts) == 1:  # the usual message, without a generator and a join
            text = self.parts[0].text
            return text if isinstance(text, str) else ""
        return "\n".join(p.text for p in self.parts if isinstance(p.text, str))


class TaskStatus(Wire):
    state: TaskState
    message: Message | None = None
    timestamp: str | None = None


class Artifact(Wire):
    artifact_id: str
    parts: list[Part]
    name: str | None = None
    description: str | None = None
    metadata: Metadata | None = None
    extensions: list[str] | None = None


class Task(Wire):
    id: str
    status: TaskStatus
    context_id: str | None = None
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    metadata: Metadata | None = None


class TaskStatusUpdateEvent(Wire):
    task_id: str
    context_id: str
    status: TaskStatus
    metadata: Metadata | None = None


class TaskArtifactUpdateEvent(Wire):
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: Metadata | None = None


class SendMessageResponse(Wire):
    """The answer to SendMessage: exactly one of ``task`` or ``message``."""

    task: Task | UnsetType = UNSET
    message: Message | UnsetType = UNSET

    def __post_init__(self) -> None:
        if (self.task is UNSET) is not (self.message is UNSET):  # exactly one: the usual case
            return
        check_oneof(self, "SendMessageResponse", ("task", "message"))


class StreamResponse(Wire):
    """One item of a stream: exactly one of the four payloads."""

    task: Task | UnsetType = UNSET
    message: Message | UnsetType = UNSET
    status_update: TaskStatusUpdateEvent | UnsetType = UNSET
    artifact_update: TaskArtifactUpdateEvent | UnsetType = UNSET

    def __post_init__(self) -> None:
        unset = (self.task is UNSET) + (self.message is UNSET) + (self.status_update is UNSET)
        if unset + (self.artifact_update is UNSET) == 3:  # exactly one set: every valid event
            return
        check_oneof(self, "StreamResponse", ("task", "message", "status_update", "artifact_update"))

    @property
    def payload(self) -> Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent:
        for value in (self.task, self.message, self.status_update, self.artifact_update):
            if not isinstance(value, UnsetType):
                return value
        raise AssertionError("StreamResponse without payload")  # __post_init__ forbids this
