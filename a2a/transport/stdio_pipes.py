"""The stdio binding over two pipes this process already holds, with no child process to own.

``PipeTransport`` speaks exactly what ``StdioTransport`` speaks (the same ``LineTransport``:
newline-delimited JSON-RPC, ``initialize`` first with the version and credentials, the shared
``Multiplexer`` for ids, streams and ``$/cancel``) but reads the agent's output from one
descriptor and writes requests to another instead of starting a program. Its uses: an agent
served in this very process with ``serve_stdio(agent, stdin_fd=..., stdout_fd=...)`` on the
other ends of two ``os.pipe()`` pairs (the test suites do this to run agents defined inside a
test over the real binding), or a peer reached over inherited descriptors.

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
from collections.abc import Mapping

from ..errors import InvalidResponseError, TransportError
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES
from .lines import LineChannel, LineTransport
from .multiplex import DEFAULT_MAX_IN_FLIGHT

__all__ = ["PipeTransport"]

log = logging.getLogger("a2a.transport")

#: How long ``close`` waits for the peer to end its output after its input ended.
_CLOSE_WAIT = 5.0


class _Reader(asyncio.Protocol):
    """The peer's output: bytes to the channel; the end fails what still waits."""

    def __init__(self, channel: LineChannel) -> None:
        self._channel = channel

    def data_received(self, data: bytes) -> None:
        self._channel.feed(data)

    def eof_received(self) -> bool | None:
        self._end(None)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)

    def _end(self, exc: Exception | None) -> None:
        detail = f": {exc}" if exc is not None else ""
        self._channel.end(TransportError(f"{self._channel.name} closed its output{detail}"))


class _Writer(asyncio.Protocol):
    """The peer's input: its flow control, to the channel."""

    def __init__(self, channel: LineChannel) -> None:
        self._channel = channel

    def pause_writing(self) -> None:
        self._channel.pause_writing()

    def resume_writing(self) -> None:
        self._channel.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._channel.input_lost()


class PipeTransport(LineTransport):
    """A2A over the stdio binding on ``read_fd`` (the agent's output) and ``write_fd`` (its input).

    ``headers`` are the service parameters sent once in ``initialize`` (``A2A-Version`` is
    added; credentials such as ``Authorization`` go here too). POSIX only.
    """

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
        super().__init__(
            name,
            headers=headers,
            tenant=tenant,
            max_in_flight=max_in_flight,
            max_line_bytes=max_line_bytes,
            start_timeout=start_timeout,
        )
        self.read_fd = read_fd
        self.write_fd = write_fd
        self._channel_ended: asyncio.Future[None] | None = None
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._fds_closed = False

    async def _connect(self) -> LineChannel:
        loop = asyncio.get_running_loop()
        channel = LineChannel(
            self.name, max_line_bytes=self.max_line_bytes, max_in_flight=self.max_in_flight, broken=self._broken
        )
        self._channel_ended = channel.ended
        reading = os.fdopen(self.read_fd, "rb", buffering=0)
        writing = os.fdopen(self.write_fd, "wb", buffering=0)
        self._reader, _ = await loop.connect_read_pipe(lambda: _Reader(channel), reading)
        self._writer, _ = await loop.connect_write_pipe(lambda: _Writer(channel), writing)
        channel.attach(self._writer)
        return channel

    def _broken(self, what: str) -> BaseException:
        if self._reader is not None:
            self._reader.close()
        return InvalidResponseError(f"{self.name} {what} (its output must carry only protocol lines)")

    async def _disconnect(self) -> None:
        if self._reader is None or self._channel_ended is None:
            self._close_fds()
            return
        if self._writer is not None:
            self._writer.close()  # end of input: the peer finishes and ends its output
        if not self._channel_ended.done():
            await asyncio.wait([self._channel_ended], timeout=_CLOSE_WAIT)
            if not self._channel_ended.done():
                log.warning("%s did not end its output within %ss of its input ending", self.name, _CLOSE_WAIT)
        self._reader.close()

    def _close_fds(self) -> None:
        """Never connected: the descriptors are still ours to close, once."""
        if not self._fds_closed:
            self._fds_closed = True
            for fd in (self.read_fd, self.write_fd):
                with contextlib.suppress(OSError):
                    os.close(fd)
