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
from .server.app import A2AServer
from .server.authoring.agent import Agent
from .server.backends.store import TaskStore
from .server.engine.auth import Authenticator
from .server.engine.handler import CallContext, RequestHandler
from .server.engine.serving import served_card
from .transport.base import ClientTransport, StreamItem
from .types import AgentCard, AgentInterface, StreamResponse

__all__ = ["LOCAL_BINDING", "LocalTransport", "local_client"]

#: The binding name of the in-process interface (never on a network card).
LOCAL_BINDING = "local"


def _copy(obj: Any, tp: type | None) -> Any:
    return None if obj is None or tp is None else decoder_for(tp).decode(encode(obj))


class LocalTransport(ClientTransport):
    """Calls ``handler`` directly, as ``principal`` (an in-process caller is trusted: no credentials).

    ``owns_handler``: closing the transport shuts the handler down (``local_client`` made it for
    this transport alone); otherwise the handler's owner (e.g. an ``A2AServer``) stops it, and
    closing one connection leaves the others served, as on the network bindings.
    """

    def __init__(self, handler: RequestHandler, *, principal: str | None = None, owns_handler: bool = False) -> None:
        self.handler = handler
        self.context = CallContext(principal)
        self.owns_handler = owns_handler

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        # The handler is the one exception boundary: only protocol errors leave it, as on the wire.
        result = await self.handler.call(method.name, _copy(params, method.request_type), self.context)
        return _copy(result, method.result_type)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        context = (
            self.context if last_event_id is None else dataclasses.replace(self.context, last_event_id=last_event_id)
        )
        events = self.handler.stream(method.name, _copy(params, method.request_type), context)
        try:
            async for logged in events:
                event: StreamResponse = decoder_for(StreamResponse).decode(logged.body)
                yield StreamItem(event, str(logged.seq) if logged.seq else None)
        finally:
            # As every binding does: the stream leaves its run (which stops if nobody else
            # can reach it) as soon as its caller stops reading, not when it is collected.
            await events.aclose()  # type: ignore[attr-defined]

    async def close(self) -> None:
        if self.owns_handler:
            await self.handler.shutdown()


def local_card(handler: RequestHandler) -> AgentCard:
    """The card of the agent ``handler`` serves, with one in-process interface (and push
    notifications offered when the handler offers them, as a server's card says)."""
    interface = AgentInterface(url=f"local:{handler.agent.name}", protocol_binding=LOCAL_BINDING)
    return served_card(handler, Authenticator([]), [interface])


def local_client(agent: Agent, *, store: TaskStore | None = None, principal: str | None = None) -> A2AClient:
    """An ``A2AClient`` for an agent in this process (no sockets). Close it to stop its tasks."""
    handler = A2AServer(agent, store=store).handler
    transport = LocalTransport(handler, principal=principal, owns_handler=True)
    return A2AClient(card=local_card(handler), transport=transport)
