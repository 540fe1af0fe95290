"""The client side of one JSON-RPC connection, shared by the WebSocket and stdio transports.

``Multiplexer`` does no I/O: a transport gives it a coroutine that sends one message and feeds
it every message that arrives (``feed``); it hands out request ids, matches answers to calls by
``id``, routes stream frames to their stream, keeps at most ``max_in_flight`` requests
unanswered (later ones wait their turn), sends ``$/cancel`` when a stream is abandoned, and fails
everything at once when the connection is lost (``fail``).
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar

import msgspec

from .. import types as t
from ..errors import InvalidResponseError, RequestTimeoutError
from ..protocol.connection import (
    END_CANCELED,
    END_COMPLETE,
    GET_CARD_METHOD,
    Frame,
    GetAgentCardParams,
    decode_frame,
    encode_cancel,
)
from ..protocol.jsonrpc import RequestIdCounter, decode_result, encode_request
from ..protocol.lines import LineDecoder, LineTooLongError
from ..protocol.methods import with_tenant  # the connection transports fill the tenant with it
from ..telemetry import tracing
from .base import ClientTransport, StreamItem

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "ConnectionTransport", "Multiplexer", "StreamEvent", "with_tenant"]

log = logging.getLogger("a2a.transport")

DEFAULT_MAX_IN_FLIGHT = 128


class StreamEvent(msgspec.Struct):
    """One event of a stream as it arrived: the item and the server's sequence number (0: none)."""

    item: StreamItem
    seq: int


class _Pending:
    """One request waiting for its answer (unary: a future; stream: a queue of frames)."""

    __slots__ = ("abandoned", "done", "frames", "future", "streaming")

    def __init__(self, streaming: bool) -> None:
        self.streaming = streaming
        self.future: asyncio.Future[Frame] | None = None
        self.frames: asyncio.Queue[Frame | BaseException] | None = None
        if streaming:
            self.frames = asyncio.Queue()
        else:
            self.future = asyncio.get_running_loop().create_future()
        self.done = False
        #: The caller stopped reading: later event frames are dropped until the closing one.
        self.abandoned = False


