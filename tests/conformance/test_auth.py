"""Authentication on every request, and tasks that belong to their caller only."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from a2a import A2AClient, A2AServer, ApiKey, ApiKeyAuth, BearerAuth, BearerToken
from a2a.client import user_message as a2a_user_message
from a2a.errors import AuthenticationRequiredError, ProtocolError, TaskNotFoundError
from a2a.types import Message, Task, TaskState

from .conftest import OpenClient, OpenRaw, StartServer
from .helpers import Raw, bounded, collect, expect_error, load_module, send_params, summary, user_message

ALICE = {"Authorization": "Bearer tok-a"}
BOB = {"Authorization": "Bearer tok-b"}
CAROL_KEY = {"X-API-Key": "key-c"}

#: One request per operation, with a placeholder task id ("TASK").
OPERATIONS = [
    ("SendMessage", lambda: send_params("hello")),
    ("GetTask", lambda: {"id": "TASK"}),
    ("ListTasks", lambda: {}),
    ("CancelTask", lambda: {"id": "TASK"}),
    ("CreateTaskPushNotificationConfig", lambda: {"taskId": "TASK", "url": "https://example.com/hook"}),
    ("GetTaskPushNotificationConfig", lambda: {"taskId": "TASK", "id": "c"}),
    ("ListTaskPushNotificationConfigs", lambda: {"taskId": "TASK"}),
    ("DeleteTaskPushNotificationConfig", lambda: {"taskId": "TASK", "id": "c"}),
    ("GetExtendedAgentCard", lambda: {}),
]
STREAMING_OPERATIONS = [
    ("SendStreamingMessage", lambda: send_params("stream:1")),
    ("SubscribeToTask", lambda: {"id": "TASK"}),
]
BAD_CREDENTIALS = {
    "none": {},
    "wrong bearer": {"Authorization": "Bearer tok-x"},
    "bearer without a token": {"Authorization": "Bearer"},
    "basic instead of bearer": {"Authorization": "Basic dG9rLWE6"},
    "wrong api key": {"X-API-Key": "key-x"},
    "key in the wrong header": {"X-Api-Token": "key-c"},
}


@pytest.fixture
async def secured(serve: StartServer) -> A2AServer:
    agent = load_module("echo_agent.py").agent
    return await serve(
        agent,
        auth=[BearerAuth(credentials={"tok-a": "alice", "tok-b": "bob"}), ApiKeyAuth(credentials={"key-c": "carol"})],
    )


@pytest.fixture
def sraw(secured: A2AServer, open_raw: OpenRaw) -> Raw:
    return open_raw(secured)


def _check_401(outcome: object) -> None:
    expect_error(outcome, -32000, http_status=401)  # type: ignore[arg-type]
    challenge = outcome.headers.get("WWW-Authenticate", "")  # type: ignore[attr-defined]
    assert "Bearer" in challenge and "ApiKey" in challenge, f"challenge should name both schemes: {challenge!r}"


@pytest.mark.parametrize(("method", "params"), OPERATIONS, ids=[name for name, _ in OPERATIONS])
async def test_every_operation_without_credentials_is_401(sraw: Raw, method: str, params: object) -> None:
    _check_401(await sraw.call(method, params()))  # type: ignore[operator]


@pytest.mark.parametrize("credentials", BAD_CREDENTIALS.values(), ids=BAD_CREDENTIALS.keys())
async def test_bad_credentials_are_401_with_a_challenge(sraw: Raw, credentials: dict[str, str]) -> None:
    _check_401(await sraw.call("SendMessage", send_params("hello"), headers=credentials))
    _check_401(await sraw.call("ListTasks", {}, headers=credentials))


@pytest.mark.parametrize(("method", "params"), STREAMING_OPERATIONS, ids=[n for n, _ in STREAMING_OPERATIONS])
async def test_streaming_without_credentials_is_401(sraw: Raw, method: str, params: object) -> None:
    async with sraw.stream(method, params()) as stream:  # type: ignore[operator]
        assert not stream.is_sse
        _check_401(await stream.outcome())


async def test_card_stays_public_and_lists_the_schemes(sraw: Raw, secured: A2AServer) -> None:
    response = await sraw.http.get(f"{secured.url}/.well-known/agent-card.json")
    assert response.status_code == 200
    card = response.json()
    schemes = card["securitySchemes"]
    assert schemes["bearer"]["httpAuthSecurityScheme"] == {"scheme": "Bearer"}
    assert schemes["apiKey"]["apiKeySecurityScheme"] == {"location": "header", "name": "X-API-Key"}
    # Beside them, the same schemes in 0.3's form, so that one card serves both versions.
    assert {k: v for k, v in schemes["bearer"].items() if k != "httpAuthSecurityScheme"} == {
        "type": "http",
        "scheme": "Bearer",
    }
    assert card["security"] == [{"bearer": []}, {"apiKey": []}] or {"bearer": []} in card["security"]
    requirements = card["securityRequirements"]
    named = [set(req["schemes"]) for req in requirements]
    assert {"bearer"} in named and {"apiKey"} in named, "either scheme alone is enough"
    assert all(set(req["schemes"]) <= set(schemes) for req in requirements), "requirements name declared schemes"


@pytest.mark.parametrize("credentials", [ALICE, BOB, CAROL_KEY], ids=["bearer-alice", "bearer-bob", "api-key-carol"])
async def test_right_credentials_work(sraw: Raw, credentials: dict[str, str]) -> None:
    reply = (await sraw.call("SendMessage", send_params("let me in"), headers=credentials)).result
    assert reply["message"]["parts"][0]["text"] == "let me in"
    task = (await sraw.call("SendMessage", send_params("stream:1"), headers=credentials)).result["task"]
    assert (await sraw.call("GetTask", {"id": task["id"]}, headers=credentials)).result["id"] == task["id"]
    async with sraw.stream("SendStreamingMessage", send_params("stream:2"), headers=credentials) as stream:
        assert stream.is_sse
        events = [await stream.next(), *await stream.rest()]
    assert events[-1].state == "TASK_STATE_COMPLETED"


async def _alice_task(sraw: Raw, text: str = "hold:30") -> str:
    params = send_params(text, configuration={"returnImmediately": True})
    return str((await sraw.call("SendMessage", params, headers=ALICE)).result["task"]["id"])


def _same_error(theirs: object, unknown: object, task_id: str) -> None:
    """Another principal's task must be indistinguishable from a task that does not exist."""
    assert theirs.status == unknown.status  # type: ignore[attr-defined]
    assert theirs.error_code == unknown.error_code == -32001  # type: ignore[attr-defined]
    assert theirs.body.replace(task_id.encode(), b"ID") == unknown.body.replace(b"no-such-task", b"ID")  # type: ignore[attr-defined]


