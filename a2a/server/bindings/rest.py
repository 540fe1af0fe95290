"""The HTTP+JSON (REST) binding: resource paths under one prefix, optionally under ``/{tenant}``."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import msgspec

from ...errors import (
    AuthenticationRequiredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    ProtocolError,
)
from ...protocol import rest, v03
from ...protocol.codec import decode_as, encode
from ...protocol.methods import METHODS, MethodSpec
from ...protocol.nesting import DEFAULT_MAX_JSON_DEPTH, check_depth
from ...protocol.version import is_legacy
from ..engine.auth import Authenticator
from ..engine.events import LoggedEvent
from ..engine.handler import CallContext, RequestHandler
from ..engine.limits import HttpLimits
from .messages import JSON, Answer, HttpRequest, Reply, read_body
from .sse import DEFAULT_SSE_HEARTBEAT, Frames, gate, requested_version, sse_stream

__all__ = ["RestBinding", "rest_error_body"]

log = logging.getLogger("a2a.server")

#: 0.3's REST routes (``v03.PROTO_ROUTES``), compiled once.
_V03_ROUTES = [(methods, re.compile(pattern + "/?"), name) for methods, pattern, name in v03.PROTO_ROUTES]


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
        serve_v03: bool = True,
        limits: HttpLimits | None = None,
    ) -> None:
        self.handler = handler
        self.limits = limits or HttpLimits()
        #: Serve 0.3's REST paths (``/v1/...`` under the interface) to requests that ask for 0.3.
        self.serve_v03 = serve_v03
        self.max_json_depth = max_json_depth
        self.heartbeat = heartbeat
        #: Where the binding is mounted: the path after it names the operation.
        self._prefix = prefix.rstrip("/")
        self._tail_from = len(self._prefix) + 1
        self.authenticator = authenticator
        self.max_body = max_body

    def _error(self, error: ProtocolError) -> Reply:
        headers = None
        if isinstance(error, AuthenticationRequiredError):
            headers = {"WWW-Authenticate": ", ".join(self.authenticator.challenges())}
        body, content_type = rest_error_body(error)
        return Reply(error.http_status, content_type, body, headers)

    async def _read(self, request: HttpRequest) -> bytes:
        return await read_body(request, self.max_body, self.limits)

    async def handle(self, request: HttpRequest) -> Answer:
        # The handler raises only protocol errors; anything else here is a request no decoder
        # expected (answered 400) or a fault of ours (500): never an exception out of here.
        if self.serve_v03 and self._tail(request).startswith("v1/") and is_legacy(requested_version(request)):
            return await self._handle_v03(request)
        try:
            ctx = gate(request, self.authenticator)
            spec, path_fields = rest.match(self._tail(request), request.method)
            body = await self._read(request)
            params = self._decode(spec, path_fields, request.query, body)
            if spec.streaming:
                events = self.handler.stream(spec.name, params, ctx)
                return await sse_stream(events, _FRAMES, heartbeat=self.heartbeat)
            return await self._answer(spec, params, ctx)
        except ProtocolError as exc:
            return self._error(exc)
        except ConnectionError:
            raise
        except Exception:  # a fault of ours: answered as such
            log.exception("could not answer a REST request")
            return self._error(InternalError())

    def _decode(self, spec: MethodSpec, path_fields: Mapping[str, str], query: Mapping[str, str], body: bytes) -> Any:
        """The operation's params: ``ProtocolError`` when they are not valid."""
        try:
            check_depth(body, self.max_json_depth)  # before any decoder recurses into it
            return rest.decode_params(spec, path_fields, query, body)
        except ProtocolError:
            raise
        except Exception as exc:  # noqa: BLE001 - bad input: one line in the log, a precise answer
            log.warning("refused a request that could not be decoded (%s: %.200r)", type(exc).__name__, str(exc))
            raise InvalidRequestError(f"Request could not be decoded: {str(exc)[:200]}") from None

    async def _answer(self, spec: MethodSpec, params: Any, ctx: CallContext) -> Reply:
        """A unary operation's answer: its result, or its error."""
        try:
            result = await self.handler.call(spec.name, params, ctx)
        except ProtocolError as exc:
            return self._error(exc)
        except Exception:  # a fault of ours: answered as such
            log.exception("could not answer a REST request")
            return self._error(InternalError())
        return Reply(200, rest.MEDIA_TYPE, rest.encode_result(result))

    def _tail(self, request: HttpRequest) -> str:
        """The path after the binding's prefix (paths are relative to the mount point)."""
        return request.path[self._tail_from :]

    # ---- A2A 0.3 (ProtoJSON of 0.3's proto), translated at the edge ---------------------------

    def _route_v03(self, request: HttpRequest) -> tuple[str, dict[str, str]]:
        tail = self._tail(request)
        for methods, pattern, name in _V03_ROUTES:
            found = pattern.fullmatch(tail)
            if found is not None and request.method in methods:
                fields = {k: v for k, v in found.groupdict().items() if v is not None}
                return name, fields
        raise MethodNotFoundError(f"No A2A 0.3 operation at {request.method} {tail}")

    async def _handle_v03(self, request: HttpRequest) -> Answer:
        try:
            ctx = gate(request, self.authenticator, legacy=True)
            name, path = self._route_v03(request)
            spec = METHODS[name]
            body = await self._read(request)
            check_depth(body, self.max_json_depth)
            try:
                plain = msgspec.json.decode(body) if body.strip() else {}
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:
                raise InvalidRequestError(f"Request body is not JSON: {exc}") from None
            if not isinstance(plain, dict):
                raise InvalidParamsError("Invalid params: the body must be a JSON object")
            try:
                one = v03.proto_params_from_v03(name, plain, path)
            except v03.V03Error as exc:
                raise InvalidParamsError(f"Invalid 0.3 params: {exc}") from None
            if name == "GetTask" and request.query.get("historyLength", "").isdigit():
                one["historyLength"] = int(request.query["historyLength"])
            params: Any = decode_as(encode(one), spec.request_type)
            if spec.streaming:
                events = self.handler.stream(name, params, ctx)
                return await sse_stream(events, _FRAMES_V03, heartbeat=self.heartbeat)
            result = await self.handler.call(name, params, ctx)
            answer = v03.proto_result_to_v03(name, None if result is None else msgspec.to_builtins(result))
            return Reply(200, JSON, encode(answer))
        except ProtocolError as exc:
            return self._error(exc)
        except ConnectionError:
            raise
        except Exception:  # a fault of ours: answered as such
            log.exception("could not answer a 0.3 REST request")
            return self._error(InternalError())


def _event_body(logged: LoggedEvent) -> bytes:
    return logged.body


def _event_body_v03(logged: LoggedEvent) -> bytes:
    return encode(v03.proto_event_to_v03(msgspec.json.decode(logged.body)))


#: A REST stream's events are their bodies as they are (0.3: translated), shared by every stream.
_FRAMES = Frames(_event_body, rest.encode_error)
_FRAMES_V03 = Frames(_event_body_v03, rest.encode_error)
