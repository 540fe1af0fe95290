"""The one dispatcher for JSON-RPC over a long-lived connection (WebSocket and stdio).

``RpcConnection`` does no I/O. A binding hands it each incoming message (``receive``) and a
coroutine that sends one outgoing message; the connection does the rest, the same way for every
binding: it decodes calls with ``a2a.protocol.jsonrpc``, answers unary calls and streams out of
order as they finish (correlated by ``id``), enforces the in-flight limit, takes one message per
turn of the event loop and runs a few calls at a time (``call_slots``: one peer's flood must not
fill the loop), cancels one stream on
``$/cancel``, serves the connection-level methods (``GetAgentCard``, ``initialize``), and
encodes protocol errors as JSON-RPC errors (the handler raises nothing else). A peer that breaks
a limit makes ``receive`` raise ``ConnectionViolation``, which the binding turns into a close.

Closing the connection stops its streams; it never cancels a task (tasks belong to the handler).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import InternalError, InvalidRequestError, ParseError, ProtocolError, VersionNotSupportedError
from ...protocol.codec import decode_as
from ...protocol.connection import (
    CANCEL_METHOD,
    END_CANCELED,
    END_CLOSED,
    END_COMPLETE,
    GET_CARD_METHOD,
    INITIALIZE_METHOD,
    CancelParams,
    ControlCall,
    GetAgentCardParams,
    InitializeParams,
    InitializeResult,
    Limits,
    decode_control,
    encode_stream_end,
    encode_stream_event,
    stream_prefix,
)
from ...protocol.jsonrpc import Call, RequestError, decode_call, encode_error, encode_result
from ...protocol.nesting import DEFAULT_MAX_JSON_DEPTH
from ...protocol.version import PROTOCOL_VERSION
from ...types import AgentCard, UnsetType
from ..engine.events import ends_stream
from ..engine.handler import CallContext, RequestHandler
from .call_slots import CallSlots, Slot

__all__ = [
    "CLOSE_POLICY_VIOLATION",
    "CLOSE_TOO_BIG",
    "DEFAULT_CALL_SLOT_HOLD",
    "DEFAULT_MAX_EXECUTING",
    "DEFAULT_MAX_IN_FLIGHT",
    "ConnectionLimits",
    "ConnectionViolation",
    "RpcConnection",
]

log = logging.getLogger("a2a.server")

DEFAULT_MAX_IN_FLIGHT = 256
#: Calls of one connection that run at once (the others wait in arrival order): enough for a
#: client's parallel calls, few enough that a flooding peer leaves the loop to everyone else.
DEFAULT_MAX_EXECUTING = 8
#: Seconds a call keeps its slot at most: longer, it is waiting (for its agent, a cancellation,
#: another replica), not working, and must not hold back the connection's quick calls.
DEFAULT_CALL_SLOT_HOLD = 0.05
#: Close codes (RFC 6455) a violation carries; stdio reports the same reason and exits.
CLOSE_POLICY_VIOLATION = 1008
CLOSE_TOO_BIG = 1009
#: After cancellation, how long to wait for a request's coroutine to unwind.
_UNWIND_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_message_bytes: int = 4 * 1024 * 1024
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    #: Deepest nesting of objects and arrays in a message; deeper: -32600 (the connection goes on).
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    #: Calls (unary, and streams until their first event) that run at once; more wait their turn.
    max_executing: int = DEFAULT_MAX_EXECUTING
    #: Seconds after which a call that has not finished gives its slot to the next one.
    call_slot_hold: float = DEFAULT_CALL_SLOT_HOLD

    def __post_init__(self) -> None:
        if self.max_executing < 1:
            raise ValueError("ConnectionLimits.max_executing must be at least 1")
        if self.call_slot_hold <= 0:
            raise ValueError("ConnectionLimits.call_slot_hold must be positive")

    def wire(self) -> Limits:
        return Limits(max_message_bytes=self.max_message_bytes, max_in_flight=self.max_in_flight)


class ConnectionViolation(Exception):
    """The peer broke a limit: close the connection with ``code`` (WebSocket) and ``error`` as reason."""

    def __init__(self, code: int, error: ProtocolError) -> None:
        super().__init__(error.message)
        self.code = code
        self.error = error

    @property
    def reason(self) -> str:
        return self.error.message


Send = Callable[[bytes], Awaitable[None]]
Admit = Callable[[Mapping[str, str]], CallContext]


class RpcConnection:
    """The server side of one connection.

    ``ctx`` is the caller as the handshake established it (WebSocket). Without it (stdio), the
    peer's first request must be ``initialize``; ``admit`` checks its service parameters with
    the same gate as HTTP and returns the caller.
    """

    def __init__(
        self,
        handler: RequestHandler,
        send: Send,
        *,
        card: Callable[[], AgentCard],
        binding: str,
        limits: ConnectionLimits | None = None,
        ctx: CallContext | None = None,
        admit: Admit | None = None,
    ) -> None:
        if ctx is None and admit is None:
            raise ValueError("RpcConnection needs the caller (ctx) or a way to admit one (admit)")
        self.handler = handler
        self.limits = limits or ConnectionLimits()
        self.ctx = ctx
        self._send = send
        self._card = card
        self._binding = binding
        self._admit = admit
        self._lock = asyncio.Lock()
        self._slots = CallSlots(self.limits.max_executing, self.limits.call_slot_hold)
        self._tasks: dict[str | int, asyncio.Task[None]] = {}
        self._streams: set[str | int] = set()
        self._canceled: set[str | int] = set()
        self._closed = False
        self._peer_gone = False

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    # ---- incoming ----------------------------------------------------------------------

    async def receive(self, message: bytes) -> None:
        """Handle one incoming message; returns once it is dispatched, not when it is answered.

        A bad message never ends the connection: it is answered with its JSON-RPC error (a
        notification is not answered at all); only a broken limit raises ``ConnectionViolation``.
        """
        if self._closed:
            return
        try:
            try:
                call = decode_call(message, max_depth=self.limits.max_json_depth)
            except RequestError as exc:
                await self._refused(message, exc)
            else:
                await self._dispatch(call)
        except ConnectionViolation:
            raise
        except UnicodeDecodeError:
            await self._write(encode_error(None, ParseError("Message is not valid UTF-8")))
        except Exception as exc:  # noqa: BLE001 - no message may end the connection: answered, logged in one line
            log.warning("refused a message that could not be decoded (%s: %.200r)", type(exc).__name__, str(exc))
            error = InvalidRequestError(f"Message could not be decoded: {str(exc)[:200]}")
            await self._write(encode_error(None, error))
        # One message per turn of the event loop, as an HTTP connection sends one request at a
        # time: a burst the binding read at once (hundreds of frames in one TCP read) is taken
        # between other clients' work, not ahead of all of it, and a peer that sends faster than
        # it is served is slowed down by TCP backpressure, not queued up in the loop.
        await asyncio.sleep(0)

    async def _refused(self, message: bytes, exc: RequestError) -> None:
        """A message that is no A2A call: a connection-level call, an ignored notification, or an error."""
        control = decode_control(message) if exc.decodable else None
        if control is not None:
            await self._control(control)
        elif exc.notification:
            # JSON-RPC 2.0: a notification is never answered, even when it is wrong. Every A2A
            # operation has an answer, so one sent without an id is not run either.
            log.warning("ignored a notification (a request without id): %s", exc.error.message)
        else:
            await self._write(encode_error(exc.request_id, exc.error))

    async def refuse(self, error: ProtocolError) -> None:
        """Answer a message the binding could not even read (e.g. a binary WebSocket frame)."""
        await self._write(encode_error(None, error))

    async def _dispatch(self, call: Call) -> None:
        request_id = call.id
        if request_id is None:
            error = InvalidRequestError('"id" must be a string or an integer (null cannot be told apart)')
            await self._write(encode_error(None, error))
            return
        if self.ctx is None:
            await self._write(encode_error(request_id, _not_initialized()))
            return
        if request_id in self._tasks:
            error = InvalidRequestError(f"id {request_id!r} is already in flight on this connection: use a new id")
            await self._write(encode_error(request_id, error))
            return
        if len(self._tasks) >= self.limits.max_in_flight:
            raise ConnectionViolation(
                CLOSE_POLICY_VIOLATION,
                InvalidRequestError(
                    f"more than {self.limits.max_in_flight} requests in flight on one connection: "
                    "wait for answers before sending more"
                ),
            )
        ctx = self.ctx
        if call.last_event_id is not None:
            ctx = dataclasses.replace(ctx, last_event_id=call.last_event_id)
        if call.traceparent != ctx.traceparent:
            # Each call's own trace context (its envelope's), not the connection's.
            ctx = dataclasses.replace(ctx, traceparent=call.traceparent, tracestate=call.tracestate)
        run = self._stream(call, ctx) if call.method.streaming else self._unary(call, ctx)
        task = asyncio.get_running_loop().create_task(run, name=f"a2a-rpc-{call.method.name}-{request_id}")
        self._tasks[request_id] = task
        if call.method.streaming:
            self._streams.add(request_id)
        task.add_done_callback(functools.partial(self._forget, request_id))

    def _forget(self, key: str | int, task: asyncio.Task[None]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
            self._streams.discard(key)
            self._canceled.discard(key)

    # ---- calls -------------------------------------------------------------------------

    async def _unary(self, call: Call, ctx: CallContext) -> None:
        assert call.id is not None
        slot = await self._slots.take()
        try:
            result = await self.handler.call(call.method.name, call.params, ctx)
            body = encode_result(call.id, result)
        except ProtocolError as exc:
            body = encode_error(call.id, exc)
        except Exception:  # a fault of ours: the caller still gets an answer, never silence
            log.exception("could not answer %s", call.method.name)
            body = encode_error(call.id, InternalError())
        finally:
            slot.release()  # before the write: a peer slow to read holds no slot
        await self._write(body)

    async def _stream(self, call: Call, ctx: CallContext) -> None:
        request_id = call.id
        assert request_id is not None
        slot: Slot | None = None
        try:
            slot = await self._slots.take()
            closing = encode_stream_end(request_id, await self._pump(call, ctx, request_id, slot))
        except asyncio.CancelledError:
            if request_id not in self._canceled or self._closed:
                raise
            # The peer's own $/cancel: say so, then end normally (the cancellation was ours).
            current = asyncio.current_task()
            if current is not None:
                current.uncancel()
            closing = encode_stream_end(request_id, END_CANCELED)
        except ProtocolError as exc:
            closing = encode_error(request_id, exc)
        except Exception:  # a fault of ours: the stream still ends with a closing frame, never silence
            log.exception("could not stream %s", call.method.name)
            closing = encode_error(request_id, InternalError())
        finally:
            if slot is not None:
                slot.release()
            # From here on $/cancel cannot interrupt it: exactly one closing frame goes out.
            self._streams.discard(request_id)
        await self._write(closing)

    async def _pump(self, call: Call, ctx: CallContext, request_id: str | int, slot: Slot) -> str:
        events = self.handler.stream(call.method.name, call.params, ctx)
        prefix = stream_prefix(request_id)
        complete = False
        try:
            async for logged in events:
                # Its first event out, a stream follows its task: it waits, it no longer works.
                slot.release()
                await self._write(encode_stream_event(prefix, logged.seq, logged.body))
                complete = ends_stream(logged.event)
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        return END_COMPLETE if complete else END_CLOSED

    # ---- connection-level methods ------------------------------------------------------

    async def _control(self, call: ControlCall) -> None:
        request_id = None if isinstance(call.id, UnsetType) else call.id
        try:
            result = self._control_result(call)
        except ProtocolError as exc:
            if not isinstance(call.id, UnsetType):
                await self._write(encode_error(request_id, exc))
            else:
                log.debug("ignored a bad %s notification: %s", call.method, exc.message)
            return
        if not isinstance(call.id, UnsetType):
            await self._write(encode_result(request_id, result))

    def _control_result(self, call: ControlCall) -> Any:
        if call.method == CANCEL_METHOD:
            self.cancel(decode_as(call.params, CancelParams).id)
            return {}
        if isinstance(call.id, UnsetType):
            raise InvalidRequestError(f"{call.method} is a request: give it an id")
        if call.method == GET_CARD_METHOD:
            decode_as(call.params, GetAgentCardParams)
            return self._card()
        if call.method == INITIALIZE_METHOD and self._admit is not None:
            return self._initialize(decode_as(call.params, InitializeParams))
        raise InvalidRequestError(f"{call.method} is not offered on this binding")

    def _initialize(self, params: InitializeParams) -> InitializeResult:
        assert self._admit is not None
        if self.ctx is not None:
            raise InvalidRequestError("initialize was already done on this connection")
        self.ctx = self._admit(params.service_parameters)
        return InitializeResult(protocol_version=PROTOCOL_VERSION, binding=self._binding, limits=self.limits.wire())

    def cancel(self, request_id: str | int) -> bool:
        """Stop one stream (as ``$/cancel`` does); ``False`` if it is not a stream in flight."""
        task = self._tasks.get(request_id)
        if task is None or request_id not in self._streams or request_id in self._canceled:
            return False
        self._canceled.add(request_id)
        task.cancel()
        return True

    # ---- outgoing ----------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        if self._peer_gone:
            return
        try:
            async with self._lock:
                await self._send(data)
        except ConnectionError as exc:
            # The peer went away; the reading side notices too and closes the connection.
            log.debug("could not send to the peer: %s", exc)
            self._peer_gone = True

    # ---- closing -----------------------------------------------------------------------

    def peer_gone(self) -> None:
        """Nobody can read answers any more: stop sending, stop the streams."""
        self._peer_gone = True
        self.cancel_streams()

    def cancel_streams(self) -> None:
        for key in list(self._streams):
            task = self._tasks.get(key)
            if task is not None:
                task.cancel()

    async def close(self, *, finish_within: float = 0.0) -> None:
        """Accept nothing more; give what is in flight ``finish_within`` seconds, then cancel it.

        Streams are only readers of a task's events, and cancelling a unary call stops the
        waiting, not the work: the tasks themselves go on.
        """
        self._closed = True
        pending = list(self._tasks.values())
        if pending and finish_within > 0:
            await asyncio.wait(pending, timeout=finish_within)
        pending = [task for task in pending if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            _, stuck = await asyncio.wait(pending, timeout=_UNWIND_TIMEOUT)
            if stuck:
                log.warning("%d request(s) did not unwind within %ss of being canceled", len(stuck), _UNWIND_TIMEOUT)


def _not_initialized() -> ProtocolError:
    return VersionNotSupportedError(
        'No initialize yet: the first request must be initialize with params {"serviceParameters": '
        '{"A2A-Version": "1.0"}} (a missing version means 0.3, which this server does not serve)'
    )
