"""The stdio binding: one agent served over this process's stdin and stdout.

Newline-delimited JSON-RPC 2.0 (one UTF-8 message per line); stdout carries protocol lines and
nothing else, every diagnostic goes to stderr. The first request is ``initialize`` (the service
parameters HTTP would send as headers: ``A2A-Version``, credentials, ``A2A-Extensions``),
checked by the same gate as HTTP. After that: the same methods as JSON-RPC over HTTP, answered
out of order through the one ``RpcConnection`` dispatcher, as over WebSocket.

End of stdin: requests in flight get ``eof_grace`` seconds to finish, then the server exits.
If stdout goes away (the parent died) it stops at once. See ``protocol.md`` §6 (stdio).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from ...errors import PayloadTooLargeError
from ...protocol.connection import STDIO_BINDING
from ...protocol.lines import LineDecoder, LineTooLongError, encode_line
from ...protocol.nesting import DEFAULT_MAX_JSON_DEPTH
from ...protocol.version import PROTOCOL_VERSION
from ...types import AgentInterface
from ..authoring.agent import Agent
from ..backends.base import Backend
from ..bindings.messages import Headers
from ..engine.admission import admit
from ..engine.auth import ApiKeyAuth, Authenticator, BearerAuth
from ..engine.handler import CallContext, RequestHandler
from ..engine.serving import open_handler, served_card
from ..push import PushNotifier
from .rpc_connection import (
    CLOSE_TOO_BIG,
    DEFAULT_MAX_EXECUTING,
    DEFAULT_MAX_IN_FLIGHT,
    ConnectionLimits,
    ConnectionViolation,
    RpcConnection,
)

__all__ = ["STDIO_URL", "StdioConfig", "claim_stdout", "serve_stdio"]

log = logging.getLogger("a2a.server")

#: The interface ``url`` in a stdio agent's card: "this process's stdin and stdout".
STDIO_URL = "stdio:"
_CHUNK_QUEUE_HIGH = 16
_CHUNK_QUEUE_LOW = 4


@dataclass
class StdioConfig:
    #: Longest request line; one more byte and the server answers the error and exits (status 1).
    max_line_bytes: int = 4 * 1024 * 1024
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: Of those, how many run at once; the others wait in arrival order (as over WebSocket).
    max_executing: int = DEFAULT_MAX_EXECUTING
    #: Deepest nesting of objects and arrays in a request; deeper: -32600 (the process goes on).
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    #: After end of stdin, how long requests in flight may finish before they are canceled.
    eof_grace: float = 1.0


def claim_stdout() -> int:
    """Keep the real stdout for protocol lines and return its descriptor.

    File descriptor 1 and ``sys.stdout`` then point at stderr, so a stray ``print`` (ours, the
    agent's, or a library's, even from C) can never corrupt the protocol stream.
    """
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


# ---- the pipes -----------------------------------------------------------------------------


_EOF = b""


class _Inbox(asyncio.Protocol):
    """Chunks from stdin, in order, with backpressure; ``b""`` marks the end."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._transport: asyncio.ReadTransport | None = None
        self._paused = False
        self._ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.ReadTransport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        self._queue.put_nowait(data)
        if self._transport is not None and not self._paused and self._queue.qsize() >= _CHUNK_QUEUE_HIGH:
            self._paused = True
            self._transport.pause_reading()

    def eof_received(self) -> bool | None:
        self.end()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.end()

    def end(self) -> None:
        """No more input (end of file, or told to stop)."""
        if not self._ended:
            self._ended = True
            self._queue.put_nowait(_EOF)

    async def get(self) -> bytes:
        chunk = await self._queue.get()
        if self._paused and self._transport is not None and self._queue.qsize() <= _CHUNK_QUEUE_LOW:
            self._paused = False
            self._transport.resume_reading()
        return chunk

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


class _Outbox(asyncio.Protocol):
    """Lines to stdout, with backpressure; notices when the reading end goes away."""

    def __init__(self, on_lost: Callable[[], None]) -> None:
        self._transport: asyncio.WriteTransport | None = None
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self._on_lost = on_lost
        self._gone = asyncio.get_running_loop().create_future()
        self._closing = False
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.WriteTransport, transport)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._gone.done():
            self._gone.set_result(None)
        if exc is None and self._closing:
            return  # our own close, once everything was written
        self.lost = True
        self._wake()
        self._on_lost()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def send(self, message: bytes) -> None:
        if self.lost or self._transport is None:
            raise ConnectionResetError("stdout is closed")
        self._transport.write(encode_line(message))
        if self._paused:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
            if self.lost:
                raise ConnectionResetError("stdout is closed")

    async def aclose(self, timeout: float = 2.0) -> None:
        """Close once what was written has reached the pipe (bounded: the reader may be stuck)."""
        if self._transport is None or self.lost:
            return
        self._closing = True
        self._transport.close()
        await asyncio.wait([self._gone], timeout=timeout)


class _FileOutbox:
    """stdout redirected to a regular file: plain blocking writes (a file never blocks for long)."""

    lost = False

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def send(self, message: bytes) -> None:
        view = memoryview(encode_line(message))
        while view:
            view = view[os.write(self._fd, view) :]

    async def aclose(self) -> None:
        pass


def _is_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


