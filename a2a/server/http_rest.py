"""The HTTP+JSON (REST) binding: resource paths under one prefix, optionally under ``/{tenant}``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec
from aiohttp import web

from ..errors import AuthenticationRequiredError, InvalidParamsError, MethodNotFoundError, ParseError, ProtocolError
from ..protocol.codec import decode_as, encode
from ..protocol.methods import METHODS
from .auth import Authenticator
from .events import LoggedEvent
from .handler import CallContext, RequestHandler
from .http_common import first_event, gate, internal_error, read_body, write_sse

__all__ = ["MEDIA_TYPE", "RestBinding", "rest_error_body"]

MEDIA_TYPE = "application/a2a+json"

_SEGMENT = r"[^/:]+"


@dataclass(frozen=True, slots=True)
class _Route:
    http_methods: frozenset[str]
    pattern: re.Pattern[str]
    method: str
    #: The body is the request message itself (decoded straight into the request type).
    body_is_request: bool = False


def _route(http: str, path: str, method: str, *, body_is_request: bool = False) -> list[_Route]:
    escaped = re.escape(path).replace(r"\{", "{").replace(r"\}", "}")
    regex = re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m.group(1)}>{_SEGMENT})", escaped)
    methods = frozenset(http.split("|"))
    return [
        _Route(methods, re.compile(f"^{regex}$"), method, body_is_request),
        _Route(methods, re.compile(f"^(?P<tenant>{_SEGMENT})/{regex}$"), method, body_is_request),
    ]


# Without-tenant forms are tried first, so "tasks/x" is a task id, never a tenant called "tasks".
_ROUTES: list[_Route] = sorted(
    [
        *_route("POST", "message:send", "SendMessage", body_is_request=True),
        *_route("POST", "message:stream", "SendStreamingMessage", body_is_request=True),
        *_route("GET", "tasks", "ListTasks"),
        *_route("GET", "tasks/{id}", "GetTask"),
        *_route("POST", "tasks/{id}:cancel", "CancelTask"),
        *_route("GET|POST", "tasks/{id}:subscribe", "SubscribeToTask"),
        *_route(
            "POST", "tasks/{task_id}/pushNotificationConfigs", "CreateTaskPushNotificationConfig", body_is_request=True
        ),
        *_route("GET", "tasks/{task_id}/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
        *_route("GET", "tasks/{task_id}/pushNotificationConfigs/{id}", "GetTaskPushNotificationConfig"),
        *_route("DELETE", "tasks/{task_id}/pushNotificationConfigs/{id}", "DeleteTaskPushNotificationConfig"),
        *_route("GET", "extendedAgentCard", "GetExtendedAgentCard"),
    ],
    key=lambda r: r.pattern.pattern.startswith("^(?P<tenant>"),
)

_CAMEL = {"task_id": "taskId"}


def rest_error_body(error: ProtocolError) -> bytes:
    return encode(
        {
            "error": {
                "code": error.http_status,
                "status": error.grpc_status,
                "message": error.message,
                "details": [error.error_info()],
            }
        }
    )


def _match(path: str, http_method: str) -> tuple[_Route, dict[str, str]]:
    allowed = False
    for route in _ROUTES:
        found = route.pattern.match(path)
        if found is None:
            continue
        if http_method in route.http_methods:
            return route, {k: v for k, v in found.groupdict().items() if v is not None}
        allowed = True
    if allowed:
        raise MethodNotFoundError(f"HTTP {http_method} is not allowed on /{path}")
    raise MethodNotFoundError(f"No A2A operation at /{path}")


class RestBinding:
    def __init__(self, handler: RequestHandler, authenticator: Authenticator, max_body: int, prefix: str) -> None:
        self.handler = handler
        #: Where the binding is mounted: the path after it names the operation.
        self._tail_from = len(prefix.rstrip("/")) + 1
        self.authenticator = authenticator
        self.max_body = max_body

    def _error(self, error: ProtocolError) -> web.Response:
        headers = None
        if isinstance(error, AuthenticationRequiredError):
            headers = {"WWW-Authenticate": ", ".join(self.authenticator.challenges())}
        return web.Response(
            body=rest_error_body(error), status=error.http_status, headers=headers, content_type="application/json"
        )

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            ctx = gate(request, self.authenticator)
            route, path_params = _match(self._tail(request), request.method)
            params = await self._params(request, route, path_params)
            if METHODS[route.method].streaming:
                return await self._stream(request, route.method, params, ctx)
            result = await self.handler.call(route.method, params, ctx)
            return web.Response(body=encode(result if result is not None else {}), content_type=MEDIA_TYPE)
        except ProtocolError as exc:
            return self._error(exc)
        except Exception as exc:  # noqa: BLE001 - the one boundary: never a traceback to the peer
            return self._error(internal_error(exc))

    def _tail(self, request: web.BaseRequest) -> str:
        """The path after the binding's prefix (which includes any prefix the server is mounted at)."""
        return request.path[self._tail_from :]

    async def _params(self, request: web.BaseRequest, route: _Route, path_params: dict[str, str]) -> Any:
        request_type = METHODS[route.method].request_type
        body = await read_body(request, self.max_body) if request.body_exists else b""
        if route.body_is_request:
            params: Any = decode_as(body or b"{}", request_type)
            return msgspec.structs.replace(params, **path_params) if path_params else params
        fields: dict[str, Any] = {}
        if body.strip():
            try:
                decoded = msgspec.json.decode(body)
            except msgspec.DecodeError as exc:
                raise ParseError(f"Request body is not valid JSON: {exc}") from exc
            if not isinstance(decoded, dict):
                raise InvalidParamsError("Request body must be a JSON object")
            fields.update(decoded)
        fields.update(request.query)
        fields.pop("A2A-Version", None)
        fields.update({_CAMEL.get(k, k): v for k, v in path_params.items()})
        try:
            return msgspec.convert(fields, request_type, strict=False)
        except msgspec.ValidationError as exc:
            raise InvalidParamsError(f"Invalid params: {exc}") from exc

    async def _stream(self, request: web.BaseRequest, method: str, params: Any, ctx: CallContext) -> web.StreamResponse:
        events = self.handler.stream(method, params, ctx)
        first = await first_event(events)

        def frame(logged: LoggedEvent) -> bytes:
            return logged.body

        return await write_sse(request, first, events, frame, rest_error_body)
