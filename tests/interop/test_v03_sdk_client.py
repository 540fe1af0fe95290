"""a2a-sdk 0.3's client (its JSON-RPC transport, 0.3 on the wire) against OUR server.

Our server runs as ``a2a serve`` with its defaults (0.3 beside 1.0); the 0.3 client runs in its
own venv (``sdk03_env``) and prints what it parsed, one line per operation. A 1.0 client then
reads the same tasks: one store, translated at the edge. A webhook the 0.3 client registers is
sent 0.3 tasks.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import our_env
import pytest
import sdk03_env
import sdk_env
from our_env import AuthServer

pytestmark = [pytest.mark.interop, pytest.mark.slow]

GREETER = f"{our_env.REPO_ROOT / 'examples' / 'input_required_agent.py'}:agent"


def _serve(target: str, *args: str) -> tuple[subprocess.Popen[str], str]:
    cmd = [*our_env.cli_command(), "serve", target, "--host", "127.0.0.1", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=our_env.REPO_ROOT, env=our_env.clean_env())
    return proc, sdk_env.wait_ready(proc, pattern=r"^Serving .* at (http://\S+)", what="a2a serve")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    """Our echo agent (push allowed to loopback) and our greeter, with a2a serve's defaults."""
    echo, url = _serve(our_env.ECHO_AGENT, "--push-allow", "127.0.0.1")
    try:
        greeter, ask_url = _serve(GREETER)
        try:
            yield url, ask_url
        finally:
            sdk_env.stop(greeter)
    finally:
        sdk_env.stop(echo)


class Webhook:
    """A loopback receiver (its own thread: the 0.3 client runs synchronously in a subprocess)
    recording each POST's path, headers and JSON body."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, dict[str, str], Any]] = []
        self.changed = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                with hook.changed:
                    hook.hits.append((self.path, dict(self.headers), body))
                    hook.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:  # the test log needs none of it
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait_for(self, task_id: str, state: str, timeout: float = 20.0) -> list[tuple[dict[str, str], Any]]:
        """What was sent about ``task_id`` once a body says ``state`` (a bounded wait)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                about = [(h, b) for _, h, b in self.hits if b.get("id") == task_id]
                if any(b.get("status", {}).get("state") == state for _, b in about):
                    return about
                left = deadline - time.monotonic()
                assert left > 0, f"no push of task {task_id} with state {state!r} in {timeout}s: {self.hits}"
                self.changed.wait(left)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def webhook() -> Iterator[Webhook]:
    made = Webhook()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="module", params=["JSONRPC", "HTTP+JSON"])
def run(
    request: pytest.FixtureRequest, servers: tuple[str, str], webhook: Webhook
) -> tuple[str, dict[str, dict[str, Any]]]:
    """The 0.3 client's lines, over one of the two bindings 0.3 is served on."""
    url, ask_url = servers
    watch_url = f"{webhook.url}/{request.param}"
    return url, sdk03_env.run_sdk03_client(url, ask_url=ask_url, transport=request.param, watch_url=watch_url)


def data(lines: dict[str, dict[str, Any]], step: str) -> Any:
    line = lines.get(step)
    assert line is not None, f"no {step!r} step in {sorted(lines)}"
    assert "error" not in line, f"{step}: {line['error']}"
    return line["data"]


