"""A Google ADK agent served by ADK's ``to_a2a()``, for our client, CLI and supervisor.

    python echo_server.py [--port N] [--streaming]

Runs in an ADK venv, 2.x or 1.x (``peers/adk_env.py``), never in ours. The agent is a custom ``BaseAgent``
that answers without a model: it replies with the text it was sent (``to_a2a`` makes a task
of every reply), ``stream:N`` makes N partial events before the final one, and ``hold:S``
waits S seconds before answering. Prints
``READY http://127.0.0.1:PORT`` once it listens. The card is ADK's own, built by ``to_a2a``;
``--streaming`` builds it with ADK's ``AgentCardBuilder`` declaring streaming, as an ADK 1.x
user must for a streaming agent (1.x's default card declares no capability).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import warnings
from collections.abc import AsyncGenerator

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
        text = "".join(p.text or "" for p in parts)
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--streaming", action="store_true")
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
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

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
