"""HTTP transports: JSON-RPC 2.0 over HTTP, and HTTP+JSON (REST); both stream over SSE.

They share one ``httpx.AsyncClient`` (connection pool, headers) and one translation of
httpx's failures into our errors; they differ only in how a call is framed.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from .. import types as t
from ..backoff import parse_retry_after
from ..errors import HTTPStatusError, InvalidResponseError, ProtocolError, RequestTimeoutError, TransportError
from ..protocol import rest
from ..protocol.jsonrpc import RequestIdCounter, decode_response, encode_request
from ..protocol.methods import MethodSpec, with_tenant
from ..protocol.sse import SSEDecoder
from .base import ClientTransport, StreamItem

__all__ = ["JsonRpcTransport", "RestTransport", "http_error", "translate_httpx_error"]


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


class _HttpTransport(ClientTransport):
    """A call and a stream over HTTP; the subclass frames them (``_request`` and the decoding)."""

    #: What ``call`` asks for (``Accept``).
    media_type: str

    def __init__(self, client: httpx.AsyncClient, url: str, tenant: str | None = None) -> None:
        self._client = client
        self.url = url.rstrip("/")
        self.tenant = tenant

    @abc.abstractmethod
    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request: ...

    @abc.abstractmethod
    def _check(self, response: httpx.Response, body: bytes) -> None:
        """Raise the error an answer that is not a success carries."""

    @abc.abstractmethod
    def _result(self, body: bytes | str, result_type: type | None) -> Any:
        """A successful answer's result (or, for an SSE ``data``, the event)."""

    @abc.abstractmethod
    def _unstreamed(self, response: httpx.Response, body: bytes) -> StreamItem:
        """A successful answer to a streaming call that is not an event stream."""

    @abc.abstractmethod
    def _stream_error(self, data: str) -> Exception:
        """The error an SSE ``error`` event carries."""

    async def call(self, method: MethodSpec, params: Any, *, timeout: float | None) -> Any:
        response = await self._send(self._request(method, params, self.media_type), timeout)
        body = response.content
        self._check(response, body)
        return self._result(body, method.result_type)

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
            yield self._unstreamed(response, body)
            return
        async for kind, data, event_id in self._events(response):
            if kind == "error":
                raise self._stream_error(data)
            yield StreamItem(self._result(data, t.StreamResponse), event_id)

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

    media_type = "application/json"

    def __init__(self, client: httpx.AsyncClient, url: str, tenant: str | None = None) -> None:
        super().__init__(client, url, tenant)
        self._ids = RequestIdCounter()

    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request:
        body = encode_request(self._ids(), method.name, with_tenant(params, self.tenant))
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

    def _result(self, body: bytes | str, result_type: type | None) -> Any:
        return decode_response(body if isinstance(body, bytes) else body.encode(), result_type)

    def _unstreamed(self, response: httpx.Response, body: bytes) -> StreamItem:
        # A single JSON-RPC answer instead of a stream: an error, or one result.
        return StreamItem(decode_response(body, t.StreamResponse))

    def _stream_error(self, data: str) -> Exception:
        decode_response(data.encode(), None)  # raises the error it carries
        return InvalidResponseError(f"Stream error without an error body: {data[:200]}")


class RestTransport(_HttpTransport):
    """HTTP+JSON: one resource path per operation under the interface URL."""

    media_type = rest.MEDIA_TYPE

    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request:
        wire = rest.build(method, with_tenant(params, self.tenant))
        headers: Mapping[str, str] = {"Accept": accept}
        if wire.body is not None:
            headers = {"Accept": accept, "Content-Type": rest.MEDIA_TYPE}
        url = f"{self.url}/{wire.path}"
        return self._client.build_request(wire.http_method, url, params=wire.query, content=wire.body, headers=headers)

    def _check(self, response: httpx.Response, body: bytes) -> None:
        if response.status_code < 300:
            return
        error = rest.decode_error(body)
        if error is not None:
            raise error
        raise http_error(response, body)

    def _result(self, body: bytes | str, result_type: type | None) -> Any:
        return rest.decode_result(body, result_type)

    def _unstreamed(self, response: httpx.Response, body: bytes) -> StreamItem:
        raise InvalidResponseError(f"{response.request.url} did not answer with an event stream")

    def _stream_error(self, data: str) -> Exception:
        return rest.decode_error(data) or InvalidResponseError(f"Stream error: {data[:200]}")
