"""The stdio binding over two pipes this process already holds, with no child process to own.

``PipeTransport`` speaks exactly what ``StdioTransport`` speaks (newline-delimited JSON-RPC,
``initialize`` first with the version and credentials, the shared ``Multiplexer`` for ids,
streams and ``$/cancel``) but reads the agent's output from one descriptor and writes requests
to another instead of starting a program. Its uses: an agent served in this very process with
``serve_stdio(agent, stdin_fd=..., stdout_fd=...)`` on the other ends of two ``os.pipe()``
pairs (the test suites do this to run agents defined inside a test over the real binding), or
a peer reached over inherited descriptors.

The transport owns the two descriptors it is given and closes them. What the peer writes that
is not a JSON-RPC line (garbage, invalid UTF-8, a line over the limit) fails every pending call
with ``InvalidResponseError``; the end of its output fails them with ``TransportError``.
``close`` ends the peer's input (it finishes and closes its output by itself) and waits, within
a bound, for its output to end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .. import types as t
from ..errors import InvalidResponseError, TransportError
from ..protocol.connection import INITIALIZE_METHOD, STDIO_BINDING, InitializeParams, InitializeResult
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES, LineDecoder, encode_line
from ..protocol.methods import MethodSpec
from .base import StreamItem
from .multiplex import DEFAULT_MAX_IN_FLIGHT, ConnectionTransport, Multiplexer, feed_lines, with_tenant

__all__ = ["PipeTransport"]

log = logging.getLogger("a2a.transport")

#: How long ``close`` waits for the peer to end its output after its input ended.
_CLOSE_WAIT = 5.0


class _Reader(asyncio.Protocol):
    """The peer's output: lines to the multiplexer; the end fails what still waits."""

    def __init__(self, owner: PipeTransport) -> None:
        self._owner = owner

    def data_received(self, data: bytes) -> None:
        self._owner._on_data(data)

    def eof_received(self) -> bool | None:
        self._owner._on_end(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._on_end(exc)


class _Writer(asyncio.Protocol):
    """The peer's input, with backpressure."""

    def __init__(self) -> None:
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost = False

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.writable.set()


class PipeTransport(ConnectionTransport):
    """A2A over the stdio binding on ``read_fd`` (the agent's output) and ``write_fd`` (its input).

    ``headers`` are the service parameters sent once in ``initialize`` (``A2A-Version`` is
    added; credentials such as ``Authorization`` go here too). POSIX only.
    """

    binding = STDIO_BINDING

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        *,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        name: str = "pipe peer",
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        start_timeout: float = 30.0,
    ) -> None:
        self.read_fd = read_fd
        self.write_fd = write_fd
        self.headers = {"A2A-Version": "1.0", **(headers or {})}
        self.tenant = tenant
        self.name = name
        self.max_line_bytes = max_line_bytes
        self.start_timeout = start_timeout
        self.initialized: InitializeResult | None = None
        self.mux = Multiplexer(self._send, max_in_flight=max_in_flight)
        self._decoder = LineDecoder(max_line_bytes)
        self._broken = False
        self._lock = asyncio.Lock()
        self._connected = False
        self._closed = False
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._writer_protocol: _Writer | None = None
        self._ended: asyncio.Future[None] | None = None

    # ---- the pipes ---------------------------------------------------------------------

    async def start(self, *, timeout: float | None = None) -> None:
        """Connect the pipes and initialize the connection (done by the first call otherwise)."""
        await self._running(timeout)

    async def _running(self, timeout: float | None) -> Multiplexer:
        if self.initialized is not None and self.mux.alive:
            return self.mux
        async with self._lock:
            if self._closed:
                raise TransportError(f"the stdio connection to {self.name} is closed")
            if not self._connected:
                self._connected = True
                await self._connect()
            if self.mux.error is not None:
                raise self.mux.error
            if self.initialized is None:
                # A refused initialize (wrong version, bad credentials) may be sent again.
                await self._initialize(timeout or self.start_timeout)
            return self.mux

    async def _connect(self) -> None:
        loop = asyncio.get_running_loop()
        self._ended = loop.create_future()
        reading = os.fdopen(self.read_fd, "rb", buffering=0)
        writing = os.fdopen(self.write_fd, "wb", buffering=0)
        self._reader, _ = await loop.connect_read_pipe(lambda: _Reader(self), reading)
        self._writer_protocol = protocol = _Writer()
        self._writer, _ = await loop.connect_write_pipe(lambda: protocol, writing)

    async def _initialize(self, timeout: float) -> None:
        params = InitializeParams(service_parameters=self.headers)
        result: InitializeResult = await self.mux.call(INITIALIZE_METHOD, params, InitializeResult, timeout=timeout)
        if result.binding != STDIO_BINDING:
            log.warning("%s speaks %s, not %s", self.name, result.binding, STDIO_BINDING)
        self.mux.limit(result.limits.max_in_flight)
        self.initialized = result

    async def _send(self, message: bytes) -> None:
        writer, protocol = self._writer, self._writer_protocol
        if writer is None or protocol is None or protocol.lost or writer.is_closing():
            raise TransportError(f"the input of {self.name} is closed")
        writer.write(encode_line(message))
        if not protocol.writable.is_set():
            # The pipe is full: wait until the peer reads (or the connection ends).
            ready = asyncio.ensure_future(protocol.writable.wait())
            assert self._ended is not None
            waits: list[asyncio.Future[Any]] = [ready, self._ended]
            try:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()
            if protocol.lost:
                raise TransportError(f"the input of {self.name} is closed")

    def _on_data(self, data: bytes) -> None:
        if self._broken:
            return
        problem = feed_lines(self._decoder, self.mux, data)
        if problem is not None:
            self._protocol_error(problem)

    def _protocol_error(self, what: str) -> None:
        self._broken = True
        self.mux.fail(InvalidResponseError(f"{self.name} {what} (its output must carry only protocol lines)"))
        if self._reader is not None:
            self._reader.close()

    def _on_end(self, exc: Exception | None) -> None:
        if self._ended is None or self._ended.done():
            return
        self._ended.set_result(None)
        last = self._decoder.flush()
        if last is not None and not self._broken:
            with contextlib.suppress(InvalidResponseError):
                self.mux.feed(last)
        detail = f": {exc}" if exc is not None else ""
        self.mux.fail(TransportError(f"{self.name} closed its output{detail}"))

    async def close(self) -> None:
        async with self._lock:
            if self._closed:
                return
            self._closed = True
        self.mux.fail(TransportError(f"the connection to {self.name} was closed by this client"))
        if self._writer is not None:
            self._writer.close()  # end of input: the peer finishes and ends its output
        if self._reader is not None and self._ended is not None:
            await asyncio.wait([self._ended], timeout=_CLOSE_WAIT)
            if not self._ended.done():
                log.warning("%s did not end its output within %ss of its input ending", self.name, _CLOSE_WAIT)
            self._reader.close()
        else:
            for fd in (self.read_fd, self.write_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)

    # ---- calls -------------------------------------------------------------------------

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        mux = await self._running(timeout)
        return await mux.call(method.name, with_tenant(params, self.tenant), method.result_type, timeout=timeout)

    async def get_card(self, *, timeout: float | None) -> t.AgentCard:
        mux = await self._running(timeout)
        return await mux.get_card(timeout=timeout)

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
