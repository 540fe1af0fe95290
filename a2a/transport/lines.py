"""The client side of the stdio binding over any pair of byte streams: one channel, one transport.

``LineChannel`` is one newline-delimited JSON-RPC connection (the framing of
``protocol/lines.py`` and the shared ``Multiplexer``): its owner feeds it the bytes the agent
writes and tells it when they end; it sends requests, one line each, waiting while the agent's
input pipe is full (back-pressure). What the agent writes that is not a JSON-RPC line (garbage,
invalid UTF-8, a line over the limit) fails every pending call with ``InvalidResponseError``;
the end of its output fails them with the error the owner gives.

``LineTransport`` is everything a stdio client does on top of that: connect on first use, send
``initialize`` (the version and credentials, once), the calls, and ``close``. Its two subclasses
differ only in where the byte streams come from: ``StdioTransport`` starts the agent as a child
process, ``PipeTransport`` is given two pipes.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from .. import types as t
from ..errors import InvalidResponseError, TransportError
from ..protocol.connection import INITIALIZE_METHOD, STDIO_BINDING, InitializeParams, InitializeResult
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES, LineDecoder, encode_line
from ..protocol.methods import MethodSpec
from .base import StreamItem
from .multiplex import DEFAULT_MAX_IN_FLIGHT, ConnectionTransport, Multiplexer, feed_lines, with_tenant

__all__ = ["LineChannel", "LineTransport"]

log = logging.getLogger("a2a.transport")


class LineChannel:
    """One line-framed JSON-RPC connection to an agent, over byte streams its owner connects.

    The owner calls ``attach`` with the agent's input once it is open, passes that pipe's flow
    control on (``pause_writing``, ``resume_writing``, ``input_lost``), and calls ``feed`` with
    each chunk of the agent's output and ``end`` when it ends. ``broken(what)`` makes the error
    for an agent that broke the framing (and may end the agent); ``input_closed()`` the error for
    a send after the agent's input is gone.
    """

    def __init__(
        self,
        name: str,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        broken: Callable[[str], BaseException] | None = None,
        input_closed: Callable[[], BaseException] | None = None,
    ) -> None:
        self.name = name
        self.mux = Multiplexer(self.send, max_in_flight=max_in_flight)
        #: Done once the agent's output has ended (``end``).
        self.ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._decoder = LineDecoder(max_line_bytes)
        self._broken_error = broken or (lambda what: InvalidResponseError(f"{name} {what}"))
        self._input_closed = input_closed or (lambda: TransportError(f"the input of {name} is closed"))
        self._is_broken = False
        self._writer: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._input_gone = False

    # ---- the agent's input -------------------------------------------------------------

    def attach(self, writer: asyncio.WriteTransport) -> None:
        """Requests go to ``writer`` (the agent's input) from now on."""
        self._writer = writer

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def input_lost(self) -> None:
        """The agent's input cannot be written any more (its pipe closed, or the agent exited)."""
        self._input_gone = True
        self._writable.set()

    async def send(self, message: bytes) -> None:
        """Write one message as a line; when the pipe is full, wait until the agent reads."""
        writer = self._writer
        if writer is None or writer.is_closing() or self._input_gone:
            raise self._input_closed()
        writer.write(encode_line(message))
        if not self._writable.is_set():
            # The pipe is full: wait until the agent reads (or is gone).
            ready = asyncio.ensure_future(self._writable.wait())
            waits: list[asyncio.Future[Any]] = [ready, self.ended]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()
            if self._input_gone:
                raise self._input_closed()

    # ---- the agent's output ------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Bytes the agent wrote, split anywhere."""
        if self._is_broken:
            return
        problem = feed_lines(self._decoder, self.mux, data)
        if problem is not None:
            self._is_broken = True
            self.mux.fail(self._broken_error(problem))

    def end(self, error: BaseException) -> None:
        """The agent's output has ended: a last line without newline still counts, then every
        call still waiting fails with ``error``."""
        if self.ended.done():
            return
        self.ended.set_result(None)
        last = self._decoder.flush()
        if last is not None and not self._is_broken:
            with contextlib.suppress(InvalidResponseError):
                self.mux.feed(last)
        self.mux.fail(error)


class LineTransport(ConnectionTransport):
    """A2A over the stdio binding: ``initialize`` first, then the calls, over one ``LineChannel``.

    ``headers`` are the service parameters sent once in ``initialize`` (``A2A-Version`` is
    added; credentials such as ``Authorization`` go here too). A subclass opens the byte streams
    (``_connect``, on first use) and ends them (``_disconnect``, bounded, called by every
    ``close``). A channel that ended is not opened again: make a new transport for a new one.
    """

    binding = STDIO_BINDING

    def __init__(
        self,
        name: str,
        *,
        headers: Mapping[str, str] | None,
        tenant: str | None,
        max_in_flight: int,
        max_line_bytes: int,
        start_timeout: float,
    ) -> None:
        #: The agent, as errors and logs name it.
        self.name = name
        self.headers = {"A2A-Version": "1.0", **(headers or {})}
        self.tenant = tenant
        self.max_in_flight = max_in_flight
        self.max_line_bytes = max_line_bytes
        self.start_timeout = start_timeout
        self.initialized: InitializeResult | None = None
        self._channel: LineChannel | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    @abc.abstractmethod
    async def _connect(self) -> LineChannel:
        """Open the byte streams and return the channel over them."""

    @abc.abstractmethod
    async def _disconnect(self) -> None:
        """End the byte streams (if they were opened) within a bounded time; idempotent."""

    async def start(self, *, timeout: float | None = None) -> None:
        """Connect and initialize the connection (done by the first call otherwise)."""
        await self._running(timeout)

    async def _running(self, timeout: float | None) -> Multiplexer:
        channel = self._channel
        if channel is not None and channel.mux.alive and self.initialized is not None:
            return channel.mux
        async with self._lock:
            if self._closed:
                raise TransportError(f"the stdio connection to {self.name} is closed")
            if self._channel is None:
                self._channel = await self._connect()
            mux = self._channel.mux
            if mux.error is not None:
                raise mux.error
            if self.initialized is None:
                # A refused initialize (wrong version, bad credentials) is sent again, so every
                # call gets that refusal rather than "no initialize yet".
                await self._initialize(mux, timeout or self.start_timeout)
            return mux

    async def _initialize(self, mux: Multiplexer, timeout: float) -> None:
        params = InitializeParams(service_parameters=self.headers)
        result: InitializeResult = await mux.call(INITIALIZE_METHOD, params, InitializeResult, timeout=timeout)
        if result.binding != STDIO_BINDING:
            log.warning("%s speaks %s, not %s", self.name, result.binding, STDIO_BINDING)
        mux.limit(result.limits.max_in_flight)
        self.initialized = result

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            channel = self._channel
        if channel is not None:
            channel.mux.fail(TransportError(f"the connection to {self.name} was closed by this client"))
        await self._disconnect()

    # ---- calls -------------------------------------------------------------------------

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        started = asyncio.get_running_loop().time()
        mux = await self._running(timeout)
        params = with_tenant(params, self.tenant)
        return await mux.call(method.name, params, method.result_type, timeout=timeout, since=started)

    async def get_card(self, *, timeout: float | None) -> t.AgentCard:
        started = asyncio.get_running_loop().time()
        mux = await self._running(timeout)
        return await mux.get_card(timeout=timeout, since=started)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        mux = await self._running(timeout)
        events = mux.stream(method.name, with_tenant(params, self.tenant), last_event_id)
        try:
            async for event in events:
                yield event.item
        finally:
            await events.aclose()  # type: ignore[attr-defined]
