"""The A2A 0.3 <-> 1.0 translation (``a2a.protocol.v03``), object by object, both ways.

The 0.3 shapes are those of the 0.3.0 specification (``specification/json/a2a.json``): ``kind``
discriminators, kebab-case states, ``final`` on status updates, ``file`` parts, ``blocking``.
"""

from __future__ import annotations

import msgspec
import pytest

from a2a import types as t
from a2a.protocol import v03
from a2a.protocol.codec import decode_as, encode

MESSAGE_03 = {
    "kind": "message",
    "messageId": "m1",
    "role": "user",
    "parts": [
        {"kind": "text", "text": "hello"},
        {"kind": "file", "file": {"uri": "https://example.com/a.png", "mimeType": "image/png", "name": "a.png"}},
        {"kind": "file", "file": {"bytes": "aGk=", "mimeType": "text/plain"}},
        {"kind": "data", "data": {"k": 1}},
    ],
    "contextId": "c1",
    "taskId": "t1",
}

TASK_03 = {
    "kind": "task",
    "id": "t1",
    "contextId": "c1",
    "status": {
        "state": "input-required",
        "message": {**MESSAGE_03, "role": "agent"},
        "timestamp": "2025-01-01T00:00:00Z",
    },
    "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "out"}], "name": "result"}],
    "history": [MESSAGE_03],
}


def test_message_round_trip_and_decodes_as_1_0() -> None:
    one = v03.message_from_v03(MESSAGE_03)
    message = decode_as(encode(one), t.Message)
    assert message.role is t.Role.USER
    assert message.parts[1].url == "https://example.com/a.png"
    assert message.parts[1].media_type == "image/png" and message.parts[1].filename == "a.png"
    assert message.parts[2].raw == b"hi"
    assert message.parts[3].data == {"k": 1}
    back = v03.message_to_v03(msgspec.to_builtins(message))
    assert back == MESSAGE_03


def test_task_round_trip_states_and_kinds() -> None:
    event = v03.event_from_v03(TASK_03)
    task = decode_as(encode(event), t.StreamResponse).task
    assert isinstance(task, t.Task)
    assert task.status.state is t.TaskState.INPUT_REQUIRED
    assert v03.event_to_v03(msgspec.to_builtins(t.StreamResponse(task=task))) == TASK_03


@pytest.mark.parametrize(
    "state", ["submitted", "working", "completed", "failed", "canceled", "rejected", "auth-required"]
)
def test_every_state_round_trips(state: str) -> None:
    update = {"kind": "status-update", "taskId": "t", "contextId": "c", "status": {"state": state}}
    one = v03.event_from_v03({**update, "final": False})
    assert one["statusUpdate"]["status"]["state"].startswith("TASK_STATE_")
    back = v03.event_to_v03(one)
    assert back["status"] == {"state": state}
    # ``final``: the stream's last event, after which it ends: terminal and interrupted states.
    assert back["final"] is (state not in ("submitted", "working"))


def test_artifact_update_round_trip() -> None:
    update = {
        "kind": "artifact-update",
        "taskId": "t",
        "contextId": "c",
        "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]},
        "append": True,
        "lastChunk": True,
    }
    one = v03.event_from_v03(update)
    decoded = decode_as(encode(one), t.StreamResponse)
    assert isinstance(decoded.artifact_update, t.TaskArtifactUpdateEvent)
    assert v03.event_to_v03(msgspec.to_builtins(decoded)) == update


def test_unknown_kind_and_bad_fields_name_the_field() -> None:
    with pytest.raises(v03.V03Error, match=r"event.kind 'progress'"):
        v03.event_from_v03({"kind": "progress"})
    with pytest.raises(v03.V03Error, match=r"message.role"):
        v03.message_from_v03({**MESSAGE_03, "role": "robot"})
    with pytest.raises(v03.V03Error, match=r"status.state 'done'"):
        v03.event_from_v03({**TASK_03, "status": {"state": "done"}})
    with pytest.raises(v03.V03Error, match=r"parts\[0\].kind"):
        v03.message_from_v03({**MESSAGE_03, "parts": [{"kind": "video"}]})


