"""The one client transport interface: send a call, or open a stream. Bindings implement it."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from typing import Any

from ..errors import InvalidResponseError
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES
from ..protocol.methods import MethodSpec
from ..types import StreamResponse

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ClientTransport",
    "StreamItem",
    "UnreadableEventError",
]


class UnreadableEventError(InvalidResponseError):
    """A well-framed stream event whose content is not an A2A event this client can read (a
    peer's own dialect): the stream cannot be used, but the agent may still be (send + poll).
    Framing and limit violations stay plain ``InvalidResponseError``: the peer is broken."""


#: The largest answer a client reads (an HTTP body, one SSE event, one WebSocket message or
#: stdio line): the 16 MiB every a2a-net peer is expected to accept.
DEFAULT_MAX_RESPONSE_BYTES = DEFAULT_MAX_LINE_BYTES
#: Seconds a stream may go without an event or a heartbeat before the client gives up on the
#: connection (and resumes the stream on a new one). a2a-net servers send a heartbeat every 15 s.
DEFAULT_IDLE_TIMEOUT = 60.0


class StreamItem:
    """One stream event and the id the server gave it (for resuming), if any."""

    __slots__ = ("event", "event_id")

    def __init__(self, event: StreamResponse, event_id: str | None = None) -> None:
        self.event = event
        self.event_id = event_id


class ClientTransport(abc.ABC):
    """Carries typed requests to one agent interface and brings typed answers back.

    Implementations raise ``ProtocolError`` subclasses for errors the peer sent, and
    ``TransportError`` (with ``retryable``) or ``RequestTimeoutError`` for failures on the way.
    Retries and resuming are not theirs to do: the client applies its policy around them. A
    stream yields each event with its id, and a broken one raises a retryable error; the client
    resumes it from the last id (``last_event_id``).
    """

    @abc.abstractmethod
    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        """A unary call; returns an instance of ``method.result_type`` (or ``None``)."""

    @abc.abstractmethod
    def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        """A streaming call; yields events until the server ends the stream. ``last_event_id``
        resumes a task's stream after that event (the server replays what it still retains)."""

    async def close(self) -> None:  # noqa: B027 - transports without resources need nothing here
        """Release connections."""
