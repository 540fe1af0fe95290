"""HTTP transports: JSON-RPC 2.0 over HTTP, and HTTP+JSON (REST); both stream over SSE.

They share one ``httpx.AsyncClient`` (connection pool, headers) and one translation of
httpx's failures into our errors; they differ only in how a call is framed.

Every answer is read within bounds: its body within ``max_response_bytes`` (decoded bytes:
``body.read_body``), a call within its ``timeout`` from the first byte sent to the last byte
read (``exchange``), and an event stream within ``idle_timeout`` between signs of life (an
event or a heartbeat comment).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

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
    UnsupportedOperationError,
)
from ..protocol import rest, v03
from ..protocol.codec import decoder_for, encode
from ..protocol.jsonrpc import RequestIdCounter, decode_response, encode_request
from ..protocol.methods import MethodSpec, with_tenant
from ..protocol.sse import SSEDecoder, SSEEvent
from ..protocol.version import VERSION_HEADER
from .base import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES, ClientTransport, StreamItem, UnreadableEventError
from .body import ACCEPT_ENCODING, decoded_chunks, read_body

__all__ = [
    "JsonRpcTransport",
    "JsonRpcV03Transport",
    "RestTransport",
    "RestV03Transport",
    "exchange",
    "http_error",
    "translate_httpx_error",
]

T = TypeVar("T")

#: Bytes of a stream that count as a sign of life even before they complete an event.
_BULK = 64 * 1024


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


class _Deadline:
    """One ``timeout`` over a whole exchange: connecting, sending, and reading the answer to its
    last byte. httpx's own timeouts bound each socket operation, so a peer that drips a byte a
    second would hold a call for ever under them.

    Running out before a connection was made is a retryable ``TransportError``, as httpx's
    connect timeout is; running out after is ``RequestTimeoutError``. Which one: httpcore's
    trace says when the request starts going out on a connection.
    """

    def __init__(self, request: httpx.Request, timeout: float | None) -> None:
        self.url = str(request.url)
        self.timeout = timeout
        self.connected = False
        if timeout is not None:
            request.extensions["trace"] = self._trace

    async def _trace(self, event: str, info: Mapping[str, Any]) -> None:
        if not self.connected and event.startswith(("http11.", "http2.")):
            self.connected = True

    async def run(self, work: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.timeout):
                return await work
        except TimeoutError as exc:
            if not self.connected:
                raise TransportError(f"Timed out connecting to {self.url}", retryable=True) from exc
            raise RequestTimeoutError(f"{self.url} did not answer in full within {self.timeout}s") from exc
        except httpx.HTTPError as exc:
            raise translate_httpx_error(exc, self.url) from exc


async def exchange(
    client: httpx.AsyncClient, request: httpx.Request, *, timeout: float | None, max_bytes: int
) -> tuple[httpx.Response, bytes]:
    """Send ``request`` and read its whole answer: within ``timeout`` seconds from start to end,
    and ``max_bytes`` of (decoded) body. Raises ``TransportError`` / ``RequestTimeoutError`` /
    ``InvalidResponseError`` (too large, or an encoding we did not ask for)."""
    if timeout is not None:
        request.extensions["timeout"] = httpx.Timeout(timeout).as_dict()
    request.headers["Accept-Encoding"] = ACCEPT_ENCODING  # only what ``read_body`` inflates in bounded steps
    return await _Deadline(request, timeout).run(_send_and_read(client, request, max_bytes))


async def _send_and_read(
    client: httpx.AsyncClient, request: httpx.Request, max_bytes: int
) -> tuple[httpx.Response, bytes]:
    response = await client.send(request, stream=True)
    try:
        return response, await read_body(response, max_bytes)
    finally:
        # Closing before the end drops the connection: the rest of a refused body is never read.
        await response.aclose()


def _is_event_stream(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.startswith("text/event-stream")


class _HttpTransport(ClientTransport):
    """A call and a stream over HTTP; the subclass frames them (``_request`` and the decoding).

    ``max_response_bytes`` bounds every answer body (and each event of a stream);
    ``idle_timeout`` ends a stream on which nothing, not even a heartbeat, arrived for that
    long, with a retryable error (the client resumes it from its last event id).
    """

    #: What ``call`` asks for (``Accept``).
    media_type: str

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        tenant: str | None = None,
        *,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self._client = client
        self.url = url.rstrip("/")
        self.tenant = tenant
        self.max_response_bytes = max_response_bytes
        self.idle_timeout = idle_timeout

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
        request = self._request(method, params, self.media_type)
        response, body = await exchange(self._client, request, timeout=timeout, max_bytes=self.max_response_bytes)
        self._check(response, body)
        return _naming(response, self._result, body, method.result_type)

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        request = self._request(method, params, "text/event-stream")
        if last_event_id is not None:
            request.headers["Last-Event-ID"] = str(last_event_id)
        response, body = await self._open_stream(request, timeout)
        if body is not None:
            self._check(response, body)
            yield _naming(response, self._unstreamed, response, body)
            return
        delivered = False
        async for kind, data, event_id in self._events(response):
            if kind == "error":
                raise self._stream_error(data)
            try:
                event = _naming(response, self._result, data, t.StreamResponse)
            except InvalidResponseError as exc:
                raise UnreadableEventError(str(exc)) from exc
            yield StreamItem(event, event_id)
            delivered = True
        if not delivered:
            # A2A streams start with a task or a message: an empty one is a broken peer.
            raise InvalidResponseError(f"{response.request.url} ended its event stream without any event")

    async def _open_stream(self, request: httpx.Request, timeout: float | None) -> tuple[httpx.Response, bytes | None]:
        """The response once its headers are in (and its whole body, when it is not an event
        stream), within ``timeout``; the events that follow are bounded by the idle timeout."""
        request.extensions["timeout"] = httpx.Timeout(timeout, read=None).as_dict()
        request.headers["Accept-Encoding"] = ACCEPT_ENCODING
        return await _Deadline(request, timeout).run(self._start_stream(request))

    async def _start_stream(self, request: httpx.Request) -> tuple[httpx.Response, bytes | None]:
        response = await self._client.send(request, stream=True)
        if _is_event_stream(response):
            return response, None
        try:
            return response, await read_body(response, self.max_response_bytes)
        finally:
            await response.aclose()

    async def _events(self, response: httpx.Response) -> AsyncIterator[tuple[str, str, str | None]]:
        url = str(response.request.url)
        decoder = SSEDecoder(self.max_response_bytes, strict=True)
        chunks = decoded_chunks(response)
        idle = self.idle_timeout
        loop = asyncio.get_running_loop()
        try:
            while True:
                # The idle clock runs only while we wait for the server, not while the caller
                # handles an event.
                deadline = None if idle is None else loop.time() + idle
                try:
                    async with asyncio.timeout_at(deadline):
                        events = await _until_alive(chunks, decoder)
                except TimeoutError:
                    raise TransportError(
                        f"{url} sent no event and no heartbeat for {idle}s (idle_timeout)", retryable=True
                    ) from None
                if events is None:
                    return
                for event in events:
                    yield event.event, event.data, event.id
        except httpx.HTTPError as exc:
            raise translate_httpx_error(exc, url) from exc
        except ValueError as exc:
            raise InvalidResponseError(f"{url}: {exc}") from exc
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
            await response.aclose()


async def _until_alive(chunks: AsyncIterator[bytes], decoder: SSEDecoder) -> list[SSEEvent] | None:
    """Feed ``decoder`` until the stream shows it is alive: the events it completed (maybe
    none), or ``None`` at the end of the stream. Signs of life are an event, a heartbeat
    comment, or 64 KiB of an event still arriving (a large event on a slow link is not cut);
    a peer that drips a few bytes at a time is as idle as a silent one."""
    comments = decoder.comments
    received = 0
    while True:
        chunk = await anext(chunks, None)
        if chunk is None:
            return None
        events = decoder.feed(chunk)
        received += len(chunk)
        if events or decoder.comments != comments or received >= _BULK:
            return events


def _naming(response: httpx.Response, decode: Callable[..., T], *args: Any) -> T:
    """``decode(*args)``, with an ``InvalidResponseError`` saying which URL sent the bad answer."""
    try:
        return decode(*args)
    except InvalidResponseError as exc:
        raise InvalidResponseError(f"{response.request.url}: {exc}") from exc


class JsonRpcTransport(_HttpTransport):
    """Posts JSON-RPC 2.0 envelopes to the interface URL."""

    media_type = "application/json"

    def __init__(self, client: httpx.AsyncClient, url: str, tenant: str | None = None, **limits: Any) -> None:
        super().__init__(client, url, tenant, **limits)
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


#: The 1.0 operation whose 0.3 result a result type is (for ``v03.result_from_v03``).
_V03_RESULTS: dict[type, str] = {
    t.SendMessageResponse: "SendMessage",
    t.StreamResponse: "SendStreamingMessage",
    t.Task: "GetTask",
    t.TaskPushNotificationConfig: "GetTaskPushNotificationConfig",
    t.ListTaskPushNotificationConfigsResponse: "ListTaskPushNotificationConfigs",
    t.AgentCard: "GetExtendedAgentCard",
}


class JsonRpcV03Transport(JsonRpcTransport):
    """JSON-RPC to an agent that speaks A2A 0.3: 0.3 method names and objects on the wire,
    1.0 objects to the caller (``v03`` translates both ways)."""

    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request:
        name = v03.METHODS_TO_V03.get(method.name)
        if name is None:
            raise UnsupportedOperationError(f"{self.url} speaks A2A 0.3, which has no {method.name}")
        plain = v03.params_to_v03(method.name, msgspec.to_builtins(params))
        body = encode({"jsonrpc": "2.0", "id": self._ids(), "method": name, "params": plain})
        headers = {"Content-Type": "application/json", "Accept": accept, VERSION_HEADER: v03.LEGACY_VERSION}
        return self._client.build_request("POST", self.url, content=body, headers=headers)

    def _result(self, body: bytes | str, result_type: type | None) -> Any:
        plain = decode_response(body if isinstance(body, bytes) else body.encode(), None)
        if result_type is None:
            return None
        try:
            translated = v03.result_from_v03(_V03_RESULTS.get(result_type, ""), plain)
            return decoder_for(result_type).decode(encode(translated))
        except (v03.V03Error, msgspec.ValidationError) as exc:
            raise InvalidResponseError(f"{self.url} sent an invalid A2A 0.3 {result_type.__name__}: {exc}") from exc

    def _unstreamed(self, response: httpx.Response, body: bytes) -> StreamItem:
        return StreamItem(self._result(body, t.StreamResponse))


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
        error = rest.decode_error(body)  # 1.0's errors always say what they are (ErrorInfo)
        if error is not None:
            raise error
        raise http_error(response, body)

    def _result(self, body: bytes | str, result_type: type | None) -> Any:
        return rest.decode_result(body, result_type)

    def _unstreamed(self, response: httpx.Response, body: bytes) -> StreamItem:
        raise InvalidResponseError(f"{response.request.url} did not answer with an event stream")

    def _stream_error(self, data: str) -> Exception:
        return rest.decode_error(data) or InvalidResponseError(f"Stream error: {data[:200]}")


class RestV03Transport(_HttpTransport):
    """HTTP+JSON to an agent that speaks A2A 0.3: 0.3's REST paths and its ProtoJSON bodies on
    the wire, 1.0 objects to the caller (``v03`` translates both ways). 0.3 has no tenants."""

    media_type = "application/json"

    def _request(self, method: MethodSpec, params: Any, accept: str) -> httpx.Request:
        try:
            wire = v03.proto_request_to_v03(method.name, msgspec.to_builtins(params))
        except v03.V03Error as exc:
            raise UnsupportedOperationError(f"{self.url} speaks A2A 0.3, which has no {method.name}") from exc
        headers = {"Accept": accept, VERSION_HEADER: v03.LEGACY_VERSION}
        body = None
        if wire.body is not None:
            headers["Content-Type"] = "application/json"
            body = encode(wire.body)
        url = f"{self.url}/{wire.path}"
        return self._client.build_request(wire.http_method, url, params=wire.query, content=body, headers=headers)

    def _check(self, response: httpx.Response, body: bytes) -> None:
        if response.status_code < 300:
            return
        # 0.3's REST errors are a status and {"message"} (or {"code", "message"}); a peer may
        # also answer in 1.0's shape. One reading of all of them: ``rest.decode_error``.
        error = rest.decode_error(body, response.status_code)
        if error is not None:
            raise error
        raise http_error(response, body)

    def _result(self, body: bytes | str, result_type: type | None) -> Any:
        if result_type is None:
            return None
        try:
            plain = msgspec.json.decode(body)
            translated = v03.proto_result_from_v03(_V03_RESULTS.get(result_type, ""), plain)
            return decoder_for(result_type).decode(encode(translated))
        except (msgspec.DecodeError, v03.V03Error, msgspec.ValidationError) as exc:
            raise InvalidResponseError(f"{self.url} sent an invalid A2A 0.3 {result_type.__name__}: {exc}") from exc

    def _unstreamed(self, response: httpx.Response, body: bytes) -> StreamItem:
        return StreamItem(self._result(body, t.StreamResponse))

    def _stream_error(self, data: str) -> Exception:
        return rest.decode_error(data) or InvalidResponseError(f"{self.url} sent a stream error: {data[:200]}")
