"""The one request decoder: proto field names and enum numbers (ProtoJSON), and its fast path."""

from __future__ import annotations

import tracemalloc
from typing import Any

import msgspec
import pytest

from a2a import types as t
from a2a.errors import InvalidParamsError
from a2a.protocol import codec
from a2a.protocol.methods import OPERATIONS


def test_proto_names_at_every_depth_and_free_form_keys_kept() -> None:
    """ProtoJSON: "Parsers accept both the lowerCamelCase name [...] and the original proto field name";
    a Struct (metadata) or a Value (Part.data) keeps its keys, whatever they look like."""
    body = msgspec.json.encode(
        {
            "message": {
                "message_id": "m",
                "role": 1,
                "context_id": "c",
                "reference_task_ids": ["a"],
                "parts": [{"data": {"task_id": 1, "nested": {"page_size": 2}}, "media_type": "application/json"}],
                "metadata": {"context_id": "kept", "history_length": 3},
            },
            "configuration": {"history_length": 0, "task_push_notification_config": {"url": "u", "task_id": "x"}},
        }
    )
    request = codec.decode_as(body, t.SendMessageRequest)
    message = request.message
    assert (message.message_id, message.role, message.context_id) == ("m", t.Role.USER, "c")
    assert message.reference_task_ids == ["a"]
    assert message.parts[0].data == {"task_id": 1, "nested": {"page_size": 2}}
    assert message.parts[0].media_type == "application/json"
    assert message.metadata == {"context_id": "kept", "history_length": 3}
    assert request.configuration is not None and request.configuration.history_length == 0
    assert request.configuration.task_push_notification_config is not None
    assert request.configuration.task_push_notification_config.task_id == "x"


def test_enum_numbers_are_those_of_a2a_proto() -> None:
    """a2a.proto: ROLE_UNSPECIFIED = 0, ROLE_USER = 1, ROLE_AGENT = 2; TASK_STATE_UNSPECIFIED = 0
    ... TASK_STATE_AUTH_REQUIRED = 8, in the order the enums declare their members."""
    roles = ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"]
    states = ["UNSPECIFIED", "SUBMITTED", "WORKING", "COMPLETED", "FAILED", "CANCELED", "INPUT_REQUIRED", "REJECTED"]
    states = [f"TASK_STATE_{name}" for name in [*states, "AUTH_REQUIRED"]]
    for number, name in enumerate(states):
        assert codec.convert_as({"status": number}, t.ListTasksRequest).status == name
        assert codec.convert_as({"status": str(number)}, t.ListTasksRequest).status == name  # a query string
    for number, name in enumerate(roles):
        body = b'{"messageId": "m", "role": %d, "parts": []}' % number
        assert codec.decode_as(body, t.Message).role == name


def test_a_field_by_both_names_is_invalid_params() -> None:
    with pytest.raises(InvalidParamsError, match="historyLength"):
        codec.decode_as(b'{"id": "x", "history_length": 1, "historyLength": 2}', t.GetTaskRequest)
    with pytest.raises(InvalidParamsError, match="pageSize"):
        codec.convert_as({"pageSize": "1", "page_size": "2"}, t.ListTasksRequest)


def test_an_unknown_enum_number_is_invalid_params() -> None:
    with pytest.raises(InvalidParamsError, match="role"):
        codec.decode_as(b'{"messageId": "m", "role": 9, "parts": []}', t.Message)


def test_a_camel_case_request_takes_the_typed_decoder_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path: no renaming pass for an all-camelCase body, even one whose text and metadata
    hold snake_case words, or whose enums are names with underscores."""

    def forbidden(self: Any, value: Any) -> Any:
        raise AssertionError("renaming pass on a camelCase body")

    monkeypatch.setattr(codec._Schema, "normalise", forbidden)
    body = (
        b'{"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a snake_case word: x"}],'
        b' "metadata": {"trace_id": "t"}}, "configuration": {"historyLength": 1}}'
    )
    assert codec.decode_as(body, t.SendMessageRequest).message.metadata == {"trace_id": "t"}


@pytest.mark.parametrize("spec", OPERATIONS, ids=lambda spec: spec.name)
def test_the_sieve_sees_every_proto_name_of_every_request(spec: Any) -> None:
    """The cheap first test (any snake_case key) lets through every proto name the schema has, so
    that no field of any request can be silently ignored by its proto name."""
    schema = codec._schema_of(spec.request_type)
    names = schema.proto_names.pattern.decode()[4:-2].split("|") if schema.proto_names else []
    for name in names:
        assert codec._snake_key(b'{"%s" : 1}' % name.encode()), name
        assert schema.proto_names is not None and schema.proto_names.search(b'{"%s": 1}' % name.encode())


# ---- encodings kept for long: exactly their size ------------------------------------------


def test_encode_kept_is_encode_in_an_object_of_exactly_its_size() -> None:
    encode, encode_kept = codec.encode, codec.encode_kept
    event = t.StreamResponse(
        status_update=t.TaskStatusUpdateEvent(
            task_id="a" * 32,
            context_id="b" * 32,
            status=t.TaskStatus(
                state=t.TaskState.WORKING,
                message=t.Message(message_id="c" * 32, role=t.Role.AGENT, parts=[t.Part(text="holding for 300s")]),
                timestamp="2026-11-26T06:09:21.124230Z",
            ),
        )
    )
    assert encode_kept(event) == encode(event)
    big = {"text": "x" * 200_000}  # grows the buffer past what is kept for the next one
    assert encode_kept(big) == encode(big)
    assert encode_kept(event) == encode(event)
    length = len(encode(event))
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = [encode_kept(event) for _ in range(200)]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    # A bytes object's header and the allocator's rounding, not a third of unused buffer.
    assert grown / len(kept) < length + 64, (grown / len(kept), length)
