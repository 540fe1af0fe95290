"""Requests and responses of the A2A operations, and push notification configs."""

from __future__ import annotations

from typing import Any

from ._base import Wire
from ._core import Message, Task, TaskState

__all__ = [
    "AuthenticationInfo",
    "CancelTaskRequest",
    "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksRequest",
    "ListTasksResponse",
    "SendMessageConfiguration",
    "SendMessageRequest",
    "SubscribeToTaskRequest",
    "TaskPushNotificationConfig",
]


class AuthenticationInfo(Wire):
    scheme: str
    credentials: str | None = None


class TaskPushNotificationConfig(Wire):
    url: str
    id: str | None = None
    task_id: str | None = None
    token: str | None = None
    authentication: AuthenticationInfo | None = None
    tenant: str | None = None


class SendMessageConfiguration(Wire):
    accepted_output_modes: list[str] | None = None
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: int | None = None
    return_immediately: bool = False


class SendMessageRequest(Wire):
    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


class GetTaskRequest(Wire):
    id: str
    history_length: int | None = None
    tenant: str | None = None


class ListTasksRequest(Wire):
    context_id: str | None = None
    status: TaskState | None = None
    page_size: int | None = None
    page_token: str | None = None
    history_length: int | None = None
    status_timestamp_after: str | None = None
    include_artifacts: bool | None = None
    tenant: str | None = None


class ListTasksResponse(Wire, omit_defaults=False):
    tasks: list[Task]
    next_page_token: str
    page_size: int
    total_size: int


class CancelTaskRequest(Wire):
    id: str
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


class SubscribeToTaskRequest(Wire):
    id: str
    tenant: str | None = None


class GetTaskPushNotificationConfigRequest(Wire):
    task_id: str
    id: str
    tenant: str | None = None


class DeleteTaskPushNotificationConfigRequest(Wire):
    task_id: str
    id: str
    tenant: str | None = None


class ListTaskPushNotificationConfigsRequest(Wire):
    task_id: str
    page_size: int | None = None
    page_token: str | None = None
    tenant: str | None = None


class ListTaskPushNotificationConfigsResponse(Wire, omit_defaults=False):
    configs: list[TaskPushNotificationConfig]
    next_page_token: str = ""


class GetExtendedAgentCardRequest(Wire):
    tenant: str | None = None
