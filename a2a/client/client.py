"""``A2AClient``: talk to one agent, over the first interface of its card that we speak."""

from __future__ import annotations

import asyncio
import functools
import logging
import shlex
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import msgspec

from .. import types as t
from ..errors import CardResolutionError, InvalidParamsError, TransportError, UnsupportedOperationError
from ..metadata import SKILL_KEY
from ..protocol.connection import WEBSOCKET_BINDING
from ..protocol.methods import METHODS, MethodSpec
from ..protocol.version import PROTOCOL_VERSION, VERSION_HEADER
from ..telemetry import tracing
from ..transport.base import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
    ClientTransport,
    StreamItem,
    UnreadableEventError,
)
from ..transport.http import JsonRpcTransport, JsonRpcV03Transport, RestTransport, RestV03Transport
from ..transport.multiplex import ConnectionTransport
from ..transport.targets import STDIO_PREFIX, is_connection_target, transport_for_target
from ..transport.ws import WebSocketTransport
from .auth import CredentialProvider
from .card import choose_interface, fetch_card, is_v03
from .retry import RetryPolicy

__all__ = ["A2AClient", "user_message"]

log = logging.getLogger("a2a.client")

#: Seconds between the first two polls of a task when a stream cannot be used (then doubling).
POLL_INTERVAL = 0.25
#: The longest wait between two polls.
MAX_POLL_INTERVAL = 2.0


def _jsonrpc(client: A2AClient, interface: t.AgentInterface) -> ClientTransport:
    if is_v03(interface):  # the agent speaks A2A 0.3: its method names and objects
        return JsonRpcV03Transport(client._http, interface.url, interface.tenant, **client._http_limits())
    return JsonRpcTransport(client._http, interface.url, interface.tenant, **client._http_limits())


def _rest(client: A2AClient, interface: t.AgentInterface) -> ClientTransport:
    if is_v03(interface):  # 0.3's REST paths and ProtoJSON bodies
        return RestV03Transport(client._http, interface.url, **client._http_limits())
    return RestTransport(client._http, interface.url, interface.tenant, **client._http_limits())


def _websocket(client: A2AClient, interface: t.AgentInterface) -> ClientTransport:
    return WebSocketTransport(
        interface.url, headers=client._connection_headers(), tenant=interface.tenant, **client._connection_limits()
    )


#: protocolBinding → how to make its transport for an interface of the card.
_TRANSPORTS: dict[str, Callable[[A2AClient, t.AgentInterface], ClientTransport]] = {
    "JSONRPC": _jsonrpc,
    "HTTP+JSON": _rest,
    WEBSOCKET_BINDING: _websocket,
}
#: Short names for ``binding=`` (and the CLI's ``--binding``).
_BINDING_ALIASES = {"WEBSOCKET": WEBSOCKET_BINDING, "WS": WEBSOCKET_BINDING}


def with_arguments(
    content: str | t.Message | list[t.Part], skill: str | None, arguments: dict[str, Any] | None
) -> str | t.Message | list[t.Part]:
    """The content, with ``arguments`` as a data part ``{"skill": id, "arguments": {...}}``
    (empty text is then left out)."""
    if skill is None and arguments is None:
        return content
    if isinstance(content, t.Message):
        raise ValueError("pass skill= and arguments= with text or parts, not with a ready Message")
    if arguments is None:
        return content
    parts = ([t.Part(text=content)] if content else []) if isinstance(content, str) else list(content)
    data = {"arguments": arguments} if skill is None else {"skill": skill, "arguments": arguments}
    return [*parts, t.Part(data=data, media_type="application/json")]


def user_message(
    content: str | t.Message | list[t.Part],
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    message_id: str | None = None,
) -> t.Message:
    """A ``ROLE_USER`` message with a fresh ``messageId`` (kept as is if ``content`` is a Message)."""
    if isinstance(content, t.Message):
        return content
    parts = [t.Part(text=content)] if isinstance(content, str) else list(content)
    return t.Message(
        message_id=message_id or uuid.uuid4().hex,
        role=t.Role.USER,
        parts=parts,
        task_id=task_id,
        context_id=context_id,
        metadata=metadata,
    )


