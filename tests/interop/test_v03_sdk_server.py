"""OUR client (``A2AClient``, the CLI) against a2a-sdk 0.3's server: a 0.3 card, 0.3 on the wire.

The 0.3 echo agent (``sdk03_echo_server.py``) runs in the 0.3 SDK's own venv; our client reads
its card (no ``supportedInterfaces``), chooses 0.3 from it and speaks 0.3 JSON-RPC, handing
1.0 objects to its caller. A second instance sits behind a bearer token check (a2a-sdk 0.3 has
none of its own), its card declaring the scheme.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Iterator

import msgspec
import our_env
import pytest
import sdk03_env
import sdk_env
from our_env import AuthServer

from a2a import A2AClient, BearerToken
from a2a import types as t
from a2a.client.retry import RetryPolicy
from a2a.errors import A2AError, InternalError, TaskNotCancelableError, TaskNotFoundError
from tests.bindings._bindings_support import CuttableProxy

pytestmark = [pytest.mark.interop, pytest.mark.slow]


@pytest.fixture(scope="module")
def sdk03_url() -> Iterator[str]:
    proc = sdk03_env.start_sdk03_server()
    try:
        yield sdk_env.wait_ready(proc, what="a2a-sdk 0.3 server")
    finally:
        sdk_env.stop(proc)


@pytest.fixture
async def client(sdk03_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(sdk03_url, retry=RetryPolicy.none(), timeout=20) as c:
        yield c


async def test_card_is_read_as_0_3(client: A2AClient, sdk03_url: str) -> None:
    card = await client.get_card()
    assert card.name == "Echo03"
    assert [(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [("JSONRPC", "0.3")]
    assert card.capabilities.streaming is True


async def test_send_message_reply(client: A2AClient) -> None:
    reply = await client.send("hello")
    assert isinstance(reply, t.Message) and reply.role is t.Role.AGENT and reply.text == "hello"


async def test_stream_get_and_list_is_refused(client: A2AClient) -> None:
    events = [e async for e in client.stream("stream:3")]
    payloads = [e.payload for e in events]
    assert isinstance(payloads[0], t.Task)
    assert sum(isinstance(p, t.TaskArtifactUpdateEvent) for p in payloads) == 3
    last = payloads[-1]
    assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED
    task = await client.get_task(payloads[0].id)
    assert task.status.state is t.TaskState.COMPLETED
    assert task.artifacts is not None and [p.text for p in task.artifacts[0].parts] == ["chunk 0", "chunk 1", "chunk 2"]
    with pytest.raises(Exception, match=r"0\.3, which has no ListTasks"):
        await client.list_tasks()


async def test_cancel_and_subscribe(client: A2AClient) -> None:
    held = await client.send("hold:30", return_immediately=True)
    assert isinstance(held, t.Task)
    canceled = await client.cancel_task(held.id)
    assert canceled.status.state is t.TaskState.CANCELED
    short = await client.send("hold:1", return_immediately=True)
    assert isinstance(short, t.Task)
    events = [e.payload async for e in client.subscribe(short.id)]
    last = events[-1]
    assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED


async def test_push_config(client: A2AClient) -> None:
    held = await client.send("hold:1", return_immediately=True)
    assert isinstance(held, t.Task)
    stored = await client.create_push_config(held.id, "http://127.0.0.1:9/hook", config_id="hook", token="tok")
    assert stored.url == "http://127.0.0.1:9/hook" and stored.task_id == held.id
    got = await client.get_push_config(held.id, "hook")
    assert got.id == "hook"
    listed = await client.list_push_configs(held.id)
    assert [c.id for c in listed.configs] == ["hook"]


async def test_input_required_round_trip(client: A2AClient) -> None:
    asked = await client.send("ask")
    assert isinstance(asked, t.Task) and asked.status.state is t.TaskState.INPUT_REQUIRED
    answered = await client.send("Ada", task_id=asked.id, context_id=asked.context_id)
    assert isinstance(answered, t.Task) and answered.id == asked.id
    assert answered.status.state is t.TaskState.COMPLETED


def test_cli_card_send_and_stream(sdk03_url: str) -> None:
    card = our_env.run_cli("card", sdk03_url, "--json", "--retries", "1", "--timeout", "20")
    assert card.returncode == 0, card.stderr
    assert json.loads(card.stdout)["supportedInterfaces"][0]["protocolVersion"] == "0.3"
    sent = our_env.run_cli("send", sdk03_url, "hello", "--retries", "1", "--timeout", "20")
    assert (sent.returncode, sent.stdout) == (0, "hello\n"), sent.stderr
    streamed = our_env.run_cli("send", sdk03_url, "stream:2", "--stream", "--json", "--retries", "1", "--timeout", "20")
    assert streamed.returncode == 0, streamed.stderr
    kinds = [next(iter(json.loads(line))) for line in streamed.stdout.splitlines() if line.strip()]
    assert kinds[0] == "task" and kinds.count("artifactUpdate") == 2 and kinds[-1] == "statusUpdate"


async def test_the_supervisor_registry_reads_a_0_3_agent(sdk03_url: str) -> None:
    """The supervisor finds a 0.3 agent up (not "down" for want of ``supportedInterfaces``) and
    delegates to it in 0.3."""
    from supervisor.config import AgentConfig, SupervisorConfig
    from supervisor.registry import Registry

    registry = Registry(SupervisorConfig(agents=[AgentConfig(name="old", url=sdk03_url)]))
    try:
        (entry,) = await registry.discover()
        assert entry.up, entry.error
        assert entry.card is not None and entry.card.supported_interfaces[0].protocol_version == "0.3"
        assert entry.client is not None
        reply = await entry.client.send("hello")
        assert isinstance(reply, t.Message) and reply.text == "hello"
    finally:
        await registry.close()


# ---- the same agent behind a bearer token check -----------------------------------------------


@pytest.fixture(scope="module")
def sdk03_auth_server() -> Iterator[AuthServer]:
    token = secrets.token_urlsafe(24)
    proc = sdk03_env.start_sdk03_server(f"--token={token}")
    try:
        yield AuthServer(sdk_env.wait_ready(proc, what="a2a-sdk 0.3 server (bearer)"), token)
    finally:
        sdk_env.stop(proc)


async def test_bearer_token(sdk03_auth_server: AuthServer) -> None:
    """Our client reads the card's 0.3 scheme, sends the token on every call (a stream too); a
    wrong one is refused with the 401 named."""
    url = sdk03_auth_server.url
    async with A2AClient(
        url, credentials=BearerToken(sdk03_auth_server.token), retry=RetryPolicy.none(), timeout=20
    ) as c:
        card = await c.get_card()
        assert card.security_schemes is not None and "bearer" in card.security_schemes
        reply = await c.send("hello")
        assert isinstance(reply, t.Message) and reply.text == "hello"
        payloads = [e.payload async for e in c.stream("stream:1")]
        last = payloads[-1]
        assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED
    async with A2AClient(url, credentials=BearerToken("wrong"), retry=RetryPolicy.none(), timeout=20) as c:
        with pytest.raises(A2AError, match="401"):
            await c.send("hello")


def test_cli_bearer_token(sdk03_auth_server: AuthServer) -> None:
    url, token = sdk03_auth_server.url, sdk03_auth_server.token
    sent = our_env.run_cli("send", url, "hello", "--token", token, "--retries", "1", "--timeout", "20")
    assert (sent.returncode, sent.stdout) == (0, "hello\n"), sent.stderr
    refused = our_env.run_cli("send", url, "hello", "--token", "wrong", "--retries", "1", "--timeout", "20")
    assert refused.returncode != 0 and "401" in refused.stderr and "Traceback" not in refused.stderr, refused.stderr


# ---- the same agent served over HTTP+JSON (REST) only: our client speaks 0.3's REST binding ----


@pytest.fixture(scope="module")
def sdk03_rest_url() -> Iterator[str]:
    proc = sdk03_env.start_sdk03_server("--rest")
    try:
        yield sdk_env.wait_ready(proc, what="a2a-sdk 0.3 REST server")
    finally:
        sdk_env.stop(proc)


@pytest.fixture
async def rest_client(sdk03_rest_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(sdk03_rest_url, retry=RetryPolicy.none(), timeout=20) as c:
        yield c


async def test_rest_card_is_read_as_0_3_rest(rest_client: A2AClient) -> None:
    card = await rest_client.get_card()
    assert [(i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [("HTTP+JSON", "0.3")]
    assert type(await rest_client.connect()).__name__ == "RestV03Transport"


async def test_rest_send_stream_and_get(rest_client: A2AClient) -> None:
    reply = await rest_client.send("hello")
    assert isinstance(reply, t.Message) and reply.role is t.Role.AGENT and reply.text == "hello"
    payloads = [e.payload async for e in rest_client.stream("stream:3")]
    assert isinstance(payloads[0], t.Task)
    assert sum(isinstance(p, t.TaskArtifactUpdateEvent) for p in payloads) == 3
    last = payloads[-1]
    assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED
    task = await rest_client.get_task(payloads[0].id)
    assert task.status.state is t.TaskState.COMPLETED
    assert task.artifacts is not None and [p.text for p in task.artifacts[0].parts] == ["chunk 0", "chunk 1", "chunk 2"]
    with pytest.raises(Exception, match=r"0\.3, which has no ListTasks"):
        await rest_client.list_tasks()


async def test_rest_blocking_send_waits_for_the_task(rest_client: A2AClient) -> None:
    """ProtoJSON drops a false ``blocking``, and a2a-sdk 0.3 reads a missing one as false: our
    send says ``blocking: true`` so that 1.0's default (wait for the task) holds."""
    asked = await rest_client.send("ask")
    assert isinstance(asked, t.Task) and asked.status.state is t.TaskState.INPUT_REQUIRED
    # Its status message comes under the ProtoJSON json_name ``message`` (not ``update``).
    assert asked.status.message is not None and asked.status.message.text == "which one?"
    answered = await rest_client.send("Ada", task_id=asked.id, context_id=asked.context_id)
    assert isinstance(answered, t.Task) and answered.status.state is t.TaskState.COMPLETED


