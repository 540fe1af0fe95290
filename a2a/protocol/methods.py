"""The operation table: every A2A operation once, with what each binding needs to carry it.

One row per operation: its JSON-RPC method name (plus aliases, e.g. another protocol version's
name for it), its params and result types, whether it streams, the ``RequestHandler`` method
that serves it and its HTTP+JSON (REST) route. Everything else reads this table: JSON-RPC
decoding (``jsonrpc.decode_call``), REST framing on both sides (``rest``), the handler's
dispatch, the client. Adding an operation, or an alias, is one edit here::

    MethodSpec("SendMessage", ..., aliases=("message/send",))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from .. import types as t

__all__ = ["METHODS", "OPERATIONS", "WHOLE_REQUEST", "MethodSpec", "RestRoute", "index", "with_tenant"]

#: ``RestRoute.body``: the request itself is the body.
WHOLE_REQUEST = "*"


@dataclass(frozen=True, slots=True)
class RestRoute:
    """How an operation travels over HTTP+JSON (the spec's ``google.api.http`` bindings).

    ``path`` is relative to the interface URL; a ``{field}`` segment carries that request field
    (attribute name), and the tenant, when there is one, is a first segment before it all.
    ``body``: ``"*"``, the request itself (fields in the path override the body's); a tuple of
    fields, an object of those that are set (always sent, ``{}`` when none is); ``()``, no body.
    ``query``: the fields sent as query parameters when they are set.
    """

    http_method: str
    path: str
    body: str | tuple[str, ...] = ()
    query: tuple[str, ...] = ()
    #: Other HTTP methods the server accepts on the path (clients send ``http_method``).
    also: tuple[str, ...] = ()

    @property
    def http_methods(self) -> tuple[str, ...]:
        return (self.http_method, *self.also)


@dataclass(frozen=True, slots=True)
class MethodSpec:
    #: The operation's name, which is also its JSON-RPC method name.
    name: str
    request_type: type
    #: What a unary call returns (``None``: an empty result); streams yield ``StreamResponse``.
    result_type: type | None
    #: The ``RequestHandler`` method that serves it.
    handler: str
    rest: RestRoute
    streaming: bool = False
    #: Other JSON-RPC method names that mean this operation.
    aliases: tuple[str, ...] = ()


_TASK = "tasks/{id}"
_CONFIGS = "tasks/{task_id}/pushNotificationConfigs"
_LIST_TASKS_QUERY = (
    "context_id",
    "status",
    "page_size",
    "page_token",
    "history_length",
    "status_timestamp_after",
    "include_artifacts",
)

OPERATIONS: tuple[MethodSpec, ...] = (
    MethodSpec(
        "SendMessage",
        t.SendMessageRequest,
        t.SendMessageResponse,
        "send_message",
        RestRoute("POST", "message:send", body=WHOLE_REQUEST),
    ),
    MethodSpec(
        "SendStreamingMessage",
        t.SendMessageRequest,
        t.StreamResponse,
        "send_streaming_message",
        RestRoute("POST", "message:stream", body=WHOLE_REQUEST),
        streaming=True,
    ),
    MethodSpec("GetTask", t.GetTaskRequest, t.Task, "get_task", RestRoute("GET", _TASK, query=("history_length",))),
    MethodSpec(
        "ListTasks",
        t.ListTasksRequest,
        t.ListTasksResponse,
        "list_tasks",
        RestRoute("GET", "tasks", query=_LIST_TASKS_QUERY),
    ),
    MethodSpec(
        "CancelTask",
        t.CancelTaskRequest,
        t.Task,
        "cancel_task",
        RestRoute("POST", _TASK + ":cancel", body=("metadata",)),
    ),
    MethodSpec(
        "SubscribeToTask",
        t.SubscribeToTaskRequest,
        t.StreamResponse,
        "subscribe",
        RestRoute("GET", _TASK + ":subscribe", also=("POST",)),
        streaming=True,
    ),
    MethodSpec(
        "CreateTaskPushNotificationConfig",
        t.TaskPushNotificationConfig,
        t.TaskPushNotificationConfig,
        "create_push_config",
        RestRoute("POST", _CONFIGS, body=WHOLE_REQUEST),
    ),
    MethodSpec(
        "GetTaskPushNotificationConfig",
        t.GetTaskPushNotificationConfigRequest,
        t.TaskPushNotificationConfig,
        "get_push_config",
        RestRoute("GET", _CONFIGS + "/{id}"),
    ),
    MethodSpec(
        "ListTaskPushNotificationConfigs",
        t.ListTaskPushNotificationConfigsRequest,
        t.ListTaskPushNotificationConfigsResponse,
        "list_push_configs",
        RestRoute("GET", _CONFIGS, query=("page_size", "page_token")),
    ),
    MethodSpec(
        "DeleteTaskPushNotificationConfig",
        t.DeleteTaskPushNotificationConfigRequest,
        None,
        "delete_push_config",
        RestRoute("DELETE", _CONFIGS + "/{id}"),
    ),
    MethodSpec(
        "GetExtendedAgentCard",
        t.GetExtendedAgentCardRequest,
        t.AgentCard,
        "get_extended_card",
        RestRoute("GET", "extendedAgentCard"),
    ),
)


def index(operations: Iterable[MethodSpec]) -> dict[str, MethodSpec]:
    """Operations by JSON-RPC method name, aliases included; a name used twice is an error."""
    found: dict[str, MethodSpec] = {}
    for spec in operations:
        for name in (spec.name, *spec.aliases):
            if name in found:
                raise ValueError(f"JSON-RPC method {name!r} names both {found[name].name} and {spec.name}")
            found[name] = spec
    return found


#: The operations by JSON-RPC method name (aliases included).
METHODS: dict[str, MethodSpec] = index(OPERATIONS)


def with_tenant(params: Any, tenant: str | None) -> Any:
    """``params`` with the interface's tenant where the caller gave none (``""`` is none, as in proto3)."""
    if tenant and hasattr(params, "tenant") and not params.tenant:
        return msgspec.structs.replace(params, tenant=tenant)
    return params
