"""Interop driver: the a2a-sdk's own client talking to an A2A 1.0 server.

Runs ONLY under the SDK venv (see sdk_env.py). Usage::

    python sdk_client.py --url BASE_URL --binding JSONRPC|HTTP+JSON \
        --scenario send|stream|get|cancel|card [--token T]

The card is resolved from BASE_URL and the client is restricted to the
given binding. Each result is one JSON line on stdout:
``{"scenario", "step", "data"}`` with ``data`` the ProtoJSON of the object
as the SDK parsed it. On failure: ``{"error": "<Type>: <message>"}``, exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
)
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message as ProtoMessage

BINDINGS = ("JSONRPC", "HTTP+JSON")
SCENARIOS = ("send", "stream", "get", "cancel", "card")
# The SDK's own default is 5 s; a slow CI box must not turn into a false failure.
TIMEOUT_S = 30.0


def emit(scenario: str, step: str, obj: ProtoMessage) -> None:
    line = {"scenario": scenario, "step": step, "data": MessageToDict(obj)}
    print(json.dumps(line), flush=True)


def user_message(text: str) -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])


async def send_once(client: Client, request: SendMessageRequest, ctx: ClientCallContext) -> StreamResponse:
    """Non-streaming send: the SDK still hands back an iterator of exactly one item."""
    replies = [r async for r in client.send_message(request, context=ctx)]
    if len(replies) != 1:
        raise RuntimeError(f"expected one reply, got {len(replies)}")
    return replies[0]


def task_of(reply: StreamResponse) -> Task:
    if not reply.HasField("task"):
        raise RuntimeError(f"expected a Task, got {reply.WhichOneof('payload')}")
    return reply.task


async def run(args: argparse.Namespace) -> None:
    # One shared httpx client: lets us set the timeout; the factory adds the
    # A2A-Version header to it, and we close it ourselves.
    async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
        config = ClientConfig(
            httpx_client=http,
            supported_protocol_bindings=[args.binding],
            # Only "stream" uses SendStreamingMessage; the others must hit
            # SendMessage, which the SDK uses only when streaming is off.
            streaming=args.scenario == "stream",
        )
        factory = ClientFactory(config)  # before resolving: sets A2A-Version on `http`
        card: AgentCard = await A2ACardResolver(http, args.url).get_agent_card()
        if args.scenario == "card":
            emit("card", "card", card)
            return

        headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
        # Service parameters become HTTP headers on every call (not on the card fetch).
        ctx = ClientCallContext(service_parameters=headers, timeout=TIMEOUT_S)
        client = factory.create(card)
        try:
            await SCENARIO_RUNNERS[args.scenario](client, ctx)
        finally:
            await client.close()


async def scenario_send(client: Client, ctx: ClientCallContext) -> None:
    reply = await send_once(client, SendMessageRequest(message=user_message("hello interop")), ctx)
    emit("send", "reply", reply)


async def scenario_stream(client: Client, ctx: ClientCallContext) -> None:
    request = SendMessageRequest(message=user_message("stream:3"))
    async for event in client.send_message(request, context=ctx):
        emit("stream", "event", event)


async def scenario_get(client: Client, ctx: ClientCallContext) -> None:
    reply = await send_once(client, SendMessageRequest(message=user_message("stream:2")), ctx)
    emit("get", "send", reply)
    task = await client.get_task(GetTaskRequest(id=task_of(reply).id), context=ctx)
    emit("get", "get", task)


async def scenario_cancel(client: Client, ctx: ClientCallContext) -> None:
    request = SendMessageRequest(message=user_message("hold:30"))
    request.configuration.return_immediately = True
    reply = await send_once(client, request, ctx)
    emit("cancel", "send", reply)
    task_id = task_of(reply).id
    emit("cancel", "cancel", await client.cancel_task(CancelTaskRequest(id=task_id), context=ctx))
    emit("cancel", "get", await client.get_task(GetTaskRequest(id=task_id), context=ctx))


SCENARIO_RUNNERS: dict[str, Any] = {
    "send": scenario_send,
    "stream": scenario_stream,
    "get": scenario_get,
    "cancel": scenario_cancel,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="base URL; the card is read from it")
    parser.add_argument("--binding", required=True, choices=BINDINGS)
    parser.add_argument("--scenario", required=True, choices=SCENARIOS)
    parser.add_argument("--token", help="bearer token sent on every A2A call")
    args = parser.parse_args()
    try:
        asyncio.run(run(args))
    except Exception as exc:  # noqa: BLE001 - every failure reported the same parseable way
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
