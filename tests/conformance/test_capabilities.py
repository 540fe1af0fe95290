"""Capabilities are enforced: push notifications, streaming and the extended agent card."""

from __future__ import annotations

import pytest

from a2a import A2AClient, Agent, BearerAuth, BearerToken, RequestContext
from a2a.errors import (
    AuthenticationRequiredError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    ProtocolError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)
from a2a.types import AgentCapabilities, AgentCard, Part, Task

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import Gate, Raw, bounded, collect, expect_error, load_module, send_params, user_message

PUSH_CONFIG = {"url": "https://example.com/webhook", "token": "t"}

PUSH_CALLS = [
    ("CreateTaskPushNotificationConfig", {"taskId": "some-task", **PUSH_CONFIG}),
    ("GetTaskPushNotificationConfig", {"taskId": "some-task", "id": "cfg-1"}),
    ("ListTaskPushNotificationConfigs", {"taskId": "some-task"}),
    ("DeleteTaskPushNotificationConfig", {"taskId": "some-task", "id": "cfg-1"}),
]


def _echo(*, extended: AgentCard | None = None, declare: bool = False, streaming: bool = True) -> Agent:
    agent: Agent = load_module("echo_agent.py").agent
    agent.extended_card = extended
    agent.declare_extended_card = declare
    agent.streaming = streaming
    return agent


async def test_card_says_push_is_off(client: A2AClient) -> None:
    card = await client.get_card()
    assert card.capabilities.push_notifications is False


@pytest.mark.parametrize(("method", "params"), PUSH_CALLS, ids=[name for name, _ in PUSH_CALLS])
async def test_push_config_operations_are_not_supported(raw: Raw, method: str, params: dict[str, object]) -> None:
    expect_error(await raw.call(method, params), -32003)


async def test_push_config_on_a_real_task_is_not_supported(raw: Raw) -> None:
    task = (await raw.call("SendMessage", send_params("stream:1"))).result["task"]
    expect_error(await raw.call("CreateTaskPushNotificationConfig", {"taskId": task["id"], **PUSH_CONFIG}), -32003)


async def test_push_config_inside_send_message_is_not_supported(raw: Raw) -> None:
    params = send_params("stream:1", configuration={"taskPushNotificationConfig": PUSH_CONFIG})
    expect_error(await raw.call("SendMessage", params), -32003)


async def test_streaming_off_refuses_both_streaming_operations(serve: StartServer, open_raw: OpenRaw) -> None:
    server = await serve(_echo(streaming=False))
    raw = open_raw(server)
    async with raw.stream("SendStreamingMessage", send_params("stream:1")) as stream:
        expect_error(await stream.outcome(), -32004)
    task = (await raw.call("SendMessage", send_params("stream:1"))).result["task"]
    async with raw.stream("SubscribeToTask", {"id": task["id"]}) as stream:
        expect_error(await stream.outcome(), -32004)
    await raw.ok()


# ---- GetExtendedAgentCard ------------------------------------------------------------------


async def test_extended_card_capability_off_is_unsupported(raw: Raw, client: A2AClient) -> None:
    assert (await client.get_card()).capabilities.extended_agent_card is False
    expect_error(await raw.call("GetExtendedAgentCard"), -32004)


async def test_extended_card_capability_off_is_unsupported_even_when_authenticated(
    serve: StartServer, open_raw: OpenRaw
) -> None:
    server = await serve(_echo(), auth=[BearerAuth(credentials={"tok": "alice"})])
    outcome = await open_raw(server).call("GetExtendedAgentCard", headers={"Authorization": "Bearer tok"})
    expect_error(outcome, -32004)


async def test_extended_card_declared_but_not_configured(serve: StartServer, open_raw: OpenRaw) -> None:
    server = await serve(_echo(declare=True), auth=[BearerAuth(credentials={"tok": "alice"})])
    raw = open_raw(server)
    card = (await raw.http.get(f"{server.url}/.well-known/agent-card.json")).json()
    assert card["capabilities"]["extendedAgentCard"] is True
    outcome = await raw.call("GetExtendedAgentCard", headers={"Authorization": "Bearer tok"})
    expect_error(outcome, -32007)


