"""python-a2a 0.5.10 (PyPI ``python-a2a``) both ways: its client against OUR server, our client
and CLI against its server.

python-a2a speaks neither A2A 0.3 nor 1.0 on the wire, though its card says
``protocolVersion: "0.3.0"``:
- its client posts JSON-RPC ``tasks/send`` / ``tasks/get`` (method names of the A2A drafts
  before 0.2) to per-method paths (``URL/tasks/send``, ``URL/a2a/tasks/get``), then falls back
  to posting its own message object, not JSON-RPC, to the URL itself;
- its server answers POST at the card's URL by reading the body as its own message (it does
  not dispatch JSON-RPC there) and reads parts by a ``type`` field, not 0.3's ``kind``.
So these rows assert that each side gets a clear error from the other, and that our side of
what does work (the card) works. protocol.md §14 documents it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from our_env import run_cli
from peers import python_a2a_env

from a2a import A2AClient, RetryPolicy
from a2a.errors import HTTPStatusError

pytestmark = [pytest.mark.interop, pytest.mark.slow]


# ---- python-a2a's client -> a2a serve --------------------------------------------------------


def test_python_a2a_client_send_gets_our_jsonrpc_error(python_a2a_python: Path, our_server_url: str) -> None:
    lines = python_a2a_env.run_client(f"{our_server_url}/a2a/jsonrpc", "send")
    (reply,) = [line["data"] for line in lines if line["step"] == "reply"]
    # Its last fallback posts a bare python-a2a message to our JSON-RPC endpoint; it shows our
    # answer as the reply text: the JSON-RPC error naming what is wrong, with no id to echo.
    answered = json.loads(reply["content"]["text"])
    assert answered["id"] is None
    assert answered["error"]["code"] == -32600
    assert "jsonrpc" in answered["error"]["message"]


def test_python_a2a_client_get_finds_no_endpoint(python_a2a_python: Path, our_server_url: str) -> None:
    lines = python_a2a_env.run_client(our_server_url, "get")
    (got,) = [line["data"] for line in lines if line["step"] == "got"]
    # python-a2a turns our 404s on its invented paths into a task FAILED on its side.
    assert got["status"]["state"] == "failed"
    assert "Failed to get task" in got["status"]["message"]["error"]


async def test_its_draft_method_names_are_refused_by_name(our_server_url: str) -> None:
    """Were ``tasks/send`` posted to our endpoint, the answer names the method and the version."""
    async with httpx.AsyncClient(timeout=10) as http:
        response = await http.post(
            f"{our_server_url}/a2a/jsonrpc", json={"jsonrpc": "2.0", "id": 7, "method": "tasks/send", "params": {}}
        )
    body = response.json()
    assert (body["id"], body["error"]["code"]) == (7, -32601)
    assert "'tasks/send'" in body["error"]["message"]


# ---- our client and CLI -> python-a2a's server -----------------------------------------------


@pytest.fixture
async def client(python_a2a_server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(python_a2a_server_url, retry=RetryPolicy.none(), timeout=10) as c:
        yield c


async def test_card(client: A2AClient, python_a2a_server_url: str) -> None:
    card = await client.get_card()
    assert card.name == "python-a2a-echo"
    assert [(i.protocol_binding, i.url, i.protocol_version) for i in card.supported_interfaces] == [
        ("JSONRPC", python_a2a_server_url, "0.3")
    ]


async def test_send_names_the_peers_refusal(client: A2AClient) -> None:
    # Our 0.3 message/send (parts with "kind") is read by python-a2a as its own message
    # (parts with "type"): it finds no content and answers HTTP 500; we raise that, its body shown.
    with pytest.raises(HTTPStatusError, match=r"HTTP 500.*Unknown content type"):
        await client.send("hello")


def test_cli_card_and_send(python_a2a_server_url: str) -> None:
    proc = run_cli("card", python_a2a_server_url, "--json", "--retries", "1")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["name"] == "python-a2a-echo"
    proc = run_cli("send", python_a2a_server_url, "hello", "--json", "--retries", "1")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "HTTP 500" in proc.stderr and "Unknown content type" in proc.stderr, proc.stderr