def test_card(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    url, lines = run
    card = data(lines, "card")
    assert card["url"] == url + "/a2a/jsonrpc" and card["preferredTransport"] == "JSONRPC"
    assert card["protocolVersion"] == "0.3.0"


def test_send_gets_a_0_3_message(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    message = data(run[1], "send")
    assert message["kind"] == "message" and message["role"] == "agent"
    assert message["parts"] == [{"kind": "text", "text": "hello"}]


def test_stream_of_0_3_events(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    events = data(run[1], "stream")
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "task" and kinds.count("artifact-update") == 3 and kinds[-1] == "status-update"
    assert events[-1]["status"]["state"] == "completed" and events[-1]["final"] is True
    task = data(run[1], "get")
    assert task["status"]["state"] == "completed"
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["chunk 0", "chunk 1", "chunk 2"]


def test_cancel(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    assert data(run[1], "send-nonblocking")["kind"] == "task"
    assert data(run[1], "cancel")["status"]["state"] == "canceled"


def test_resubscribe(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    events = data(run[1], "resubscribe")
    assert events[0]["kind"] == "task"
    assert events[-1]["kind"] == "status-update" and events[-1]["status"]["state"] == "completed"
    assert events[-1]["final"] is True


def test_push_config(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    stored = data(run[1], "push-set")
    assert stored["pushNotificationConfig"]["url"] == "http://127.0.0.1:9/hook"
    assert data(run[1], "push-get")["pushNotificationConfig"]["id"] == "hook"


def test_its_webhook_is_sent_0_3_tasks(run: tuple[str, dict[str, dict[str, Any]]], webhook: Webhook) -> None:
    """The webhook the 0.3 client registered (``set_task_callback``) on a running task, which it
    then cancelled, is sent that task in 0.3's shape (what a 0.3 server pushes, and what a 0.3
    receiver parses), with its token."""
    watched = data(run[1], "send-watched")
    assert data(run[1], "push-set-watched")["pushNotificationConfig"]["id"] == "watch"
    assert data(run[1], "cancel-watched")["status"]["state"] == "canceled"
    pushed = webhook.wait_for(watched["id"], "canceled")
    for headers, body in pushed:
        assert body["kind"] == "task" and body["contextId"] == watched["contextId"], body
        assert body["status"]["state"] in ("submitted", "working", "canceled"), body
        assert headers["Content-Type"].startswith("application/json")
        assert headers["X-A2A-Notification-Token"] == "tok-03"


def test_input_required_round_trip(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    asked = data(run[1], "ask")
    assert asked["kind"] == "task" and asked["status"]["state"] == "input-required"
    answered = data(run[1], "answer")
    assert answered["id"] == asked["id"] and answered["status"]["state"] == "completed"
    assert "Ada" in answered["status"]["message"]["parts"][0]["text"]


def test_a_1_0_client_sees_the_same_tasks(run: tuple[str, dict[str, dict[str, Any]]]) -> None:
    url, lines = run
    task_id = data(lines, "get")["id"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    response = httpx.post(url + "/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}, timeout=10)
    task = response.json()["result"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and "kind" not in task


@pytest.mark.parametrize("transport", ["JSONRPC", "HTTP+JSON"])
def test_bearer_token(our_auth_server: AuthServer, transport: str) -> None:
    """``a2a serve --auth bearer``: the 0.3 client sending the token is served every operation;
    with a wrong one the card (public) is read and every call raises the SDK's HTTP 401 error."""
    lines = sdk03_env.run_sdk03_client(our_auth_server.url, token=our_auth_server.token, transport=transport)
    card = data(lines, "card")  # our card declares the scheme the 0.3 way, and the SDK reads it
    assert card["security"] == [{"bearer": []}] and card["securitySchemes"]["bearer"]["type"] == "http"
    assert data(lines, "send")["parts"] == [{"kind": "text", "text": "hello"}]
    assert data(lines, "stream")[-1]["status"]["state"] == "completed"
    assert data(lines, "get")["status"]["state"] == "completed"
    assert data(lines, "cancel")["status"]["state"] == "canceled"
    assert data(lines, "resubscribe")[-1]["status"]["state"] == "completed"
    refused = sdk03_env.run_sdk03_client(our_auth_server.url, token="wrong-token", transport=transport)
    assert data(refused, "card")["name"] == "Echo"
    for name in ("send", "stream", "send-nonblocking", "send-for-resubscribe"):
        line = refused.get(name)
        assert line is not None and "401" in line.get("error", ""), (name, line)