async def test_rest_cancel_and_subscribe(rest_client: A2AClient) -> None:
    held = await rest_client.send("hold:30", return_immediately=True)
    assert isinstance(held, t.Task)
    canceled = await rest_client.cancel_task(held.id)
    assert canceled.status.state is t.TaskState.CANCELED
    short = await rest_client.send("hold:1", return_immediately=True)
    assert isinstance(short, t.Task)
    events = [e.payload async for e in rest_client.subscribe(short.id)]
    last = events[-1]
    assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED


async def test_rest_push_config(rest_client: A2AClient) -> None:
    held = await rest_client.send("hold:1", return_immediately=True)
    assert isinstance(held, t.Task)
    stored = await rest_client.create_push_config(held.id, "http://127.0.0.1:9/hook", config_id="hook", token="tok")
    assert stored.url == "http://127.0.0.1:9/hook" and stored.task_id == held.id
    got = await rest_client.get_push_config(held.id, stored.id)
    assert got.url == "http://127.0.0.1:9/hook"
    # a2a-sdk 0.3.26's REST handler does not implement listing (NotImplementedError -> HTTP 500
    # with {"message": "unknown exception"}): typed as the internal error it is.
    with pytest.raises(InternalError, match="unknown exception"):
        await rest_client.list_push_configs(held.id)


