"""A2A-Version: required, 1.0 served (header or query form), anything else refused with -32009."""

from __future__ import annotations

import pytest

from .helpers import Raw, expect_error, send_params


async def test_missing_version_is_version_not_supported(raw: Raw) -> None:
    outcome = await raw.call("SendMessage", send_params("hello"), version=False)
    # JSON-RPC: HTTP 200 with the error in the body; REST: HTTP 400 with the REST error body.
    message = expect_error(outcome, -32009)
    assert "A2A-Version" in message, "the error says what to send"
    if raw.binding == "HTTP+JSON":
        error = outcome.json["error"]
        assert set(error) == {"code", "status", "message", "details"}
        assert error["code"] == 400
        assert error["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"


@pytest.mark.parametrize("version", ["", "0.3", "2.0", "1.1", "one"])
async def test_other_versions_are_refused(raw: Raw, version: str) -> None:
    outcome = await raw.call("ListTasks", {}, version=False, headers={"A2A-Version": version})
    expect_error(outcome, -32009)


async def test_version_in_the_query_is_accepted(raw: Raw) -> None:
    request = raw.request("SendMessage", send_params("by query"), version=False)
    request.url = request.url.copy_merge_params({"A2A-Version": "1.0"})
    outcome = await raw.send(request)
    assert outcome.result["message"]["parts"][0]["text"] == "by query"


async def test_version_2_in_the_query_is_refused(raw: Raw) -> None:
    request = raw.request("ListTasks", {}, version=False)
    request.url = request.url.copy_merge_params({"A2A-Version": "2.0"})
    expect_error(await raw.send(request), -32009)


async def test_query_version_does_not_leak_into_list_params(raw: Raw) -> None:
    request = raw.request("ListTasks", {"pageSize": 5}, version=False)
    request.url = request.url.copy_merge_params({"A2A-Version": "1.0"})
    assert (await raw.send(request)).result["tasks"] == []


async def test_patch_version_is_accepted(raw: Raw) -> None:
    outcome = await raw.call("ListTasks", {}, headers={"A2A-Version": "1.0.1"})
    assert outcome.result["tasks"] == []


async def test_missing_version_on_a_stream_is_a_plain_error(raw: Raw) -> None:
    request = raw.request("SendStreamingMessage", send_params("stream:1"), version=False, accept="text/event-stream")
    expect_error(await raw.send(request), -32009)


async def test_card_needs_no_version(raw: Raw) -> None:
    response = await raw.http.get(raw.base_url + "/.well-known/agent-card.json")
    assert response.status_code == 200
    interfaces = response.json()["supportedInterfaces"]
    assert {"JSONRPC", "HTTP+JSON"} <= {i["protocolBinding"] for i in interfaces}
    assert all(i["protocolVersion"] == "1.0" for i in interfaces)