async def _open_inbox(fd: int) -> tuple[_Inbox, asyncio.Task[None] | None]:
    inbox = _Inbox()
    if _is_file(fd):
        # Regular files cannot be polled; read them in small steps instead.
        return inbox, asyncio.get_running_loop().create_task(_read_file(fd, inbox))
    pipe = os.fdopen(fd, "rb", buffering=0, closefd=False)
    await asyncio.get_running_loop().connect_read_pipe(lambda: inbox, pipe)
    return inbox, None


async def _read_file(fd: int, inbox: _Inbox) -> None:
    while chunk := os.read(fd, 65536):
        inbox.data_received(chunk)
        await asyncio.sleep(0)  # let the requests read so far make progress
    inbox.end()


async def _open_outbox(fd: int, inbox: _Inbox) -> _Outbox | _FileOutbox:
    if _is_file(fd):
        return _FileOutbox(fd)
    outbox = _Outbox(on_lost=inbox.end)
    pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)
    await asyncio.get_running_loop().connect_write_pipe(lambda: outbox, pipe)
    return outbox


# ---- serving -------------------------------------------------------------------------------


def _admitter(authenticator: Authenticator) -> Callable[[Mapping[str, str]], CallContext]:
    def admit_params(params: Mapping[str, str]) -> CallContext:
        return admit(Headers(params), {}, authenticator)

    return admit_params


async def _pump(inbox: _Inbox, decoder: LineDecoder, conn: RpcConnection) -> None:
    """Read lines and dispatch them until the end of input."""
    while True:
        chunk = await inbox.get()
        if not chunk:
            last = decoder.flush()
            if last is not None:
                await conn.receive(last)
            return
        try:
            lines = decoder.feed(chunk)
        except LineTooLongError as exc:
            raise ConnectionViolation(
                CLOSE_TOO_BIG, PayloadTooLargeError(f"request line over the limit of {exc.limit} bytes")
            ) from exc
        for line in lines:
            await conn.receive(line)


async def serve_stdio(
    agent: Agent,
    *,
    backend: Backend | None = None,
    push: PushNotifier | bool = False,
    push_allow: str | Sequence[str] | None = None,
    handler: RequestHandler | None = None,
    auth: Authenticator | Sequence[BearerAuth | ApiKeyAuth] = (),
    config: StdioConfig | None = None,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stop: asyncio.Event | None = None,
) -> int:
    """Serve ``agent`` until the end of stdin (or ``stop``); returns the exit status.

    0: the input ended (or ``stop`` was set); 1: the peer broke a limit (the error was sent as
    a last line with ``id`` null, and logged).

    ``backend``: where tasks live (default: memory); ``push`` and ``push_allow``: push
    notifications, as for ``A2AServer``. ``handler`` serves that (started) handler instead of
    one made from those, and leaves it running at the end (its owner stops it): e.g. one more
    connection to an ``A2AServer``'s agent.
    """
    config = config or StdioConfig()
    authenticator = auth if isinstance(auth, Authenticator) else Authenticator(list(auth))
    owned = handler is None
    if handler is None:
        handler = open_handler(
            agent,
            backend or Backend.in_memory(),
            push=push,
            push_allow=push_allow,
            authenticates=authenticator.enabled,
        )
        try:
            await handler.start()
        except Exception:
            # What start began (a Redis listener ...) ends with it, as an HTTP server's stop does.
            with contextlib.suppress(Exception):
                await handler.shutdown()
            raise
    elif backend is not None or push or push_allow is not None:
        raise ValueError("serve_stdio: give a handler, or the backend and push to make one, not both")
    interface = AgentInterface(url=STDIO_URL, protocol_binding=STDIO_BINDING, protocol_version=PROTOCOL_VERSION)
    card = served_card(handler, authenticator, [interface])
    inbox, reader = await _open_inbox(stdin_fd)
    outbox = await _open_outbox(stdout_fd, inbox)
    conn = RpcConnection(
        handler,
        outbox.send,
        card=lambda: card,
        binding=STDIO_BINDING,
        limits=ConnectionLimits(
            max_message_bytes=config.max_line_bytes,
            max_in_flight=config.max_in_flight,
            max_json_depth=config.max_json_depth,
            max_executing=config.max_executing,
        ),
        admit=_admitter(authenticator),
    )
    watcher = None
    if stop is not None:
        watcher = asyncio.get_running_loop().create_task(_end_on(stop, inbox))
    status = 0
    log.info("serving %r over stdio", agent.name)
    try:
        await _pump(inbox, LineDecoder(config.max_line_bytes), conn)
    except ConnectionViolation as exc:
        log.error("closing: %s", exc.reason)
        await conn.refuse(exc.error)
        status = 1
    finally:
        if outbox.lost:
            conn.peer_gone()
        if owned and stop is not None and stop.is_set() and not (status or outbox.lost):
            # Stopped (SIGTERM), as an HTTP server shuts down: the runs end CANCELED first, so
            # their streams and the blocking sends in flight are answered with that, then exit.
            await handler.shutdown()
            await conn.close(finish_within=config.eof_grace)
        else:
            await conn.close(finish_within=0.0 if status or outbox.lost else config.eof_grace)
            if owned:
                await handler.shutdown()
        for task in (watcher, reader):
            if task is not None:
                task.cancel()
        inbox.close()
        await outbox.aclose()
        _restore_blocking(stdin_fd, stdout_fd)
    return status


async def _end_on(stop: asyncio.Event, inbox: _Inbox) -> None:
    await stop.wait()
    inbox.end()


def _restore_blocking(*fds: int) -> None:
    """Pipe transports make descriptors non-blocking; give a terminal back as it was."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.set_blocking(fd, True)