class _StreamPosition:
    """What a stream has delivered: the task and the last event id, to resume it exactly."""

    def __init__(self, task_id: str | None = None, seq: int | None = None) -> None:
        self.task_id = task_id
        self.seq = seq

    @property
    def resumable(self) -> bool:
        # Without event ids (peers that send none, such as a2a-sdk 0.3) the stream is still
        # resumed by its task, from wherever the peer's stream of it stands: the events the
        # peer produced while we were away are then missed (the task, read later, has them).
        return self.task_id is not None

    def fresh(self, item: StreamItem) -> bool:
        """Note the item; False for one already delivered (a resumed stream may repeat one)."""
        payload = item.event.payload
        if self.task_id is None:
            self.task_id = payload.id if isinstance(payload, t.Task) else getattr(payload, "task_id", None)
        seq = _seq(item.event_id)
        if seq is not None:
            if self.seq is not None and seq <= self.seq:
                return False
            self.seq = seq
        return True

    def mark(self, exc: TransportError) -> None:
        """Say on the error that ends the stream where it stood (for ``A2AClient.follow``)."""
        exc.task_id = self.task_id
        exc.last_event_id = None if self.seq is None else str(self.seq)


def _interrupted(event: t.StreamResponse) -> bool:
    """The event leaves the task waiting for input or authorization."""
    payload = event.payload
    status = payload.status if isinstance(payload, t.Task | t.TaskStatusUpdateEvent) else None
    return status is not None and status.state.is_interrupted


def _seq(event_id: str | None) -> int | None:
    """The sequence number an event id stands for (a2a-net's ids are whole numbers), or ``None``."""
    return int(event_id) if event_id is not None and event_id.isascii() and event_id.isdigit() else None


async def _open(
    transport: ClientTransport, spec: MethodSpec, params: Any, after: int | None, timeout: float | None
) -> tuple[AsyncIterator[StreamItem], StreamItem | None]:
    """A stream and its first event (``None``: it ended at once). Opening counts as done only once
    an event arrived, so that a stream refused or broken at once is retried like a call."""
    events = transport.stream(spec, params, timeout=timeout, last_event_id=after).__aiter__()
    return events, await anext(events, None)


async def _ended(transport: ClientTransport, task_id: str | None, timeout: float | None) -> t.Task | None:
    """The task, if it has ended; ``None`` when it has not or cannot be read. One attempt: it only
    decides how a stream that failed for good ends, so it must not multiply the attempts."""
    if task_id is None:
        return None
    try:
        task: t.Task = await transport.call(METHODS["GetTask"], t.GetTaskRequest(id=task_id), timeout=timeout)
    except Exception:  # noqa: BLE001 - the caller raises its own, more telling error
        return None
    return task if task.status.state.is_terminal else None


