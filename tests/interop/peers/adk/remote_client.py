"""Google ADK's ``RemoteA2aAgent`` against an A2A server, one scenario per run.

    python remote_client.py --url BASE --scenario send|multi_turn|stream|input_required [--no-streaming]
        [--token T]

Runs in an ADK venv, 2.x (a2a-sdk 1.x) or 1.x (a2a-sdk 0.3). The RemoteA2aAgent is the root
agent of an ADK ``Runner`` (no model is involved: it only relays to the remote agent),
resolving the server's card from ``BASE`` (ADK's own card checks apply). Prints one JSON line per ADK event:
``{"turn", "author", "texts", "calls", "partial"}``; an exception or an ADK error event ends
the run with exit 1 and its message on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import warnings
from typing import Any

import httpx
from a2a.client.client_factory import ClientFactory
from google.adk.agents.remote_a2a_agent import RemoteA2aAgent
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

warnings.filterwarnings("ignore", category=UserWarning)  # ADK's EXPERIMENTAL notes, on every call

APP, USER = "a2a-net-interop", "interop-user"


def client_config(http: httpx.AsyncClient, streaming: bool) -> Any:
    """The a2a-sdk client config ADK would make itself, with ``streaming`` chosen.

    ADK 2.x (a2a-sdk 1.x or 0.3) builds it through its ``_compat`` module; ADK 1.x has none and
    passes a2a-sdk 0.3's ``ClientConfig`` the two transports it supports, as done here.
    """
    try:
        from google.adk.a2a import _compat
    except ImportError:
        from a2a.client import ClientConfig
        from a2a.types import TransportProtocol

        transports: list[Any] = [TransportProtocol.jsonrpc, TransportProtocol.http_json]
        return ClientConfig(httpx_client=http, streaming=streaming, supported_transports=transports)
    return _compat.make_client_config(httpx_client=http, streaming=streaming)


def emit(turn: int, event: Any) -> dict[str, Any]:
    parts = event.content.parts if event.content and event.content.parts else []
    line = {
        "turn": turn,
        "author": event.author,
        "texts": [p.text for p in parts if p.text and not p.thought],
        "calls": [{"id": p.function_call.id, "name": p.function_call.name} for p in parts if p.function_call],
        "partial": bool(event.partial),
    }
    print(json.dumps(line), flush=True)
    if event.error_code or event.error_message:
        # ADK reports a failed delegation (card refused, transport error) as an event, not
        # an exception: a scenario must fail on it, not pass with no text.
        raise SystemExit(f"ADK error event: {event.error_code}: {event.error_message}")
    return line


async def run(url: str, scenario: str, streaming: bool, token: str | None) -> None:
    # A bearer token goes on every request (the card's too), the way an ADK user passes one.
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        # ADK's default client config decides streaming from the card; make the choice explicit.
        factory = ClientFactory(config=client_config(http, streaming))
        remote = RemoteA2aAgent(name="remote", agent_card=url, a2a_client_factory=factory, httpx_client=http)
        sessions = InMemorySessionService()
        runner = Runner(app_name=APP, agent=remote, session_service=sessions)
        session = await sessions.create_session(app_name=APP, user_id=USER)

        async def turn(number: int, *parts: types.Part) -> list[dict[str, Any]]:
            message = types.Content(role="user", parts=list(parts))
            return [
                emit(number, event)
                async for event in runner.run_async(user_id=USER, session_id=session.id, new_message=message)
            ]

        if scenario == "send":
            await turn(1, types.Part(text="hello adk"))
        elif scenario == "stream":
            await turn(1, types.Part(text="stream:3"))
        elif scenario == "multi_turn":
            await turn(1, types.Part(text="first"))
            await turn(2, types.Part(text="second"))
        elif scenario == "input_required":
            asked = await turn(1, types.Part(text="hi"))
            calls = [c for line in asked for c in line["calls"]]
            if not calls:
                raise SystemExit(f"no input-required function call in {asked}")
            call = calls[-1]
            answer = types.FunctionResponse(id=call["id"], name=call["name"], response={"result": "Ada"})
            await turn(2, types.Part(function_response=answer))
        else:
            raise SystemExit(f"unknown scenario {scenario}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--token")
    args = parser.parse_args()
    asyncio.run(run(args.url, args.scenario, not args.no_streaming, args.token))


if __name__ == "__main__":
    main()
