"""The WebSocket binding: JSON-RPC 2.0 in text frames, many calls multiplexed on one connection.

A thin adapter: the handshake is checked by the same gate as HTTP (``admit``), then every
text frame goes to one ``RpcConnection``, which dispatches, answers and enforces the limits.
A peer that breaks a limit is closed with a code and a reason; see ``protocol.md`` §6 (close codes).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import AuthenticationRequiredError, InvalidRequestError, ProtocolError
from ...protocol.connection import MAX_IN_FLIGHT_HEADER, MAX_MESSAGE_HEADER, WEBSOCKET_BINDING
from ...protocol.nesting import DEFAULT_MAX_JSON_DEPTH
from ...types import AgentCard
from ..bindings.jsonrpc import jsonrpc_error_body
from ..bindings.messages import Answer, Headers, HttpRequest, Reply, Upgrade, WebSocketChannel
from ..engine.admission import admit
from ..engine.auth import ApiKeyAuth, Authenticator, BearerAuth
from ..engine.handler import RequestHandler
from .rpc_connection import (
    DEFAULT_MAX_EXECUTING,
    DEFAULT_MAX_IN_FLIGHT,
    ConnectionLimits,
    ConnectionViolation,
    RpcConnection,
)

__all__ = ["WS_PATH", "WebSocketBinding", "WebSocketConfig", "websocket_url"]

log = logging.getLogger("a2a.server")

WS_PATH = "/a2a/ws"
#: RFC 6455 allows 123 bytes of close reason.
_MAX_REASON_BYTES = 123
#: Query parameter for a bearer token when headers cannot be set (RFC 6750 section 2.3).
ACCESS_TOKEN_PARAM = "access_token"


@dataclass
class WebSocketConfig:
    enabled: bool = True
    path: str = WS_PATH
    #: Largest incoming message; ``None``: the server's ``max_body_bytes``. Over it: close 1009.
    max_message_bytes: int | None = None
    #: Requests (streams included) a connection may have unanswered; one more: close 1008.
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: Of those, how many run at once; the others wait in arrival order (a call that waits
    #: longer than 50 ms, such as a blocking send, gives its turn up: protocol.md §6).
    max_executing: int = DEFAULT_MAX_EXECUTING
    #: Ping after this many idle seconds; no pong within half of it drops the connection.
    heartbeat: float | None = 20.0
    #: Accept credentials as query parameters (``access_token=``, or the API key header's name)
    #: for clients that cannot set headers (browsers). Off by default: URLs end up in logs.
    allow_query_credentials: bool = False
    #: List the WebSocket interface first in the card, so that clients prefer it.
    preferred: bool = False
    #: After a disconnect, how long unary calls may finish before they are canceled.
    unary_grace: float = 10.0


def websocket_url(base_url: str, path: str = WS_PATH) -> str:
    """``http://host:port`` → ``ws://host:port/a2a/ws`` (``https`` → ``wss``)."""
    base = base_url.rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base[len("https://") :] + path
    if base.startswith("http://"):
        return "ws://" + base[len("http://") :] + path
    return base + path


#: Close codes (RFC 6455 §7.4.1).
GOING_AWAY = 1001


def _error_reply(error: ProtocolError, status: int, headers: Mapping[str, str] | None) -> Reply:
    # No JSON-RPC request was read yet (the handshake has none): "id" is null.
    body, content_type = jsonrpc_error_body(error)
    return Reply(status, content_type, body, headers)


def _reason(text: str) -> str:
    return text.encode()[:_MAX_REASON_BYTES].decode(errors="ignore")


class WebSocketBinding:
    def __init__(
        self,
        handler: RequestHandler,
        authenticator: Authenticator,
        card: Callable[[HttpRequest], AgentCard],
        config: WebSocketConfig,
        max_body: int,
        *,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
    ) -> None:
        self.handler = handler
        self.authenticator = authenticator
        self.config = config
        self.limits = ConnectionLimits(
            max_message_bytes=config.max_message_bytes or max_body,
            max_in_flight=config.max_in_flight,
            max_json_depth=max_json_depth,
            max_executing=config.max_executing,
        )
        self._card = card
        self._live: dict[WebSocketChannel, RpcConnection] = {}

    # ---- the handshake -----------------------------------------------------------------

    def _credentials(self, request: HttpRequest) -> Mapping[str, str]:
        if not self.config.allow_query_credentials:
            return request.headers
        headers = Headers(request.headers)
        for scheme in self.authenticator.schemes:
            if isinstance(scheme, BearerAuth) and "Authorization" not in headers:
                token = request.query.get(ACCESS_TOKEN_PARAM)
                if token:
                    headers["Authorization"] = f"Bearer {token}"
            elif isinstance(scheme, ApiKeyAuth) and scheme.header not in headers:
                key = request.query.get(scheme.header)
                if key:
                    headers[scheme.header] = key
        return headers

    def _refuse(self, error: ProtocolError) -> Reply:
        """The same answer as the JSON-RPC HTTP binding: 401 with a challenge, else 400."""
        headers = None
        status = 400
        if isinstance(error, AuthenticationRequiredError):
            status = 401
            headers = {"WWW-Authenticate": ", ".join(self.authenticator.challenges())}
        return _error_reply(error, status, headers)

    async def handle(self, request: HttpRequest) -> Answer:
        try:
            ctx = admit(self._credentials(request), request.query, self.authenticator)
        except ProtocolError as exc:
            return self._refuse(exc)
        error = InvalidRequestError(f"{request.path} speaks JSON-RPC over WebSocket: send a WebSocket upgrade")
        headers = {
            MAX_IN_FLIGHT_HEADER: str(self.limits.max_in_flight),
            MAX_MESSAGE_HEADER: str(self.limits.max_message_bytes),
        }

        async def serve(channel: WebSocketChannel) -> None:
            conn = RpcConnection(
                self.handler,
                channel.send,
                card=lambda: self._card(request),
                binding=WEBSOCKET_BINDING,
                limits=self.limits,
                ctx=ctx,
            )
            self._live[channel] = conn
            try:
                await self._serve(channel, conn)
            finally:
                self._live.pop(channel, None)
                conn.peer_gone()
                await conn.close(finish_within=self.config.unary_grace)

        return Upgrade(
            headers,
            self.limits.max_message_bytes,
            self.config.heartbeat,
            serve,
            _error_reply(error, 426, {"Upgrade": "websocket"}),
        )

    # ---- the connection ----------------------------------------------------------------

    async def _serve(self, channel: WebSocketChannel, conn: RpcConnection) -> None:
        try:
            while (message := await channel.receive()) is not None:
                if isinstance(message, str):
                    await conn.receive(message.encode())
                else:
                    await conn.refuse(InvalidRequestError("binary frames are not used: send JSON-RPC as text"))
        except ConnectionViolation as exc:
            log.info("closing a WebSocket connection (%d): %s", exc.code, exc.reason)
            await channel.close(exc.code, _reason(exc.reason))

    async def shutdown(self, _app: Any = None, *, finish_within: float = 5.0) -> None:
        """Let what is in flight be answered, then close every connection with 1001 (going away).

        Called after the handler canceled its runs: the streams of those tasks end with their
        CANCELED status and blocking sends get their task, as on HTTP, before the close.
        """
        live = list(self._live.items())
        await asyncio.gather(*(conn.close(finish_within=finish_within) for _, conn in live), return_exceptions=True)
        closing = [channel.close(GOING_AWAY, "server shutting down") for channel, _ in live]
        await asyncio.gather(*closing, return_exceptions=True)
