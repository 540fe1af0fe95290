"""In-process A2A: a client transport that calls a ``RequestHandler`` directly.

The in-memory twin of the network bindings: the same handler, the same typed requests and
results, every object passed through the wire codec so that nothing is shared by reference.
Used for agents that run inside the caller's process and for fast tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from .client.client import A2AClient
from .protocol.codec import decoder_for, encode
from .protocol.methods import MethodSpec
from .server.agent import Agent
from .server.app import A2AServer
from .server.handler import CallContext, RequestHandler
from .server.store import TaskStore
from .transport.base import ClientTransport, StreamItem
from .types import AgentCard, AgentInterface, StreamResponse

__all__ = ["LOCAL_BINDING", "LocalTransport", "local_client"]

#: The binding name of the in-process interface (never on a network card).
LOCAL_BINDING = "local"


def _copy(obj: Any, tp: type | None) -> Any:
    return None if obj is None or tp is None else decoder_for(tp).decode(encode(obj))


class LocalTransport(ClientTransport):
    def __init__(self, handler: RequestHandler, *, principal: str | None = None) -> None:
        self.handler = handler
        self.context = CallContext(principal)

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        result = await self.handler.call(method.name, _copy(params, method.request_type), self.context)
        return _copy(result, method.result_type)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        context = (
            self.context if last_event_id is None else dataclasses.replace(self.context, last_event_id=last_event_id)
        )
        events = self.handler.stream(method.name, _copy(params, method.request_type), context)
        async for logged in events:
            event: StreamResponse = decoder_for(StreamResponse).decode(logged.body)
            yield StreamItem(event, str(logged.seq) if logged.seq else None)

    async def close(self) -> None:
        await self.handler.shutdown()


def local_card(agent: Agent) -> AgentCard:
    """The agent's card with one in-process interface."""
    return agent.build_card([AgentInterface(url=f"local:{agent.name}", protocol_binding=LOCAL_BINDING)])


def local_client(agent: Agent, *, store: TaskStore | None = None, principal: str | None = None) -> A2AClient:
    """An ``A2AClient`` for an agent in this process (no sockets). Close it to stop its tasks."""
    handler = A2AServer(agent, store=store).handler
    return A2AClient(card=local_card(agent), transport=LocalTransport(handler, principal=principal))