def test_send_params_blocking_and_push() -> None:
    params = {
        "message": MESSAGE_03,
        "configuration": {
            "acceptedOutputModes": ["text/plain"],
            "historyLength": 2,
            "blocking": False,
            "pushNotificationConfig": {
                "id": "p",
                "url": "https://example.com/hook",
                "token": "tok",
                "authentication": {"schemes": ["Bearer"], "credentials": "x"},
            },
        },
        "metadata": {"a": 1},
    }
    one = v03.params_from_v03("SendMessage", params)
    request = decode_as(encode(one), t.SendMessageRequest)
    assert request.configuration is not None and request.configuration.return_immediately is True
    push = request.configuration.task_push_notification_config
    assert push is not None and push.authentication is not None and push.authentication.scheme == "Bearer"
    assert v03.params_to_v03("SendMessage", msgspec.to_builtins(request)) == params
    # 0.3 servers block unless told not to: no ``blocking`` is a blocking send.
    assert "returnImmediately" not in v03.params_from_v03("SendMessage", {"message": MESSAGE_03}).get(
        "configuration", {}
    )


def test_push_config_methods() -> None:
    set_params = {"taskId": "t", "pushNotificationConfig": {"id": "p", "url": "https://h/x"}}
    one = v03.params_from_v03("CreateTaskPushNotificationConfig", set_params)
    assert one == {"taskId": "t", "id": "p", "url": "https://h/x"}
    assert v03.result_to_v03("CreateTaskPushNotificationConfig", one) == set_params
    assert v03.params_from_v03("GetTaskPushNotificationConfig", {"id": "t", "pushNotificationConfigId": "p"}) == {
        "taskId": "t",
        "id": "p",
    }
    listed = v03.result_to_v03("ListTaskPushNotificationConfigs", {"configs": [one], "nextPageToken": ""})
    assert listed == [set_params]
    assert v03.result_from_v03("ListTaskPushNotificationConfigs", listed)["configs"] == [one]


def test_card_serves_both_versions() -> None:
    card = {
        "name": "n",
        "description": "d",
        "version": "1",
        "supportedInterfaces": [
            {"url": "http://h/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://h/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ],
        "capabilities": {"streaming": True, "extendedAgentCard": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
    }
    both = v03.card_to_v03(card)
    assert both["url"] == "http://h/a2a/jsonrpc" and both["preferredTransport"] == "JSONRPC"
    assert both["protocolVersion"] == "0.3.0"
    assert both["additionalInterfaces"] == [
        {"url": "http://h/a2a/jsonrpc", "transport": "JSONRPC"},
        {"url": "http://h/a2a/rest", "transport": "HTTP+JSON"},
    ]
    assert both["securitySchemes"]["bearer"]["type"] == "http" and both["security"] == [{"bearer": []}]
    assert both["supportsAuthenticatedExtendedCard"] is True
    # The 1.0 reader still reads it (the 0.3 fields are unknown to it, so ignored).
    assert decode_as(encode(both), t.AgentCard).supported_interfaces[0].protocol_version == "1.0"
    # A 0.3-only card becomes a 1.0 card whose interfaces say 0.3.
    only = {k: v for k, v in both.items() if k not in ("supportedInterfaces", "securityRequirements")}
    only["securitySchemes"] = {"bearer": {"type": "http", "scheme": "Bearer"}}
    one = v03.card_from_v03(only)
    read = decode_as(encode(one), t.AgentCard)
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in read.supported_interfaces] == [
        ("http://h/a2a/jsonrpc", "JSONRPC", "0.3"),
        ("http://h/a2a/rest", "HTTP+JSON", "0.3"),
    ]
    assert read.security_schemes is not None
    assert read.security_schemes["bearer"].http_auth_security_scheme == t.HTTPAuthSecurityScheme(scheme="Bearer")
    assert read.capabilities.extended_agent_card is True
    with pytest.raises(v03.V03Error, match=r"card\.url"):
        v03.card_from_v03({"name": "x"})


def test_rest_proto_json_of_0_3() -> None:
    """0.3's REST binding carries ProtoJSON of 0.3's proto: ``content``, ``update``, ``msg``,
    ``request``, ``TASK_STATE_CANCELLED``, nested file and data parts, no ``kind``."""
    body = {
        "request": {
            "messageId": "m",
            "role": "ROLE_USER",
            "content": [
                {"text": "hi"},
                {"file": {"fileWithUri": "https://h/f", "mimeType": "text/plain"}},
                {"data": {"data": {"k": 1}}},
            ],
        },
        "configuration": {"blocking": True},
    }
    one = v03.proto_params_from_v03("SendMessage", body, {})
    request = decode_as(encode(one), t.SendMessageRequest)
    assert [p.text or p.url or p.data for p in request.message.parts] == ["hi", "https://h/f", {"k": 1}]
    assert request.configuration is not None and request.configuration.return_immediately is False
    # ProtoJSON leaves a false ``blocking`` out: a send without it does not block.
    quick = v03.proto_params_from_v03("SendMessage", {"request": body["request"]}, {})
    assert quick["configuration"]["returnImmediately"] is True
    task = {
        "id": "t",
        "contextId": "c",
        "status": {"state": "TASK_STATE_CANCELED", "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": []}},
    }
    proto = v03.proto_result_to_v03("GetTask", task)
    # ProtoJSON writes a field by its json_name: TaskStatus.update, StreamResponse.msg and
    # SendMessageRequest.request are all "message" on the wire.
    assert proto["status"]["state"] == "TASK_STATE_CANCELLED" and proto["status"]["message"]["content"] == []
    assert "update" not in proto["status"]
    update = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}}
    assert v03.proto_event_to_v03(update)["statusUpdate"]["final"] is True
    assert set(v03.proto_event_to_v03({"message": task["status"]["message"]})) == {"message"}
    sent = v03.proto_request_to_v03("SendMessage", {"message": task["status"]["message"]})
    assert sent.body is not None and "message" in sent.body and "request" not in sent.body
    config = {"taskId": "t", "id": "p", "url": "https://h/x"}
    assert v03.proto_result_to_v03("GetTaskPushNotificationConfig", config) == {
        "name": "tasks/t/pushNotificationConfigs/p",
        "pushNotificationConfig": {"id": "p", "url": "https://h/x"},
    }


