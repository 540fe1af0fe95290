"""HTTP transports: JSON-RPC 2.0 over HTTP, and HTTP+JSON (REST); both stream over SSE.

They share one ``httpx.AsyncClient`` (connection pool, headers) and one translation of
httpx's failures into our errors; they differ only in how a call is framed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import quote

import httpx
import msgspec

from .. import types as t
from ..backoff import parse_retry_after
from ..errors import (
    HTTPStatusError,
    InvalidResponseError,
    ProtocolError,
    RequestTimeoutError,
    TransportError,
    error_for_code,
)
from ..protocol.codec import decoder_for, encode
from ..protocol.jsonrpc import RequestIdCounter, decode_response, encode_request
from ..protocol.methods import MethodSpec
from ..protocol.sse import SSEDecoder
from .base import ClientTransport, StreamItem

__all__ = ["JsonRpcTransport", "RestTransport", "http_error", "translate_httpx_error"]

_REST_MEDIA_TYPE = "application/a2a+json"


def translate_httpx_error(exc: httpx.HTTPError, url: str) -> Exception:
    """httpx's failures, in our tree. Connection-level failures may be retried."""
    if isinstance(exc, httpx.TimeoutException):
        if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
            return TransportError(f"Timed out connecting to {url}", retryable=True)
        return RequestTimeoutError(f"Timed out waiting for {url}")
    if isinstance(exc, httpx.ConnectError):
        return TransportError(f"Cannot connect to {url}: {exc}", retryable=True)
    if isinstance(exc, (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)):
        return TransportError(f"Connection to {url} broke: {exc or type(exc).__name__}", retryable=True)
    return TransportError(f"HTTP request to {url} failed: {exc or type(exc).__name__}")


def http_error(response: httpx.Response, body: bytes) -> Exception:
    """An HTTP error status whose body is not an A2A error."""
    snippet = body[:200].decode("utf-8", errors="replace").strip()
    return HTTPStatusError(
        f"{response.request.url} answered HTTP {response.status_code}" + (f": {snippet}" if snippet else ""),
        status=response.status_code,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
    )


class _Rest(msgspec.Struct):
    class _Err(msgspec.Struct):
        message: str = ""
        code: int | None = None
        details: list[Any] = []

    error: _Err


def _rest_error(body: bytes) -> ProtocolError | None:
    try:
        err = msgspec.json.decode(body, type=_Rest).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    reason = next((d["reason"] for d in err.details if isinstance(d, dict) and "reason" in d), None)
    return error_for_code(None, err.message, err.details or None, reason=reason or "INTERNAL")


class _HttpTransport(ClientTransport):
    def __init__(self, client: httpx.AsyncClient, url: str, tenant: str | None = None) -> None:
        self._client = client
        self.url = url.rstrip("/")
        self.tenant = tenant

    async def _send(self, request: httpx.Request, timeout: float | None) -> httpx.Response:
        if timeout is not None:
            request.extensions["timeout"] = httpx.Timeout(timeout).as_dict()
        try:
            return await self._client.send(request)
        except httpx.HTTPError as exc:
            raise translate_httpx_error(exc, str(request.url)) from exc

    async def _open_stream(self, request: httpx.Request, timeout: float | None) -> httpx.Response:
        # A stream may stay quiet for long: only connecting is bounded by the call timeout.
        request.extensions["timeout"] = httpx.Timeout(None, connect=timeout).as_dict()
        try:
            return await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise translate_httpx_error(exc, str(request.url)) from exc

    async def _events(self, response: httpx.Response) -> AsyncIterator[tuple[str, str, str | None]]:
        decoder = SSEDecoder()
        try:
            async for chunk in response.aiter_raw():
                for event in decoder.feed(chunk):
                    yield event.event, event.data, event.id
        except httpx.HTTPError as exc:
            raise translate_httpx_error(exc, str(response.request.url)) from exc
        except ValueError as exc:
            raise InvalidResponseError(str(exc)) from exc
        finally:
            await response.aclose()


