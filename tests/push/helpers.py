"""Events and settings shared by the push tests."""

from __future__ import annotations

from a2a.protocol.codec import encode
from a2a.server.engine.events import LoggedEvent
from a2a.server.push import DeliveryPolicy
from a2a.ssrf import OutboundPolicy
from a2a.types import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

#: The receivers in these tests listen on loopback, which only an allow-list admits.
LOOPBACK = OutboundPolicy.from_allow_list(["127.0.0.0/8"])

#: Small numbers, so retries take milliseconds.
FAST = DeliveryPolicy(
    max_attempts=50,
    initial_backoff=0.001,
    max_backoff=0.01,
    attempt_timeout=2.0,
    lease_ttl=6.0,
    resume_interval=0.5,
)


def event(task_id: str, seq: int) -> LoggedEvent:
    """Event 1 is the task, later ones status updates whose text names their seq."""
    if seq == 1:
        response = StreamResponse(task=Task(id=task_id, context_id="ctx", status=TaskStatus(state=TaskState.SUBMITTED)))
    else:
        message = Message(message_id=f"m{seq}", role=Role.AGENT, parts=[Part(text=f"event {seq}")])
        update = TaskStatusUpdateEvent(
            task_id=task_id, context_id="ctx", status=TaskStatus(state=TaskState.WORKING, message=message)
        )
        response = StreamResponse(status_update=update)
    return LoggedEvent(seq, response, encode(response))


def config(url: str, config_id: str | None = None, **fields: object) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(url=url, id=config_id, **fields)  # type: ignore[arg-type]
