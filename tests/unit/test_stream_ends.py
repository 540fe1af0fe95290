"""Where streams end: SendStreamingMessage at an interrupted state (also once resumed with
SubscribeToTask, which itself stays open until the task ends), and how a part's media type is read."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from a2a import A2AClient, A2AServer, Agent, RequestContext
from a2a.errors import TransportError
from a2a.local import LocalTransport, local_card
from a2a.protocol.methods import MethodSpec
from a2a.server.engine.events import ends_stream
from a2a.server.engine.handler import media_type_of
from a2a.transport.base import StreamItem
from a2a.types import Part, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent


def _status(state: TaskState) -> StreamResponse:
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))
    )


@pytest.mark.parametrize("state", [TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED])
def test_an_interrupted_state_ends_a_send_stream_but_not_a_subscription(state: TaskState) -> None:
    assert ends_stream(_status(state))
    assert not ends_stream(_status(state), until_terminal=True)
    assert ends_stream(_status(TaskState.COMPLETED), until_terminal=True)
    assert not ends_stream(_status(TaskState.WORKING))


@pytest.mark.parametrize(
    ("part", "media_type"),
    [
        (Part(text="hi"), "text/plain"),
        (Part(text="# hi", media_type="text/markdown"), "text/markdown"),
        (Part(text="hi", media_type="Text/Plain; charset=utf-8"), "text/plain"),
        (Part(data={"a": 1}), "application/json"),
        (Part(raw=b"\x89PNG"), "application/octet-stream"),
        (Part(url="https://example.com/a.png", media_type="image/png"), "image/png"),
    ],
)
def test_media_type_of_a_part(part: Part, media_type: str) -> None:
    assert media_type_of(part) == media_type


class _CutOnce(LocalTransport):
    """Cuts the first SendStreamingMessage after its first event, as a dropped connection would."""

    cut = False

    async def stream(
        self, method: MethodSpec, params: Any, *, timeout: float | None, last_event_id: int | None = None
    ) -> AsyncIterator[StreamItem]:
        async for item in super().stream(method, params, timeout=timeout, last_event_id=last_event_id):
            yield item
            if method.name == "SendStreamingMessage" and not self.cut:
                self.cut = True
                raise TransportError("connection reset", retryable=True)


async def test_a_resumed_send_stream_still_ends_at_input_required() -> None:
    agent = Agent("Asker", description="asks a question")

    @agent.skill()
    async def ask(ctx: RequestContext) -> None:
        await ctx.working("thinking")
        await ctx.require_input("Which size?")

    server = A2AServer(agent)
    transport = _CutOnce(server.handler)
    client = A2AClient(card=local_card(server.handler), transport=transport)
    try:
        async with asyncio.timeout(10):
            events = [event async for event in client.stream("a coffee")]
    finally:
        await client.close()
        await server.handler.shutdown()
    assert transport.cut, "the stream was not cut: nothing was resumed"
    last = events[-1].payload
    status = last.status if isinstance(last, Task | TaskStatusUpdateEvent) else None
    assert status is not None and status.state == TaskState.INPUT_REQUIRED


@pytest.mark.parametrize("body", [b"{}", b"null"])
def test_the_client_takes_an_empty_result_as_empty_or_null(body: bytes) -> None:
    """DeleteTaskPushNotificationConfig answers ``google.protobuf.Empty``: ``{}`` from us, ``null``
    from some peers; both decode (JSON-RPC over HTTP, WebSocket and stdio; REST) without error."""
    from a2a.protocol import jsonrpc, rest
    from a2a.protocol.methods import METHODS

    result_type = METHODS["DeleteTaskPushNotificationConfig"].result_type
    envelope = b'{"jsonrpc":"2.0","id":1,"result":' + body + b"}"
    assert jsonrpc.decode_response(envelope, result_type) in ({}, None)
    assert rest.decode_result(body, result_type) is None
