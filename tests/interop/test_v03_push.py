"""Push notifications to a webhook registered in A2A 0.3: the webhook is sent what 0.3 servers
push (a whole 0.3 ``Task`` per event: ``kind``, kebab-case states), while a webhook registered in
1.0 on the same task still gets 1.0 ``StreamResponse`` events. In process, on loopback (the
server admits the receiver with its push allow-list); the bodies are also checked against
a2a-sdk 0.3's own ``Task`` model (its venv, as a 0.3 receiver would parse them)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import sdk03_env
import sdk_env
from aiohttp import web

from a2a import A2AClient
from a2a import types as t
from a2a.client.retry import RetryPolicy
from a2a.server import A2AServer, ServerConfig
from tests.conformance.helpers import load_module

pytestmark = [pytest.mark.interop, pytest.mark.slow]

WAIT = 20.0  # bound on every wait: a push that never comes fails the test, it does not hang it


@dataclass
class Hook:
    """A webhook on loopback recording what each path is sent."""

    base: str = ""
    got: dict[str, list[tuple[dict[str, str], Any]]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def url(self, path: str) -> str:
        return f"{self.base}/{path}"

    def bodies(self, path: str) -> list[Any]:
        return [body for _, body in self.got.get("/" + path, [])]

    def headers(self, path: str) -> list[dict[str, str]]:
        return [headers for headers, _ in self.got.get("/" + path, [])]

    async def wait_for_state(self, path: str, state: str) -> None:
        """Until a body at ``path`` carries ``state`` (a 0.3 task's or a 1.0 event's)."""

        def states() -> list[str]:
            found = []
            for body in self.bodies(path):
                status = body.get("status") or (body.get("task") or body.get("statusUpdate") or {}).get("status")
                if status:
                    found.append(status["state"])
            return found

        async with asyncio.timeout(WAIT):
            while state not in states():
                self.changed.clear()
                await self.changed.wait()


@pytest.fixture
async def hook() -> AsyncIterator[Hook]:
    made = Hook()

    async def receive(request: web.Request) -> web.Response:
        made.got.setdefault(request.path, []).append((dict(request.headers), json.loads(await request.read())))
        made.changed.set()
        return web.Response(status=200)

    app = web.Application()
    app.router.add_post("/{name}", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    made.base = f"http://{host}:{port}"
    yield made
    await runner.cleanup()


@pytest.fixture
async def server_url() -> AsyncIterator[str]:
    server = A2AServer(
        load_module("echo_agent.py").agent, config=ServerConfig(port=0), push=True, push_allow="127.0.0.0/8"
    )
    url = await server.start()
    yield url
    await server.stop()


def rpc(method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def message(text: str, message_id: str) -> dict[str, Any]:
    return {"kind": "message", "messageId": message_id, "role": "user", "parts": [{"kind": "text", "text": text}]}


def assert_0_3_task(body: Any, task_id: str) -> None:
    assert body["kind"] == "task" and body["id"] == task_id, body
    assert body["status"]["state"] in {"submitted", "working", "completed", "canceled"}, body
    for artifact in body.get("artifacts", []):
        assert all(part["kind"] == "text" for part in artifact["parts"]), body
    for entry in body.get("history", []):
        assert entry["kind"] == "message" and entry["role"] in {"user", "agent"}, body


async def test_a_0_3_send_with_a_push_config_gets_0_3_tasks(server_url: str, hook: Hook) -> None:
    """``message/send`` with 0.3's ``configuration.pushNotificationConfig``: every push is a 0.3
    Task (``application/json``, the token header), the last one completed with its artifact."""
    push = {"url": hook.url("v03"), "token": "tok-03"}
    params = {"message": message("stream:3", "m-push-1"), "configuration": {"pushNotificationConfig": push}}
    async with httpx.AsyncClient(timeout=WAIT) as http:
        answer = (await http.post(server_url + "/a2a/jsonrpc", json=rpc("message/send", params))).json()
    task_id = answer["result"]["id"]
    assert answer["result"]["status"]["state"] == "completed"
    await hook.wait_for_state("v03", "completed")
    bodies = hook.bodies("v03")
    for body in bodies:
        assert_0_3_task(body, task_id)
    final = bodies[-1]
    assert [p["text"] for p in final["artifacts"][0]["parts"]] == ["chunk 0", "chunk 1", "chunk 2"]
    headers = hook.headers("v03")
    assert all(h["Content-Type"].startswith("application/json") for h in headers)
    assert all(h["X-A2A-Notification-Token"] == "tok-03" for h in headers)
    sdk03_reads_as_tasks(bodies)


async def test_0_3_set_and_0_3_rest_registrations_get_0_3_and_a_1_0_one_gets_1_0(server_url: str, hook: Hook) -> None:
    """On one task: a webhook set with ``tasks/pushNotificationConfig/set``, one with 0.3's REST
    path, one through our 1.0 client. Each is sent its own version's shape."""
    async with (
        httpx.AsyncClient(timeout=WAIT) as http,
        A2AClient(server_url, retry=RetryPolicy.none(), timeout=WAIT) as client,
    ):
        held = await client.send("hold:30", return_immediately=True)
        assert isinstance(held, t.Task)
        config = {"url": hook.url("rpc03"), "id": "rpc03"}
        answer = await http.post(
            server_url + "/a2a/jsonrpc",
            json=rpc("tasks/pushNotificationConfig/set", {"taskId": held.id, "pushNotificationConfig": config}),
        )
        assert "result" in answer.json(), answer.text
        rest = await http.post(
            f"{server_url}/a2a/rest/v1/tasks/{held.id}/pushNotificationConfigs",
            json={
                "name": f"tasks/{held.id}/pushNotificationConfigs/rest03",
                "pushNotificationConfig": {"id": "rest03", "url": hook.url("rest03")},
            },
        )
        assert rest.status_code == 200, rest.text
        await client.create_push_config(held.id, hook.url("v10"), config_id="v10")
        await client.cancel_task(held.id)
        for path in ("rpc03", "rest03"):
            await hook.wait_for_state(path, "canceled")
            for body in hook.bodies(path):
                assert_0_3_task(body, held.id)
        await hook.wait_for_state("v10", "TASK_STATE_CANCELED")
    for body in hook.bodies("v10"):
        event = msgspec_stream_response(body)
        assert "kind" not in body and event.payload is not None
    assert all(h["Content-Type"].startswith("application/a2a+json") for h in hook.headers("v10"))
    sdk03_reads_as_tasks(hook.bodies("rpc03") + hook.bodies("rest03"))


def msgspec_stream_response(body: Any) -> t.StreamResponse:
    import msgspec

    return msgspec.json.decode(json.dumps(body).encode(), type=t.StreamResponse)


def sdk03_reads_as_tasks(bodies: list[Any]) -> None:
    """What a 0.3 SDK's receiver does with a push: parse it as its ``Task`` (pydantic, strict
    about ``kind`` and the state enum)."""
    script = (
        "import json, sys\n"
        "from a2a.types import Task\n"
        "for body in json.load(sys.stdin):\n"
        "    Task.model_validate(body)\n"
        "print('ok', flush=True)\n"
    )
    proc = subprocess.run(
        [str(sdk03_env.sdk03_python()), "-c", script],
        input=json.dumps(bodies),
        capture_output=True,
        text=True,
        timeout=60,
        env=sdk_env.sdk_environ(),
        cwd=sdk03_env.venv_dir(),  # not our checkout: its ``a2a`` would shadow the SDK's
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
