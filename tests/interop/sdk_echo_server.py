"""Reference A2A 1.0 echo agent built on the a2a-sdk's own server classes.

Runs ONLY under the SDK venv (see sdk_env.py): its ``a2a`` package is the
reference SDK, not ours. Usage::

    python sdk_echo_server.py --port P      (0, the default: any free port)

Serves both bindings from one base URL, the layout the SDK itself documents
(JSON-RPC at ``POST /``, HTTP+JSON at the root plus ``/{tenant}/...``), and
the card at ``/.well-known/agent-card.json``. Prints ``READY <base url>`` on
stdout once listening; everything else goes to stderr.

Behaviour by message text: ``stream:N`` streams N chunks into one artifact,
``hold:S`` works for S seconds (cancellable), ``fail`` raises at once (no
task), ``fail:working`` raises once the task is WORKING (the error then
arrives inside a stream), anything else is echoed back as a plain agent
Message.
"""

# The `a2a` imported here is the reference SDK, which ruff takes for our first-party package
# (and splits by which submodules happen to exist in ours): keep the SDK's imports as written.
# ruff: noqa: I001

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette

log = logging.getLogger("sdk_echo_server")


class EchoExecutor(AgentExecutor):
    """Echo agent whose behaviour is chosen by a prefix of the message text."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        command, _, arg = text.partition(":")
        if command == "stream" and arg.isdigit():
            await self._stream(context, event_queue, int(arg))
        elif command == "hold" and _is_number(arg):
            await self._hold(context, event_queue, float(arg))
        elif command == "fail":
            if arg == "working":
                await _start_task(context, event_queue)
            # What the SDK makes of an agent that crashes: its InternalError, on every binding.
            raise RuntimeError("the echo agent failed on purpose")
        else:
            # No task at all: a single Message is the whole answer.
            await event_queue.enqueue_event(
                Message(
                    role=Role.ROLE_AGENT,
                    message_id=str(uuid.uuid4()),
                    context_id=context.context_id or "",
                    parts=[Part(text=text)],
                )
            )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The SDK awaits this before cancelling execute(), so the CANCELED
        # status written here still reaches the open event queue.
        await _updater(context, event_queue).cancel()

    async def _stream(self, context: RequestContext, queue: EventQueue, n: int) -> None:
        updater = await _start_task(context, queue)
        artifact_id = str(uuid.uuid4())
        for i in range(n):
            # Same artifact id throughout: chunks after the first append.
            await updater.add_artifact(
                [Part(text=f"chunk {i}")],
                artifact_id=artifact_id,
                name="echo-stream",
                append=i > 0,
                last_chunk=i == n - 1,
            )
        await updater.complete()

    async def _hold(self, context: RequestContext, queue: EventQueue, seconds: float) -> None:
        updater = await _start_task(context, queue)
        # A CancelTask cancels this coroutine (CancelledError in the sleep);
        # cancel() above has already written the terminal state by then.
        await asyncio.sleep(seconds)
        await updater.complete()


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _updater(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    return TaskUpdater(queue, context.task_id or "", context.context_id or "")


async def _start_task(context: RequestContext, queue: EventQueue) -> TaskUpdater:
    """Enqueue the initial Task (the SDK needs it before any update), then WORKING."""
    assert context.message is not None and context.task_id and context.context_id
    await queue.enqueue_event(
        Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message],
        )
    )
    updater = _updater(context, queue)
    await updater.start_work()
    return updater


def build_card(base_url: str) -> AgentCard:
    # Both interfaces share the base URL: JSON-RPC posts to it, REST appends paths.
    return AgentCard(
        name="sdk-echo",
        description="a2a-sdk reference echo agent for interop tests",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base_url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base_url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="echo",
                description="Echoes text; 'stream:N' and 'hold:S' start tasks.",
                tags=["echo", "test"],
                examples=["hello", "stream:3", "hold:5"],
            )
        ],
    )


def build_app(base_url: str) -> Starlette:
    card = build_card(base_url)
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(), agent_card=card)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()  # leave no agent task pending at shutdown

    # Order matters: REST adds a catch-all Mount('/{tenant}'), so it goes last.
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


async def serve(port: int) -> None:
    # Bind first, so that port 0 works: the card must name the port actually bound,
    # and nobody can take it between choosing and listening.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(
        build_app(base_url),
        log_config=None,  # keep uvicorn's access log off stdout; root logger -> stderr
        timeout_graceful_shutdown=2,  # open SSE streams must not stall SIGTERM
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))  # installs SIGINT/SIGTERM handlers
    while not server.started:
        if task.done():
            await task  # startup failed (e.g. port taken): surface the error
            raise SystemExit(1)
        await asyncio.sleep(0.05)
    print(f"READY {base_url}", flush=True)
    await task


def _exit_cleanly(signum: int, frame: object) -> None:
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal
    # to the handler that was there before; make that one exit with 0.
    raise SystemExit(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: any free port)")
    parser.add_argument("--debug", action="store_true", help="SDK debug logs (request bodies)")
    args = parser.parse_args()
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.debug else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    signal.signal(signal.SIGTERM, _exit_cleanly)
    asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