async def test_rest_errors_are_typed(rest_client: A2AClient) -> None:
    """0.3's HTTP+JSON errors are a status and ``{"message"}`` (a2a-sdk 0.3: 404 task not
    found, 409 not cancelable): they reach our caller as the same typed errors a 1.0 peer's do."""
    with pytest.raises(TaskNotFoundError):
        await rest_client.get_task("no-such-task")
    with pytest.raises(TaskNotFoundError):
        await rest_client.cancel_task("no-such-task")
    done = await rest_client.send("stream:1")
    assert isinstance(done, t.Task) and done.status.state is t.TaskState.COMPLETED
    with pytest.raises(TaskNotCancelableError):
        await rest_client.cancel_task(done.id)


def test_cli_over_rest(sdk03_rest_url: str) -> None:
    sent = our_env.run_cli("send", sdk03_rest_url, "hello", "--retries", "1", "--timeout", "20")
    assert (sent.returncode, sent.stdout) == (0, "hello\n"), sent.stderr
    streamed = our_env.run_cli(
        "send", sdk03_rest_url, "stream:2", "--stream", "--json", "--retries", "1", "--timeout", "20"
    )
    assert streamed.returncode == 0, streamed.stderr
    kinds = [next(iter(json.loads(line))) for line in streamed.stdout.splitlines() if line.strip()]
    assert kinds[0] == "task" and kinds.count("artifactUpdate") == 2 and kinds[-1] == "statusUpdate"