class A2AClient:
    """A client for one agent.

    ``A2AClient("http://127.0.0.1:8000")`` discovers the card on first use and picks the first
    interface it supports (or ``binding=``). Calls raise errors of ``a2a.errors``; retries and
    credentials are policies given here, once, for every call.

    A ``ws://`` / ``wss://`` URL connects over WebSocket directly, and ``stdio:COMMAND LINE``
    (or ``A2AClient.stdio(argv)``) runs the agent as a child process; both ask the agent for
    its card over the connection.

    Every call is bounded: ``timeout`` seconds from its first byte sent to the last byte of
    its answer, ``max_response_bytes`` of answer (the card included; on a stream, per event),
    and a stream is given up (then resumed from its last event id) when nothing, not even a
    heartbeat, arrived for ``idle_timeout`` seconds.
    """

    supported_bindings: tuple[str, ...] = tuple(_TRANSPORTS)

    def __init__(
        self,
        url: str | None = None,
        *,
        card: t.AgentCard | None = None,
        transport: ClientTransport | None = None,
        credentials: CredentialProvider | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = 60.0,
        binding: str | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        if url is None and card is None and transport is None:
            raise ValueError("A2AClient needs a url, a card or a transport")
        self.url = url
        self.card = card
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.idle_timeout = idle_timeout
        self.binding = _BINDING_ALIASES.get(binding.upper(), binding) if binding else None
        self._credentials = credentials
        self._transport = transport
        self._own_http = http_client is None
        base_headers = {VERSION_HEADER: PROTOCOL_VERSION, **(headers or {})}
        self._headers = base_headers
        self._http = http_client or httpx.AsyncClient(headers=base_headers, timeout=timeout)
        if http_client is not None:
            self._http.headers.update(base_headers)
        #: A span per call and the trace context on every request, when OpenTelemetry is installed.
        self._tracing = tracing()
        if self._tracing is not None:
            hooks = self._http.event_hooks.setdefault("request", [])
            if self._tracing.inject_httpx not in hooks:  # a shared http_client gets it once
                hooks.append(self._tracing.inject_httpx)
        self._connect_lock = asyncio.Lock()
        self.interface: t.AgentInterface | None = None

    @classmethod
    def stdio(cls, argv: Sequence[str] | str, **kwargs: Any) -> A2AClient:
        """A client for an agent run as a child process, e.g.
        ``A2AClient.stdio(["a2a", "serve", "examples/echo_agent.py:agent", "--stdio"])``."""
        command = argv if isinstance(argv, str) else shlex.join(argv)
        return cls(STDIO_PREFIX + command, **kwargs)

    # ---- connection --------------------------------------------------------------------

    def _connection_headers(self) -> dict[str, str]:
        """Version, extra headers and credentials, for transports that send them once per connection."""
        credentials = self._credentials.headers(self.card) if self._credentials is not None else {}
        return {**self._headers, **credentials}

    def _http_limits(self) -> dict[str, Any]:
        return {"max_response_bytes": self.max_response_bytes, "idle_timeout": self.idle_timeout}

    def _connection_limits(self) -> dict[str, Any]:
        return {"max_message_bytes": self.max_response_bytes, "idle_timeout": self.idle_timeout}

    async def connect(self) -> ClientTransport:
        """Resolve the card and choose the interface (done once, on first use)."""
        if self._transport is not None:
            return self._transport
        async with self._connect_lock:
            if self._transport is None and self.card is None and self.url and is_connection_target(self.url):
                self._transport = transport_for_target(
                    self.url, headers=self._connection_headers(), **self._connection_limits()
                )
            if self._transport is None:
                if self.card is None:
                    if self.url is None:
                        raise CardResolutionError("no card and no url to discover one from")
                    url = self.url
                    self.card = await self.retry.run(
                        lambda: fetch_card(self._http, url, timeout=self.timeout, max_bytes=self.max_response_bytes),
                        what=f"card of {url}",
                    )
                if self._credentials is not None:
                    self._http.headers.update(self._credentials.headers(self.card))
                self.interface = choose_interface(self.card, self.supported_bindings, self.binding)
                self._transport = _TRANSPORTS[self.interface.protocol_binding](self, self.interface)
        return self._transport

    async def get_card(self) -> t.AgentCard:
        transport = await self.connect()
        if self.card is None and isinstance(transport, ConnectionTransport):
            self.card = await self.retry.run(lambda: transport.get_card(timeout=self.timeout), what="GetAgentCard")
        assert self.card is not None
        return self.card

    async def close(self) -> None:
        if self._transport is not None:
            await self._transport.close()
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> A2AClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ---- calls -------------------------------------------------------------------------

    async def _call(self, method: str, params: Any, timeout: float | None = None) -> Any:
        transport = await self.connect()
        spec = METHODS[method]
        per_call = self.timeout if timeout is None else timeout
        if self._tracing is None:
            return await self.retry.run(lambda: transport.call(spec, params, timeout=per_call), what=method)
        with self._tracing.span(method, "client", self._span_attributes()):
            return await self.retry.run(lambda: transport.call(spec, params, timeout=per_call), what=method)

    def _span_attributes(self) -> dict[str, str]:
        # Where the agent is, without what a URL or a command line may hide (a password, a token).
        target = urlsplit(self.url or "")
        attributes = {"server.address": target.hostname or target.scheme or "in-process"}
        if self.interface is not None:
            attributes["a2a.binding"] = self.interface.protocol_binding
        return attributes

    def _stream(
        self,
        method: str,
        params: Any,
        timeout: float | None = None,
        *,
        position: _StreamPosition | None = None,
        settle: bool = False,
    ) -> AsyncIterator[StreamItem]:
        """The stream ``_events`` gives, under a span for the whole stream when tracing is on."""
        events = self._events(method, params, timeout, position=position, settle=settle)
        if self._tracing is None:
            return events
        return self._tracing.stream(method, "client", self._span_attributes(), events)

    async def _events(
        self,
        method: str,
        params: Any,
        timeout: float | None = None,
        *,
        position: _StreamPosition | None = None,
        settle: bool = False,
    ) -> AsyncIterator[StreamItem]:
        """The client's one stream resumer (transports only raise a retryable error).

        Opening is retried until the first event arrives. After that, a broken connection is
        resumed: the task's stream is asked for again after the last event seen
        (``Last-Event-ID``), so the caller gets every event once, in order, as long as the server
        still retains them. A task that ended while we were away (with ``settle``: also one that
        had ended before) is delivered as its final ``Task``. The error that ends a stream for
        good says where it stood (``TransportError.task_id`` and ``last_event_id``).

        A stream that breaks again and again without a new event (a peer that answers, then
        falls silent) is given up after ``retry.max_attempts`` resumptions in a row that
        delivered nothing new."""
        transport = await self.connect()
        per_call = self.timeout if timeout is None else timeout
        position = position or _StreamPosition()
        spec, what = METHODS[method], method
        # A SendStreamingMessage ends at an interrupted state; resumed with SubscribeToTask,
        # which stays open until the task ends, it must still end there.
        ends_when_interrupted = method == "SendStreamingMessage"
        fruitless = 0  # resumptions in a row that delivered no new event
        while True:
            try:
                events, item = await self.retry.run(
                    functools.partial(_open, transport, spec, params, position.seq, per_call), what=what
                )
            except (UnsupportedOperationError, InvalidParamsError) as exc:
                if not settle or position.task_id is None:
                    raise
                # The task ended and its events are no longer kept (1.0 says UNSUPPORTED_OPERATION;
                # a2a-sdk 0.3 says INVALID_PARAMS, "in terminal state"): its final state ends the stream.
                task = await self.get_task(position.task_id)
                if isinstance(exc, InvalidParamsError) and not task.status.state.is_terminal:
                    raise
                yield StreamItem(t.StreamResponse(task=task))
                return
            except TransportError as exc:
                position.mark(exc)
                ended = await _ended(transport, position.task_id, per_call) if settle else None
                if ended is None:
                    raise
                # A peer that breaks the stream of an ended task instead of refusing it (a2a-sdk
                # 0.3's REST binding): the task's final state ends the stream.
                yield StreamItem(t.StreamResponse(task=ended))
                return
            progressed = False
            try:
                while item is not None:
                    if position.fresh(item):
                        progressed = True
                        yield item
                        if ends_when_interrupted and _interrupted(item.event):
                            return
                    item = await anext(events, None)
                return
            except TransportError as exc:
                fruitless = 0 if progressed else fruitless + 1
                if not exc.retryable or not position.resumable or fruitless > self.retry.max_attempts:
                    position.mark(exc)
                    raise
                log.info("stream of task %s broke (%s); resuming after event %s", position.task_id, exc, position.seq)
            finally:
                await events.aclose()  # type: ignore[attr-defined]
            spec, params = METHODS["SubscribeToTask"], t.SubscribeToTaskRequest(id=position.task_id or "")
            what, settle = f"resume the stream of task {position.task_id}", True

    async def send(
        self,
        content: str | t.Message | list[t.Part],
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        return_immediately: bool = False,
        history_length: int | None = None,
        accepted_output_modes: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        push: t.TaskPushNotificationConfig | None = None,
        timeout: float | None = None,
        skill: str | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> t.Task | t.Message:
        """Send a message; returns the agent's Message or the Task (finished or interrupted,
        unless ``return_immediately``). ``push``: a webhook for the task's events. ``skill``
        picks the agent's skill, ``arguments`` fill its typed parameters. Retries resend the
        same ``messageId``."""
        request = self._send_request(
            with_arguments(content, skill, arguments),
            task_id,
            context_id,
            return_immediately,
            history_length,
            accepted_output_modes,
            metadata,
            push,
            skill,
        )
        response: t.SendMessageResponse = await self._call("SendMessage", request, timeout)
        return response.task if isinstance(response.message, t.UnsetType) else response.message  # type: ignore[return-value]

    async def stream(
        self,
        content: str | t.Message | list[t.Part],
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        history_length: int | None = None,
        accepted_output_modes: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        timeout: float | None = None,
        skill: str | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> AsyncIterator[t.StreamResponse]:
        """Send a message and follow what happens: a Message, or the Task and then its events.
        ``skill`` and ``arguments`` as for ``send``."""
        request = self._send_request(
            with_arguments(content, skill, arguments),
            task_id,
            context_id,
            False,
            history_length,
            accepted_output_modes,
            metadata,
            None,
            skill,
        )
        delivered = False
        try:
            async for item in self._stream("SendStreamingMessage", request, timeout):
                delivered = True
                yield item.event
        except (UnsupportedOperationError, UnreadableEventError) as exc:
            # An agent whose card says it does not stream is told so (the caller asked for a
            # stream it cannot have); one whose card says it does gets the fallback. A stream
            # whose framing is broken (not SSE, events over the limit) is an error, not this.
            declared = self.card is not None and self.card.capabilities.streaming is True
            if delivered or (isinstance(exc, UnsupportedOperationError) and not declared):
                raise
            # A stream the agent cannot give, or that we cannot read (a peer's broken SSE): the
            # delegation still works, by a send that returns at once and polling the task. The
            # same messageId, so an agent that took the stream's message does not run it twice.
            log.warning("the stream could not be used (%s); sending and polling the task instead", exc)
            async for event in self._send_and_poll(request, timeout):
                yield event

    async def _send_and_poll(
        self, request: t.SendMessageRequest, timeout: float | None
    ) -> AsyncIterator[t.StreamResponse]:
        """What a stream would say, by ``SendMessage`` and ``GetTask``: the reply or the task,
        then the task each time its state changes, until it ends or is interrupted."""
        config = request.configuration or t.SendMessageConfiguration()
        request = msgspec.structs.replace(
            request, configuration=msgspec.structs.replace(config, return_immediately=True)
        )
        response: t.SendMessageResponse = await self._call("SendMessage", request, timeout)
        if not isinstance(response.message, t.UnsetType):
            yield t.StreamResponse(message=response.message)
            return
        task = response.task
        assert isinstance(task, t.Task)
        yield t.StreamResponse(task=task)
        interval = POLL_INTERVAL
        while not (task.status.state.is_terminal or task.status.state.is_interrupted):
            await asyncio.sleep(interval)
            interval = min(interval * 2, MAX_POLL_INTERVAL)  # quick for short tasks, gentle for long ones
            current = await self.get_task(task.id)
            if current.status.state is not task.status.state:
                yield t.StreamResponse(task=current)
            task = current

    def _send_request(
        self,
        content: str | t.Message | list[t.Part],
        task_id: str | None,
        context_id: str | None,
        return_immediately: bool,
        history_length: int | None,
        accepted_output_modes: list[str] | None,
        metadata: dict[str, Any] | None,
        push: t.TaskPushNotificationConfig | None,
        skill: str | None = None,
    ) -> t.SendMessageRequest:
        # The skill is named in the message's metadata, where every A2A server keeps it.
        skill_metadata = {SKILL_KEY: skill} if skill is not None else None
        message = user_message(content, task_id=task_id, context_id=context_id, metadata=skill_metadata)
        config = None
        if return_immediately or history_length is not None or accepted_output_modes or push:
            config = t.SendMessageConfiguration(
                return_immediately=return_immediately,
                history_length=history_length,
                accepted_output_modes=accepted_output_modes,
                task_push_notification_config=push,
            )
        return t.SendMessageRequest(message=message, configuration=config, metadata=metadata)

    async def get_task(self, task_id: str, *, history_length: int | None = None) -> t.Task:
        result: t.Task = await self._call("GetTask", t.GetTaskRequest(id=task_id, history_length=history_length))
        return result

    async def list_tasks(
        self,
        *,
        context_id: str | None = None,
        status: t.TaskState | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        history_length: int | None = None,
        include_artifacts: bool | None = None,
        status_timestamp_after: str | None = None,
    ) -> t.ListTasksResponse:
        request = t.ListTasksRequest(
            context_id=context_id,
            status=status,
            page_size=page_size,
            page_token=page_token,
            history_length=history_length,
            include_artifacts=include_artifacts,
            status_timestamp_after=status_timestamp_after,
        )
        result: t.ListTasksResponse = await self._call("ListTasks", request)
        return result

    async def cancel_task(self, task_id: str) -> t.Task:
        result: t.Task = await self._call("CancelTask", t.CancelTaskRequest(id=task_id))
        return result

    async def subscribe(self, task_id: str) -> AsyncIterator[t.StreamResponse]:
        """The task now, then its events until it ends (through INPUT_REQUIRED and AUTH_REQUIRED)."""
        async for item in self._stream("SubscribeToTask", t.SubscribeToTaskRequest(id=task_id)):
            yield item.event

    async def follow(self, task_id: str, *, after_event_id: str | None = None) -> AsyncIterator[t.StreamResponse]:
        """Follow a task to its end (through INPUT_REQUIRED and AUTH_REQUIRED), from an event id on.

        With ``after_event_id`` (the id of the last event you saw, such as ``last_event_id`` of
        the ``TransportError`` that ended a stream), exactly the events after it, while the
        server still retains them; without it, the task now, then its events. A task that has
        ended (and whose events are no longer kept) yields its final ``Task``, where
        ``subscribe`` raises. A broken connection is resumed, as on every stream.
        """
        after = _seq(after_event_id)
        if after_event_id is not None and after is None:
            raise ValueError(f"after_event_id {after_event_id!r} is not an event id of a2a-net (a whole number)")
        position = _StreamPosition(task_id, after)
        request = t.SubscribeToTaskRequest(id=task_id)
        async for item in self._stream("SubscribeToTask", request, position=position, settle=True):
            yield item.event

    async def create_push_config(
        self,
        task_id: str,
        url: str,
        *,
        token: str | None = None,
        authentication: t.AuthenticationInfo | None = None,
        config_id: str | None = None,
    ) -> t.TaskPushNotificationConfig:
        """Have the agent POST every later event of the task to ``url`` (a webhook)."""
        config = t.TaskPushNotificationConfig(
            url=url, id=config_id, task_id=task_id, token=token, authentication=authentication
        )
        result: t.TaskPushNotificationConfig = await self._call("CreateTaskPushNotificationConfig", config)
        return result

    async def get_push_config(self, task_id: str, config_id: str) -> t.TaskPushNotificationConfig:
        request = t.GetTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
        result: t.TaskPushNotificationConfig = await self._call("GetTaskPushNotificationConfig", request)
        return result

    async def list_push_configs(
        self, task_id: str, *, page_size: int | None = None, page_token: str | None = None
    ) -> t.ListTaskPushNotificationConfigsResponse:
        request = t.ListTaskPushNotificationConfigsRequest(task_id=task_id, page_size=page_size, page_token=page_token)
        result: t.ListTaskPushNotificationConfigsResponse = await self._call("ListTaskPushNotificationConfigs", request)
        return result

    async def delete_push_config(self, task_id: str, config_id: str) -> None:
        request = t.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id=config_id)
        await self._call("DeleteTaskPushNotificationConfig", request)

    async def get_extended_card(self) -> t.AgentCard:
        result: t.AgentCard = await self._call("GetExtendedAgentCard", t.GetExtendedAgentCardRequest())
        return result
