"""Push notifications through a real server, on each binding: configs, delivery, ownership."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from a2a import A2AServer, Agent, BearerAuth, BearerToken
from a2a.errors import PushNotificationNotSupportedError, TaskNotFoundError
from a2a.types import AuthenticationInfo, StreamResponse, TaskPushNotificationConfig, TaskState

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import bounded, expect_error, load_module, send_params, wait_until

LOOPBACK = "127.0.0.0/8"


@dataclass
class Receiver:
    """A webhook on loopback that records what it is sent."""

    url: str = ""
    bodies: list[StreamResponse] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)

    def states(self) -> list[TaskState]:
        found = []
        for event in self.bodies:
            payload = event.payload
            status = getattr(payload, "status", None)
            if status is not None:
                found.append(status.state)
        return found


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    import msgspec

    got = Receiver()

    async def hook(request: web.Request) -> web.Response:
        got.bodies.append(msgspec.json.decode(await request.read(), type=StreamResponse))
        got.headers.append(dict(request.headers))
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    got.url = f"http://{host}:{port}/hook"
    yield got
    await runner.cleanup()


@pytest.fixture
def echo() -> Agent:
    agent = load_module("echo_agent.py").agent
    assert isinstance(agent, Agent)
    return agent


async def test_push_off_is_minus_32003(serve: StartServer, open_client: OpenClient, echo: Agent) -> None:
    server = await serve(echo)
    client = await open_client(server)
    assert (await client.get_card()).capabilities.push_notifications is False
    task = await client.send("hold:30", return_immediately=True)
    with pytest.raises(PushNotificationNotSupportedError):
        await client.create_push_config(task.id, "https://example.com/hook")


async def test_webhook_gets_every_event_in_order_with_its_credentials(
    serve: StartServer, open_client: OpenClient, echo: Agent, receiver: Receiver
) -> None:
    server: A2AServer = await serve(echo, push=True, push_allow=LOOPBACK)
    client = await open_client(server)
    assert (await client.get_card()).capabilities.push_notifications is True
    push = TaskPushNotificationConfig(
        url=receiver.url, token="tok-1", authentication=AuthenticationInfo(scheme="Bearer", credentials="hook-secret")
    )
    task = await client.send("stream:3", push=push)
    assert task.status.state == TaskState.COMPLETED

    async def all_arrived() -> bool:
        return TaskState.COMPLETED in receiver.states()

    await wait_until(all_arrived, what="the final status at the webhook")
    seqs = [int(h["X-A2A-Sequence"]) for h in receiver.headers]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(h["X-A2A-Event-Id"] == f"{task.id}:{h['X-A2A-Sequence']}" for h in receiver.headers)
    assert all(h["Authorization"] == "Bearer hook-secret" for h in receiver.headers)
    assert all(h["X-A2A-Notification-Token"] == "tok-1" for h in receiver.headers)
    chunks = [e.artifact_update.artifact.parts[0].text for e in receiver.bodies if e.artifact_update]
    assert chunks == ["chunk 0", "chunk 1", "chunk 2"]


async def test_config_operations_on_a_running_task(
    serve: StartServer, open_client: OpenClient, echo: Agent, receiver: Receiver
) -> None:
    server = await serve(echo, push=True, push_allow=LOOPBACK)
    client = await open_client(server)
    task = await client.send("hold:30", return_immediately=True)
    made = await client.create_push_config(task.id, receiver.url, config_id="c1")
    assert (made.id, made.task_id, made.url) == ("c1", task.id, receiver.url)
    assert (await client.get_push_config(task.id, "c1")).url == receiver.url
    listed = await client.list_push_configs(task.id)
    assert [c.id for c in listed.configs] == ["c1"] and listed.next_page_token == ""
    await client.cancel_task(task.id)

    async def canceled_arrived() -> bool:
        return TaskState.CANCELED in receiver.states()

    await wait_until(canceled_arrived, what="the CANCELED status at the webhook")
    await client.delete_push_config(task.id, "c1")
    with pytest.raises(TaskNotFoundError):
        await client.get_push_config(task.id, "c1")
    # Spec §3.1.10: "This operation MUST be idempotent": deleting it again is no error.
    await client.delete_push_config(task.id, "c1")


async def test_private_webhook_refused_without_the_allow_list(
    serve: StartServer, open_client: OpenClient, echo: Agent, receiver: Receiver
) -> None:
    from a2a.errors import InvalidParamsError

    server = await serve(echo, push=True)
    client = await open_client(server)
    task = await client.send("hold:30", return_immediately=True)
    with pytest.raises(InvalidParamsError, match=r"loopback|forbidden|private"):
        await client.create_push_config(task.id, receiver.url)
    await client.cancel_task(task.id)
    assert receiver.bodies == []


async def test_push_configs_follow_task_ownership(serve: StartServer, open_client: OpenClient, echo: Agent) -> None:
    auth = [BearerAuth(credentials={"tok-a": "alice", "tok-b": "bob"})]
    server = await serve(echo, push=True, push_allow=LOOPBACK, auth=auth)
    alice = await open_client(server, credentials=BearerToken("tok-a"))
    bob = await open_client(server, credentials=BearerToken("tok-b"))
    task = await alice.send("hold:30", return_immediately=True)
    await alice.create_push_config(task.id, "http://127.0.0.1:9/hook", config_id="mine")
    for call in (
        bob.create_push_config(task.id, "http://127.0.0.1:9/x"),
        bob.get_push_config(task.id, "mine"),
        bob.list_push_configs(task.id),
        bob.delete_push_config(task.id, "mine"),
    ):
        with pytest.raises(TaskNotFoundError):
            await call
    await alice.cancel_task(task.id)


# ---- the letter of the spec: idempotent delete, configs on ended tasks ------------------------


async def test_delete_is_idempotent_and_answers_an_empty_object_on_the_wire(
    serve: StartServer, open_raw: OpenRaw, echo: Agent, receiver: Receiver
) -> None:
    """Spec §3.1.10: "This operation MUST be idempotent - multiple deletions of the same config
    have the same effect"; its result is ``google.protobuf.Empty``, ``{}`` in JSON, on each binding."""
    raw = open_raw(await serve(echo, push=True, push_allow=LOOPBACK))
    task = (await raw.call("SendMessage", send_params("stream:1"))).result["task"]
    made = await raw.call("CreateTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1", "url": receiver.url})
    assert not made.is_error, made.body
    for _ in range(2):
        deleted = await raw.call("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
        assert not deleted.is_error, deleted.body
        assert deleted.result == {}
    never_made = await raw.call("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "never"})
    assert never_made.result == {}
    # Spec §3.1.10 errors: "TaskNotFoundError: The task ID does not exist."
    expect_error(await raw.call("DeleteTaskPushNotificationConfig", {"taskId": "no-such-task", "id": "c1"}), -32001)


async def test_client_delete_twice_succeeds_and_an_unknown_task_is_not_found(
    serve: StartServer, open_client: OpenClient, echo: Agent, receiver: Receiver
) -> None:
    """Spec §3.1.10: "This operation MUST be idempotent"; "TaskNotFoundError: The task ID does not exist"."""
    client = await open_client(await serve(echo, push=True, push_allow=LOOPBACK))
    task = await bounded(client.send("stream:1"))
    await bounded(client.create_push_config(task.id, receiver.url, config_id="c1"))
    assert await bounded(client.delete_push_config(task.id, "c1")) is None
    assert await bounded(client.delete_push_config(task.id, "c1")) is None
    assert (await bounded(client.list_push_configs(task.id))).configs == []
    with pytest.raises(TaskNotFoundError):
        await bounded(client.delete_push_config("no-such-task", "c1"))


async def test_client_create_on_an_ended_task_is_accepted_and_never_fires(
    serve: StartServer, open_client: OpenClient, echo: Agent, receiver: Receiver
) -> None:
    """Spec §3.1.7 lists only "PushNotificationNotSupportedError" and "TaskNotFoundError" as its
    errors: a config for a task that has ended is accepted (it has nothing left to send)."""
    client = await open_client(await serve(echo, push=True, push_allow=LOOPBACK))
    task = await bounded(client.send("stream:1"))
    assert task.status.state == TaskState.COMPLETED
    made = await bounded(client.create_push_config(task.id, receiver.url, config_id="late"))
    assert (made.id, made.task_id) == ("late", task.id)
    assert [c.id for c in (await bounded(client.list_push_configs(task.id))).configs] == ["late"]
    await asyncio.sleep(0.2)  # a webhook call, were one made, would have arrived by now
    assert receiver.bodies == []
