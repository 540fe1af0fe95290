"""a2a-sdk 0.3's JSON-RPC client against an agent, every operation once, one JSON line each.

Runs ONLY under the 0.3 SDK venv (see sdk03_env.py). Usage::

    python sdk03_client.py --url BASE_URL [--token T] [--transport JSONRPC|HTTP+JSON]

Prints ``{"step": NAME, "data": ...}`` (what the SDK parsed, as 0.3 JSON) or
``{"step": NAME, "error": "..."}`` per operation; one failing step does not stop the others.
"""

# ruff: noqa: I001 - the ``a2a`` imported here is the SDK's, which ruff takes for ours

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from a2a.client import A2ACardResolver
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.types import (
    GetTaskPushNotificationConfigParams,
    Message,
    MessageSendConfiguration,
    MessageSendParams,
    Part,
    PushNotificationConfig,
    Role,
    TaskIdParams,
    TaskPushNotificationConfig,
    TaskQueryParams,
    TextPart,
)


def dump(value: Any) -> Any:
    if isinstance(value, list):
        return [dump(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def params(
    text: str, *, blocking: bool = True, task_id: str | None = None, context_id: str | None = None
) -> MessageSendParams:
    message = Message(
        role=Role.user,
        parts=[Part(root=TextPart(text=text))],
        message_id=str(uuid.uuid4()),
        task_id=task_id,
        context_id=context_id,
    )
    return MessageSendParams(message=message, configuration=MessageSendConfiguration(blocking=blocking))


async def step(name: str, work: Callable[[], Awaitable[Any]]) -> Any:
    try:
        result = await work()
    except Exception as exc:  # noqa: BLE001 - reported, the next step still runs
        print(json.dumps({"step": name, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return None
    print(json.dumps({"step": name, "data": dump(result)}), flush=True)
    return result


def transport(http: httpx.AsyncClient, card: Any, name: str) -> Any:
    """The SDK's transport for the card's interface of that transport (0.3: ``url`` or
    ``additionalInterfaces``)."""
    urls = [card.url] if card.preferred_transport == name else []
    urls += [i.url for i in card.additional_interfaces or [] if i.transport == name]
    if name == "HTTP+JSON":
        return RestTransport(http, url=urls[0])
    return JsonRpcTransport(http, url=urls[0])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token")
    parser.add_argument("--transport", default="JSONRPC", choices=["JSONRPC", "HTTP+JSON"])
    parser.add_argument("--ask-url", help="an agent that asks a question (input-required), then completes")
    parser.add_argument("--push-url", default="http://127.0.0.1:9/hook", help="the webhook URL to register")
    parser.add_argument("--watch-url", help="a webhook to register on a running task, which is then cancelled")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        card = await step("card", lambda: A2ACardResolver(http, args.url).get_agent_card())
        if card is None:
            return
        rpc = transport(http, card, args.transport)

        await step("send", lambda: rpc.send_message(params("hello")))

        async def stream() -> list[Any]:
            return [event async for event in rpc.send_message_streaming(params("stream:3"))]

        events = await step("stream", stream)
        task_id = events[0].id if events else None
        if task_id:
            await step("get", lambda: rpc.get_task(TaskQueryParams(id=task_id)))

        held = await step("send-nonblocking", lambda: rpc.send_message(params("hold:30", blocking=False)))
        if held is not None and getattr(held, "id", None):
            await step("cancel", lambda: rpc.cancel_task(TaskIdParams(id=held.id)))

        short = await step("send-for-resubscribe", lambda: rpc.send_message(params("hold:1", blocking=False)))
        if short is not None and getattr(short, "id", None):

            async def follow() -> list[Any]:
                return [event async for event in rpc.resubscribe(TaskIdParams(id=short.id))]

            await step("resubscribe", follow)
            config = TaskPushNotificationConfig(
                task_id=short.id,
                push_notification_config=PushNotificationConfig(id="hook", url=args.push_url),
            )
            await step("push-set", lambda: rpc.set_task_callback(config))
            get = GetTaskPushNotificationConfigParams(id=short.id, push_notification_config_id="hook")
            await step("push-get", lambda: rpc.get_task_callback(get))

        # Only with a webhook to watch it: a task left holding would outlive the run.
        watched = None
        if args.watch_url:
            watched = await step("send-watched", lambda: rpc.send_message(params("hold:30", blocking=False)))
        if args.watch_url and watched is not None and getattr(watched, "id", None):
            hook = PushNotificationConfig(id="watch", url=args.watch_url, token="tok-03")
            watch = TaskPushNotificationConfig(task_id=watched.id, push_notification_config=hook)
            await step("push-set-watched", lambda: rpc.set_task_callback(watch))
            await step("cancel-watched", lambda: rpc.cancel_task(TaskIdParams(id=watched.id)))

        if args.ask_url:
            asking = await step("ask-card", lambda: A2ACardResolver(http, args.ask_url).get_agent_card())
            ask_rpc = transport(http, asking, args.transport)
            asked = await step("ask", lambda: ask_rpc.send_message(params("ask")))
            if asked is not None and getattr(asked, "id", None):
                answer = params("Ada", task_id=asked.id, context_id=asked.context_id)
                await step("answer", lambda: ask_rpc.send_message(answer))


if __name__ == "__main__":
    asyncio.run(main())
