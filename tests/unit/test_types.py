"""The wire schema against JSON shaped like the A2A 1.0 specification's examples.

Every fixture below is written in canonical ProtoJSON (camelCase names, SCREAMING_SNAKE enum
strings, unset and default-valued fields left out), so decode -> encode must give it back
exactly. Separate tests cover what canonical form drops, unknown fields, and the oneofs.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a import types as t
from a2a.protocol.codec import decoder_for, encode

# ---- fixtures (written after the shapes of the spec's examples) ------------------------------

AGENT_MESSAGE: dict[str, Any] = {
    "messageId": "9229e770-767c-417b-a0b0-f0741243c589",
    "role": "ROLE_AGENT",
    "parts": [{"text": "Why did the chicken cross the road? To get to the other side."}],
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "taskId": "363422be-b0f9-4692-a24d-278670e7c7f1",
}

USER_MESSAGE: dict[str, Any] = {
    "messageId": "f1a6b0d2-1c7e-4b8a-9f64-0c2d3e4f5a6b",
    "role": "ROLE_USER",
    "parts": [{"text": "tell me a joke"}],
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "taskId": "363422be-b0f9-4692-a24d-278670e7c7f1",
}

AGENT_CARD: dict[str, Any] = {
    "name": "GeoSpatial Route Planner Agent",
    "description": "Provides route planning, traffic analysis and custom map generation.",
    "version": "1.2.0",
    "supportedInterfaces": [
        {"url": "https://georoute-agent.example.com/a2a/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "https://georoute-agent.example.com/a2a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
        {
            "url": "https://georoute-agent.example.com/a2a/json",
            "protocolBinding": "HTTP+JSON",
            "protocolVersion": "1.0",
            "tenant": "acme",
        },
    ],
    "capabilities": {
        "streaming": True,
        "pushNotifications": False,
        "extensions": [
            {
                "uri": "https://example.com/extensions/geolocation/v1",
                "description": "Location hints for routing",
                "required": True,
                "params": {"precision": "street", "maxPoints": 25},
            }
        ],
        "extendedAgentCard": True,
    },
    "defaultInputModes": ["application/json", "text/plain"],
    "defaultOutputModes": ["application/json", "image/png"],
    "skills": [
        {
            "id": "route-optimizer-traffic",
            "name": "Traffic-Aware Route Optimizer",
            "description": "Calculates the optimal driving route between locations, taking traffic into account.",
            "tags": ["maps", "routing", "navigation", "directions", "traffic"],
            "examples": [
                "Plan a route from Mountain View to San Francisco International Airport avoiding tolls.",
                '{"origin": {"lat": 37.422, "lng": -122.084}, "destination": {"lat": 37.7749, "lng": -122.4194}}',
            ],
            "inputModes": ["application/json", "text/plain"],
            "outputModes": ["application/json", "application/vnd.geo+json", "text/html"],
            "securityRequirements": [{"schemes": {"google": {"list": ["openid", "profile"]}}}],
        },
        {
            "id": "custom-map-generator",
            "name": "Personalized Map Generator",
            "description": "Creates custom map images based on points of interest.",
            "tags": ["maps", "visualization"],
        },
    ],
    "provider": {"url": "https://www.examplegeoservices.com", "organization": "Example Geo Services Inc."},
    "documentationUrl": "https://docs.examplegeoservices.com/georoute-agent/api",
    "iconUrl": "https://georoute-agent.example.com/icon.png",
    "securitySchemes": {
        "google": {
            "openIdConnectSecurityScheme": {
                "openIdConnectUrl": "https://accounts.google.com/.well-known/openid-configuration"
            }
        },
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key", "description": "Issued keys"}},
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
        "oauthCode": {
            "oauth2SecurityScheme": {
                "flows": {
                    "authorizationCode": {
                        "authorizationUrl": "https://auth.example.com/authorize",
                        "tokenUrl": "https://auth.example.com/token",
                        "scopes": {"routes:read": "Read routes", "maps:write": "Create maps"},
                        "refreshUrl": "https://auth.example.com/refresh",
                        "pkceRequired": True,
                    }
                },
                "oauth2MetadataUrl": "https://auth.example.com/.well-known/oauth-authorization-server",
            }
        },
        "oauthClient": {
            "oauth2SecurityScheme": {
                "flows": {
                    "clientCredentials": {"tokenUrl": "https://auth.example.com/token", "scopes": {"routes:read": "r"}}
                }
            }
        },
        "oauthDevice": {
            "oauth2SecurityScheme": {
                "flows": {
                    "deviceCode": {
                        "deviceAuthorizationUrl": "https://auth.example.com/device",
                        "tokenUrl": "https://auth.example.com/token",
                        "scopes": {},
                    }
                },
                "description": "For devices without a browser",
            }
        },
        "mtls": {"mtlsSecurityScheme": {"description": "Client certificate issued by Example CA"}},
    },
    "securityRequirements": [
        {"schemes": {"google": {"list": ["openid", "profile", "email"]}}},
        {"schemes": {"apiKey": {}, "mtls": {}}},
    ],
    "signatures": [
        {
            "protected": "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpPU0UiLCJraWQiOiJrZXktMSJ9",
            "signature": "QFdkNLNszlGj3z3u0YQGt_T9LixY3qtdQpZmsTdDHDe3fXV9y9-B3m2-XgCpzuhiLt8E0tV6HXoZKHv4GtHgKQ",
            "header": {"kid": "key-1"},
        }
    ],
}

TASK: dict[str, Any] = {
    "id": "363422be-b0f9-4692-a24d-278670e7c7f1",
    "status": {"state": "TASK_STATE_COMPLETED", "message": AGENT_MESSAGE, "timestamp": "2025-10-28T10:30:00.000Z"},
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "artifacts": [
        {
            "artifactId": "9b6934dd-37e3-4eb1-8766-962efaab63a1",
            "parts": [{"text": "Why did the chicken cross the road?"}, {"data": {"rating": 3}}],
            "name": "joke",
            "description": "A joke, as text and as data",
            "metadata": {"source": "joke-engine"},
            "extensions": ["https://example.com/extensions/citations/v1"],
        }
    ],
    "history": [USER_MESSAGE, AGENT_MESSAGE],
    "metadata": {"priority": "low"},
}

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

MESSAGE_WITH_EVERY_PART: dict[str, Any] = {
    "messageId": "bbb7dee1-cf5c-4683-8a6f-4114529da5eb",
    "role": "ROLE_USER",
    "parts": [
        {"text": "Analyse the attached image and the readings"},
        {"raw": base64.b64encode(PNG_MAGIC).decode(), "filename": "pixel.png", "mediaType": "image/png"},
        {"url": "https://storage.example.com/reports/q3.pdf", "filename": "q3.pdf", "mediaType": "application/pdf"},
        {"data": {"temperature": 21.5, "unit": "C", "readings": [1, 2, 3], "ok": True, "note": None}},
        {"data": None},
        {"data": [1, "two", False]},
        {"data": "just a string"},
        {"data": 0},
        {"text": "", "metadata": {"hint": "an empty text part is still a text part"}},
    ],
    "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
    "metadata": {"client": "test"},
    "extensions": ["https://example.com/extensions/geolocation/v1"],
    "referenceTaskIds": ["363422be-b0f9-4692-a24d-278670e7c7f1"],
}

STATUS_UPDATE: dict[str, Any] = {
    "statusUpdate": {
        "taskId": "363422be-b0f9-4692-a24d-278670e7c7f1",
        "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2025-10-28T10:29:59.000Z"},
        "metadata": {"progress": 0.5},
    }
}

ARTIFACT_UPDATE: dict[str, Any] = {
    "artifactUpdate": {
        "taskId": "363422be-b0f9-4692-a24d-278670e7c7f1",
        "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
        "artifact": {"artifactId": "9b6934dd", "parts": [{"text": "chunk 2"}], "name": "story"},
        "append": True,
        "lastChunk": True,
    }
}

SEND_MESSAGE_REQUEST: dict[str, Any] = {
    "message": {
        "messageId": "6dbc13b5-bd57-4c2b-b503-24e381b6c8d6",
        "role": "ROLE_USER",
        "parts": [{"text": "Plan a route to the airport"}],
    },
    "configuration": {
        "acceptedOutputModes": ["text/plain", "application/json"],
        "taskPushNotificationConfig": {
            "url": "https://client.example.com/webhook/a2a",
            "id": "cfg-1",
            "token": "opaque-client-token",
            "authentication": {"scheme": "Bearer", "credentials": "webhook-secret"},
        },
        "historyLength": 5,
        "returnImmediately": True,
    },
    "metadata": {"trace": "abc123"},
    "tenant": "acme",
}

LIST_TASKS_RESPONSE: dict[str, Any] = {
    "tasks": [
        TASK,
        {
            "id": "a8e9b6f0-0001-4000-8000-000000000002",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2025-10-28T10:00:00.000Z"},
            "contextId": "c295ea44-7543-4f78-b524-7a38915ad6e4",
        },
    ],
    "nextPageToken": "",
    "pageSize": 50,
    "totalSize": 2,
}


def _round_trip(tp: type, wire: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    obj = decoder_for(tp).decode(json.dumps(wire).encode())
    return obj, json.loads(encode(obj))


ROUND_TRIPS = [
    pytest.param(t.AgentCard, AGENT_CARD, id="AgentCard"),
    pytest.param(t.Task, TASK, id="Task"),
    pytest.param(t.Message, MESSAGE_WITH_EVERY_PART, id="Message-every-part"),
    pytest.param(t.StreamResponse, {"task": TASK}, id="StreamResponse-task"),
    pytest.param(t.StreamResponse, {"message": AGENT_MESSAGE}, id="StreamResponse-message"),
    pytest.param(t.StreamResponse, STATUS_UPDATE, id="StreamResponse-statusUpdate"),
    pytest.param(t.StreamResponse, ARTIFACT_UPDATE, id="StreamResponse-artifactUpdate"),
    pytest.param(t.SendMessageResponse, {"task": TASK}, id="SendMessageResponse-task"),
    pytest.param(t.SendMessageResponse, {"message": AGENT_MESSAGE}, id="SendMessageResponse-message"),
    pytest.param(t.SendMessageRequest, SEND_MESSAGE_REQUEST, id="SendMessageRequest"),
    pytest.param(t.ListTasksResponse, LIST_TASKS_RESPONSE, id="ListTasksResponse"),
]


@pytest.mark.parametrize(("tp", "wire"), ROUND_TRIPS)
def test_decode_then_encode_gives_the_same_json(tp: type, wire: dict[str, Any]) -> None:
    _, again = _round_trip(tp, wire)
    assert again == wire


@pytest.mark.parametrize(("tp", "wire"), ROUND_TRIPS)
def test_encode_then_decode_gives_the_same_object(tp: type, wire: dict[str, Any]) -> None:
    obj, _ = _round_trip(tp, wire)
    assert decoder_for(tp).decode(encode(obj)) == obj


# ---- what the decoded objects hold -------------------------------------------------------------


def test_agent_card_fields_are_typed() -> None:
    card, _ = _round_trip(t.AgentCard, AGENT_CARD)
    assert [i.protocol_binding for i in card.supported_interfaces] == ["JSONRPC", "GRPC", "HTTP+JSON"]
    assert card.supported_interfaces[2].tenant == "acme"
    assert card.capabilities.push_notifications is False  # optional bool: false is kept, not dropped
    assert card.capabilities.extensions[0].required is True
    schemes = card.security_schemes
    assert isinstance(schemes["google"].open_id_connect_security_scheme, t.OpenIdConnectSecurityScheme)
    assert schemes["apiKey"].api_key_security_scheme.name == "X-API-Key"
    assert schemes["bearer"].http_auth_security_scheme.bearer_format == "JWT"
    assert schemes["oauthCode"].oauth2_security_scheme.flows.authorization_code.pkce_required is True
    assert schemes["oauthClient"].oauth2_security_scheme.flows.client_credentials.token_url.endswith("/token")
    assert isinstance(schemes["oauthDevice"].oauth2_security_scheme.flows.device_code, t.DeviceCodeOAuthFlow)
    assert isinstance(schemes["mtls"].mtls_security_scheme, t.MutualTlsSecurityScheme)
    assert card.security_requirements[0].schemes["google"].list == ["openid", "profile", "email"]
    assert card.skills[1].examples is None


def test_every_part_kind_decodes_to_its_content() -> None:
    message, _ = _round_trip(t.Message, MESSAGE_WITH_EVERY_PART)
    text, raw, url, data, null, array, string, zero, empty = message.parts
    assert text.text.startswith("Analyse") and text.raw is t.UNSET
    assert raw.raw == PNG_MAGIC and raw.media_type == "image/png" and raw.filename == "pixel.png"
    assert url.url.endswith("q3.pdf") and url.text is t.UNSET
    assert data.data["readings"] == [1, 2, 3] and data.data["note"] is None
    assert null.data is None  # JSON null is a value of google.protobuf.Value, not "absent"
    assert array.data == [1, "two", False] and string.data == "just a string" and zero.data == 0
    assert empty.text == ""
    assert message.role is t.Role.USER
    assert message.text == "Analyse the attached image and the readings\n"


def test_raw_is_standard_base64_on_the_wire() -> None:
    part = t.Part(raw=bytes(range(256)), media_type="application/octet-stream")
    wire = json.loads(encode(part))
    assert base64.b64decode(wire["raw"], validate=True) == bytes(range(256))
    assert set(wire) == {"raw", "mediaType"}


@pytest.mark.parametrize("encoded", ["-_8=", "-_8", "+/8"], ids=["url-safe", "url-safe-unpadded", "unpadded"])
def test_raw_takes_standard_padded_base64_only(encoded: str) -> None:
    # ProtoJSON recommends (does not require) accepting URL-safe/unpadded forms; we accept the
    # standard padded form every encoder sends, and say so in protocol.md. Other forms are
    # refused with an error naming the field, never silently mis-decoded.
    with pytest.raises(msgspec.ValidationError, match=r"\$\.raw"):
        decoder_for(t.Part).decode(json.dumps({"raw": encoded}).encode())
    assert decoder_for(t.Part).decode(b'{"raw": "+/8="}').raw == b"\xfb\xff"


def test_stream_response_payload_is_the_one_member_set() -> None:
    for wire, kind in [
        ({"task": TASK}, t.Task),
        ({"message": AGENT_MESSAGE}, t.Message),
        (STATUS_UPDATE, t.TaskStatusUpdateEvent),
        (ARTIFACT_UPDATE, t.TaskArtifactUpdateEvent),
    ]:
        event, _ = _round_trip(t.StreamResponse, wire)
        assert type(event.payload) is kind


def test_list_tasks_response_always_carries_next_page_token() -> None:
    page = t.ListTasksResponse(tasks=[], next_page_token="", page_size=10, total_size=0)
    assert json.loads(encode(page)) == {"tasks": [], "nextPageToken": "", "pageSize": 10, "totalSize": 0}


# ---- ProtoJSON naming, enums, omission ----------------------------------------------------------


def test_python_snake_case_becomes_camel_case_on_the_wire() -> None:
    message = t.Message(
        message_id="m1",
        role=t.Role.USER,
        parts=[t.Part(text="hi", media_type="text/plain")],
        context_id="c1",
        task_id="t1",
        reference_task_ids=["t0"],
    )
    wire = json.loads(encode(message))
    assert set(wire) == {"messageId", "role", "parts", "contextId", "taskId", "referenceTaskIds"}
    assert wire["parts"] == [{"text": "hi", "mediaType": "text/plain"}]

    event = t.TaskArtifactUpdateEvent(
        task_id="t1",
        context_id="c1",
        artifact=t.Artifact(artifact_id="a1", parts=[t.Part(url="https://x.example/f")]),
        append=True,
        last_chunk=True,
    )
    assert set(json.loads(encode(event))) == {"taskId", "contextId", "artifact", "append", "lastChunk"}

    config = t.SendMessageConfiguration(accepted_output_modes=["text/plain"], history_length=0, return_immediately=True)
    assert json.loads(encode(config)) == {
        "acceptedOutputModes": ["text/plain"],
        "historyLength": 0,  # optional int32: an explicit 0 is kept
        "returnImmediately": True,
    }


@pytest.mark.parametrize("state", list(t.TaskState))
def test_task_states_travel_as_protojson_enum_names(state: t.TaskState) -> None:
    task = t.Task(id="t1", status=t.TaskStatus(state=state))
    wire = json.loads(encode(task))
    assert wire["status"]["state"] == state.value
    assert wire["status"]["state"].startswith("TASK_STATE_")
    assert decoder_for(t.Task).decode(encode(task)).status.state is state


def test_roles_travel_as_protojson_enum_names() -> None:
    assert [r.value for r in t.Role] == ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"]
    assert json.loads(encode(t.Message(message_id="m", role=t.Role.AGENT, parts=[t.Part(text="x")])))["role"] == (
        "ROLE_AGENT"
    )


@pytest.mark.parametrize(
    ("tp", "wire"),
    [
        (t.TaskStatus, {"state": "completed"}),  # 0.3 lower-case enum
        (t.TaskStatus, {"state": "TASK_STATE_DONE"}),
        (t.Message, {"messageId": "m", "role": "user", "parts": [{"text": "x"}]}),
        (t.Message, {"messageId": "m", "role": 1, "parts": [{"text": "x"}]}),
    ],
)
def test_unknown_enum_values_are_refused(tp: type, wire: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        decoder_for(tp).decode(json.dumps(wire).encode())


def test_unset_fields_are_left_out() -> None:
    assert json.loads(encode(t.Task(id="t1", status=t.TaskStatus(state=t.TaskState.WORKING)))) == {
        "id": "t1",
        "status": {"state": "TASK_STATE_WORKING"},
    }
    assert json.loads(encode(t.Part(text="x"))) == {"text": "x"}
    assert json.loads(encode(t.SendMessageConfiguration())) == {}
    assert json.loads(encode(t.AgentCapabilities())) == {}


def test_default_values_of_non_optional_fields_are_left_out() -> None:
    # proto3 JSON drops scalar and repeated fields at their default; the spec's examples sometimes
    # spell them out ({"list": []}, "append": false), which must decode and re-encode canonically.
    wire = {
        "taskId": "t",
        "contextId": "c",
        "artifact": {"artifactId": "a", "parts": [{"text": "x"}]},
        "append": False,
        "lastChunk": False,
    }
    event = decoder_for(t.TaskArtifactUpdateEvent).decode(json.dumps(wire).encode())
    assert event.append is False and event.last_chunk is False
    assert "append" not in json.loads(encode(event)) and "lastChunk" not in json.loads(encode(event))

    requirement = decoder_for(t.SecurityRequirement).decode(b'{"schemes": {"bearer": {"list": []}}}')
    assert requirement.schemes["bearer"].list == []
    assert json.loads(encode(requirement)) == {"schemes": {"bearer": {}}}

    config = decoder_for(t.SendMessageConfiguration).decode(b'{"returnImmediately": false}')
    assert config.return_immediately is False and json.loads(encode(config)) == {}


def test_unknown_fields_are_ignored_at_every_level() -> None:
    wire = copy.deepcopy(TASK)
    wire["futureTopLevel"] = {"anything": [1, 2]}
    wire["kind"] = "task"  # a 0.3 discriminator: ignored in 1.0
    wire["status"]["futureStatusField"] = True
    wire["history"][0]["futureMessageField"] = "x"
    wire["history"][0]["parts"][0]["kind"] = "text"
    wire["artifacts"][0]["futureArtifactField"] = None
    task, again = _round_trip(t.Task, wire)
    assert again == TASK
    assert task.history[0].parts[0].text == "tell me a joke"

    card = copy.deepcopy(AGENT_CARD)
    card["url"] = "https://legacy.example.com"  # 0.3 field, gone in 1.0
    card["preferredTransport"] = "JSONRPC"
    card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["x-vendor"] = 1
    assert _round_trip(t.AgentCard, card)[1] == AGENT_CARD


@pytest.mark.parametrize(
    ("tp", "wire"),
    [
        (t.AgentCard, {k: v for k, v in AGENT_CARD.items() if k != "supportedInterfaces"}),
        (t.AgentCard, {k: v for k, v in AGENT_CARD.items() if k != "capabilities"}),
        (t.AgentSkill, {"id": "s", "name": "S", "description": "d"}),  # tags are required
        (t.Message, {"role": "ROLE_USER", "parts": [{"text": "x"}]}),  # messageId is required
        (t.Task, {"id": "t"}),  # status is required
        (t.ListTasksResponse, {"tasks": [], "pageSize": 1, "totalSize": 0}),
    ],
)
def test_required_fields_are_required(tp: type, wire: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError):
        decoder_for(tp).decode(json.dumps(wire).encode())


# ---- oneofs -------------------------------------------------------------------------------------

ONEOF_VIOLATIONS = [
    pytest.param(t.Part, {}, id="Part-none"),
    pytest.param(t.Part, {"mediaType": "text/plain"}, id="Part-only-metadata-fields"),
    pytest.param(t.Part, {"text": "a", "url": "https://x.example"}, id="Part-text+url"),
    pytest.param(t.Part, {"text": "a", "data": None}, id="Part-text+data-null"),
    pytest.param(t.Part, {"raw": "AA==", "data": {"a": 1}}, id="Part-raw+data"),
    pytest.param(t.StreamResponse, {}, id="StreamResponse-none"),
    pytest.param(t.StreamResponse, {"task": TASK, "message": AGENT_MESSAGE}, id="StreamResponse-task+message"),
    pytest.param(t.StreamResponse, {**STATUS_UPDATE, **ARTIFACT_UPDATE}, id="StreamResponse-two-updates"),
    pytest.param(t.SendMessageResponse, {}, id="SendMessageResponse-none"),
    pytest.param(t.SendMessageResponse, {"task": TASK, "message": AGENT_MESSAGE}, id="SendMessageResponse-two"),
    pytest.param(t.SecurityScheme, {}, id="SecurityScheme-none"),
    pytest.param(
        t.SecurityScheme,
        {
            "apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"},
            "httpAuthSecurityScheme": {"scheme": "Bearer"},
        },
        id="SecurityScheme-apiKey+http",
    ),
    pytest.param(
        t.SecurityScheme,
        {"mtlsSecurityScheme": {}, "openIdConnectSecurityScheme": {"openIdConnectUrl": "https://x.example"}},
        id="SecurityScheme-mtls+oidc",
    ),
    pytest.param(
        t.OAuthFlows,
        {
            "implicit": {"authorizationUrl": "https://x.example/a", "scopes": {}},
            "password": {"tokenUrl": "https://x.example/t", "scopes": {}},
        },
        id="OAuthFlows-two",
    ),
]


@pytest.mark.parametrize(("tp", "wire"), ONEOF_VIOLATIONS)
def test_oneofs_refuse_none_or_several_members(tp: type, wire: dict[str, Any]) -> None:
    with pytest.raises(msgspec.ValidationError, match="exactly one"):
        decoder_for(tp).decode(json.dumps(wire).encode())


def test_oneof_violation_deep_in_a_message_names_the_path() -> None:
    wire = copy.deepcopy(MESSAGE_WITH_EVERY_PART)
    wire["parts"][3]["text"] = "and text too"
    with pytest.raises(msgspec.ValidationError, match=r"\$\.parts\[3\]"):
        decoder_for(t.Message).decode(json.dumps(wire).encode())


def test_security_scheme_inside_a_card_is_checked() -> None:
    card = copy.deepcopy(AGENT_CARD)
    card["securitySchemes"]["bearer"]["mtlsSecurityScheme"] = {}
    with pytest.raises(msgspec.ValidationError, match="SecurityScheme"):
        decoder_for(t.AgentCard).decode(json.dumps(card).encode())


def test_building_a_part_with_two_contents_in_python_fails() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        t.Part(text="a", raw=b"b")
    with pytest.raises(ValueError, match="exactly one"):
        t.Part()


# ---- property: any one-content Part round-trips -------------------------------------------------

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)

contents = st.one_of(
    st.builds(lambda v: {"text": v}, st.text()),
    st.builds(lambda v: {"raw": v}, st.binary()),
    st.builds(lambda v: {"url": v}, st.text(min_size=1)),
    st.builds(lambda v: {"data": v}, json_values),
)
extras = st.fixed_dictionaries(
    {},
    optional={
        "media_type": st.sampled_from(["text/plain", "application/json", "image/png"]),
        "filename": st.text(min_size=1, max_size=20),
        "metadata": st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    },
)

_WIRE_NAMES = {"text": "text", "raw": "raw", "url": "url", "data": "data"}


@settings(max_examples=300, deadline=None)
@given(content=contents, extra=extras)
def test_any_single_content_part_round_trips(content: dict[str, Any], extra: dict[str, Any]) -> None:
    part = t.Part(**content, **extra)
    wire = encode(part)
    again = decoder_for(t.Part).decode(wire)
    assert again == part
    present = {"text", "raw", "url", "data"} & set(json.loads(wire))
    assert present == {_WIRE_NAMES[next(iter(content))]}
    assert encode(again) == wire