@pytest.mark.parametrize("method", ["GetTask", "CancelTask"])
async def test_someone_elses_task_looks_unknown(sraw: Raw, method: str) -> None:
    task_id = await _alice_task(sraw)
    theirs = await sraw.call(method, {"id": task_id}, headers=BOB)
    unknown = await sraw.call(method, {"id": "no-such-task"}, headers=BOB)
    _same_error(theirs, unknown, task_id)
    # Bob's attempt changed nothing for Alice.
    task = (await sraw.call("GetTask", {"id": task_id}, headers=ALICE)).result
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    await sraw.call("CancelTask", {"id": task_id}, headers=ALICE)


async def test_someone_elses_task_cannot_be_subscribed(sraw: Raw) -> None:
    task_id = await _alice_task(sraw)
    async with sraw.stream("SubscribeToTask", {"id": task_id}, headers=BOB) as stream:
        theirs = await stream.outcome()
    async with sraw.stream("SubscribeToTask", {"id": "no-such-task"}, headers=BOB) as stream:
        unknown = await stream.outcome()
    _same_error(theirs, unknown, task_id)
    await sraw.call("CancelTask", {"id": task_id}, headers=ALICE)


async def test_someone_elses_task_cannot_be_continued(serve: StartServer, open_raw: OpenRaw) -> None:
    server = await serve(
        load_module("input_required_agent.py").agent,
        auth=[BearerAuth(credentials={"tok-a": "alice", "tok-b": "bob"})],
    )
    sraw = open_raw(server)
    task = (await sraw.call("SendMessage", send_params("hi"), headers=ALICE)).result["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    theirs = await sraw.call("SendMessage", {"message": user_message("Mallory", taskId=task["id"])}, headers=BOB)
    unknown = await sraw.call("SendMessage", {"message": user_message("Mallory", taskId="no-such-task")}, headers=BOB)
    _same_error(theirs, unknown, task["id"])
    still = (await sraw.call("GetTask", {"id": task["id"]}, headers=ALICE)).result
    assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert all(m["parts"][0].get("text") != "Mallory" for m in still["history"]), "Bob's message reached the task"


async def test_list_tasks_shows_only_the_callers_tasks(sraw: Raw) -> None:
    alice = {(await sraw.call("SendMessage", send_params("stream:1"), headers=ALICE)).result["task"]["id"]}
    bob = {(await sraw.call("SendMessage", send_params("stream:1"), headers=BOB)).result["task"]["id"]}
    bob.add((await sraw.call("SendMessage", send_params("stream:1"), headers=BOB)).result["task"]["id"])
    listed_alice = (await sraw.call("ListTasks", {}, headers=ALICE)).result
    listed_bob = (await sraw.call("ListTasks", {}, headers=BOB)).result
    listed_carol = (await sraw.call("ListTasks", {}, headers=CAROL_KEY)).result
    assert {t["id"] for t in listed_alice["tasks"]} == alice
    assert {t["id"] for t in listed_bob["tasks"]} == bob
    assert listed_carol["tasks"] == []
    assert listed_alice.get("totalSize", 1) == 1, "the total must not count other callers' tasks"


async def test_same_message_id_from_two_callers_is_two_messages(sraw: Raw) -> None:
    params = send_params("stream:1")
    alice = (await sraw.call("SendMessage", params, headers=ALICE)).result["task"]
    bob = (await sraw.call("SendMessage", params, headers=BOB)).result["task"]
    assert alice["id"] != bob["id"], "idempotency records are per caller: Bob must not get Alice's task"


# ---- the same, through the client, on every binding ------------------------------------------
#
# The tests above check the HTTP wire (401, WWW-Authenticate, bodies). Through the client the
# binding-neutral part holds everywhere: the error class and code. (WebSocket refuses the
# upgrade with the same 401 and challenge; stdio refuses ``initialize``, with no status and no
# headers, only the error.)

CLIENT_OPERATIONS: list[tuple[str, Callable[[A2AClient], Awaitable[object]]]] = [
    ("SendMessage", lambda c: c.send("hello")),
    ("SendStreamingMessage", lambda c: collect(c.stream("stream:1"))),
    ("GetTask", lambda c: c.get_task("TASK")),
    ("ListTasks", lambda c: c.list_tasks()),
    ("CancelTask", lambda c: c.cancel_task("TASK")),
    ("SubscribeToTask", lambda c: collect(c.subscribe("TASK"))),
    ("CreateTaskPushNotificationConfig", lambda c: c.create_push_config("TASK", "https://example.com/hook")),
    ("GetTaskPushNotificationConfig", lambda c: c.get_push_config("TASK", "c")),
    ("ListTaskPushNotificationConfigs", lambda c: c.list_push_configs("TASK")),
    ("DeleteTaskPushNotificationConfig", lambda c: c.delete_push_config("TASK", "c")),
    ("GetExtendedAgentCard", lambda c: c.get_extended_card()),
]
CLIENT_BAD_CREDENTIALS = {
    "none": None,
    "wrong bearer": BearerToken("tok-x"),
    "wrong api key": ApiKey("key-x"),
    "key in the wrong header": ApiKey("key-c", header="X-Api-Token"),
}


@pytest.mark.needs_authentication
async def test_client_without_credentials_every_operation_is_refused(
    secured: A2AServer, open_client: OpenClient
) -> None:
    client = await open_client(secured)
    for name, call in CLIENT_OPERATIONS:
        with pytest.raises(AuthenticationRequiredError) as caught:
            await bounded(call(client))
        assert caught.value.code == -32000, name


@pytest.mark.needs_authentication
@pytest.mark.parametrize("credentials", CLIENT_BAD_CREDENTIALS.values(), ids=CLIENT_BAD_CREDENTIALS.keys())
async def test_client_bad_credentials_are_refused(
    secured: A2AServer, open_client: OpenClient, credentials: BearerToken | ApiKey | None
) -> None:
    client = await open_client(secured, credentials=credentials)
    for call in (lambda: client.send("hello"), client.list_tasks):
        with pytest.raises(AuthenticationRequiredError):
            await bounded(call())


@pytest.mark.parametrize(
    "credentials", [BearerToken("tok-a"), BearerToken("tok-b"), ApiKey("key-c")], ids=["alice", "bob", "carol"]
)
async def test_client_right_credentials_work(
    secured: A2AServer, open_client: OpenClient, credentials: BearerToken | ApiKey
) -> None:
    client = await open_client(secured, credentials=credentials)
    reply = await bounded(client.send("let me in"))
    assert isinstance(reply, Message) and reply.text == "let me in"
    task = await bounded(client.send("stream:1"))
    assert isinstance(task, Task)
    assert (await bounded(client.get_task(task.id))).id == task.id
    events = await collect(client.stream("stream:2"))
    assert summary(events[-1]) == ("statusUpdate", "TASK_STATE_COMPLETED")


async def _same_refusal(theirs: ProtocolError, unknown: ProtocolError, task_id: str) -> None:
    """Another principal's task must be indistinguishable from a task that does not exist."""
    assert type(theirs) is type(unknown) is TaskNotFoundError
    assert theirs.code == unknown.code == -32001
    assert theirs.message.replace(task_id, "ID") == unknown.message.replace("no-such-task", "ID")


async def _refusal(call: Awaitable[object]) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        await bounded(call)
    return caught.value


@pytest.fixture
async def alice_and_bob(secured: A2AServer, open_client: OpenClient) -> tuple[A2AClient, A2AClient]:
    return await open_client(secured, credentials=BearerToken("tok-a")), await open_client(
        secured, credentials=BearerToken("tok-b")
    )


async def test_client_someone_elses_task_looks_unknown(alice_and_bob: tuple[A2AClient, A2AClient]) -> None:
    alice, bob = alice_and_bob
    task = await bounded(alice.send("hold:30", return_immediately=True))
    assert isinstance(task, Task)
    try:
        for call in (bob.get_task, bob.cancel_task, lambda i: collect(bob.subscribe(i))):
            await _same_refusal(await _refusal(call(task.id)), await _refusal(call("no-such-task")), task.id)
        # Bob's attempts changed nothing for Alice.
        state = (await bounded(alice.get_task(task.id))).status.state
        assert state in (TaskState.SUBMITTED, TaskState.WORKING)
    finally:
        await bounded(alice.cancel_task(task.id))


async def test_client_someone_elses_task_cannot_be_continued(serve: StartServer, open_client: OpenClient) -> None:
    server = await serve(
        load_module("input_required_agent.py").agent,
        auth=[BearerAuth(credentials={"tok-a": "alice", "tok-b": "bob"})],
    )
    alice = await open_client(server, credentials=BearerToken("tok-a"))
    bob = await open_client(server, credentials=BearerToken("tok-b"))
    task = await bounded(alice.send("hi"))
    assert isinstance(task, Task) and task.status.state == TaskState.INPUT_REQUIRED
    theirs = await _refusal(bob.send("Mallory", task_id=task.id))
    unknown = await _refusal(bob.send("Mallory", task_id="no-such-task"))
    await _same_refusal(theirs, unknown, task.id)
    still = await bounded(alice.get_task(task.id))
    assert still.status.state == TaskState.INPUT_REQUIRED
    assert all(m.text != "Mallory" for m in still.history or []), "Bob's message reached the task"


async def test_client_list_tasks_shows_only_the_callers_tasks(
    secured: A2AServer, open_client: OpenClient, alice_and_bob: tuple[A2AClient, A2AClient]
) -> None:
    alice, bob = alice_and_bob
    carol = await open_client(secured, credentials=ApiKey("key-c"))

    async def task_id(client: A2AClient) -> str:
        task = await bounded(client.send("stream:1"))
        assert isinstance(task, Task)
        return task.id

    mine = {await task_id(alice)}
    theirs = {await task_id(bob), await task_id(bob)}
    listed_alice = await bounded(alice.list_tasks())
    assert {task.id for task in listed_alice.tasks} == mine
    assert {task.id for task in (await bounded(bob.list_tasks())).tasks} == theirs
    assert (await bounded(carol.list_tasks())).tasks == []
    assert listed_alice.total_size in (None, 1), "the total must not count other callers' tasks"


async def test_client_same_message_id_from_two_callers_is_two_messages(
    alice_and_bob: tuple[A2AClient, A2AClient],
) -> None:
    alice, bob = alice_and_bob
    message = a2a_user_message("stream:1")
    theirs, mine = await bounded(alice.send(message)), await bounded(bob.send(message))
    assert isinstance(theirs, Task) and isinstance(mine, Task)
    assert theirs.id != mine.id, "idempotency records are per caller: Bob must not get Alice's task"