def _extended_card() -> AgentCard:
    return AgentCard(
        name="Echo (extended)",
        description="More skills for known callers",
        version="1.0.0",
        supported_interfaces=[],
        capabilities=AgentCapabilities(),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[],
    )


async def test_extended_card_is_returned_to_an_authenticated_caller(
    serve: StartServer, open_client: OpenClient
) -> None:
    server = await serve(_echo(extended=_extended_card()), auth=[BearerAuth(credentials={"tok": "alice"})])
    client = await open_client(server, credentials=BearerToken("tok"))
    assert (await bounded(client.get_card())).capabilities.extended_agent_card is True
    got = await bounded(client.get_extended_card())
    assert got.name == "Echo (extended)"


async def test_extended_card_needs_authentication(serve: StartServer, open_raw: OpenRaw) -> None:
    server = await serve(_echo(declare=True), auth=[BearerAuth(credentials={"tok": "alice"})])
    outcome = await open_raw(server).call("GetExtendedAgentCard")
    expect_error(outcome, -32000, http_status=401)
    assert outcome.headers.get("WWW-Authenticate", "").startswith("Bearer")


async def test_extended_card_without_any_auth_scheme_is_not_offered(serve: StartServer, open_raw: OpenRaw) -> None:
    """Spec §3.1.11: GetExtendedAgentCard "is available only if
    AgentCard.capabilities.extendedAgentCard is true", and "The client MUST authenticate the
    request": a server that authenticates no one does not declare it, and answers
    "UnsupportedOperationError: The agent does not support authenticated extended cards"."""
    for agent in (_echo(declare=True), _echo(extended=_extended_card())):
        server = await serve(agent)
        raw = open_raw(server)
        card = (await raw.http.get(f"{server.url}/.well-known/agent-card.json")).json()
        assert card["capabilities"].get("extendedAgentCard") in (None, False)
        expect_error(await raw.call("GetExtendedAgentCard"), -32004)


async def test_client_raises_the_capability_errors(client: A2AClient) -> None:
    with pytest.raises(ProtocolError) as caught:
        await client.get_extended_card()
    assert caught.value.code == -32004


async def test_unsupported_output_mode_is_content_type_not_supported(raw: Raw) -> None:
    params = {"message": user_message("hi"), "configuration": {"acceptedOutputModes": ["image/png"]}}
    expect_error(await raw.call("SendMessage", params), -32005)


# ---- the same, through the client, on every binding ------------------------------------------
#
# The tests above check each refusal's wire form on HTTP; through the client, its error class
# and code hold on every binding.


async def test_client_push_config_operations_are_not_supported(client: A2AClient) -> None:
    calls = [
        client.create_push_config("some-task", "https://example.com/webhook", token="t"),
        client.get_push_config("some-task", "cfg-1"),
        client.list_push_configs("some-task"),
        client.delete_push_config("some-task", "cfg-1"),
    ]
    for call in calls:
        with pytest.raises(PushNotificationNotSupportedError) as caught:
            await bounded(call)
        assert caught.value.code == -32003


async def test_client_streaming_off_refuses_both_streaming_operations(
    serve: StartServer, open_client: OpenClient
) -> None:
    client = await open_client(await serve(_echo(streaming=False)))
    with pytest.raises(UnsupportedOperationError):
        await collect(client.stream("stream:1"))
    task = await bounded(client.send("stream:1"))
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperationError):
        await collect(client.subscribe(task.id))
    assert (await bounded(client.list_tasks())).tasks, "the connection still serves"


async def test_client_extended_card_declared_but_not_configured(serve: StartServer, open_client: OpenClient) -> None:
    """Spec §3.1.11: "ExtendedAgentCardNotConfiguredError: The agent declares support but does
    not have an extended agent card configured"."""
    server = await serve(_echo(declare=True), auth=[BearerAuth(credentials={"tok": "alice"})])
    client = await open_client(server, credentials=BearerToken("tok"))
    assert (await bounded(client.get_card())).capabilities.extended_agent_card is True
    with pytest.raises(ExtendedAgentCardNotConfiguredError) as caught:
        await bounded(client.get_extended_card())
    assert caught.value.code == -32007