class JsonRpcTransport(_HttpTransport):
    """Posts JSON-RPC 2.0 envelopes to the interface URL."""

    def __init__(self, client: httpx.AsyncClient, url: str, tenant: str | None = None) -> None:
        super().__init__(client, url, tenant)
        self._ids = RequestIdCounter()

    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request:
        if self.tenant and getattr(params, "tenant", "absent") is None:
            params = msgspec.structs.replace(params, tenant=self.tenant)
        body = encode_request(self._ids(), method.name, params)
        headers = {"Content-Type": "application/json", "Accept": accept}
        return self._client.build_request("POST", self.url, content=body, headers=headers)

    def _check(self, response: httpx.Response, body: bytes) -> None:
        if response.status_code == 200:
            return
        if response.status_code in (400, 401, 413, 404, 500):
            try:
                decode_response(body, None)
            except ProtocolError:
                raise
            except Exception:  # noqa: BLE001 - not a JSON-RPC body: report the HTTP status below
                pass
        raise http_error(response, body)

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        response = await self._send(self._request(method, params, "application/json"), timeout)
        body = response.content
        self._check(response, body)
        return decode_response(body, method.result_type)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        request = self._request(method, params, "text/event-stream")
        if last_event_id is not None:
            request.headers["Last-Event-ID"] = str(last_event_id)
        response = await self._open_stream(request, timeout)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            body = await response.aread()
            await response.aclose()
            self._check(response, body)
            # A single JSON-RPC answer instead of a stream: an error, or one result.
            yield StreamItem(decode_response(body, t.StreamResponse))
            return
        async for kind, data, event_id in self._events(response):
            if kind == "error":
                decode_response(data.encode(), None)
                raise InvalidResponseError(f"Stream error without an error body: {data[:200]}")
            yield StreamItem(decode_response(data.encode(), t.StreamResponse), event_id)


def _rest_route(method: MethodSpec, params: Any) -> tuple[str, str, dict[str, str], Any]:
    """HTTP method, path, query and body for an operation (the inverse of the server's table)."""
    name = method.name
    q: dict[str, str] = {}
    if name in ("SendMessage", "SendStreamingMessage"):
        verb = "send" if name == "SendMessage" else "stream"
        return "POST", f"message:{verb}", q, msgspec.structs.replace(params, tenant=None)
    if name == "GetExtendedAgentCard":
        return "GET", "extendedAgentCard", q, None
    if name == "ListTasks":
        for key, value in msgspec.to_builtins(msgspec.structs.replace(params, tenant=None)).items():
            q[key] = str(value).lower() if isinstance(value, bool) else str(value)
        return "GET", "tasks", q, None
    if name in ("GetTask", "CancelTask", "SubscribeToTask"):
        task = f"tasks/{quote(params.id, safe='')}"
        if name == "GetTask":
            if params.history_length is not None:
                q["historyLength"] = str(params.history_length)
            return "GET", task, q, None
        if name == "CancelTask":
            return "POST", task + ":cancel", q, {"metadata": params.metadata} if params.metadata else {}
        return "GET", task + ":subscribe", q, None
    configs = f"tasks/{quote(params.task_id, safe='')}/pushNotificationConfigs"
    if name == "CreateTaskPushNotificationConfig":
        return "POST", configs, q, msgspec.structs.replace(params, tenant=None)
    if name == "ListTaskPushNotificationConfigs":
        if params.page_size:
            q["pageSize"] = str(params.page_size)
        if params.page_token:
            q["pageToken"] = params.page_token
        return "GET", configs, q, None
    one = f"{configs}/{quote(params.id, safe='')}"
    return ("DELETE" if name == "DeleteTaskPushNotificationConfig" else "GET"), one, q, None


class RestTransport(_HttpTransport):
    """HTTP+JSON: one resource path per operation under the interface URL."""

    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request:
        verb, path, query, body = _rest_route(method, params)
        tenant = getattr(params, "tenant", None) or self.tenant
        if tenant:
            path = f"{quote(tenant, safe='')}/{path}"
        headers: Mapping[str, str] = {"Accept": accept}
        content = None
        if body is not None:
            content = encode(body)
            headers = {"Accept": accept, "Content-Type": _REST_MEDIA_TYPE}
        return self._client.build_request(verb, f"{self.url}/{path}", params=query, content=content, headers=headers)

    def _check(self, response: httpx.Response, body: bytes) -> None:
        if response.status_code < 300:
            return
        error = _rest_error(body)
        if error is not None:
            raise error
        raise http_error(response, body)

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        response = await self._send(self._request(method, params, _REST_MEDIA_TYPE), timeout)
        body = response.content
        self._check(response, body)
        if method.result_type is None:
            return None
        try:
            return decoder_for(method.result_type).decode(body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise InvalidResponseError(f"Peer sent an invalid {method.result_type.__name__}: {exc}") from exc

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        request = self._request(method, params, "text/event-stream")
        if last_event_id is not None:
            request.headers["Last-Event-ID"] = str(last_event_id)
        response = await self._open_stream(request, timeout)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            body = await response.aread()
            await response.aclose()
            self._check(response, body)
            raise InvalidResponseError(f"{response.request.url} did not answer with an event stream")
        decoder = decoder_for(t.StreamResponse)
        async for kind, data, event_id in self._events(response):
            if kind == "error":
                raise _rest_error(data.encode()) or InvalidResponseError(f"Stream error: {data[:200]}")
            try:
                yield StreamItem(decoder.decode(data), event_id)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise InvalidResponseError(f"Peer sent an invalid stream event: {exc}") from exc
