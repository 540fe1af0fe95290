"""Requests may name fields by their proto names and enums by their numbers (ProtoJSON).

A2A's JSON is ProtoJSON (the spec's ADR-001). The ProtoJSON mapping says of messages: "Message
field names are mapped to lowerCamelCase and become JSON object keys. [...] Parsers accept both
the lowerCamelCase name (or the one specified by the json_name option) and the original proto
field name." And of enums: "The name of the enum value as specified in proto is used. Parsers
accept both enum names and integer values." So a server must read ``history_length`` as it reads
``historyLength``, at every depth of every request, on every binding that carries JSON (JSON-RPC
params, REST bodies and query parameters, WebSocket and stdio frames), and must not rename the
keys of free-form values (``metadata``: a ``google.protobuf.Struct``).

The requests here are written by hand as JSON, so they run over every binding but LOCAL, whose
caller passes typed objects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import msgspec
import pytest

from a2a import A2AClient, A2AServer, Agent
from a2a.errors import ProtocolError
from a2a.protocol.methods import METHODS

from .conftest import OpenClient, StartServer
from .helpers import Raw, load_module, new_id

pytestmark = pytest.mark.raw_json

LOOPBACK = "127.0.0.0/8"


class JsonWire:
    """One binding, spoken with hand-written JSON params: raw HTTP for JSON-RPC and HTTP+JSON,
    the client's own connection (which sends a dict as given) for WebSocket and stdio."""

    def __init__(self, raw: Raw | None, client: A2AClient | None) -> None:
        self.raw = raw
        self.client = client

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        """The result in wire form (camelCase JSON); an error fails the test, naming its code."""
        code, result = await self._call(method, params)
        assert code is None, f"{method} failed with {code}: {result}"
        return result

    async def error(self, method: str, params: dict[str, Any]) -> tuple[int, str]:
        code, message = await self._call(method, params)
        assert code is not None, f"{method} succeeded: {message}"
        return code, str(message)

    async def _call(self, method: str, params: dict[str, Any]) -> tuple[int | None, Any]:
        if self.raw is not None:
            if self.raw.binding == "HTTP+JSON" and "task_id" in params:
                params = {**params, "taskId": params["task_id"]}  # the path carries it; the body keeps it
            outcome = await self.raw.call(method, params)
            if outcome.is_error:
                return outcome.error_code, outcome.error_message
            return None, outcome.result
        assert self.client is not None
        transport = await self.client.connect()
        try:
            result = await transport.call(METHODS[method], params, timeout=10)
        except ProtocolError as exc:
            return exc.code, exc.message
        return None, msgspec.to_builtins(result)


OpenWire = Callable[[A2AServer], Awaitable[JsonWire]]


@pytest.fixture
async def open_wire(binding: str, open_client: OpenClient) -> AsyncIterator[OpenWire]:
    async with httpx.AsyncClient(timeout=10) as http:

        async def open_(server: A2AServer) -> JsonWire:
            assert server.url is not None
            if binding in ("JSONRPC", "HTTP+JSON"):
                return JsonWire(Raw(http, server.url, binding), None)
            return JsonWire(None, await open_client(server))

        yield open_


@pytest.fixture
def echo() -> Agent:
    agent = load_module("echo_agent.py").agent
    assert isinstance(agent, Agent)
    return agent


@pytest.fixture
async def wire(serve: StartServer, echo: Agent, open_wire: OpenWire) -> JsonWire:
    return await open_wire(await serve(echo, push=True, push_allow=LOOPBACK))


def snake_message(text: str, **fields: Any) -> dict[str, Any]:
    return {"message_id": new_id(), "role": "ROLE_USER", "parts": [{"text": text}], **fields}


async def test_send_message_reads_proto_names_at_every_depth(wire: JsonWire) -> None:
    """ProtoJSON: "Parsers accept both the lowerCamelCase name [...] and the original proto field name":
    message.message_id/context_id, a part's media_type, configuration.history_length and
    accepted_output_modes, return_immediately. The metadata's keys are a Struct's, kept as given."""
    context = new_id()
    message = snake_message("stream:2", context_id=context, metadata={"trace_id": "t-1", "camelKey": 1})
    message["parts"][0]["media_type"] = "text/plain"
    params = {
        "message": message,
        "configuration": {"accepted_output_modes": ["text/plain"], "history_length": 0, "return_immediately": False},
        "metadata": {"request_id": "r-1"},
    }
    task = (await wire.call("SendMessage", params))["task"]
    assert task["contextId"] == context
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "history" not in task, "history_length 0 was ignored"  # {"historyLength": 0} leaves it out
    kept = await wire.call("GetTask", {"id": task["id"], "history_length": 10})
    first = kept["history"][0]
    assert first["messageId"] == message["message_id"]
    assert first["metadata"] == {"trace_id": "t-1", "camelKey": 1}  # not renamed
    assert first["parts"][0]["mediaType"] == "text/plain"
    assert "message_id" not in first and "context_id" not in kept  # we still write camelCase