async def test_client_extended_card_needs_authentication(serve: StartServer, open_client: OpenClient) -> None:
    client = await open_client(await serve(_echo(declare=True), auth=[BearerAuth(credentials={"tok": "alice"})]))
    with pytest.raises(AuthenticationRequiredError):
        await bounded(client.get_extended_card())


async def test_client_unsupported_output_mode_is_content_type_not_supported(client: A2AClient) -> None:
    with pytest.raises(ContentTypeNotSupportedError) as caught:
        await bounded(client.send("hi", accepted_output_modes=["image/png"]))
    assert caught.value.code == -32005


@pytest.mark.needs_authentication
async def test_client_extended_card_without_authentication_is_not_offered(
    serve: StartServer, open_client: OpenClient
) -> None:
    """Spec §3.1.11: "UnsupportedOperationError: The agent does not support authenticated extended
    cards": a card configured on a server that authenticates no one is not offered."""
    client = await open_client(await serve(_echo(extended=_extended_card())))
    assert not (await bounded(client.get_card())).capabilities.extended_agent_card
    with pytest.raises(UnsupportedOperationError):
        await bounded(client.get_extended_card())


# ---- input modes: ContentTypeNotSupportedError -----------------------------------------------


def _modal_agent(gate: Gate, modes: list[str]) -> Agent:
    """Counts executions; accepts ``modes`` by default, JSON only in its skill "json"."""
    agent = Agent("Modal", description="Takes some media types", default_input_modes=modes)

    @agent.skill("text")
    async def text(ctx: RequestContext) -> None:
        gate.executions += 1
        await ctx.complete("text")

    @agent.skill("json", input_modes=["application/json"])
    async def json_skill(ctx: RequestContext) -> None:
        gate.executions += 1
        await ctx.complete("json")

    return agent


async def test_unsupported_input_media_type_is_content_type_not_supported_before_the_agent_runs(
    serve: StartServer, open_raw: OpenRaw, gate: Gate
) -> None:
    """Spec §3.1.1 errors: "ContentTypeNotSupportedError: A Media Type provided in the request's
    message parts is not supported by the agent." A data part is application/json, a file part
    its mediaType; none is accepted by ``defaultInputModes: ["text/plain"]``."""
    raw = open_raw(await serve(_modal_agent(gate, ["text/plain"])))
    refused = [
        {"data": {"a": 1}},
        {"raw": "aGk=", "mediaType": "image/png"},
        {"text": "# hi", "mediaType": "text/markdown"},
    ]
    for part in refused:
        message = {**user_message("x"), "parts": [{"text": "ok"}, part]}
        text = expect_error(await raw.call("SendMessage", {"message": message}), -32005)
        assert "accept" in text
    async with raw.stream("SendStreamingMessage", {"message": {**user_message("x"), "parts": refused[:1]}}) as stream:
        expect_error(await stream.outcome(), -32005)
    assert gate.executions == 0
    assert (await raw.call("ListTasks", {})).result["tasks"] == []
    plain = {**user_message("x"), "parts": [{"text": "ok", "mediaType": "text/plain; charset=utf-8"}]}
    assert not (await raw.call("SendMessage", {"message": plain})).is_error


async def test_client_input_modes_of_the_agent_and_of_the_chosen_skill(
    serve: StartServer, open_client: OpenClient, gate: Gate
) -> None:
    """Spec §3.1.1: "ContentTypeNotSupportedError: A Media Type provided in the request's message
    parts is not supported by the agent"; the chosen skill's ``inputModes`` override the agent's
    ``defaultInputModes`` (AgentSkill in a2a.proto). Wildcards (``text/*``) match every subtype."""
    client = await open_client(await serve(_modal_agent(gate, ["text/*"])))
    markdown = [Part(text="# hi", media_type="text/markdown")]
    assert isinstance(await bounded(client.send(markdown)), Task)
    with pytest.raises(ContentTypeNotSupportedError):
        await bounded(client.send([Part(data={"a": 1})]))
    # The skill "json" takes JSON only: a data part that names it is accepted, text is not.
    assert isinstance(await bounded(client.send([Part(data={"skill": "json", "a": 1})])), Task)
    with pytest.raises(ContentTypeNotSupportedError) as caught:
        await bounded(client.send([Part(data={"skill": "json"}), Part(text="hi")]))
    assert caught.value.code == -32005
    assert gate.executions == 2
