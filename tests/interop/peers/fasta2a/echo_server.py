"""An agent on fasta2a (pydantic-ai's A2A server) without a model, for our client and CLI.

    python echo_server.py [--port N] [--token T]

Runs in the fasta2a venv (``peers/fasta2a_env.py``). Its worker answers every message with an
artifact "echo: <text>" and completes the task. ``ask`` asks a question instead (the task ends
input-required); the next message in that context is the answer: fasta2a makes every message a
new task (it ignores ``taskId``), so the answer's task, in the same context, completes with
"answered: <text>". (No long-running skill: fasta2a's in-memory broker runs one operation at a
time, so a cancel would only arrive after the run.) Prints ``READY http://127.0.0.1:PORT`` once
it listens.

fasta2a has no authentication of its own. With ``--token``, the app is wrapped in an ASGI
middleware that requires ``Authorization: Bearer T`` on everything but the card, as a
deployment would put in front of it.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fasta2a import FastA2A, Worker
from fasta2a.broker import InMemoryBroker
from fasta2a.schema import Artifact, Message, TaskIdParams, TaskSendParams
from fasta2a.storage import InMemoryStorage

#: Contexts whose last task asked a question: their next message is the answer (one worker).
AWAITING: set[str] = set()


class EchoWorker(Worker[list[Message]]):
    """Echoes the message's text as the task's artifact; no model."""

    async def run_task(self, params: TaskSendParams) -> None:
        task_id, context_id = params["id"], params["context_id"]
        message = params["message"]
        text = "".join(part.get("text", "") for part in message["parts"])
        await self.storage.update_task(task_id, state="working")
        if text.strip() == "ask":
            AWAITING.add(context_id)
            question = Message(
                role="agent", parts=[{"text": "which one?"}], message_id=str(uuid.uuid4()), context_id=context_id
            )
            await self.storage.update_task(task_id, state="input-required", new_messages=[question])
            return
        reply = f"echo: {text}"
        if context_id in AWAITING:
            AWAITING.discard(context_id)
            reply = f"answered: {text}"
        artifact = Artifact(artifact_id=str(uuid.uuid4()), name="echo", parts=[{"text": reply}])
        answer = Message(role="agent", parts=[{"text": reply}], message_id=str(uuid.uuid4()), context_id=context_id)
        await self.storage.update_task(task_id, state="completed", new_artifacts=[artifact], new_messages=[answer])

    async def cancel_task(self, params: TaskIdParams) -> None:
        await self.storage.update_task(params["id"], state="canceled")

    def build_message_history(self, history: list[Message]) -> list[Any]:
        return list(history)

    def build_artifacts(self, result: Any) -> list[Artifact]:
        return []


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[MutableMapping[str, Any]], Awaitable[None]]],
    Awaitable[None],
]


def bearer_required(app: ASGIApp, token: str) -> ASGIApp:
    """``app`` behind a bearer token check (HTTP requests; the card stays public)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] == "/.well-known/agent-card.json":
            await app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, expected):
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
    parser.add_argument("--token", help="require this bearer token (everything but the card)")
    args = parser.parse_args()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    storage: InMemoryStorage[list[Message]] = InMemoryStorage()
    broker = InMemoryBroker()
    worker = EchoWorker(broker=broker, storage=storage)

    @asynccontextmanager
    async def lifespan(app: FastA2A) -> AsyncIterator[None]:
        async with app.task_manager, worker.run():
            yield

    app = FastA2A(
        storage=storage,
        broker=broker,
        name="fasta2a-echo",
        url=url,
        description="Echo agent on fasta2a (interop tests)",
        skills=[
            {
                "id": "echo",
                "name": "Echo",
                "description": "Echoes text back",
                "tags": ["echo"],
                "input_modes": ["text/plain"],
                "output_modes": ["text/plain"],
            }
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        lifespan=lifespan,
    )
    served: Any = bearer_required(app, args.token) if args.token else app
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", lifespan="on"))

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.05)
        print(f"READY {url}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
