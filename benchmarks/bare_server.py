"""The ceiling: a bare aiohttp server on uvloop that does no A2A work at all.

``POST /a2a/jsonrpc`` reads the body and answers with a fixed JSON-RPC SendMessage result (the
same shape and size as our echo reply). A body that names ``SendStreamingMessage`` with
``stream:N`` gets N+2 pre-shaped SSE events (a task, N artifact chunks, a completed status), one
``write`` per event as our server does, so that it is the ceiling for SSE events/s too. With
``hold:S`` instead it writes the task and a WORKING status, then holds the stream open S seconds
before the completed status: the ceiling for the memory an open stream costs (stream_memory.py);
``SubscribeToTask`` (any task) is held the same way.

Usage: python benchmarks/bare_server.py --port P
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal

from aiohttp import web

REPLY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"b7435cf36b5b41289ee211e9407015d1",'
    b'"role":"ROLE_AGENT","parts":[{"text":"hello"}],"contextId":"9d8ff42a6dde4e0c853bc108acc8c535"}}}'
)
_STREAM = re.compile(rb'"stream:(\d{1,5})"')
_HOLD = re.compile(rb'"hold:(\d{1,4}(?:\.\d{1,3})?)"')
MAX_HOLD_SECONDS = 3600.0
_TASK = (
    b'{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}}'
)
_CHUNK = (
    b'{"jsonrpc":"2.0","id":1,"result":{"artifactUpdate":{"taskId":"t1","contextId":"c1",'
    b'"artifact":{"artifactId":"echo-stream","parts":[{"text":"chunk %d"}],"name":"echo-stream"},"append":true}}}'
)
_WORKING = (
    b'{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1",'
    b'"status":{"state":"TASK_STATE_WORKING"}}}}'
)
_DONE = (
    b'{"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t1","contextId":"c1",'
    b'"status":{"state":"TASK_STATE_COMPLETED"}}}}'
)
#: SendMessage with ``stream:N`` (our "task" case): the completed task with its artifact, of the
#: same shape as ours.
_TASK_REPLY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"0b9e3d0c4f8a4a6c9d1e2f3a4b5c6d7e",'
    b'"contextId":"9d8ff42a6dde4e0c853bc108acc8c535","status":{"state":"TASK_STATE_COMPLETED",'
    b'"timestamp":"2026-01-01T00:00:00.000000Z"},"artifacts":[{"artifactId":"echo-stream",'
    b'"name":"echo-stream","parts":[{"text":"chunk 0"}]}],"history":[{"messageId":'
    b'"run-1-1","role":"ROLE_USER","parts":[{"text":"stream:1"}],"taskId":"0b9e3d0c4f8a4a6c9d1e2f3a4b5c6d7e",'
    b'"contextId":"9d8ff42a6dde4e0c853bc108acc8c535"}],"metadata":{"a2a-net/skill":"echo"}}}}'
)
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-store"}


async def handle(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    subscribe = b'"SubscribeToTask"' in body
    if b"SendStreamingMessage" not in body and not subscribe:
        reply = _TASK_REPLY if _STREAM.search(body) else REPLY
        return web.Response(body=reply, content_type="application/json")
    hold = _HOLD.search(body)
    match = _STREAM.search(body)
    count = int(match.group(1)) if match else 1
    response = web.StreamResponse(headers=SSE_HEADERS)
    await response.prepare(request)
    seq = 1
    await response.write(b"id: %d\ndata: %s\n\n" % (seq, _TASK))
    if hold or subscribe:
        # Like the echo agents' hold:S: WORKING, then the stream stays open (the ceiling holds
        # streams too, for the memory an open stream costs), then the completed status. A
        # subscriber (of a held task, stream_memory.py --subscribe) waits the longest hold.
        seq += 1
        await response.write(b"id: %d\ndata: %s\n\n" % (seq, _WORKING))
        await asyncio.sleep(min(float(hold.group(1)), MAX_HOLD_SECONDS) if hold else MAX_HOLD_SECONDS)
        count = 0
    for i in range(count):
        seq += 1
        await response.write(b"id: %d\ndata: %s\n\n" % (seq, _CHUNK % i))
    await response.write(b"id: %d\ndata: %s\n\n" % (seq + 1, _DONE))
    await response.write_eof()
    return response


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_post("/a2a/jsonrpc", handle)

    async def serve() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port).start()
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await runner.cleanup()

    try:
        import uvloop
    except ImportError:  # still a ceiling, just a lower one
        asyncio.run(serve())
    else:
        uvloop.run(serve())


if __name__ == "__main__":
    main()
