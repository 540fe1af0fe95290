"""The stdio binding end to end: the echo agent as a real child process (``a2a serve --stdio``).

Every other stdio case of the suite runs ``serve_stdio`` in this process on a pair of pipes
(see ``helpers.open_stdio_twin``), since their agents are defined inside the tests. These go
through the real command line, process, pipes and ``StdioTransport``, as a user would.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from a2a import A2AClient, BearerToken, RetryPolicy
from a2a import types as t
from a2a.errors import AuthenticationRequiredError, TaskNotCancelableError, TaskNotFoundError
from a2a.protocol.connection import STDIO_BINDING
from a2a.transport.stdio import StdioTransport

from .helpers import EXAMPLES, bounded, collect

pytestmark = pytest.mark.slow  # `a2a serve --stdio` as a child process


def _a2a() -> str:
    """The ``a2a`` command of this environment (the one beside this Python, else on PATH)."""
    beside = Path(sys.executable).with_name("a2a")
    found = str(beside) if beside.exists() else shutil.which("a2a")
    if found is None:
        pytest.fail("no a2a command: install the package (pip install -e .)")
    return found


async def test_echo_agent_as_a_child_process() -> None:
    argv = [_a2a(), "serve", f"{EXAMPLES / 'echo_agent.py'}:agent", "--stdio"]
    client = A2AClient.stdio(argv, retry=RetryPolicy.none(), timeout=10)
    try:
        card = await bounded(client.get_card())
        assert card.name == "Echo"
        assert [i.protocol_binding for i in card.supported_interfaces] == [STDIO_BINDING]

        reply = await bounded(client.send("hello over stdio"))
        assert isinstance(reply, t.Message) and reply.text == "hello over stdio"

        events = [e.payload for e in await collect(client.stream("stream:3"))]
        assert isinstance(events[0], t.Task)
        chunks = [e.artifact.parts[0].text for e in events if isinstance(e, t.TaskArtifactUpdateEvent)]
        assert chunks == ["chunk 0", "chunk 1", "chunk 2"]
        assert isinstance(events[-1], t.TaskStatusUpdateEvent)
        assert events[-1].status.state == t.TaskState.COMPLETED

        task_id = events[0].id
        assert (await bounded(client.get_task(task_id))).status.state == t.TaskState.COMPLETED
        assert [task.id for task in (await bounded(client.list_tasks())).tasks] == [task_id]

        working = await bounded(client.send("hold:30", return_immediately=True))
        assert isinstance(working, t.Task)
        assert (await bounded(client.cancel_task(working.id))).status.state == t.TaskState.CANCELED
        with pytest.raises(TaskNotCancelableError):
            await bounded(client.cancel_task(working.id))
        with pytest.raises(TaskNotFoundError):
            await bounded(client.get_task("no-such-task"))
    finally:
        await bounded(client.close())
    transport = await client.connect()
    assert isinstance(transport, StdioTransport)
    assert transport.returncode == 0, "closing the client ends the child cleanly (end of stdin)"


@pytest.mark.parametrize("credentials", [None, BearerToken("tok-x")], ids=["none", "wrong bearer"])
async def test_child_refuses_bad_credentials_on_every_call(tmp_path: Path, credentials: BearerToken | None) -> None:
    # The credentials travel once, in initialize; a refused initialize must not turn the
    # following calls into "no initialize yet" (-32009): each is refused for what it is.
    secrets = tmp_path / "credentials"
    secrets.write_text("alice:tok-a\n")
    argv = [
        _a2a(), "serve", f"{EXAMPLES / 'echo_agent.py'}:agent", "--stdio",
        "--auth", "bearer", "--credentials-file", str(secrets),
    ]  # fmt: skip
    async with A2AClient.stdio(argv, credentials=credentials, retry=RetryPolicy.none(), timeout=10) as client:
        for call in (lambda: client.send("hello"), client.list_tasks, lambda: client.get_task("x")):
            with pytest.raises(AuthenticationRequiredError):
                await bounded(call())
    async with A2AClient.stdio(argv, credentials=BearerToken("tok-a"), retry=RetryPolicy.none(), timeout=10) as client:
        reply = await bounded(client.send("hello"))
        assert isinstance(reply, t.Message) and reply.text == "hello"
