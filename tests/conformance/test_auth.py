"""Authentication on every request, and tasks that belong to their caller only."""

from __future__ import annotations

import pytest

from a2a import A2AServer, ApiKeyAuth, BearerAuth

from .conftest import OpenRaw, StartServer
from .helpers import Raw, expect_error, load_module, send_params, user_message

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
    assert schemes["bearer"] == {"httpAuthSecurityScheme": {"scheme": "Bearer"}}
    assert schemes["apiKey"] == {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}}
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
