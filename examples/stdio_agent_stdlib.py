"""An A2A agent over stdio written with the Python standard library only (no a2a-net).

It implements the stdio binding as ``protocol.md`` §6 describes it, to show that a
third party can: newline-delimited JSON-RPC 2.0 on stdin/stdout, ``initialize`` first,
``GetAgentCard``, streams as several result frames with ``seq`` and a ``streamEnd`` frame,
errors with an ``ErrorInfo``. It answers one request at a time, in order, which the binding
allows (answers may come in any order; these just happen to come in order).

What it does: any text is echoed back as a Message; ``stream:N`` makes a task that streams N
chunks into one artifact and completes. Try it::

    a2a send stdio:"python examples/stdio_agent_stdlib.py" hello
    a2a send stdio:"python examples/stdio_agent_stdlib.py" stream:3 --stream
"""

import json
import sys
import uuid
from datetime import datetime, timezone

BINDING = "https://a2a-net.dev/bindings/stdio/v1"
MAX_LINE = 4 * 1024 * 1024
CARD = {
    "name": "Stdlib Echo",
    "description": "Echoes text; 'stream:N' streams N chunks. Written without any A2A library.",
    "version": "1.0.0",
    "supportedInterfaces": [{"url": "stdio:", "protocolBinding": BINDING, "protocolVersion": "1.0"}],
    "capabilities": {"streaming": True, "pushNotifications": False},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [{"id": "echo", "name": "Echo", "description": "Echoes text back", "tags": ["echo"]}],
}
#: code, reason (the ErrorInfo reason), for the errors this agent can give.
ERRORS = {
    "parse": (-32700, "PARSE_ERROR"),
    "request": (-32600, "INVALID_REQUEST"),
    "method": (-32601, "METHOD_NOT_FOUND"),
    "params": (-32602, "INVALID_PARAMS"),
    "not_found": (-32001, "TASK_NOT_FOUND"),
    "not_cancelable": (-32002, "TASK_NOT_CANCELABLE"),
    "push": (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    "unsupported": (-32004, "UNSUPPORTED_OPERATION"),
    "version": (-32009, "VERSION_NOT_SUPPORTED"),
}

tasks = {}  # task id -> Task (all tasks here finish at once, so they are all terminal)
state = {"initialized": False}


class Fail(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def send(obj):
    sys.stdout.buffer.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    sys.stdout.buffer.flush()


def error(request_id, kind, message):
    code, reason = ERRORS[kind]
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": [info]}})


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # noqa: UP017 - any Python 3


def text_of(message):
    return "".join(part.get("text", "") for part in message.get("parts", []) if isinstance(part, dict))


def user_message(params):
    message = params.get("message")
    if not isinstance(message, dict) or not message.get("parts") or message.get("role") != "ROLE_USER":
        raise Fail("params", "params.message must be a ROLE_USER message with at least one part")
    if message.get("taskId"):
        if message["taskId"] in tasks:
            raise Fail("unsupported", "that task is completed: start a new one")
        raise Fail("not_found", "Task not found: " + str(message["taskId"]))
    return message


def reply(message):
    return {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_AGENT",
        "parts": [{"text": text_of(message)}],
        "contextId": message.get("contextId") or uuid.uuid4().hex,
    }


def stream_task(request_id, message, count):
    """Frames for a task that streams ``count`` chunks and completes; the final Task is kept."""
    task_id, context_id = uuid.uuid4().hex, message.get("contextId") or uuid.uuid4().hex
    message = dict(message, taskId=task_id, contextId=context_id)
    task = {"id": task_id, "contextId": context_id, "status": {"state": "TASK_STATE_SUBMITTED", "timestamp": now()}}
    task["history"] = [message]
    events = [{"task": dict(task)}]
    parts = []
    for i in range(count):
        chunk = {"artifactId": "chunks", "parts": [{"text": f"chunk {i}"}]}
        parts.append({"text": f"chunk {i}"})
        update = {"taskId": task_id, "contextId": context_id, "artifact": chunk, "append": i > 0}
        update["lastChunk"] = i == count - 1
        events.append({"artifactUpdate": update})
    task["status"] = {"state": "TASK_STATE_COMPLETED", "timestamp": now()}
    task["artifacts"] = [{"artifactId": "chunks", "parts": parts}] if parts else []
    events.append({"statusUpdate": {"taskId": task_id, "contextId": context_id, "status": task["status"]}})
    tasks[task_id] = task
    if request_id is None:
        return task
    for seq, event in enumerate(events, start=1):
        send({"jsonrpc": "2.0", "id": request_id, "seq": seq, "result": event})
    send({"jsonrpc": "2.0", "id": request_id, "streamEnd": {"reason": "complete"}})
    return task


def stream_count(message):
    text = text_of(message).strip()
    if not text.startswith("stream:"):
        return None
    try:
        return max(0, min(1000, int(text[7:])))
    except ValueError:
        raise Fail("params", "stream:N needs a number") from None


def find(params):
    task = tasks.get(params.get("id"))
    if task is None:
        raise Fail("not_found", "Task not found: " + str(params.get("id")))
    return task


def handle(request_id, method, params):
    """The result of a unary call (streams write their own frames and return ``None``)."""
    if method == "GetAgentCard":
        return CARD
    if method == "initialize":
        if state["initialized"]:
            raise Fail("request", "initialize was already done")
        version = {k.lower(): v for k, v in (params.get("serviceParameters") or {}).items()}.get("a2a-version", "")
        if ".".join(str(version).split(".")[:2]) != "1.0":
            raise Fail("version", f"A2A-Version {version!r} is not supported: send 1.0")
        state["initialized"] = True
        return {
            "protocolVersion": "1.0",
            "binding": BINDING,
            "limits": {"maxMessageBytes": MAX_LINE, "maxInFlight": 64},
        }
    if not state["initialized"]:
        raise Fail("version", "No initialize yet: send initialize first")
    if method in ("SendMessage", "SendStreamingMessage"):
        message = user_message(params)
        count = stream_count(message)
        if method == "SendStreamingMessage":
            if count is None:
                send({"jsonrpc": "2.0", "id": request_id, "result": {"message": reply(message)}})
                send({"jsonrpc": "2.0", "id": request_id, "streamEnd": {"reason": "complete"}})
            else:
                stream_task(request_id, message, count)
            return None
        return {"task": stream_task(None, message, count)} if count is not None else {"message": reply(message)}
    if method == "GetTask":
        return find(params)
    if method == "ListTasks":
        found = [t for t in tasks.values() if not params.get("contextId") or t["contextId"] == params["contextId"]]
        found.sort(key=lambda t: t["status"]["timestamp"], reverse=True)
        return {"tasks": found, "nextPageToken": "", "pageSize": len(found), "totalSize": len(found)}
    if method == "CancelTask":
        raise Fail("not_cancelable", f"Task {find(params)['id']} is already completed")
    if method == "SubscribeToTask":
        raise Fail("unsupported", f"Task {find(params)['id']} is completed: there is nothing to subscribe to")
    if "PushNotificationConfig" in method:
        raise Fail("push", "Push notifications are not supported by this agent")
    if method == "GetExtendedAgentCard":
        raise Fail("unsupported", "This agent offers no extended agent card")
    raise Fail("method", f"Method not found: {method!r}")


def serve_line(line):
    try:
        request = json.loads(line)
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        return error(None, "parse", f"not JSON: {exc}")
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        return error(None, "request", "expected one JSON-RPC 2.0 request object")
    request_id, method = request.get("id"), request["method"]
    if method == "$/cancel":
        return None  # streams here are written whole before the next line is read: nothing to stop
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        return error(None, "request", '"id" must be a string or an integer')
    params = request.get("params", {})
    try:
        result = handle(request_id, method, params if isinstance(params, dict) else {})
    except Fail as exc:
        return error(request_id, exc.kind, exc.message)
    if result is not None:
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
    return None


def main():
    print("stdlib echo agent: serving over stdio", file=sys.stderr)  # diagnostics: stderr only
    while True:
        line = sys.stdin.buffer.readline(MAX_LINE + 1)
        if not line:
            return 0  # end of input: nothing is running, so exit at once
        if len(line) > MAX_LINE:
            error(None, "request", f"line over {MAX_LINE} bytes")
            return 1
        if line.strip():
            serve_line(line)


if __name__ == "__main__":
    sys.exit(main())
