"""The stdio binding: server behaviour on raw lines, and the client's ownership of the child process."""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from a2a import A2AClient, RetryPolicy
from a2a import types as t
from a2a.errors import (
    AuthenticationRequiredError,
    InvalidResponseError,
    TaskNotFoundError,
    TransportError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from a2a.protocol.connection import STDIO_BINDING
from a2a.transport.stdio import StdioTransport

from ._bindings_support import BOUND, ECHO_STDIO, ROOT, STDLIB_AGENT, is_leftover_child, python_child, wait_exit

pytestmark = pytest.mark.slow  # every test starts a child process

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"serviceParameters": {"A2A-Version": "1.0"}}}


def _client(argv: list[str], **kwargs: Any) -> A2AClient:
    return A2AClient(transport=StdioTransport(argv, **kwargs), retry=RetryPolicy.none(), timeout=BOUND)


def _send(request_id: int | str, text: str, method: str = "SendMessage") -> dict[str, Any]:
    message = {"messageId": f"m-{request_id}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}


class RawPeer:
    """A third-party client: writes lines to the agent's stdin and reads its stdout, nothing else."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), BOUND)
        assert line, "the agent closed its stdout"
        frame = json.loads(line)
        assert isinstance(frame, dict)
        return frame


@asynccontextmanager
async def raw_agent(argv: list[str]) -> AsyncIterator[RawPeer]:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT
    )
    try:
        yield RawPeer(proc)
    finally:
        if proc.returncode is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), BOUND)
            except TimeoutError:
                proc.kill()
                await asyncio.wait_for(proc.wait(), BOUND)


# ---- the server, seen from a raw peer ----------------------------------------------------------


async def test_server_needs_initialize_first_but_serves_the_card() -> None:
    async with raw_agent(ECHO_STDIO) as peer:
        await peer.send(_send(1, "too early"))
        assert (await peer.recv())["error"]["code"] == -32009
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "GetAgentCard"})
        card = (await peer.recv())["result"]
        assert card["supportedInterfaces"] == [
            {"url": "stdio:", "protocolBinding": STDIO_BINDING, "protocolVersion": "1.0"}
        ]
        await peer.send(INIT)
        init = (await peer.recv())["result"]
        assert init["binding"] == STDIO_BINDING
        assert init["limits"]["maxInFlight"] > 0
        await peer.send(INIT)
        assert (await peer.recv())["error"]["code"] == -32600
        await peer.send(_send(3, "now"))
        assert (await peer.recv())["result"]["message"]["parts"][0]["text"] == "now"


async def test_a_last_event_id_that_is_no_whole_number_is_invalid_params() -> None:
    """protocol.md §5: a resume point that is not a whole number is -32602 on every binding."""
    async with raw_agent(ECHO_STDIO) as peer:
        await peer.send(INIT)
        assert "result" in await peer.recv()
        for request_id, bad in enumerate(["12", -1, 1.5, None], start=1):
            subscribe = {"jsonrpc": "2.0", "id": request_id, "method": "SubscribeToTask", "params": {"id": "x"}}
            await peer.send(subscribe | {"lastEventId": bad})
            answer = await peer.recv()
            assert (answer["id"], answer["error"]["code"]) == (request_id, -32602), bad


async def test_server_rejects_a_wrong_version_at_initialize() -> None:
    async with raw_agent(ECHO_STDIO) as peer:
        bad = {**INIT, "params": {"serviceParameters": {"A2A-Version": "0.3"}}}
        await peer.send(bad)
        assert (await peer.recv())["error"]["code"] == -32009
        await peer.send(INIT)  # a failed initialize may be retried
        assert "result" in await peer.recv()


async def test_server_stream_cancel_and_bad_lines() -> None:
    async with raw_agent(ECHO_STDIO) as peer:
        await peer.send(INIT)
        await peer.recv()
        await peer.send(_send("s", "hold:30", method="SendStreamingMessage"))
        first, working = await peer.recv(), await peer.recv()
        assert (first["id"], first["seq"], working["seq"]) == ("s", 1, 2)
        assert working["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
        await peer.send(b"this is not json\n")
        assert (await peer.recv())["error"]["code"] == -32700
        await peer.send(b'{"jsonrpc":"2.0","id":9,"method":"GetTask","params":{"id":"\xff"}}\n')
        assert (await peer.recv())["error"]["code"] == -32700
        await peer.send({"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": "s"}})
        assert await peer.recv() == {"jsonrpc": "2.0", "id": "s", "streamEnd": {"reason": "canceled"}}
        await peer.send(_send(4, "still serving"))
        assert (await peer.recv())["result"]["message"]["parts"][0]["text"] == "still serving"


async def test_server_over_long_line_is_answered_then_the_server_exits() -> None:
    async with raw_agent([*ECHO_STDIO, "--max-body-bytes", "1024"]) as peer:
        await peer.send(INIT)
        await peer.recv()
        await peer.send(b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":"' + b"x" * 4096 + b'"}\n')
        answer = await peer.recv()
        assert answer["id"] is None
        assert answer["error"]["data"][0]["reason"] == "PAYLOAD_TOO_LARGE"
        assert await asyncio.wait_for(peer.proc.wait(), BOUND) == 1


async def test_server_exits_promptly_at_end_of_input() -> None:
    transport = StdioTransport(ECHO_STDIO, grace=BOUND)
    async with (
        A2AClient(transport=transport, retry=RetryPolicy.none(), timeout=BOUND) as client,
        asyncio.timeout(BOUND),
    ):
        events = client.stream("hold:30")
        await events.__anext__()
        started = time.monotonic()
        await transport.close()  # stdin closes; the stream in flight has 1 s to finish
        elapsed = time.monotonic() - started
        with pytest.raises(TransportError, match="closed by this client"):
            async for _ in events:
                pass
    assert transport.returncode == 0  # it exited by itself: no signal was needed
    assert elapsed < 4.0


async def test_stray_prints_never_reach_the_protocol_stream(tmp_path: Path) -> None:
    noisy = tmp_path / "noisy_agent.py"
    noisy.write_text(
        "import os\nfrom a2a import Agent\nprint('noise at import')\nos.write(1, b'noise from C\\n')\n"
        "agent = Agent(name='Noisy')\n\n@agent.skill(tags=['noise'], replies=True)\n"
        "async def noisy(ctx):\n    print('noise in a skill')\n    await ctx.reply(ctx.text.upper())\n"
    )
    async with _client([sys.executable, "-m", "a2a.cli.main", "serve", f"{noisy}:agent", "--stdio"]) as client:
        reply = await client.send("quiet")
    assert isinstance(reply, t.Message)
    assert reply.text == "QUIET"


# ---- the client and its child ----------------------------------------------------------------


async def test_our_client_drives_the_stdlib_agent() -> None:
    async with (
        A2AClient.stdio(STDLIB_AGENT, retry=RetryPolicy.none(), timeout=BOUND) as client,
        asyncio.timeout(BOUND * 2),
    ):
        assert (await client.get_card()).name == "Stdlib Echo"
        reply = await client.send("hello")
        assert isinstance(reply, t.Message) and reply.text == "hello"
        events = [e.payload async for e in client.stream("stream:3")]
        assert isinstance(events[0], t.Task)
        chunks = [e.artifact.parts[0].text for e in events if isinstance(e, t.TaskArtifactUpdateEvent)]
        assert chunks == ["chunk 0", "chunk 1", "chunk 2"]
        assert isinstance(events[-1], t.TaskStatusUpdateEvent)
        assert events[-1].status.state == t.TaskState.COMPLETED
        task = await client.get_task(events[0].id)
        assert task.status.state == t.TaskState.COMPLETED
        assert [x.id for x in (await client.list_tasks()).tasks] == [task.id]
        with pytest.raises(TaskNotFoundError):
            await client.get_task("nope")
        with pytest.raises(UnsupportedOperationError):
            async for _ in client.subscribe(task.id):
                pass
        replies = await asyncio.gather(*(client.send(f"m{i}") for i in range(100)))
        assert [r.text for r in replies if isinstance(r, t.Message)] == [f"m{i}" for i in range(100)]


async def test_version_and_credentials_travel_in_initialize() -> None:
    env = {**os.environ, "A2A_BEARER_TOKENS": "alice:s3cret"}
    argv = [*ECHO_STDIO, "--auth", "bearer"]
    async with _client(argv, env=env) as anonymous:
        with pytest.raises(AuthenticationRequiredError):
            await anonymous.send("hi")
    async with _client(argv, env=env, headers={"Authorization": "Bearer s3cret"}) as alice:
        assert isinstance(await alice.send("hi"), t.Message)
    async with _client(ECHO_STDIO, headers={"A2A-Version": "0.3"}) as old:
        with pytest.raises(VersionNotSupportedError):
            await old.send("hi")


async def test_child_killed_mid_stream_fails_everything_at_once() -> None:
    transport = StdioTransport(ECHO_STDIO)
    async with (
        A2AClient(transport=transport, retry=RetryPolicy.none(), timeout=60) as client,
        asyncio.timeout(BOUND),
    ):
        events = client.stream("hold:30")
        await events.__anext__()
        blocked = asyncio.ensure_future(client.send("hold:30"))
        assert transport.pid is not None
        os.kill(transport.pid, signal.SIGKILL)  # the child we started, by its pid
        with pytest.raises(TransportError, match="killed by SIGKILL"):
            async for _ in events:
                pass
        with pytest.raises(TransportError, match="killed by SIGKILL"):
            await blocked
        with pytest.raises(TransportError, match="killed by SIGKILL"):
            await client.send("after")  # a dead child is not restarted behind the caller's back
    assert not is_leftover_child(transport.pid)


_READ_ONE = "import sys; sys.stdin.readline(); "
_THEN_WAIT = "; sys.stdout.flush(); sys.stdin.read()"
GARBAGE = _READ_ONE + "sys.stdout.write('Loading model... done\\n')" + _THEN_WAIT
BAD_UTF8 = _READ_ONE + 'sys.stdout.buffer.write(b\'{"jsonrpc":"2.0","id":1,"result":"\\xff\\xfe"}\\n\')' + _THEN_WAIT
LONG_LINE = _READ_ONE + "sys.stdout.write('x' * 100000)" + _THEN_WAIT


@pytest.mark.parametrize(
    ("code", "expected"),
    [(GARBAGE, "Loading model"), (BAD_UTF8, "not a JSON-RPC"), (LONG_LINE, "over 4096 bytes")],
    ids=["garbage", "invalid-utf8", "over-long-line"],
)
async def test_child_breaking_the_protocol_is_a_clear_error(code: str, expected: str) -> None:
    transport = StdioTransport(python_child(code), max_line_bytes=4096, grace=0.5)
    async with asyncio.timeout(BOUND):
        with pytest.raises(InvalidResponseError, match=expected):
            await transport.start()
        await transport.close()
    assert transport.returncode is not None
    assert transport.pid is not None and not is_leftover_child(transport.pid)


async def test_child_flooding_stderr_never_blocks() -> None:
    flood = (
        "import os, sys; sys.stderr.buffer.write(b'noise ' * (10 * 1024 * 1024 // 6)); sys.stderr.flush(); "
        f"os.execv(sys.executable, [sys.executable, {str(STDLIB_AGENT[1])!r}])"
    )
    async with _client(python_child(flood)) as client, asyncio.timeout(BOUND * 3):
        reply = await client.send("through the noise")
    assert isinstance(reply, t.Message)


async def test_child_exit_names_the_code_and_the_stderr_tail() -> None:
    code = "import sys; sys.stderr.write('x' * 100000 + '\\nfatal: no model configured\\n'); sys.exit(7)"
    async with _client(python_child(code)) as client, asyncio.timeout(BOUND):
        with pytest.raises(TransportError) as failed:
            await client.send("hi")
    message = str(failed.value)
    assert "exited with code 7" in message
    assert message.endswith("fatal: no model configured")
    assert len(message) < 5000  # only the tail


async def test_missing_program_is_a_clear_error() -> None:
    async with _client(["/nonexistent/agent-binary"]) as client:
        with pytest.raises(TransportError, match="cannot start agent process"):
            await client.send("hi")


async def test_100_start_stop_cycles_leave_no_process() -> None:
    pids: list[int] = []

    async def cycle(i: int) -> None:
        transport = StdioTransport(STDLIB_AGENT, grace=BOUND)
        try:
            await transport.start(timeout=BOUND)
            if i % 10 == 0:
                card = await transport.get_card(timeout=BOUND)
                assert card.name == "Stdlib Echo"
        finally:
            await transport.close()
        assert transport.pid is not None
        pids.append(transport.pid)

    async with asyncio.timeout(BOUND * 12):
        for batch in range(10):
            await asyncio.gather(*(cycle(batch * 10 + i) for i in range(10)))
    assert len(pids) == 100
    assert [pid for pid in pids if is_leftover_child(pid)] == []


_PARENT = """
import asyncio, sys
from a2a.transport.stdio import StdioTransport
from a2a import A2AClient

async def main():
    transport = StdioTransport(sys.argv[1:])
    client = A2AClient(transport=transport)
    events = client.stream("hold:30")
    await events.__anext__()
    print(transport.pid, flush=True)
    async for _ in events:
        pass

asyncio.run(main())
"""

_PR_SET_CHILD_SUBREAPER = 36


async def test_child_exits_within_2s_when_the_parent_goes_away() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    # Orphans re-parent to us rather than to PID 1, so that this test can reap the one it makes.
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        parent = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _PARENT, *ECHO_STDIO, stdout=subprocess.PIPE, cwd=ROOT
        )
        assert parent.stdout is not None
        child_pid = int(await asyncio.wait_for(parent.stdout.readline(), BOUND))
        parent.kill()  # the parent we started, by its pid; it gets no chance to clean up
        await asyncio.wait_for(parent.wait(), BOUND)
        started = time.monotonic()
        assert await wait_exit(child_pid, 2.0), "the child outlived its parent by more than 2 s"
        elapsed = time.monotonic() - started
        _, status = await asyncio.wait_for(asyncio.to_thread(os.waitpid, child_pid, 0), BOUND)  # it has exited
        assert os.waitstatus_to_exitcode(status) == 0
        assert elapsed < 2.0
    finally:
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


async def test_cli_accepts_a_stdio_target() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a.cli.main",
        "send",
        "stdio:" + " ".join([sys.executable, *STDLIB_AGENT[1:]]),
        "hello over stdio",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    out, err = await asyncio.wait_for(proc.communicate(), BOUND * 2)
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip() == "hello over stdio"
