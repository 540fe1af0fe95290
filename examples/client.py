"""Talk to an A2A agent from a script: read its card, send a message, follow a streamed task.

Start the echo agent (``a2a serve examples/echo_agent.py:agent --port 8000``), then::

    python examples/client.py http://127.0.0.1:8000

Credentials, when the agent wants them, come from ``$A2A_TOKEN`` or ``$A2A_API_KEY``.
"""

from __future__ import annotations

import argparse
import asyncio

from a2a import A2AClient
from a2a.client import credentials_from_env
from a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent


async def main(url: str, text: str, binding: str | None) -> None:
    # One client per agent: the card is fetched on first use and the first interface of the
    # card that this client speaks is chosen (or the one named by --binding).
    async with A2AClient(url, credentials=credentials_from_env(), binding=binding, timeout=30) as client:
        card = await client.get_card()
        print(f"agent: {card.name} {card.version}: {card.description}")
        print(f"skills: {', '.join(skill.id for skill in card.skills)}")
        assert client.interface is not None
        print(f"interface: {client.interface.protocol_binding} {client.interface.url}")

        # A plain text message: the echo agent answers with a Message (no task is created).
        reply = await client.send(text)
        if isinstance(reply, Message):
            print(f"reply: {reply.text}")
        else:
            print(f"task {reply.id}: {reply.status.state.value}")

        # "stream:3" makes the echo agent run a task that writes three chunks into one artifact.
        async for event in client.stream("stream:3"):
            payload = event.payload
            if isinstance(payload, Task):
                print(f"task {payload.id}: {payload.status.state.value}")
            elif isinstance(payload, TaskArtifactUpdateEvent):
                print(f"chunk: {''.join(p.text for p in payload.artifact.parts if isinstance(p.text, str))}")
            elif isinstance(payload, TaskStatusUpdateEvent):
                print(f"status: {payload.status.state.value}")
            else:
                print(f"message: {payload.text}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the agent's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("--text", default="hello from examples/client.py", help="the message to send")
    parser.add_argument("--binding", choices=["JSONRPC", "HTTP+JSON"], help="use this interface of the card")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.text, args.binding))