def test_mixed_dialects_are_read_and_answered() -> None:
    """Peers that mix the versions: 0.3 envelopes with 1.0 enum names are read (LangGraph
    Server's stream events), and 1.0 shapes are answered with 0.3 enum values (fasta2a 2.x)."""
    event = {
        "kind": "status-update",
        "taskId": "t",
        "contextId": "c",
        "final": True,
        "status": {"state": "TASK_STATE_COMPLETED"},
    }
    assert v03.event_from_v03(event)["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    answer = {"task": {"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": {"role": "ROLE_AGENT"}}}}
    assert v03.with_v03_enums(answer) == {
        "task": {"id": "t", "status": {"state": "input-required", "message": {"role": "agent"}}}
    }


def test_rest_client_side_of_0_3() -> None:
    """What our client sends to a 0.3 REST agent, and reads back: paths, ``blocking`` always said
    (a missing one means "do not wait" to a ProtoJSON reader), ``CANCELLED``, push config names."""
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}, {"url": "https://h/f"}]}
    send = v03.proto_request_to_v03("SendMessage", {"message": message})
    assert (send.http_method, send.path) == ("POST", "v1/message:send")
    assert send.body == {
        "message": {
            "messageId": "m",
            "role": "ROLE_USER",
            "content": [{"text": "hi"}, {"file": {"fileWithUri": "https://h/f"}}],
        },
        "configuration": {"blocking": True},
    }
    quick = v03.proto_request_to_v03(
        "SendStreamingMessage", {"message": message, "configuration": {"returnImmediately": True}}
    )
    assert quick.path == "v1/message:stream" and quick.body is not None
    assert quick.body["configuration"] == {"blocking": False}
    assert v03.proto_request_to_v03("GetTask", {"id": "a/b", "historyLength": 2}) == v03.ProtoRequest(
        "GET", "v1/tasks/a%2Fb", {"historyLength": "2"}, None
    )
    assert v03.proto_request_to_v03("SubscribeToTask", {"id": "t"}).path == "v1/tasks/t:subscribe"
    assert v03.proto_request_to_v03("CancelTask", {"id": "t"}).path == "v1/tasks/t:cancel"
    with pytest.raises(v03.V03Error, match="no ListTasks"):
        v03.proto_request_to_v03("ListTasks", {})
    task = {
        "id": "t",
        "contextId": "c",
        "status": {
            "state": "TASK_STATE_CANCELLED",
            "update": {"messageId": "x", "role": "ROLE_AGENT", "content": [{"text": "bye"}]},
        },
    }
    read = decode_as(encode(v03.proto_result_from_v03("GetTask", task)), t.Task)
    assert read.status.state is t.TaskState.CANCELED and read.status.message is not None
    assert read.status.message.parts[0].text == "bye"
    event = {
        "statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}, "final": True}
    }
    streamed = decode_as(encode(v03.proto_result_from_v03("SendStreamingMessage", event)), t.StreamResponse)
    assert streamed.status_update is not None and streamed.status_update.status.state is t.TaskState.COMPLETED
    push = {"name": "tasks/t/pushNotificationConfigs/h", "pushNotificationConfig": {"url": "http://x/hook"}}
    config = decode_as(
        encode(v03.proto_result_from_v03("GetTaskPushNotificationConfig", push)), t.TaskPushNotificationConfig
    )
    assert (config.task_id, config.id, config.url) == ("t", "h", "http://x/hook")


