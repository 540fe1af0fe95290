"""The JSON-RPC 2.0 over HTTP binding: one POST endpoint; streaming methods answer with SSE."""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from ...errors import (
    AuthenticationRequiredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    ProtocolError,
    VersionNotSupportedError,
)
from ...protocol import v03
from ...protocol.codec import encode
from ...protocol.jsonrpc import Call, RequestError, decode_call, encode_error, encode_result, request_id_of
from ...protocol.methods import METHODS
from ...protocol.nesting import DEFAULT_MAX_JSON_DEPTH, check_depth
from ...protocol.version import is_legacy
from ...types import RequestId
from ..engine.auth import Authenticator
from ..engine.events import LoggedEvent
from ..engine.handler import CallContext, RequestHandler
from ..engine.limits import BODY_REFUSALS, HttpLimits
from .messages import JSON, Answer, HttpRequest, Reply, read_body
from .sse import DEFAULT_SSE_HEARTBEAT, Frames, gate, requested_version, sse_error, sse_stream

__all__ = ["JsonRpcBinding", "jsonrpc_error_body"]

#: The 0.3 methods that answer with a stream.
_V03_STREAMS = frozenset({"message/stream", "tasks/resubscribe"})

log = logging.getLogger("a2a.server")


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
        serve_v03: bool = True,
        limits: HttpLimits | None = None,
    ) -> None:
        self.handler = handler
        self.limits = limits or HttpLimits()
        #: Serve A2A 0.3 (its method names and objects) to requests that ask for it: see ``v03``.
        self.serve_v03 = serve_v03
        self.authenticator = authenticator
        self.max_body = max_body
        self.max_json_depth = max_json_depth
        self.heartbeat = heartbeat

    def _error(self, request_id: RequestId, error: ProtocolError) -> Reply:
        # JSON-RPC errors travel with HTTP 200 (as the reference SDK does), except the
        # transport-level ones a client must see as such: 401 (with a challenge), 413, and the
        # refusals of how the body was sent (415 encoding, 400 undecodable, 408 too slow).
        if isinstance(error, AuthenticationRequiredError):
            challenge = {"WWW-Authenticate": ", ".join(self.authenticator.challenges())}
            return Reply(401, JSON, encode_error(request_id, error), challenge)
        if error.http_status == 413 or isinstance(error, BODY_REFUSALS):
            return Reply(error.http_status, JSON, encode_error(request_id, error))
        return Reply(200, JSON, encode_error(request_id, error))

    async def _read(self, request: HttpRequest) -> bytes:
        return await read_body(request, self.max_body, self.limits)

    async def _refused_id(self, request: HttpRequest) -> RequestId:
        """The id of a request refused before it was read (its version, its credentials): read
        from its body when it can be (JSON-RPC 2.0 allows ``null`` only when it cannot); a body
        over the limit is not read."""
        try:
            return self._id_in(await self._read(request))
        except ProtocolError:
            return None

    def _id_in(self, body: bytes) -> RequestId:
        try:
            return request_id_of(body, max_depth=self.max_json_depth)
        except ProtocolError:
            return None

    async def handle(self, request: HttpRequest) -> Answer:
        # The handler raises only protocol errors; anything else here is a request no decoder
        # expected (answered -32600) or a fault of ours (-32603): never an exception out of here.
        if self.serve_v03 and is_legacy(requested_version(request)):
            return await self._handle_v03(request)
        try:
            ctx = gate(request, self.authenticator)
        except ProtocolError as exc:
            return self._error(await self._refused_id(request), exc)
        request_id: RequestId = None
        try:
            call = self._decode(await self._read(request))
            request_id = call.id
            if call.method.streaming:
                events = self.handler.stream(call.method.name, call.params, ctx)
                return await sse_stream(events, _Frames(call.id), heartbeat=self.heartbeat)
            return await self._answer(call, ctx)
        except RequestError as exc:
            return self._error(exc.request_id, exc.error)
        except ProtocolError as exc:
            return self._error(request_id, exc)
        except ConnectionError:
            raise
        except Exception:  # a fault of ours: answered as such, with the request id
            log.exception("could not answer a JSON-RPC request")
            return self._error(request_id, InternalError())

    def _decode(self, body: bytes) -> Call:
        """The call in ``body``: ``RequestError`` (with the id when it is known) or
        ``ProtocolError`` when it is not one."""
        try:
            return decode_call(body, max_depth=self.max_json_depth)
        except (RequestError, ProtocolError):
            raise
        except Exception as exc:  # noqa: BLE001 - bad input: one line in the log, a precise answer
            log.warning("refused a request that could not be decoded (%s: %.200r)", type(exc).__name__, str(exc))
            raise InvalidRequestError(f"Request could not be decoded: {str(exc)[:200]}") from None

    async def _answer(self, call: Call, ctx: CallContext) -> Reply:
        """A unary call's answer: its result, or its error."""
        try:
            result = await self.handler.call(call.method.name, call.params, ctx)
        except ProtocolError as exc:
            return self._error(call.id, exc)
        except Exception:  # a fault of ours: answered as such, with the request id
            log.exception("could not answer a JSON-RPC request")
            return self._error(call.id, InternalError())
        return Reply(200, JSON, encode_result(call.id, result))

    # ---- A2A 0.3, translated at the edge ----------------------------------------------------

    def _envelope_v03(self, body: bytes) -> dict[str, Any] | None:
        """The request object of a 0.3 request's body (``None``: not one; ``decode_call`` then
        gives the usual -32700 / -32600). A 1.0 method name is refused -32009 here, before
        the credentials, as a request without a version always was: a 1.0 client that forgot
        the header, told what to send rather than guessed at."""
        check_depth(body, self.max_json_depth)
        try:
            envelope: Any = msgspec.json.decode(body)
        except (msgspec.DecodeError, UnicodeDecodeError):
            return None
        if not isinstance(envelope, dict) or not isinstance(envelope.get("method"), str):
            return None
        method = envelope["method"]
        if method not in v03.METHODS_FROM_V03:
            request_id = envelope.get("id") if isinstance(envelope.get("id"), (str, int)) else None
            error: ProtocolError = MethodNotFoundError(f"Method not found in A2A 0.3: {method!r}")
            if method in METHODS:
                error = VersionNotSupportedError(
                    f"{method} is an A2A 1.0 method, and a request without A2A-Version (or with 0.3) is "
                    "served in 0.3: send the header or query parameter A2A-Version: 1.0"
                )
            raise RequestError(error, request_id)
        return envelope

    def _call_v03(self, body: bytes, envelope: dict[str, Any] | None) -> Call:
        """The 1.0 call of a 0.3 request: its method renamed, its params translated (``v03``)."""
        if envelope is None:
            return decode_call(body, max_depth=self.max_json_depth)
        name = v03.METHODS_FROM_V03[envelope["method"]]
        try:
            params = v03.params_from_v03(name, envelope.get("params"))
        except v03.V03Error as exc:
            request_id = envelope.get("id") if isinstance(envelope.get("id"), (str, int)) else None
            raise RequestError(InvalidParamsError(f"Invalid 0.3 params: {exc}"), request_id) from None
        return decode_call(encode({**envelope, "method": name, "params": params}), max_depth=self.max_json_depth)

    def _error_v03(self, request_id: RequestId, error: ProtocolError, streaming: bool) -> Answer:
        """A 0.3 client of a stream reads its errors from the stream (it refuses any other
        content type, hiding the error); refusals of the transport (401, 413...) stay HTTP."""
        reply = self._error(request_id, error)
        if streaming and reply.status == 200:
            return sse_error(encode_error(request_id, error))
        return reply

    async def _handle_v03(self, request: HttpRequest) -> Answer:
        request_id: RequestId = None
        streaming = False
        try:
            try:
                body = await self._read(request)
                envelope = self._envelope_v03(body)
                if envelope is not None:
                    request_id = envelope.get("id") if isinstance(envelope.get("id"), (str, int)) else None
                    streaming = envelope["method"] in _V03_STREAMS
                ctx = gate(request, self.authenticator, legacy=True)
                call = self._call_v03(body, envelope)
            except (RequestError, ProtocolError):
                raise
            except Exception as exc:  # noqa: BLE001 - bad input: one line in the log, a precise answer
                log.warning(
                    "refused a 0.3 request that could not be decoded (%s: %.200r)", type(exc).__name__, str(exc)
                )
                raise InvalidRequestError(f"Request could not be decoded: {str(exc)[:200]}") from None
            request_id = call.id
            name = call.method.name
            as_v10 = _sends_v10_objects(envelope)
            if call.method.streaming:
                return await self._stream_v03(call, ctx, as_v10=as_v10)
            result = await self.handler.call(name, call.params, ctx)
            if as_v10:
                mixed = v03.with_v03_enums(None if result is None else msgspec.to_builtins(result))
                return Reply(200, JSON, encode_result(call.id, mixed))
            translated = v03.result_to_v03(name, None if result is None else msgspec.to_builtins(result))
            return Reply(200, JSON, encode_result(call.id, translated))
        except RequestError as exc:
            return self._error_v03(exc.request_id, exc.error, streaming)
        except ProtocolError as exc:
            return self._error_v03(request_id, exc, streaming)
        except ConnectionError:
            raise
        except Exception:  # a fault of ours: answered as such, with the request id
            log.exception("could not answer a 0.3 JSON-RPC request")
            return self._error(request_id, InternalError())

    async def _stream_v03(self, call: Call, ctx: CallContext, *, as_v10: bool = False) -> Answer:
        request_id = call.id
        prefix = b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":'

        def frame(logged: LoggedEvent) -> bytes:
            if as_v10:
                return prefix + encode(v03.with_v03_enums(msgspec.json.decode(logged.body))) + b"}"
            return prefix + encode(v03.event_to_v03(msgspec.json.decode(logged.body))) + b"}"

        try:
            events = self.handler.stream(call.method.name, call.params, ctx)
            frames = Frames(frame, lambda err: encode_error(request_id, err))
            return await sse_stream(events, frames, heartbeat=self.heartbeat)
        except ProtocolError as exc:  # before the first event: a 0.3 client reads it from the stream
            return sse_error(encode_error(request_id, exc))


def _sends_v10_objects(envelope: dict[str, Any] | None) -> bool:
    """A 0.3 method name whose message is 1.0-shaped (no ``kind``, which 0.3 requires on every
    message): a client that mixes the versions that way (fasta2a 2.x) reads the answer in 1.0's
    shapes with 0.3's enum values (``v03.with_v03_enums``); 0.3's shapes would reach it as an
    empty result."""
    params = envelope.get("params") if envelope is not None else None
    message = params.get("message") if isinstance(params, dict) else None
    return isinstance(message, dict) and "kind" not in message


class _Frames:
    """A stream's events, each in its JSON-RPC response (the request's id spliced in), and its
    error. One small object per stream, not two closures and their cells."""

    __slots__ = ("_prefix", "_request_id")

    def __init__(self, request_id: RequestId) -> None:
        self._request_id = request_id
        self._prefix = b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":'

    def event(self, logged: LoggedEvent) -> bytes:
        return self._prefix + logged.body + b"}"

    def error(self, error: ProtocolError) -> bytes:
        return encode_error(self._request_id, error)