class Multiplexer:
    def __init__(self, send: Callable[[bytes], Awaitable[None]], *, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        self._send = send
        self._ids = RequestIdCounter()
        self._pending: dict[int, _Pending] = {}
        self._slots = asyncio.Semaphore(max_in_flight)
        self.max_in_flight = max_in_flight
        self.error: BaseException | None = None
        #: Requests carry the caller's trace context in their envelope when tracing is on.
        self._tracing = tracing()

    @property
    def alive(self) -> bool:
        return self.error is None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def limit(self, max_in_flight: int) -> None:
        """Lower the in-flight limit to what the server announced (before any request is sent)."""
        if 0 < max_in_flight < self.max_in_flight:
            self._slots = asyncio.Semaphore(max_in_flight)
            self.max_in_flight = max_in_flight

    # ---- sending -----------------------------------------------------------------------

    async def _open(
        self, method: str, params: Any, streaming: bool, last_event_id: int | None = None
    ) -> tuple[int, _Pending]:
        if self.error is not None:
            raise self.error
        await self._slots.acquire()
        if self.error is not None:
            self._slots.release()
            raise self.error
        request_id = self._ids()
        pending = self._pending[request_id] = _Pending(streaming)
        trace = self._tracing.carrier() if self._tracing is not None else None
        try:
            await self._send(encode_request(request_id, method, params, last_event_id=last_event_id, trace=trace))
        except BaseException:
            self._finish(request_id)
            raise
        return request_id, pending

    def _finish(self, request_id: int) -> None:
        pending = self._pending.pop(request_id, None)
        if pending is not None and not pending.done:
            pending.done = True
            self._slots.release()

    async def call(
        self, method: str, params: Any, result_type: type | None, *, timeout: float | None, since: float | None = None
    ) -> Any:
        """One unary call; the peer's error is raised as the matching ``ProtocolError``.

        ``timeout`` covers waiting for a slot and for the connection to take the request too (a
        peer that stops reading must not hold the call), from ``since`` (loop time) when the
        call began before (connecting counts against it)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else (loop.time() if since is None else since) + timeout
        try:
            async with asyncio.timeout_at(deadline):
                _, pending = await self._open(method, params, False)
                assert pending.future is not None
                frame = await asyncio.shield(pending.future)
        except TimeoutError:
            # The answer may still come; it is dropped then (and frees the slot).
            raise RequestTimeoutError(f"no answer to {method} within {timeout}s") from None
        return decode_result(frame.error, frame.result, result_type)

    async def stream(self, method: str, params: Any, last_event_id: int | None = None) -> AsyncIterator[StreamEvent]:
        """A streaming call: events until the server's end frame; abandoning it sends ``$/cancel``.
        ``last_event_id``: resume a task's stream after that event."""
        request_id, pending = await self._open(method, params, True, last_event_id)
        assert pending.frames is not None
        try:
            while True:
                frame = await pending.frames.get()
                if isinstance(frame, BaseException):
                    raise frame
                if not isinstance(frame.stream_end, t.UnsetType):
                    if frame.stream_end.reason not in (END_COMPLETE, END_CANCELED):
                        log.info("%s stream %s ended early: %s", method, request_id, frame.stream_end.reason)
                    return
                item = decode_result(frame.error, frame.result, t.StreamResponse)
                yield StreamEvent(StreamItem(item, str(frame.seq) if frame.seq else None), frame.seq or 0)
        finally:
            if not pending.done and self.error is None:
                # The caller stopped reading: ask the server to stop this stream. Its closing
                # frame frees the slot when it comes.
                pending.abandoned = True
                await self._cancel(request_id)

    async def _cancel(self, request_id: int) -> None:
        try:
            await self._send(encode_cancel(request_id))
        except Exception as exc:  # noqa: BLE001 - best effort: the connection may be going away
            log.debug("could not send $/cancel for %s: %s", request_id, exc)

    async def get_card(self, *, timeout: float | None, since: float | None = None) -> t.AgentCard:
        params = GetAgentCardParams()
        card: t.AgentCard = await self.call(GET_CARD_METHOD, params, t.AgentCard, timeout=timeout, since=since)
        return card

    # ---- receiving ---------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """One message from the server. Raises ``InvalidResponseError`` for one that is not JSON-RPC."""
        frame = decode_frame(data)
        if not isinstance(frame.method, t.UnsetType):
            log.debug("ignored a %r message from the server", frame.method)
            return
        request_id = frame.id
        if request_id is None:
            if isinstance(frame.error, t.JSONRPCError):
                # An error the server could not tie to a request (e.g. it is closing on us).
                log.warning("server error without id: %s (%s)", frame.error.message, frame.error.code)
                return
            raise InvalidResponseError(f"a message without id: {data[:120]!r}")
        pending = self._pending.get(request_id) if isinstance(request_id, int) else None
        if pending is None:
            log.debug("dropped a late or unknown answer for id %r", request_id)
            return
        self._deliver(request_id, pending, frame)

    def _deliver(self, request_id: int, pending: _Pending, frame: Frame) -> None:
        final = not isinstance(frame.stream_end, t.UnsetType) or not isinstance(frame.error, t.UnsetType)
        if pending.future is not None:
            if not pending.future.done():
                pending.future.set_result(frame)
            final = True
        elif pending.frames is not None and not pending.abandoned:
            pending.frames.put_nowait(frame)
        if final:
            self._finish(request_id)

    def fail(self, error: BaseException) -> None:
        """The connection is gone: every call waiting and every stream raises ``error``."""
        if self.error is None:
            self.error = error
        for request_id, pending in list(self._pending.items()):
            if pending.future is not None and not pending.future.done():
                pending.future.set_exception(error)
                pending.future.exception()  # retrieved here: a caller that timed out never will
            elif pending.frames is not None:
                pending.frames.put_nowait(error)
            self._finish(request_id)
        # Wake callers queued for a slot; they see ``error`` and give up.
        for _ in range(self.max_in_flight):
            self._slots.release()


class ConnectionTransport(ClientTransport):
    """A transport over one multiplexed connection (WebSocket, stdio); it can also fetch the card."""

    #: The ``protocolBinding`` this transport speaks.
    binding: ClassVar[str]

    @abc.abstractmethod
    async def get_card(self, *, timeout: float | None) -> t.AgentCard:
        """The agent card, asked over the connection (``GetAgentCard``)."""


def feed_lines(decoder: LineDecoder, mux: Multiplexer, data: bytes) -> str | None:
    """Feed bytes from a line-framed peer (stdio) to ``mux``; says what the peer did wrong if it
    broke the framing (``None`` when all is well)."""
    try:
        for line in decoder.feed(data):
            mux.feed(line)
    except LineTooLongError as exc:
        return f"wrote a line over {exc.limit} bytes"
    except InvalidResponseError as exc:
        return f"wrote something that is not a JSON-RPC line: {exc}"
    return None
