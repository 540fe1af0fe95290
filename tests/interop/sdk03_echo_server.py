"""An A2A 0.3 echo agent built on a2a-sdk 0.3's own server classes.

Runs ONLY under the 0.3 SDK venv (see sdk03_env.py): its ``a2a`` package is a2a-sdk 0.3, not
ours. Serves JSON-RPC at ``POST /`` (or, with ``--rest``, only 0.3's HTTP+JSON paths under
``/v1``) and the 0.3 card at ``/.well-known/agent-card.json``; prints ``READY <base url>`` on
stdout once listening. With ``--token T`` every request but the card's needs
``Authorization: Bearer T`` (a2a-sdk 0.3 checks no credentials itself: an ASGI check in front of
it, as a deployment would put one) and the card declares the scheme.

By message text: ``stream:N`` streams N chunks into one artifact (``slow:N``: 0.3 s apart),
``hold:S`` works for S seconds (cancellable), ``ask`` asks a question (input-required; the
answer completes the task), anything else is echoed back as a plain agent Message.
"""

# ruff: noqa: I001 - the ``a2a`` imported here is the SDK's, which ruff takes for ours

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Part,
    SecurityScheme,
    TaskState,
    TextPart,
)
from a2a.utils import new_agent_text_message, new_task


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task = context.current_task
        if task is not None and task.status.state == TaskState.input_required:
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.complete(updater.new_agent_message([Part(root=TextPart(text=f"answered: {text}"))]))
            return
        if not (text.startswith(("stream:", "slow:", "hold:")) or text == "ask"):
            await event_queue.enqueue_event(new_agent_text_message(text, context.context_id))
            return
        assert context.message is not None
        task = new_task(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if text.startswith(("stream:", "slow:")):
            count = int(text.split(":")[1])
            for i in range(count):
                if text.startswith("slow:"):
                    await asyncio.sleep(0.3)  # time for a test to cut the connection between chunks
                await updater.add_artifact(
                    [Part(root=TextPart(text=f"chunk {i}"))],
                    artifact_id="echo-stream",
                    name="echo-stream",
                    append=i > 0,
                    last_chunk=i == count - 1,
                )
            await updater.complete()
        elif text.startswith("hold:"):
            seconds = float(text[5:])
            await updater.update_status(
                TaskState.working, updater.new_agent_message([Part(root=TextPart(text="holding"))])
            )
            await asyncio.sleep(seconds)
            await updater.complete()
        else:
            question = updater.new_agent_message([Part(root=TextPart(text="which one?"))])
            await updater.update_status(TaskState.input_required, question, final=True)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


Asgi = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")


def bearer_required(app: Asgi, token: str) -> Asgi:
    """``app`` behind a bearer token check on every HTTP request but the card's: 401 otherwise."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in CARD_PATHS:
            await app(scope, receive, send)
            return
        presented = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(presented, expected):
            await app(scope, receive, send)
            return
        body = json.dumps({"error": "a bearer token is required"}).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return guarded


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--rest", action="store_true", help="serve HTTP+JSON (REST) only, not JSON-RPC")
    parser.add_argument("--token", help="require this bearer token (everything but the card)")
    args = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", args.port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    card = AgentCard(
        name="Echo03",
        description="a2a-sdk 0.3 echo agent",
        url=url + "/",
        preferred_transport="HTTP+JSON" if args.rest else "JSONRPC",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echo", tags=["echo"])],
    )
    if args.token:
        scheme = SecurityScheme(root=HTTPAuthSecurityScheme(scheme="bearer"))
        card = card.model_copy(update={"security_schemes": {"bearer": scheme}, "security": [{"bearer": []}]})
    handler = DefaultRequestHandler(
        agent_executor=Echo(),
        task_store=InMemoryTaskStore(),
        push_config_store=InMemoryPushNotificationConfigStore(),
    )
    if args.rest:
        app = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler).build()
    else:
        app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    served: Any = bearer_required(app, args.token) if args.token else app
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            serving.result()
            return
        await asyncio.sleep(0.05)
    print(f"READY {url}", flush=True)
    await serving


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
