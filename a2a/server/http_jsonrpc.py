"""The JSON-RPC 2.0 over HTTP binding: one POST endpoint; streaming methods answer with SSE."""

from __future__ import annotations

import logging

from aiohttp import web

from ..errors import AuthenticationRequiredError, InternalError, InvalidRequestError, ProtocolError
from ..protocol.codec import encode
from ..protocol.jsonrpc import RequestError, decode_call, encode_error, encode_result, request_id_of
from ..protocol.nesting import DEFAULT_MAX_JSON_DEPTH
from ..types import RequestId
from .auth import Authenticator
from .events import LoggedEvent
from .handler import CallContext, RequestHandler
from .http_common import DEFAULT_SSE_HEARTBEAT, first_event, gate, read_body, write_sse
from .limits import BODY_REFUSALS

__all__ = ["JsonRpcBinding", "jsonrpc_error_body"]

log = logging.getLogger("a2a.server")

JSON = "application/json"


def jsonrpc_error_body(error: ProtocolError) -> tuple[bytes, str]:
    """An error that answers no request we could read (``"id": null``), and its content type."""
    return encode_error(None, error), JSON


class JsonRpcBinding:
    def __init__(
        self,
        handler: RequestHandler,
        authenticator: Authenticator,
        max_body: int,
        *,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        heartbeat: float | None = DEFAULT_SSE_HEARTBEAT,
    ) -> None:
        self.handler = handler
        self.authenticator = authenticator
        self.max_body = max_body
        self.max_json_depth = max_json_depth
        self.heartbeat = heartbeat

    def _error(self, request_id: RequestId, error: ProtocolError) -> web.Response:
        # JSON-RPC errors travel with HTTP 200 (as the reference SDK does), except the
        # transport-level ones a client must see as such: 401 (with a challenge), 413, and the
        # refusals of how the body was sent (415 encoding, 400 undecodable, 408 too slow).
        headers = None
        status = 200
        if isinstance(error, AuthenticationRequiredError):
            status = 401
            headers = {"WWW-Authenticate": ", ".join(self.authenticator.challenges())}
        elif error.http_status == 413 or isinstance(error, BODY_REFUSALS):
            status = error.http_status
        return web.Response(body=encode_error(request_id, error), status=status, headers=headers, content_type=JSON)

    async def _refused_id(self, request: web.BaseRequest) -> RequestId:
        """The id of a request refused before it was read (its version, its credentials): read
        from its body when it can be (JSON-RPC 2.0 allows ``null`` only when it cannot); a body
        over the limit is not read."""
        try:
            return request_id_of(await read_body(request, self.max_body), max_depth=self.max_json_depth)
        except ProtocolError:
            return None

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        # The handler raises only protocol errors; anything else here is a request no decoder
        # expected (answered -32600) or a fault of ours (-32603): never an exception out of here.
        try:
            ctx = gate(request, self.authenticator)
        except ProtocolError as exc:
            return self._error(await self._refused_id(request), exc)
        request_id: RequestId = None
        try:
            try:
                call = decode_call(await read_body(request, self.max_body), max_depth=self.max_json_depth)
            except (RequestError, ProtocolError):
                raise
            except Exception as exc:  # noqa: BLE001 - bad input: one line in the log, a precise answer
                log.warning("refused a request that could not be decoded (%s: %.200r)", type(exc).__name__, str(exc))
                raise InvalidRequestError(f"Request could not be decoded: {str(exc)[:200]}") from None
            request_id = call.id
            if call.method.streaming:
                return await self._stream(request, call.id, call.method.name, call.params, ctx)
            result = await self.handler.call(call.method.name, call.params, ctx)
            return web.Response(body=encode_result(call.id, result), content_type="application/json")
        except RequestError as exc:
            return self._error(exc.request_id, exc.error)
        except ProtocolError as exc:
            return self._error(request_id, exc)
        except (ConnectionError, web.HTTPException):
            raise
        except Exception:  # a fault of ours: answered as such, with the request id
            log.exception("could not answer a JSON-RPC request")
            return self._error(request_id, InternalError())

    async def _stream(
        self, request: web.BaseRequest, request_id: RequestId, method: str, params: object, ctx: CallContext
    ) -> web.StreamResponse:
        events = self.handler.stream(method, params, ctx)
        first = await first_event(events)  # errors before the first event answer as plain JSON
        prefix = b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":'

        def frame(logged: LoggedEvent) -> bytes:
            return prefix + logged.body + b"}"

        return await write_sse(
            request, first, events, frame, lambda err: encode_error(request_id, err), heartbeat=self.heartbeat
        )
