"""A plain reply reaches its caller only once its idempotency record is durable; the agent
does not wait for that write (no HTTP: the handler with a store whose writes we hold)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest

from a2a.errors import InternalError
from a2a.server import Agent, CallContext, RequestContext, RequestHandler
from a2a.server.backends.store import IdempotencyRecord, InMemoryTaskStore
from a2a.types import Message, Part, Role, SendMessageRequest

NOBODY = CallContext()


class HeldWrites(InMemoryTaskStore):
    """Replies' records are written when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[asyncio.Future[None]] = []

    def record_reply(self, key: tuple[str, str, str], record: IdempotencyRecord) -> Awaitable[object]:
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.held.append(written)
        return written


def _agent(after_reply: list[str]) -> Agent:
    agent = Agent("Replier", "answers with a message")

    @agent.skill(replies=True)
    async def answer(ctx: RequestContext) -> None:
        await ctx.reply("hi")
        after_reply.append("the agent went on")

    return agent


def _send() -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id="m1", role=Role.USER, parts=[Part(text="go")]))


async def _held(store: HeldWrites) -> asyncio.Future[None]:
    for _ in range(100):
        if store.held:
            return store.held[0]
        await asyncio.sleep(0)
    raise AssertionError("the reply's record was never written")


async def test_the_reply_waits_for_its_record_and_the_agent_does_not() -> None:
    store, after_reply = HeldWrites(), []
    handler = RequestHandler(_agent(after_reply), store=store)
    await handler.start()
    try:
        call = asyncio.create_task(handler.send_message(_send(), NOBODY))
        written = await _held(store)
        for _ in range(20):
            await asyncio.sleep(0)
        assert after_reply == ["the agent went on"]
        assert not call.done(), "answered before the reply's record was durable"
        written.set_result(None)
        answer = await asyncio.wait_for(call, 5)
        assert answer.message is not None and answer.message.parts[0].text == "hi"
    finally:
        await handler.shutdown()


async def test_a_reply_whose_record_failed_is_not_handed_out() -> None:
    store = HeldWrites()
    handler = RequestHandler(_agent([]), store=store)
    await handler.start()
    try:
        call = asyncio.create_task(handler.call("SendMessage", _send(), NOBODY))
        (await _held(store)).set_exception(OSError("disk full"))
        with pytest.raises(InternalError):
            await asyncio.wait_for(call, 5)
    finally:
        await handler.shutdown()