# ---- a 0.3 peer whose stream breaks mid-way: resumed as with our own server ----


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_stream_cut_after_its_first_event_is_resumed(binding: str, sdk03_url: str, sdk03_rest_url: str) -> None:
    """The peer (a2a-sdk 0.3) is reached through a TCP proxy that cuts every connection after the
    stream's first event. Our client resumes with 0.3's resubscribe (``tasks/resubscribe`` /
    ``GET v1/tasks/{id}:subscribe``) and delivers the rest up to the end of the task.

    a2a-sdk 0.3 keeps no event history (no ``Last-Event-ID`` replay): a resubscription sees only
    the events produced after it, so chunks produced while the connection was down are missed
    on the stream; the task, read afterwards, has them all."""
    url = sdk03_url if binding == "JSONRPC" else sdk03_rest_url
    proxy = CuttableProxy(int(url.rsplit(":", 1)[1]))
    await proxy.start()
    try:
        async with A2AClient(url, retry=RetryPolicy.none(), timeout=20) as probe:
            card = await probe.get_card()
        proxied = f"http://127.0.0.1:{proxy.port}/"
        interfaces = [msgspec.structs.replace(i, url=proxied) for i in card.supported_interfaces]
        card = msgspec.structs.replace(card, supported_interfaces=interfaces)
        async with A2AClient(card=card, retry=RetryPolicy(max_attempts=3, initial_backoff=0.05), timeout=20) as client:
            payloads: list[object] = []
            async for event in client.stream("slow:6"):
                payloads.append(event.payload)
                if len(payloads) == 1:
                    proxy.cut()
        assert proxy.accepted >= 2  # the stream was opened again
        first = payloads[0]
        assert isinstance(first, t.Task)
        last = payloads[-1]
        assert isinstance(last, t.TaskStatusUpdateEvent) and last.status.state is t.TaskState.COMPLETED
        chunks = [p for p in payloads if isinstance(p, t.TaskArtifactUpdateEvent)]
        assert 1 <= len(chunks) <= 6  # the ones produced after the resubscription (6 when it was quick)
        assert chunks[-1].artifact.parts[0].text == "chunk 5"
        async with A2AClient(url, retry=RetryPolicy.none(), timeout=20) as direct:
            task = await direct.get_task(first.id)
        assert task.status.state is t.TaskState.COMPLETED
        assert task.artifacts is not None
        texts = [p.text for p in task.artifacts[0].parts]
        # Every chunk is in the task. a2a-sdk 0.3.26 applies an appended chunk once per consumer
        # of the task's queue (the broken stream's and the resubscription's), so chunks produced
        # while both were attached appear twice in its stored artifact: the peer's quirk.
        assert set(texts) == {f"chunk {i}" for i in range(6)} and texts[0] == "chunk 0"
    finally:
        await proxy.close()


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_a_stream_whose_task_ended_while_cut_ends_with_the_task(
    binding: str, sdk03_url: str, sdk03_rest_url: str
) -> None:
    """The connection is cut after the first event and held down until the task has ended: the
    0.3 peer refuses to resubscribe to an ended task, so the stream ends with the task as it is."""
    url = sdk03_url if binding == "JSONRPC" else sdk03_rest_url
    proxy = CuttableProxy(int(url.rsplit(":", 1)[1]))
    await proxy.start()
    try:
        async with A2AClient(url, retry=RetryPolicy.none(), timeout=20) as probe:
            card = await probe.get_card()
        proxied = f"http://127.0.0.1:{proxy.port}/"
        interfaces = [msgspec.structs.replace(i, url=proxied) for i in card.supported_interfaces]
        card = msgspec.structs.replace(card, supported_interfaces=interfaces)
        reopened: list[asyncio.Task[None]] = []

        async def reopen_later() -> None:
            await asyncio.sleep(2.0)  # slow:2 ends within 0.6 s
            proxy.open.set()

        async with A2AClient(card=card, retry=RetryPolicy(max_attempts=3, initial_backoff=0.05), timeout=20) as client:
            payloads: list[object] = []
            async for event in client.stream("slow:2"):
                payloads.append(event.payload)
                if len(payloads) == 1:
                    proxy.open.clear()  # new connections wait until the task has ended
                    proxy.cut()
                    reopened.append(asyncio.create_task(reopen_later()))
        assert isinstance(payloads[0], t.Task)
        last = payloads[-1]
        assert isinstance(last, t.Task) and last.status.state is t.TaskState.COMPLETED, payloads
        assert last.artifacts is not None and {p.text for p in last.artifacts[0].parts} == {"chunk 0", "chunk 1"}
    finally:
        await proxy.close()
