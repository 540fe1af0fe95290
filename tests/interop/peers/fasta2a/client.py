"""fasta2a's client (``fasta2a.client.A2AClient``) against an A2A server, one scenario per run.

    python client.py --url BASE --scenario send|stream

Runs in the fasta2a venv. The client reads the card (``fetch_card``), posts JSON-RPC with the
0.3 method names (``message/send``, ``message/stream``, ``tasks/get``) and no ``A2A-Version``
header, so the server must serve A2A 0.3 there. Prints one JSON line per step:
``{"step", "data"}``; an exception ends the run with exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from typing import Any

from fasta2a.client import A2AClient
from fasta2a.schema import Message


def emit(step: str, data: Any) -> None:
    print(json.dumps({"step": step, "data": data}, default=str), flush=True)


def message(text: str) -> Message:
    return Message(role="user", parts=[{"text": text}], message_id=uuid.uuid4().hex)


async def run(url: str, scenario: str) -> None:
    client = A2AClient(url, fetch_card=True)
    emit("card", client.agent_card)
    async with client.http_client:
        if scenario == "send":
            sent = await client.send_message(message("hello fasta2a"))
            emit("sent", sent)
            if "error" in sent:
                raise SystemExit(f"message/send answered an error: {sent['error']}")
            # fasta2a reads the result in the 1.0 shape ({"message": ...} or {"task": ...}),
            # whatever the method name it sent: anything else parses as an empty result.
            result = sent.get("result") or {}
            if "task" in result:
                emit("got", await client.get_task(result["task"]["id"]))
            elif "message" not in result:
                raise SystemExit(f"message/send answered neither a message nor a task fasta2a reads: {sent}")
        elif scenario == "stream":
            events = 0
            async for event in client.stream_message(message("hello stream")):
                emit("event", event)
                events += 1
                if "error" in event:
                    raise SystemExit(f"message/stream answered an error: {event['error']}")
                if not event.get("result"):
                    raise SystemExit(f"message/stream sent an event fasta2a reads as empty: {event}")
            if not events:
                raise SystemExit("message/stream answered no event")
        else:
            raise SystemExit(f"unknown scenario {scenario}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--scenario", required=True)
    args = parser.parse_args()
    asyncio.run(run(args.url, args.scenario))


if __name__ == "__main__":
    main()
