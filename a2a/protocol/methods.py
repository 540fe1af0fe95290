"""The operation table: every A2A method, its request type and whether it streams."""

from __future__ import annotations

from dataclasses import dataclass

from .. import types as t

__all__ = ["METHODS", "MethodSpec"]


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    request_type: type
    #: What a unary call returns (``None``: an empty result); streams yield ``StreamResponse``.
    result_type: type | None
    streaming: bool = False


METHODS: dict[str, MethodSpec] = {
    spec.name: spec
    for spec in (
        MethodSpec("SendMessage", t.SendMessageRequest, t.SendMessageResponse),
        MethodSpec("SendStreamingMessage", t.SendMessageRequest, t.StreamResponse, streaming=True),
        MethodSpec("GetTask", t.GetTaskRequest, t.Task),
        MethodSpec("ListTasks", t.ListTasksRequest, t.ListTasksResponse),
        MethodSpec("CancelTask", t.CancelTaskRequest, t.Task),
        MethodSpec("SubscribeToTask", t.SubscribeToTaskRequest, t.StreamResponse, streaming=True),
        MethodSpec("CreateTaskPushNotificationConfig", t.TaskPushNotificationConfig, t.TaskPushNotificationConfig),
        MethodSpec(
            "GetTaskPushNotificationConfig", t.GetTaskPushNotificationConfigRequest, t.TaskPushNotificationConfig
        ),
        MethodSpec(
            "ListTaskPushNotificationConfigs",
            t.ListTaskPushNotificationConfigsRequest,
            t.ListTaskPushNotificationConfigsResponse,
        ),
        MethodSpec("DeleteTaskPushNotificationConfig", t.DeleteTaskPushNotificationConfigRequest, None),
        MethodSpec("GetExtendedAgentCard", t.GetExtendedAgentCardRequest, t.AgentCard),
    )
}
