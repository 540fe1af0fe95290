"""The WebSocket transport: every call on one connection (``websockets``), multiplexed by id.

The version and credentials travel once, as headers of the upgrade. A dropped connection fails
the calls and streams in flight with a retryable ``TransportError``; the next call opens a new
connection. Retrying and resuming are the client's (``A2AClient``): it resends the calls and
resumes the streams from the last event id (each event carries its ``seq`` as its id).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from .. import types as t
from ..backoff import parse_retry_after
from ..errors import HTTPStatusError, InvalidResponseError, ProtocolError, TransportError
from ..protocol.connection import MAX_IN_FLIGHT_HEADER, WEBSOCKET_BINDING
from ..protocol.jsonrpc import decode_response
from ..protocol.lines import DEFAULT_MAX_LINE_BYTES
from ..protocol.methods import MethodSpec
from .base import DEFAULT_IDLE_TIMEOUT, StreamItem
from .multiplex import DEFAULT_MAX_IN_FLIGHT, ConnectionTransport, Multiplexer, with_tenant

__all__ = ["WebSocketTransport"]


#: Close codes after which reconnecting may help (the server went away or restarts, the
#: network dropped); the others mean this client broke a rule and would break it again.
_RETRYABLE_CLOSE = frozenset({1000, 1001, 1006, 1011, 1012, 1013, 1014})
_PROTOCOL_ERROR = 1002
#: How long a close waits for the server's close frame.
_CLOSE_TIMEOUT = 5.0


class _Connection:
    """One open WebSocket, its multiplexer and the task that reads from it."""

    def __init__(self, ws: ClientConnection, mux: Multiplexer, url: str) -> None:
        self.ws = ws
        self.mux = mux
        self.url = url
        self.reader = asyncio.get_running_loop().create_task(self._read(), name=f"a2a-ws-reader {url}")

    async def _read(self) -> None:
        try:
            while True:
                self.mux.feed(await self.ws.recv(decode=False))
        except ConnectionClosed as exc:
            self.mux.fail(_closed_error(exc, self.url))
        except InvalidResponseError as exc:
            self.mux.fail(InvalidResponseError(f"{self.url} sent {exc}"))
            await self.ws.close(_PROTOCOL_ERROR, "not a JSON-RPC 2.0 message")
        except Exception as exc:  # noqa: BLE001 - the connection is unusable whatever broke
            self.mux.fail(TransportError(f"WebSocket to {self.url} failed: {exc!r}", retryable=True))

    async def close(self) -> None:
        self.mux.fail(TransportError(f"the connection to {self.url} was closed by this client"))
        with contextlib.suppress(Exception):
            await self.ws.close()
        self.reader.cancel()
        await asyncio.wait([self.reader], timeout=5.0)


def _closed_error(exc: ConnectionClosed, url: str) -> TransportError:
    frame = exc.rcvd
    code = frame.code if frame is not None else 1006
    reason = f": {frame.reason}" if frame is not None and frame.reason else ""
    return TransportError(f"WebSocket to {url} closed ({code}{reason})", retryable=code in _RETRYABLE_CLOSE)


def _refused(exc: InvalidStatus, url: str) -> Exception:
    """The upgrade answered with an HTTP error: the A2A error in its body if any (401, version ...)."""
    response = exc.response
    body = bytes(response.body or b"")
    try:
        decode_response(body, None)
    except ProtocolError as error:
        return error
    except Exception:  # noqa: BLE001 - not a JSON-RPC body: report the status below
        pass
    return HTTPStatusError(
        f"{url} refused the WebSocket upgrade with HTTP {response.status_code}",
        status=response.status_code,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
    )


def connect_url(url: str) -> str:
    """The ``ws(s)://`` URL to open for a WebSocket interface: a card may name it at its own
    origin, ``http(s)://`` (the URL that upgrades), so that it stays same-origin."""
    if url.startswith("https://"):
        return "wss://" + url[len("https://") :]
    if url.startswith("http://"):
        return "ws://" + url[len("http://") :]
    return url


class WebSocketTransport(ConnectionTransport):
    """A2A over one WebSocket (``ws://`` or ``wss://``), as the card's WebSocket interface names it."""

    binding = WEBSOCKET_BINDING

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        tenant: str | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_message_bytes: int = DEFAULT_MAX_LINE_BYTES,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        open_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.tenant = tenant
        self.max_in_flight = max_in_flight
        self.max_message_bytes = max_message_bytes
        self.idle_timeout = idle_timeout
        self.open_timeout = open_timeout
        self._conn: _Connection | None = None
        self._lock = asyncio.Lock()
        self._closed = False

    # ---- the connection ----------------------------------------------------------------

    async def _connection(self, timeout: float | None) -> _Connection:
        conn = self._conn
        if conn is not None and conn.mux.alive:
            return conn
        async with self._lock:
            if self._closed:
                raise TransportError(f"the WebSocket transport to {self.url} is closed")
            if self._conn is None or not self._conn.mux.alive:
                stale, self._conn = self._conn, None
                if stale is not None:
                    await stale.close()
                self._conn = await self._open(timeout)
            return self._conn

    async def _open(self, timeout: float | None) -> _Connection:
        try:
            ws = await connect(
                connect_url(self.url),
                additional_headers=self.headers,
                compression=None,
                max_size=self.max_message_bytes,
                open_timeout=timeout or self.open_timeout,
                # The idle bound of every stream on the connection: a ping every half of it, and
                # no pong within the other half drops the connection (retryable: the client
                # resumes its streams). A live peer keeps quiet streams open.
                ping_interval=None if self.idle_timeout is None else self.idle_timeout / 2,
                ping_timeout=None if self.idle_timeout is None else self.idle_timeout / 2,
                # A peer that gave no sign of life for the idle timeout is not waited for long.
                close_timeout=_CLOSE_TIMEOUT if self.idle_timeout is None else min(_CLOSE_TIMEOUT, self.idle_timeout),
            )
        except InvalidStatus as exc:
            raise _refused(exc, self.url) from exc
        except InvalidURI as exc:
            raise TransportError(f"{self.url} is not a WebSocket URL: {exc}") from exc
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise TransportError(f"Cannot connect to {self.url}: {exc or type(exc).__name__}", retryable=True) from exc
        mux = Multiplexer(self._sender(ws), max_in_flight=self.max_in_flight)
        announced = ws.response.headers.get(MAX_IN_FLIGHT_HEADER) if ws.response is not None else None
        if announced and announced.isdigit():
            mux.limit(int(announced))
        return _Connection(ws, mux, self.url)

    def _sender(self, ws: ClientConnection) -> Callable[[bytes], Awaitable[None]]:
        async def send(data: bytes) -> None:
            try:
                await ws.send(data, text=True)
            except ConnectionClosed as exc:
                raise _closed_error(exc, self.url) from exc

        return send

    async def close(self) -> None:
        async with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    # ---- calls -------------------------------------------------------------------------

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        started = asyncio.get_running_loop().time()
        conn = await self._connection(timeout)
        params = with_tenant(params, self.tenant)
        return await conn.mux.call(method.name, params, method.result_type, timeout=timeout, since=started)

    async def get_card(self, *, timeout: float | None) -> t.AgentCard:
        started = asyncio.get_running_loop().time()
        conn = await self._connection(timeout)
        return await conn.mux.get_card(timeout=timeout, since=started)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        conn = await self._connection(timeout)
        events = conn.mux.stream(method.name, with_tenant(params, self.tenant), last_event_id)
        try:
            async for event in events:
                yield event.item
        finally:
            await events.aclose()  # type: ignore[attr-defined]