def test_rest_status_message_under_its_json_name_is_read() -> None:
    """0.3's proto names the status's message ``update`` with ``json_name = "message"``: ProtoJSON
    printers (@a2a-js/sdk 0.3's REST server) write ``message``, and it must not be dropped."""
    said = {"messageId": "x", "role": "ROLE_AGENT", "content": [{"text": "What is your name?"}]}
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": said}}
    read = decode_as(encode(v03.proto_result_from_v03("GetTask", task)), t.Task)
    assert read.status.message is not None and read.status.message.parts[0].text == "What is your name?"
    update = {"statusUpdate": {"taskId": "t", "contextId": "c", "status": task["status"], "final": True}}
    streamed = decode_as(encode(v03.proto_result_from_v03("SendStreamingMessage", update)), t.StreamResponse)
    assert streamed.status_update is not None and streamed.status_update.status.message is not None
    assert streamed.status_update.status.message.parts[0].text == "What is your name?"
    with pytest.raises(v03.V03Error, match=r"status\.message must be an object"):
        v03.proto_result_from_v03("GetTask", {**task, "status": {"state": "TASK_STATE_WORKING", "message": 3}})


def test_binding_http_json_chooses_0_3_rest() -> None:
    """A 0.3 card offering both: its preferred transport first, ``binding="HTTP+JSON"`` the REST one."""
    from a2a.client.card import choose_interface

    card03 = {
        "name": "x",
        "description": "",
        "version": "1",
        "protocolVersion": "0.3.0",
        "url": "http://h/rpc",
        "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": "http://h/rest", "transport": "HTTP+JSON"}],
        "capabilities": {},
        "defaultInputModes": [],
        "defaultOutputModes": [],
        "skills": [],
    }
    card = decode_as(encode(v03.card_from_v03(card03)), t.AgentCard)
    bindings = ["JSONRPC", "HTTP+JSON"]
    assert choose_interface(card, bindings).url == "http://h/rpc"
    assert choose_interface(card, bindings, "HTTP+JSON").url == "http://h/rest"
    rest_first = decode_as(
        encode(
            v03.card_from_v03(
                {**card03, "preferredTransport": "HTTP+JSON", "url": "http://h/rest", "additionalInterfaces": []}
            )
        ),
        t.AgentCard,
    )
    chosen = choose_interface(rest_first, bindings)
    assert (chosen.protocol_binding, chosen.protocol_version) == ("HTTP+JSON", "0.3")


def test_a_push_to_a_0_3_webhook_is_a_whole_0_3_task() -> None:
    """0.3 servers push the task, not the event: a ``task`` event is its own task; another
    event sends the task as stored now; without a stored task, what the event says of it."""
    status = {"state": "TASK_STATE_WORKING"}
    task = {
        "id": "t1",
        "contextId": "c1",
        "status": status,
        "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}]}],
    }
    assert v03.push_task_to_v03({"task": task}, None)["artifacts"][0]["parts"] == [{"kind": "text", "text": "x"}]
    update = {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}
    stored = {**task, "status": {"state": "TASK_STATE_COMPLETED"}}
    sent = v03.push_task_to_v03(update, stored)
    assert (sent["kind"], sent["status"]["state"], len(sent["artifacts"])) == ("task", "completed", 1)
    alone = v03.push_task_to_v03(update, None)
    assert alone == {"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "completed"}}
    chunk = {"artifactUpdate": {"taskId": "t1", "contextId": "c1", "artifact": {"artifactId": "a", "parts": []}}}
    assert v03.push_task_to_v03(chunk, None)["status"] == {"state": "unknown"}
    with pytest.raises(v03.V03Error, match="needs a task"):
        v03.push_task_to_v03({"message": {"messageId": "m"}}, None)
