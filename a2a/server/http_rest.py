"""The HTTP+JSON (REST) binding: resource paths under one prefix, optionally under ``/{tenant}``."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from ..errors import AuthenticationRequiredError, InternalError, InvalidRequestError, ProtocolError
from ..protocol import rest
from ..protocol.nesting import DEFAULT_MAX_JSON_DEPTH, check_depth
from .auth import Authenticator
from .events import LoggedEvent
from .handler import CallContext, RequestHandler
from .http_common import DEFAULT_SSE_HEARTBEAT, first_event, gate, read_body, write_sse

__all__ = ["RestBinding", "rest_error_body"]

log = logging.getLogger("a2a.server")


def rest_error_body(error: ProtocolError) -> tuple[bytes, str]:
    """An error as this binding answers it: the REST error body, with the same content type as
    a success (``application/a2a+json``)."""
    return rest.encode_error(error), rest.MEDIA_TYPE


class RestBinding:
    def __init__(
        self,
        handler: RequestHandler,
        authenticator: Authenticator,
        max_body: int,
        prefix: str,
        *,
        max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
        heartbeat: float | None = DEFAULT_SSE_HEARTBEAT,
    ) -> None:
        self.handler = handler
        self.max_json_depth = max_json_depth
        self.heartbeat = heartbeat
        #: Where the binding is mounted: the path after it names the operation.
        self._tail_from = len(prefix.rstrip("/")) + 1
        self.authenticator = authenticator
        self.max_body = max_body

    def _error(self, error: ProtocolError) -> web.Response:
        headers = None
        if isinstance(error, AuthenticationRequiredError):
            headers = {"WWW-Authenticate": ", ".join(self.authenticator.challenges())}
        body, content_type = rest_error_body(error)
        return web.Response(body=body, status=error.http_status, headers=headers, content_type=content_type)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        # The handler raises only protocol errors; anything else here is a request no decoder
        # expected (answered 400) or a fault of ours (500): never an exception out of here.
        try:
            ctx = gate(request, self.authenticator)
            spec, path_fields = rest.match(self._tail(request), request.method)
            body = await read_body(request, self.max_body) if request.body_exists else b""
            try:
                check_depth(body, self.max_json_depth)  # before any decoder recurses into it
                params = rest.decode_params(spec, path_fields, request.query, body)
            except ProtocolError:
                raise
            except Exception as exc:  # noqa: BLE001 - bad input: one line in the log, a precise answer
                log.warning("refused a request that could not be decoded (%s: %.200r)", type(exc).__name__, str(exc))
                raise InvalidRequestError(f"Request could not be decoded: {str(exc)[:200]}") from None
            if spec.streaming:
                return await self._stream(request, spec.name, params, ctx)
            result = await self.handler.call(spec.name, params, ctx)
            return web.Response(body=rest.encode_result(result), content_type=rest.MEDIA_TYPE)
        except ProtocolError as exc:
            return self._error(exc)
        except (ConnectionError, web.HTTPException):
            raise
        except Exception:  # a fault of ours: answered as such
            log.exception("could not answer a REST request")
            return self._error(InternalError())

    def _tail(self, request: web.BaseRequest) -> str:
        """The path after the binding's prefix (which includes any prefix the server is mounted at)."""
        return request.path[self._tail_from :]

    async def _stream(self, request: web.BaseRequest, method: str, params: Any, ctx: CallContext) -> web.StreamResponse:
        events = self.handler.stream(method, params, ctx)
        first = await first_event(events)

        def frame(logged: LoggedEvent) -> bytes:
            return logged.body

        return await write_sse(request, first, events, frame, rest.encode_error, heartbeat=self.heartbeat)
