"""The shortest path through the stack: card, a message reply, a streamed task, on each binding."""

from __future__ import annotations

from a2a import A2AClient
from a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent


async def test_card_lists_the_http_interfaces_first(client: A2AClient) -> None:
    card = await client.get_card()
    assert card.name == "Echo"
    assert [i.protocol_binding for i in card.supported_interfaces][:2] == ["JSONRPC", "HTTP+JSON"]
    assert all(i.protocol_version == "1.0" for i in card.supported_interfaces)


async def test_text_gets_a_message_back(client: A2AClient) -> None:
    reply = await client.send("hello")
    assert isinstance(reply, Message)
    assert reply.text == "hello"
    assert reply.task_id is None


async def test_stream_delivers_task_then_chunks_then_completion(client: A2AClient) -> None:
    events = [event.payload async for event in client.stream("stream:3")]
    assert isinstance(events[0], Task)
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.parts[0].text for c in chunks] == ["chunk 0", "chunk 1", "chunk 2"]
    assert [c.append for c in chunks] == [False, True, True]
    assert chunks[-1].last_chunk
    final = events[-1]
    assert isinstance(final, TaskStatusUpdateEvent)
    assert final.status.state == TaskState.COMPLETED
