"""A Google ADK agent served by ADK's ``to_a2a()``, for our client, CLI and supervisor.

    python echo_server.py [--port N] [--streaming] [--token T]

Runs in an ADK venv, 2.x or 1.x (``peers/adk_env.py``), never in ours. The agent is a custom ``BaseAgent``
that answers without a model: it replies with the text it was sent (``to_a2a`` makes a task
of every reply), ``stream:N`` makes N partial events before the final one, and ``hold:S``
waits S seconds before answering. ``ask`` calls a
long-running function ``ask_user`` (ADK's way to wait for input: ``to_a2a`` ends the task
input-required, the call a data part of its status message); a function response to it, sent
to the same task, completes it with "answered: <response's answer>". Prints
``READY http://127.0.0.1:PORT`` once it listens. The card is ADK's own, built by ``to_a2a``;
``--streaming`` builds it with ADK's ``AgentCardBuilder`` declaring streaming, as an ADK 1.x
user must for a streaming agent (1.x's default card declares no capability).

ADK's ``to_a2a()`` has no authentication of its own. With ``--token``, its app is wrapped in an
ASGI check that requires ``Authorization: Bearer T`` on everything but the card, as a
deployment would put in front of it.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import re
import socket
import uuid
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from typing import Any

import uvicorn
from google.adk.a2a.utils.agent_card_builder import AgentCardBuilder
from google.adk.a2a.utils.agent_to_a2a import to_a2a
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.genai import types

from a2a.types import AgentCapabilities

# ADK flags its A2A code EXPERIMENTAL on every call; the test log needs none of that.
warnings.filterwarnings("ignore", category=UserWarning)


class EchoAgent(BaseAgent):
    """Replies with the user's text; no model involved."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        parts = ctx.user_content.parts if ctx.user_content and ctx.user_content.parts else []
        answers = [p.function_response for p in parts if p.function_response and p.function_response.name == "ask_user"]
        if answers:
            answer = (answers[0].response or {}).get("answer")
            yield Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                content=types.Content(role="model", parts=[types.Part(text=f"answered: {answer}")]),
            )
            return
        text = "".join(p.text or "" for p in parts)
        if text.strip() == "ask":
            call = types.FunctionCall(id=f"ask-{uuid.uuid4().hex}", name="ask_user", args={"question": "which one?"})
            yield Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                content=types.Content(role="model", parts=[types.Part(function_call=call)]),
                long_running_tool_ids={call.id or ""},
            )
            return
        streamed = re.search(r"\bstream:(\d+)", text)
        held = re.search(r"\bhold:(\d+(?:\.\d+)?)", text)
        if held:  # a task still running when its cancel arrives
            await asyncio.sleep(min(float(held.group(1)), 60.0))
        for i in range(min(int(streamed.group(1)), 100) if streamed else 0):
            yield Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                partial=True,
                content=types.Content(role="model", parts=[types.Part(text=f"chunk {i}")]),
            )
            await asyncio.sleep(0)
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=f"echo: {text}")]),
        )


ASGIApp = Callable[[MutableMapping[str, Any], Any, Any], Awaitable[None]]


def bearer_required(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` behind a bearer token check (HTTP requests; the card stays public)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] == "/.well-known/agent-card.json":
            await app(scope, receive, send)
            return
        if hmac.compare_digest(dict(scope["headers"]).get(b"authorization", b""), expected):
            await app(scope, receive, send)
            return
        body = json.dumps({"error": "a bearer token is required"}).encode()
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return guarded


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--streaming", action="store_true")
    parser.add_argument("--token", help="require this bearer token (everything but the card)")
    args = parser.parse_args()
    # Bind first, so the card names the port really listened on (port 0: the OS picks).
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    agent = EchoAgent(name="echo", description="Echoes text back (ADK custom agent, no model)")
    card = None
    if args.streaming:
        capabilities = AgentCapabilities(streaming=True)
        builder = AgentCardBuilder(agent=agent, rpc_url=f"http://127.0.0.1:{port}/", capabilities=capabilities)
        card = asyncio.run(builder.build())
    app = to_a2a(agent, host="127.0.0.1", port=port, agent_card=card)
    served: Any = bearer_required(app, args.token) if args.token else app
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", lifespan="on"))

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                task.result()  # raises what stopped it
            await asyncio.sleep(0.05)
        print(f"READY http://127.0.0.1:{port}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