async def test_get_task_history_length_by_either_name(wire: JsonWire) -> None:
    """GetTask's ``history_length``, the proto name of ``historyLength``, trims the history."""
    task = (await wire.call("SendMessage", {"message": snake_message("stream:1")}))["task"]
    assert (await wire.call("GetTask", {"id": task["id"]}))["history"]
    assert "history" not in await wire.call("GetTask", {"id": task["id"], "history_length": 0})
    assert "history" not in await wire.call("GetTask", {"id": task["id"], "historyLength": 0})


async def test_list_tasks_context_id_and_page_size_by_proto_name(wire: JsonWire) -> None:
    """ListTasks ``{"context_id": ..., "page_size": 2}`` filters and pages (REST: query parameters
    ``context_id=...&page_size=2``); before, both were ignored and every task came back."""
    context = new_id()
    for _ in range(3):
        await wire.call("SendMessage", {"message": snake_message("stream:1", context_id=context)})
    await wire.call("SendMessage", {"message": snake_message("stream:1")})  # another context
    page = await wire.call("ListTasks", {"context_id": context, "page_size": 2})
    assert len(page["tasks"]) == 2 and page["nextPageToken"]
    assert {task["contextId"] for task in page["tasks"]} == {context}
    rest = await wire.call("ListTasks", {"context_id": context, "page_size": 2, "page_token": page["nextPageToken"]})
    assert len(rest["tasks"]) == 1 and {task["contextId"] for task in rest["tasks"]} == {context}


async def test_enums_by_name_and_by_number(wire: JsonWire) -> None:
    """ProtoJSON: "Parsers accept both enum names and integer values": role 1 is ROLE_USER (a2a.proto:
    ROLE_USER = 1), a ListTasks status filter 3 is TASK_STATE_COMPLETED, 2 TASK_STATE_WORKING."""
    context = new_id()
    done = (await wire.call("SendMessage", {"message": {**snake_message("stream:1", context_id=context), "role": 1}}))[
        "task"
    ]
    held = {**snake_message("hold:30", context_id=context), "role": "ROLE_USER"}
    working = (await wire.call("SendMessage", {"message": held, "configuration": {"return_immediately": True}}))["task"]
    try:
        assert done["history"][0]["role"] == "ROLE_USER"
        by_number = await wire.call("ListTasks", {"context_id": context, "status": 3})
        by_name = await wire.call("ListTasks", {"context_id": context, "status": "TASK_STATE_COMPLETED"})
        assert [t["id"] for t in by_number["tasks"]] == [t["id"] for t in by_name["tasks"]] == [done["id"]]
        assert [t["id"] for t in (await wire.call("ListTasks", {"context_id": context, "status": 2}))["tasks"]] == [
            working["id"]
        ]
    finally:
        await wire.call("CancelTask", {"id": working["id"]})


async def test_push_configs_by_proto_names(wire: JsonWire) -> None:
    """SendMessage's configuration.task_push_notification_config, and the push config operations'
    task_id and page_size, by their proto names."""
    hook = "http://127.0.0.1:9/hook"
    params = {
        "message": snake_message("hold:30"),
        "configuration": {"return_immediately": True, "task_push_notification_config": {"url": hook, "token": "a"}},
    }
    task_id = (await wire.call("SendMessage", params))["task"]["id"]
    try:
        created = await wire.call(
            "CreateTaskPushNotificationConfig",
            {"task_id": task_id, "url": hook + "2", "token": "b", "authentication": {"scheme": "Bearer"}},
        )
        assert created["taskId"] == task_id and created["url"] == hook + "2"
        listed = await wire.call("ListTaskPushNotificationConfigs", {"task_id": task_id, "page_size": 10})
        assert sorted(c["url"] for c in listed["configs"]) == [hook, hook + "2"]
        got = await wire.call("GetTaskPushNotificationConfig", {"task_id": task_id, "id": created["id"]})
        assert got["token"] == "b"
        for config in listed["configs"]:  # nothing is delivered to the unreachable hook
            await wire.call("DeleteTaskPushNotificationConfig", {"task_id": task_id, "id": config["id"]})
    finally:
        await wire.call("CancelTask", {"id": task_id})


async def test_a_field_given_by_both_names_is_invalid_params(wire: JsonWire) -> None:
    """Both names of one field in one object is a duplicate field (as a ProtoJSON parser says):
    -32602 naming it, rather than silently choosing one."""
    task = (await wire.call("SendMessage", {"message": snake_message("stream:1")}))["task"]
    code, message = await wire.error("GetTask", {"id": task["id"], "historyLength": 1, "history_length": 0})
    assert code == -32602 and "historyLength" in message
