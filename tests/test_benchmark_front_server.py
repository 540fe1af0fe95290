"""``benchmarks/front_server.py`` (what ``front_cost.py`` measures against ``a2a serve``) does the
same A2A work as our server: a plain reply, a task made and completed with its artifact and kept
in the SQLite store, and a refusal for what is not JSON-RPC. Its figures mean nothing otherwise.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _call(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
        decoded: dict[str, Any] = json.loads(answer.read())
    assert decoded["id"] == 7, decoded
    return decoded


def _send(url: str, text: str, message_id: str) -> dict[str, Any]:
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    return _call(url, "SendMessage", {"message": message})["result"]


def test_front_server_does_our_a2a_work_and_refuses_what_is_not_json_rpc(tmp_path: Path) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/a2a/jsonrpc"
    store = f"sqlite:///{tmp_path}/front.db"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "front_server.py"), "--port", str(port), "--store", store]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                reply = _send(url, "hello", "m-1")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "front_server did not start"
                time.sleep(0.1)
        assert reply["message"]["role"] == "ROLE_AGENT"
        assert reply["message"]["parts"] == [{"text": "hello"}]

        task = _send(url, "stream:1", "m-2")["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"] == [{"text": "chunk 0"}]
        # The same messageId again: the store's idempotency record answers, no second task.
        assert _send(url, "stream:1", "m-2")["task"]["id"] == task["id"]
        stored = _call(url, "GetTask", {"id": task["id"]})["result"]
        assert stored["status"]["state"] == "TASK_STATE_COMPLETED"

        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            raw.sendall(b"POST /a2a/jsonrpc HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            assert raw.recv(1024).startswith(b"HTTP/1.1 400 ")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    assert (tmp_path / "front.db").exists()
