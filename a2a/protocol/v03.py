"""A2A 0.3 <-> 1.0: the one translation between the two versions' JSON objects, both ways.

Everything here works on plain JSON values (dicts in wire form, camelCase), so that it sits at
the edge: a binding that serves (or a client that speaks) 0.3 translates a 0.3 request into the
1.0 one, lets the 1.0 code decode and serve it, and translates the 1.0 answer back. The handler
never sees 0.3, so a 0.3 and a 1.0 client see the same tasks.

What differs (A2A 0.3.0, ``specification/json/a2a.json``, against 1.0's ``a2a.proto``):

- objects carry a ``kind`` discriminator (``"message"``, ``"task"``, ``"status-update"``,
  ``"artifact-update"``; parts ``"text"``, ``"file"``, ``"data"``) where 1.0 names a oneof field;
- states are lower-case kebab (``"input-required"``), roles ``"user"``/``"agent"``;
- a status update says ``final`` (the last event of its stream);
- a file part nests ``{"bytes" | "uri", "name", "mimeType"}`` under ``file``; a data part's
  ``data`` is an object (1.0 allows any JSON value: others travel as ``{"value": ...}``);
- ``configuration.blocking`` (0.3) is ``configuration.returnImmediately`` negated (1.0);
- a push config is ``{"taskId", "pushNotificationConfig": {...}}`` with ``authentication.schemes``
  (a list) where 1.0 has one flat object with ``authentication.scheme``;
- the card names its endpoint ``url`` + ``preferredTransport`` + ``additionalInterfaces`` and
  its security schemes by ``type`` where 1.0 lists ``supportedInterfaces`` and wraps each
  scheme in a oneof field.

Malformed 0.3 input raises ``V03Error`` naming the field; the bindings answer it as invalid
params (server) or as a protocol error naming the peer (client).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

__all__ = [
    "LEGACY_VERSION",
    "METHODS_FROM_V03",
    "METHODS_TO_V03",
    "ProtoRequest",
    "V03Error",
    "card_from_v03",
    "card_protocol_version",
    "card_to_v03",
    "event_from_v03",
    "event_to_v03",
    "is_v03_card",
    "params_from_v03",
    "params_to_v03",
    "proto_event_from_v03",
    "proto_request_to_v03",
    "proto_result_from_v03",
    "push_task_to_v03",
    "result_from_v03",
    "result_to_v03",
]

#: The older protocol version served beside 1.0 (what a request without ``A2A-Version`` means).
LEGACY_VERSION = "0.3"
#: What a 0.3 card's ``protocolVersion`` says.
LEGACY_CARD_VERSION = "0.3.0"

Json = dict[str, Any]


class V03Error(ValueError):
    """A 0.3 object that cannot be translated; the message names the field."""


#: 0.3 JSON-RPC method -> the 1.0 operation (``methods.OPERATIONS`` names).
METHODS_FROM_V03: dict[str, str] = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/cancel": "CancelTask",
    "tasks/resubscribe": "SubscribeToTask",
    "tasks/pushNotificationConfig/set": "CreateTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/get": "GetTaskPushNotificationConfig",
    "tasks/pushNotificationConfig/list": "ListTaskPushNotificationConfigs",
    "tasks/pushNotificationConfig/delete": "DeleteTaskPushNotificationConfig",
    "agent/getAuthenticatedExtendedCard": "GetExtendedAgentCard",
}
#: The 1.0 operation -> its 0.3 method (``ListTasks`` has none: 0.3 cannot list tasks).
METHODS_TO_V03: dict[str, str] = {v: k for k, v in METHODS_FROM_V03.items()}

_STATES = ("submitted", "working", "completed", "failed", "canceled", "input-required", "rejected", "auth-required")
_STATE_TO_V03 = {"TASK_STATE_" + s.upper().replace("-", "_"): s for s in _STATES}
_STATE_TO_V03["TASK_STATE_UNSPECIFIED"] = "unknown"
#: Read liberally: 1.0's names are taken too, because peers mix the versions (LangGraph
#: Server's endpoint sends 0.3 envelopes, ``"kind": "status-update"``, with 1.0 states).
_STATE_FROM_V03 = {v: k for k, v in _STATE_TO_V03.items()} | {k: k for k in _STATE_TO_V03}
#: States after which a stream ends: its last status update says ``final``.
_FINAL_STATES = frozenset({"completed", "failed", "canceled", "rejected", "input-required", "auth-required"})
_ROLE_TO_V03 = {"ROLE_USER": "user", "ROLE_AGENT": "agent"}
_ROLE_FROM_V03 = {v: k for k, v in _ROLE_TO_V03.items()} | {k: k for k in _ROLE_TO_V03}


def _obj(value: Any, where: str) -> Json:
    if not isinstance(value, dict):
        raise V03Error(f"{where} must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise V03Error(f"{where} must be an array, got {type(value).__name__}")
    return value


def _copy(src: Json, dst: Json, *keys: str) -> Json:
    for key in keys:
        if key in src and src[key] is not None:
            dst[key] = src[key]
    return dst


# ---- parts ------------------------------------------------------------------------------


def part_to_v03(part: Json) -> Json:
    out: Json
    if "text" in part:
        out = {"kind": "text", "text": part["text"]}
    elif "raw" in part or "url" in part:
        file: Json = {"bytes": part["raw"]} if "raw" in part else {"uri": part["url"]}
        _copy(part, file, "mediaType")
        if "mediaType" in file:
            file["mimeType"] = file.pop("mediaType")
        if part.get("filename") is not None:
            file["name"] = part["filename"]
        out = {"kind": "file", "file": file}
    elif "data" in part:
        data = part["data"]
        out = {"kind": "data", "data": data if isinstance(data, dict) else {"value": data}}
    else:
        raise V03Error("part has none of text, raw, url, data")
    return _copy(part, out, "metadata")


def part_from_v03(part: Any, where: str = "part") -> Json:
    part = _obj(part, where)
    kind = part.get("kind")
    out: Json
    if kind == "text" or (kind is None and "text" in part):
        if not isinstance(part.get("text"), str):
            raise V03Error(f"{where}.text must be a string")
        out = {"text": part["text"]}
    elif kind == "file" or (kind is None and "file" in part):
        file = _obj(part.get("file"), f"{where}.file")
        if "bytes" in file:
            out = {"raw": file["bytes"]}
        elif "uri" in file:
            out = {"url": file["uri"]}
        else:
            raise V03Error(f"{where}.file must have bytes or uri")
        if file.get("mimeType") is not None:
            out["mediaType"] = file["mimeType"]
        if file.get("name") is not None:
            out["filename"] = file["name"]
    elif kind == "data" or (kind is None and "data" in part):
        out = {"data": part.get("data")}
    else:
        raise V03Error(f"{where}.kind {kind!r} is not one of text, file, data")
    return _copy(part, out, "metadata")


# ---- messages, tasks, events -----------------------------------------------------------------


def message_to_v03(message: Json) -> Json:
    out: Json = {"kind": "message", "messageId": message.get("messageId", "")}
    out["role"] = _ROLE_TO_V03.get(message.get("role", ""), "agent")
    out["parts"] = [part_to_v03(p) for p in message.get("parts", [])]
    return _copy(message, out, "contextId", "taskId", "metadata", "extensions", "referenceTaskIds")


def message_from_v03(message: Any, where: str = "message") -> Json:
    message = _obj(message, where)
    role = message.get("role")
    if role not in _ROLE_FROM_V03:
        raise V03Error(f"{where}.role {role!r} is not 'user' or 'agent'")
    parts = _list(message.get("parts"), f"{where}.parts")
    out: Json = {
        "messageId": message.get("messageId"),
        "role": _ROLE_FROM_V03[role],
        "parts": [part_from_v03(p, f"{where}.parts[{i}]") for i, p in enumerate(parts)],
    }
    return _copy(message, out, "contextId", "taskId", "metadata", "extensions", "referenceTaskIds")


def _status_to_v03(status: Json) -> Json:
    out: Json = {"state": _STATE_TO_V03.get(status.get("state", ""), "unknown")}
    if status.get("message") is not None:
        out["message"] = message_to_v03(status["message"])
    return _copy(status, out, "timestamp")


def _status_from_v03(status: Any, where: str) -> Json:
    status = _obj(status, where)
    state = status.get("state")
    if state not in _STATE_FROM_V03:
        raise V03Error(f"{where}.state {state!r} is not a 0.3 task state")
    out: Json = {"state": _STATE_FROM_V03[state]}
    if status.get("message") is not None:
        out["message"] = message_from_v03(status["message"], f"{where}.message")
    return _copy(status, out, "timestamp")


def _artifact_to_v03(artifact: Json) -> Json:
    out: Json = {"artifactId": artifact.get("artifactId"), "parts": [part_to_v03(p) for p in artifact.get("parts", [])]}
    return _copy(artifact, out, "name", "description", "metadata", "extensions")


def _artifact_from_v03(artifact: Any, where: str) -> Json:
    artifact = _obj(artifact, where)
    parts = _list(artifact.get("parts"), f"{where}.parts")
    out: Json = {
        "artifactId": artifact.get("artifactId"),
        "parts": [part_from_v03(p, f"{where}.parts[{i}]") for i, p in enumerate(parts)],
    }
    return _copy(artifact, out, "name", "description", "metadata", "extensions")


def task_to_v03(task: Json) -> Json:
    out: Json = {"kind": "task", "id": task.get("id"), "contextId": task.get("contextId", "")}
    out["status"] = _status_to_v03(task.get("status", {}))
    if task.get("artifacts") is not None:
        out["artifacts"] = [_artifact_to_v03(a) for a in task["artifacts"]]
    if task.get("history") is not None:
        out["history"] = [message_to_v03(m) for m in task["history"]]
    return _copy(task, out, "metadata")


def task_from_v03(task: Any, where: str = "task") -> Json:
    task = _obj(task, where)
    out: Json = {"id": task.get("id"), "status": _status_from_v03(task.get("status"), f"{where}.status")}
    if task.get("artifacts") is not None:
        items = _list(task["artifacts"], f"{where}.artifacts")
        out["artifacts"] = [_artifact_from_v03(a, f"{where}.artifacts[{i}]") for i, a in enumerate(items)]
    if task.get("history") is not None:
        items = _list(task["history"], f"{where}.history")
        out["history"] = [message_from_v03(m, f"{where}.history[{i}]") for i, m in enumerate(items)]
    return _copy(task, out, "contextId", "metadata")


def event_to_v03(event: Json) -> Json:
    """A 1.0 ``StreamResponse`` (or ``SendMessageResponse``) as the 0.3 object it carries."""
    if "task" in event:
        return task_to_v03(event["task"])
    if "message" in event:
        return message_to_v03(event["message"])
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        status = _status_to_v03(update.get("status", {}))
        out: Json = {"kind": "status-update", "taskId": update.get("taskId"), "contextId": update.get("contextId")}
        out["status"] = status
        out["final"] = status["state"] in _FINAL_STATES
        return _copy(update, out, "metadata")
    if "artifactUpdate" in event:
        update = event["artifactUpdate"]
        out = {"kind": "artifact-update", "taskId": update.get("taskId"), "contextId": update.get("contextId")}
        out["artifact"] = _artifact_to_v03(update.get("artifact", {}))
        return _copy(update, out, "append", "lastChunk", "metadata")
    raise V03Error("event has none of task, message, statusUpdate, artifactUpdate")


def event_from_v03(event: Any, where: str = "event") -> Json:
    """A 0.3 object (by its ``kind``) as the 1.0 ``StreamResponse`` that carries it."""
    event = _obj(event, where)
    kind = event.get("kind")
    if kind == "task":
        return {"task": task_from_v03(event, where)}
    if kind == "message":
        return {"message": message_from_v03(event, where)}
    if kind == "status-update":
        update: Json = {"taskId": event.get("taskId"), "contextId": event.get("contextId")}
        update["status"] = _status_from_v03(event.get("status"), f"{where}.status")
        return {"statusUpdate": _copy(event, update, "metadata")}
    if kind == "artifact-update":
        update = {"taskId": event.get("taskId"), "contextId": event.get("contextId")}
        update["artifact"] = _artifact_from_v03(event.get("artifact"), f"{where}.artifact")
        return {"artifactUpdate": _copy(event, update, "append", "lastChunk", "metadata")}
    raise V03Error(f"{where}.kind {kind!r} is not one of task, message, status-update, artifact-update")


def push_task_to_v03(event: Json, current: Json | None) -> Json:
    """What a 0.3 webhook is sent for one 1.0 event of a task: a whole 0.3 ``Task`` (``"kind":
    "task"``), as 0.3 servers push it (a2a-sdk 0.3, ``@a2a-js/sdk`` 0.3), not the event.

    The task is the event's own for a ``task`` event, else ``current`` (the task as stored when
    the delivery is made, the event applied); without one, the little the event says of it."""
    if "task" in event:
        return task_to_v03(event["task"])
    if current is not None:
        return task_to_v03(current)
    update = event.get("statusUpdate") or event.get("artifactUpdate")
    if not isinstance(update, dict):
        raise V03Error("a push of a task's event needs a task, statusUpdate or artifactUpdate")
    task: Json = {"id": update.get("taskId"), "contextId": update.get("contextId", "")}
    task["status"] = update.get("status") or {"state": "TASK_STATE_UNSPECIFIED"}
    if "artifact" in update:
        task["artifacts"] = [update["artifact"]]
    return task_to_v03(task)


# ---- push notification configs --------------------------------------------------------------


def _push_to_v03(config: Json) -> Json:
    inner: Json = _copy(config, {}, "id", "url", "token")
    auth = config.get("authentication")
    if auth is not None:
        inner["authentication"] = _copy(auth, {"schemes": [auth.get("scheme")]}, "credentials")
    return {"taskId": config.get("taskId"), "pushNotificationConfig": inner}


def _push_from_v03(config: Any, task_id: Any, where: str) -> Json:
    config = _obj(config, where)
    out: Json = _copy(config, {}, "id", "url", "token")
    if task_id is not None:
        out["taskId"] = task_id
    auth = config.get("authentication")
    if auth is not None:
        auth = _obj(auth, f"{where}.authentication")
        schemes = _list(auth.get("schemes", []), f"{where}.authentication.schemes")
        if not schemes:
            raise V03Error(f"{where}.authentication.schemes must name a scheme")
        out["authentication"] = _copy(auth, {"scheme": schemes[0]}, "credentials")
    return out


# ---- requests and results, by operation --------------------------------------------------------


def _send_from_v03(params: Json) -> Json:
    out: Json = {"message": message_from_v03(params.get("message"), "params.message")}
    config = params.get("configuration")
    if config is not None:
        config = _obj(config, "params.configuration")
        conf: Json = _copy(config, {}, "acceptedOutputModes", "historyLength")
        if config.get("blocking") is False:  # 0.3 servers block unless told not to
            conf["returnImmediately"] = True
        if config.get("pushNotificationConfig") is not None:
            push = config["pushNotificationConfig"]
            conf["taskPushNotificationConfig"] = _push_from_v03(
                push, None, "params.configuration.pushNotificationConfig"
            )
        out["configuration"] = conf
    return _copy(params, out, "metadata")


def _send_to_v03(params: Json) -> Json:
    out: Json = {"message": message_to_v03(params["message"])}
    config = params.get("configuration")
    if config is not None:
        conf: Json = _copy(config, {}, "acceptedOutputModes", "historyLength")
        conf["blocking"] = not config.get("returnImmediately", False)
        push = config.get("taskPushNotificationConfig")
        if push is not None:
            conf["pushNotificationConfig"] = _push_to_v03(push)["pushNotificationConfig"]
        out["configuration"] = conf
    return _copy(params, out, "metadata")


def params_from_v03(method: str, params: Any) -> Json:
    """The 1.0 request of a 0.3 call's ``params`` (``method``: the 1.0 operation's name)."""
    params = _obj(params if params is not None else {}, "params")
    if method in ("SendMessage", "SendStreamingMessage"):
        return _send_from_v03(params)
    if method == "GetTask":
        return _copy(params, {}, "id", "historyLength")
    if method in ("CancelTask",):
        return _copy(params, {}, "id", "metadata")
    if method == "SubscribeToTask":
        return _copy(params, {}, "id")
    if method == "CreateTaskPushNotificationConfig":
        return _push_from_v03(
            params.get("pushNotificationConfig"), params.get("taskId"), "params.pushNotificationConfig"
        )
    if method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        # 0.3 may leave the config id out: the config a task's id names (how 0.3 servers set one).
        return {"taskId": params.get("id"), "id": params.get("pushNotificationConfigId") or params.get("id")}
    if method == "ListTaskPushNotificationConfigs":
        return {"taskId": params.get("id")}
    return {}


def params_to_v03(method: str, params: Json) -> Json:
    """The 0.3 ``params`` of a 1.0 request (``method``: the 1.0 operation's name)."""
    if method in ("SendMessage", "SendStreamingMessage"):
        return _send_to_v03(params)
    if method in ("GetTask", "CancelTask", "SubscribeToTask"):
        return _copy(params, {}, "id", "historyLength", "metadata")
    if method == "CreateTaskPushNotificationConfig":
        return _push_to_v03(params)
    if method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        return {"id": params.get("taskId"), "pushNotificationConfigId": params.get("id")}
    if method == "ListTaskPushNotificationConfigs":
        return {"id": params.get("taskId")}
    return {}


def result_to_v03(method: str, result: Any) -> Any:
    """The 0.3 result of a 1.0 operation's result (plain JSON)."""
    if result is None:
        return None
    if method in ("SendMessage", "SendStreamingMessage", "SubscribeToTask"):
        return event_to_v03(result)
    if method in ("GetTask", "CancelTask"):
        return task_to_v03(result)
    if method in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return _push_to_v03(result)
    if method == "ListTaskPushNotificationConfigs":
        return [_push_to_v03(c) for c in result.get("configs", [])]
    if method == "GetExtendedAgentCard":
        return card_to_v03(result)
    return result


def result_from_v03(method: str, result: Any) -> Any:
    """The 1.0 result (plain JSON) of a 0.3 peer's result."""
    if method in ("SendMessage", "SendStreamingMessage", "SubscribeToTask"):
        return event_from_v03(result, "result")
    if method in ("GetTask", "CancelTask"):
        return task_from_v03(result, "result")
    if method in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        result = _obj(result, "result")
        return _push_from_v03(
            result.get("pushNotificationConfig"), result.get("taskId"), "result.pushNotificationConfig"
        )
    if method == "ListTaskPushNotificationConfigs":
        items = _list(result, "result")
        configs = [
            _push_from_v03(_obj(c, f"result[{i}]").get("pushNotificationConfig"), c.get("taskId"), f"result[{i}]")
            for i, c in enumerate(items)
        ]
        return {"configs": configs, "nextPageToken": ""}
    if method == "GetExtendedAgentCard":
        return card_from_v03(result)
    return result


# ---- the card -------------------------------------------------------------------------------

# 1.0's oneof field of each security scheme -> 0.3's ``type`` and how its fields differ.
_SCHEME_TYPES = {
    "apiKeySecurityScheme": "apiKey",
    "httpAuthSecurityScheme": "http",
    "oauth2SecurityScheme": "oauth2",
    "openIdConnectSecurityScheme": "openIdConnect",
    "mtlsSecurityScheme": "mutualTLS",
}
_SCHEME_FIELDS = {v: k for k, v in _SCHEME_TYPES.items()}


def _scheme_to_v03(scheme: Json) -> Json:
    """The 0.3 fields of a 1.0 security scheme (to sit beside the 1.0 oneof field)."""
    for field, kind in _SCHEME_TYPES.items():
        if field in scheme:
            inner = dict(scheme[field])
            if "location" in inner:  # apiKey: 1.0 "location", 0.3 "in"
                inner["in"] = inner.pop("location")
            return {"type": kind, **inner}
    return {}


def _scheme_from_v03(scheme: Json) -> Json:
    field = _SCHEME_FIELDS.get(scheme.get("type", ""))
    if field is None:
        return {}
    inner = {k: v for k, v in scheme.items() if k != "type"}
    if "in" in inner:
        inner["location"] = inner.pop("in")
    return {field: inner}


def card_to_v03(card: Json, *, v03_bindings: frozenset[str] = frozenset({"JSONRPC", "HTTP+JSON"})) -> Json:
    """``card`` (1.0) with the 0.3 fields beside the 1.0 ones, so that one card serves both.

    Only the interfaces that are served in 0.3 (``v03_bindings``) are named by the 0.3 fields:
    a 0.3 client must not pick a binding that would answer it in 1.0. A card with none of them
    is left as it is (a 1.0 card only).
    """
    interfaces = [i for i in card.get("supportedInterfaces", []) if i.get("protocolBinding") in v03_bindings]
    if not interfaces:
        return card
    out = dict(card)
    out["protocolVersion"] = LEGACY_CARD_VERSION
    out["url"] = interfaces[0]["url"]
    out["preferredTransport"] = interfaces[0]["protocolBinding"]
    out["additionalInterfaces"] = [{"url": i["url"], "transport": i["protocolBinding"]} for i in interfaces]
    caps = card.get("capabilities") or {}
    if caps.get("extendedAgentCard"):
        out["supportsAuthenticatedExtendedCard"] = True
    schemes = card.get("securitySchemes")
    if schemes:
        out["securitySchemes"] = {name: {**_scheme_to_v03(s), **s} for name, s in schemes.items()}
    requirements = card.get("securityRequirements")
    if requirements:
        out["security"] = [
            {name: list((scopes or {}).get("list", [])) for name, scopes in (r.get("schemes") or {}).items()}
            for r in requirements
        ]
    return out


def is_v03_card(card: Mapping[str, Any]) -> bool:
    """A card of an agent that speaks only 0.3 (or older): no 1.0 ``supportedInterfaces``."""
    return "supportedInterfaces" not in card


def card_protocol_version(card: Mapping[str, Any]) -> str:
    """``major.minor`` of a pre-1.0 card's ``protocolVersion`` (``0.3`` when it says none)."""
    value = card.get("protocolVersion")
    if not isinstance(value, str) or not value.strip():
        return LEGACY_VERSION
    return ".".join(value.strip().split(".")[:2])


def card_from_v03(card: Any) -> Json:
    """A 0.3 card as the 1.0 card our code reads: its interfaces say protocol version 0.3."""
    card = _obj(card, "card")
    if not is_v03_card(card):
        return dict(card)
    url = card.get("url")
    if not isinstance(url, str) or not url:
        raise V03Error("card.url (the 0.3 endpoint) is missing")
    version = card_protocol_version(card)
    seen: set[tuple[str, str]] = set()
    interfaces: list[Json] = []
    entries = [{"url": url, "transport": card.get("preferredTransport") or "JSONRPC"}]
    entries += [e for e in card.get("additionalInterfaces") or [] if isinstance(e, dict)]
    for entry in entries:
        key = (str(entry.get("url")), str(entry.get("transport")))
        if key in seen or not isinstance(entry.get("url"), str):
            continue
        seen.add(key)
        interfaces.append({"url": entry["url"], "protocolBinding": entry.get("transport"), "protocolVersion": version})
    out: Json = {
        k: v
        for k, v in card.items()
        if k
        not in (
            "url",
            "preferredTransport",
            "additionalInterfaces",
            "protocolVersion",
            "securitySchemes",
            "security",
            "supportsAuthenticatedExtendedCard",
        )
    }
    out["supportedInterfaces"] = interfaces
    out.setdefault("version", "")
    out.setdefault("description", "")
    out.setdefault("defaultInputModes", [])
    out.setdefault("defaultOutputModes", [])
    out.setdefault("skills", [])
    caps = dict(_obj(card.get("capabilities") or {}, "card.capabilities"))
    caps.pop("stateTransitionHistory", None)
    if card.get("supportsAuthenticatedExtendedCard"):
        caps["extendedAgentCard"] = True
    out["capabilities"] = caps
    schemes = card.get("securitySchemes")
    if isinstance(schemes, dict):
        out["securitySchemes"] = {n: _scheme_from_v03(s) for n, s in schemes.items() if isinstance(s, dict)}
    security = card.get("security")
    if isinstance(security, list):
        out["securityRequirements"] = [
            {"schemes": {n: {"list": list(s or [])} for n, s in r.items()}} for r in security if isinstance(r, dict)
        ]
    return out


# ---- 0.3 over HTTP+JSON: ProtoJSON of 0.3's a2a.proto ----------------------------------------
#
# The 0.3 REST binding carries 0.3's *proto* messages, not its JSON-RPC objects: no ``kind``;
# enum names as in 1.0 except ``TASK_STATE_CANCELLED``; a message's parts are ``content``, a
# status's message is ``update``, a send request's message is ``request``, a stream response's
# message is ``msg``; file parts nest ``fileWithUri``/``fileWithBytes``; data parts nest
# ``data.data``; a push config is named by its resource path.

_PROTO_STATE_TO_V03 = {"TASK_STATE_CANCELED": "TASK_STATE_CANCELLED"}
_PROTO_STATE_FROM_V03 = {v: k for k, v in _PROTO_STATE_TO_V03.items()}


def _proto_part_to_v03(part: Json) -> Json:
    out: Json
    if "text" in part:
        out = {"text": part["text"]}
    elif "raw" in part or "url" in part:
        file: Json = {"fileWithBytes": part["raw"]} if "raw" in part else {"fileWithUri": part["url"]}
        if part.get("mediaType") is not None:
            file["mimeType"] = part["mediaType"]
        if part.get("filename") is not None:
            file["name"] = part["filename"]
        out = {"file": file}
    elif "data" in part:
        data = part["data"]
        out = {"data": {"data": data if isinstance(data, dict) else {"value": data}}}
    else:
        raise V03Error("part has none of text, raw, url, data")
    return _copy(part, out, "metadata")


def _proto_part_from_v03(part: Any, where: str) -> Json:
    part = _obj(part, where)
    out: Json
    if "text" in part:
        out = {"text": part["text"]}
    elif "file" in part:
        file = _obj(part["file"], f"{where}.file")
        if "fileWithBytes" in file:
            out = {"raw": file["fileWithBytes"]}
        elif "fileWithUri" in file:
            out = {"url": file["fileWithUri"]}
        else:
            raise V03Error(f"{where}.file must have fileWithUri or fileWithBytes")
        if file.get("mimeType"):
            out["mediaType"] = file["mimeType"]
        if file.get("name"):
            out["filename"] = file["name"]
    elif "data" in part:
        out = {"data": _obj(part["data"], f"{where}.data").get("data")}
    else:
        raise V03Error(f"{where} has none of text, file, data")
    return _copy(part, out, "metadata")


def _proto_message_to_v03(message: Json) -> Json:
    out: Json = _copy(message, {}, "messageId", "contextId", "taskId", "role", "metadata", "extensions")
    out["content"] = [_proto_part_to_v03(p) for p in message.get("parts", [])]
    return out


def _proto_message_from_v03(message: Any, where: str) -> Json:
    message = _obj(message, where)
    out: Json = _copy(message, {}, "messageId", "contextId", "taskId", "role", "metadata", "extensions")
    parts = _list(message.get("content", []), f"{where}.content")
    out["parts"] = [_proto_part_from_v03(p, f"{where}.content[{i}]") for i, p in enumerate(parts)]
    return out


def _proto_status_to_v03(status: Json) -> Json:
    state = status.get("state", "TASK_STATE_UNSPECIFIED")
    out: Json = {"state": _PROTO_STATE_TO_V03.get(state, state)}
    if status.get("message") is not None:
        out["message"] = _proto_message_to_v03(status["message"])  # the field ``update``, by its json_name
    return _copy(status, out, "timestamp")


def _proto_artifact_to_v03(artifact: Json) -> Json:
    out: Json = _copy(artifact, {}, "artifactId", "name", "description", "metadata", "extensions")
    out["parts"] = [_proto_part_to_v03(p) for p in artifact.get("parts", [])]
    return out


def _proto_task_to_v03(task: Json) -> Json:
    out: Json = _copy(task, {}, "id", "contextId", "metadata")
    out["status"] = _proto_status_to_v03(task.get("status", {}))
    if task.get("artifacts") is not None:
        out["artifacts"] = [_proto_artifact_to_v03(a) for a in task["artifacts"]]
    if task.get("history") is not None:
        out["history"] = [_proto_message_to_v03(m) for m in task["history"]]
    return out


def proto_event_to_v03(event: Json) -> Json:
    """A 1.0 ``StreamResponse`` / ``SendMessageResponse`` as 0.3's (ProtoJSON)."""
    if "task" in event:
        return {"task": _proto_task_to_v03(event["task"])}
    if "message" in event:
        return {"message": _proto_message_to_v03(event["message"])}  # the field ``msg``, by its json_name
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        status = _proto_status_to_v03(update.get("status", {}))
        out: Json = _copy(update, {}, "taskId", "contextId", "metadata")
        out["status"] = status
        out["final"] = _STATE_TO_V03.get(update.get("status", {}).get("state", ""), "") in _FINAL_STATES
        return {"statusUpdate": out}
    if "artifactUpdate" in event:
        update = event["artifactUpdate"]
        out = _copy(update, {}, "taskId", "contextId", "append", "lastChunk", "metadata")
        out["artifact"] = _proto_artifact_to_v03(update.get("artifact", {}))
        return {"artifactUpdate": out}
    raise V03Error("event has none of task, message, statusUpdate, artifactUpdate")


def _proto_push_to_v03(config: Json) -> Json:
    inner = _push_to_v03(config)["pushNotificationConfig"]
    name = f"tasks/{config.get('taskId', '')}/pushNotificationConfigs/{config.get('id', '')}"
    return {"name": name, "pushNotificationConfig": inner}


def proto_params_from_v03(method: str, body: Json, path: Mapping[str, str]) -> Json:
    """The 1.0 request of a 0.3 REST call: its body (ProtoJSON) and its path's fields."""
    if method in ("SendMessage", "SendStreamingMessage"):
        message = body.get("request", body.get("message"))
        out: Json = {"message": _proto_message_from_v03(message, "request")}
        # ProtoJSON leaves a false ``blocking`` out, so in 0.3's REST binding a send without it
        # does not block (a2a-sdk 0.3 reads it so): only ``blocking: true`` waits.
        config = _obj(body.get("configuration") or {}, "configuration")
        conf: Json = _copy(config, {}, "acceptedOutputModes", "historyLength")
        if method == "SendMessage" and config.get("blocking") is not True:
            conf["returnImmediately"] = True
        if config.get("pushNotification") is not None:
            push = config["pushNotification"]
            conf["taskPushNotificationConfig"] = _push_from_v03(push, None, "configuration.pushNotification")
        out["configuration"] = conf
        return _copy(body, out, "metadata")
    if method == "CreateTaskPushNotificationConfig":
        config = _obj(body.get("config", body), "config")
        return _push_from_v03(config.get("pushNotificationConfig"), path["id"], "config.pushNotificationConfig")
    if method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        return {"taskId": path["id"], "id": path["config_id"]}
    if method == "ListTaskPushNotificationConfigs":
        return {"taskId": path["id"]}
    if method == "GetExtendedAgentCard":
        return {}
    return {"id": path["id"]}


def proto_result_to_v03(method: str, result: Any) -> Any:
    """The 0.3 REST (ProtoJSON) result of a 1.0 operation's result."""
    if result is None:
        return {}
    if method in ("SendMessage", "SendStreamingMessage", "SubscribeToTask"):
        return proto_event_to_v03(result)
    if method in ("GetTask", "CancelTask"):
        return _proto_task_to_v03(result)
    if method in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return _proto_push_to_v03(result)
    if method == "ListTaskPushNotificationConfigs":
        return {"configs": [_proto_push_to_v03(c) for c in result.get("configs", [])], "nextPageToken": ""}
    if method == "GetExtendedAgentCard":
        return card_to_v03(result)
    return result


#: 0.3 REST routes (relative to the interface URL): (HTTP methods, path pattern, operation).
PROTO_ROUTES: tuple[tuple[frozenset[str], str, str], ...] = (
    (frozenset({"POST"}), r"v1/message:send", "SendMessage"),
    (frozenset({"POST"}), r"v1/message:stream", "SendStreamingMessage"),
    (frozenset({"GET"}), r"v1/tasks/(?P<id>[^/:]+)", "GetTask"),
    (frozenset({"POST"}), r"v1/tasks/(?P<id>[^/:]+):cancel", "CancelTask"),
    (frozenset({"GET", "POST"}), r"v1/tasks/(?P<id>[^/:]+):subscribe", "SubscribeToTask"),
    (frozenset({"POST"}), r"v1/tasks/(?P<id>[^/:]+)/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    (frozenset({"GET"}), r"v1/tasks/(?P<id>[^/:]+)/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    (
        frozenset({"GET"}),
        r"v1/tasks/(?P<id>[^/:]+)/pushNotificationConfigs/(?P<config_id>[^/:]+)",
        "GetTaskPushNotificationConfig",
    ),
    (
        frozenset({"DELETE"}),
        r"v1/tasks/(?P<id>[^/:]+)/pushNotificationConfigs/(?P<config_id>[^/:]+)",
        "DeleteTaskPushNotificationConfig",
    ),
    (frozenset({"GET"}), r"v1/card", "GetExtendedAgentCard"),
)


def with_v03_enums(value: Any) -> Any:
    """1.0 objects with their roles and task states spelled as 0.3 spells them (``"agent"``,
    ``"completed"``): the answer for clients that mix the versions that way (fasta2a 2.x sends
    and reads 1.0's shapes under 0.3's method names, with 0.3's enum values)."""
    if isinstance(value, dict):
        out = {key: with_v03_enums(item) for key, item in value.items()}
        if isinstance(out.get("role"), str):
            out["role"] = _ROLE_TO_V03.get(out["role"], out["role"])
        if isinstance(out.get("state"), str):
            out["state"] = _STATE_TO_V03.get(out["state"], out["state"])
        return out
    if isinstance(value, list):
        return [with_v03_enums(item) for item in value]
    return value


# ---- 0.3 over HTTP+JSON, the client's side: requests out, results in ----------------------------


def _proto_status_from_v03(status: Any, where: str) -> Json:
    status = _obj(status, where)
    state = status.get("state", "TASK_STATE_UNSPECIFIED")
    out: Json = {"state": _PROTO_STATE_FROM_V03.get(state, state)}
    # The field is ``update`` with ``json_name = "message"`` in 0.3's proto: a ProtoJSON printer
    # writes ``message`` (@a2a-js/sdk 0.3, a2a-sdk 0.3), and a reader must accept either name.
    for name in ("update", "message"):
        if status.get(name) is not None:
            out["message"] = _proto_message_from_v03(status[name], f"{where}.{name}")
            break
    return _copy(status, out, "timestamp")


def _proto_artifact_from_v03(artifact: Any, where: str) -> Json:
    artifact = _obj(artifact, where)
    out: Json = _copy(artifact, {}, "artifactId", "name", "description", "metadata", "extensions")
    parts = _list(artifact.get("parts", []), f"{where}.parts")
    out["parts"] = [_proto_part_from_v03(p, f"{where}.parts[{i}]") for i, p in enumerate(parts)]
    return out


def _proto_task_from_v03(task: Any, where: str) -> Json:
    task = _obj(task, where)
    out: Json = _copy(task, {}, "id", "contextId", "metadata")
    out["status"] = _proto_status_from_v03(task.get("status", {}), f"{where}.status")
    if task.get("artifacts") is not None:
        items = _list(task["artifacts"], f"{where}.artifacts")
        out["artifacts"] = [_proto_artifact_from_v03(a, f"{where}.artifacts[{i}]") for i, a in enumerate(items)]
    if task.get("history") is not None:
        items = _list(task["history"], f"{where}.history")
        out["history"] = [_proto_message_from_v03(m, f"{where}.history[{i}]") for i, m in enumerate(items)]
    return out


def proto_event_from_v03(event: Any, where: str = "event") -> Json:
    """A 0.3 ``StreamResponse`` / ``SendMessageResponse`` (ProtoJSON) as 1.0's. 0.3's ``final``
    is dropped: 1.0 reads the end of a task from its state."""
    event = _obj(event, where)
    if "task" in event:
        return {"task": _proto_task_from_v03(event["task"], f"{where}.task")}
    if "msg" in event or "message" in event:
        return {"message": _proto_message_from_v03(event.get("msg", event.get("message")), f"{where}.msg")}
    if "statusUpdate" in event:
        update = _obj(event["statusUpdate"], f"{where}.statusUpdate")
        out: Json = _copy(update, {}, "taskId", "contextId", "metadata")
        out["status"] = _proto_status_from_v03(update.get("status", {}), f"{where}.statusUpdate.status")
        return {"statusUpdate": out}
    if "artifactUpdate" in event:
        update = _obj(event["artifactUpdate"], f"{where}.artifactUpdate")
        out = _copy(update, {}, "taskId", "contextId", "append", "lastChunk", "metadata")
        out["artifact"] = _proto_artifact_from_v03(update.get("artifact", {}), f"{where}.artifactUpdate.artifact")
        return {"artifactUpdate": out}
    raise V03Error(f"{where} has none of task, msg, statusUpdate, artifactUpdate")


def _proto_push_from_v03(config: Any, where: str) -> Json:
    """A 0.3 REST push config: its task's id is in its resource name
    (``tasks/{id}/pushNotificationConfigs/{config_id}``)."""
    config = _obj(config, where)
    name = str(config.get("name") or "")
    segments = name.split("/")
    task_id = segments[1] if len(segments) >= 2 and segments[0] == "tasks" else None
    out = _push_from_v03(config.get("pushNotificationConfig"), task_id, f"{where}.pushNotificationConfig")
    if "id" not in out and len(segments) == 4:
        out["id"] = segments[3]
    return out


@dataclass(frozen=True, slots=True)
class ProtoRequest:
    """One 0.3 REST call: HTTP method, path (relative to the interface URL), query, body."""

    http_method: str
    path: str
    query: dict[str, str]
    body: Json | None


def proto_request_to_v03(method: str, params: Json) -> ProtoRequest:
    """The 0.3 REST call of a 1.0 request (plain JSON); ``V03Error`` for an operation 0.3 lacks."""
    task = quote(str(params.get("taskId" if "PushNotification" in method else "id") or ""), safe="")
    if method in ("SendMessage", "SendStreamingMessage"):
        sent = _send_to_v03(params)
        body: Json = {"message": _proto_message_to_v03(params["message"])}  # the field ``request``, by its json_name
        # ProtoJSON readers take a missing ``blocking`` as false: 1.0's default (wait) is said.
        conf = dict(sent.get("configuration") or {"blocking": True})
        if "pushNotificationConfig" in conf:
            conf["pushNotification"] = conf.pop("pushNotificationConfig")
        body["configuration"] = conf
        body = _copy(params, body, "metadata")
        return ProtoRequest("POST", "v1/message:send" if method == "SendMessage" else "v1/message:stream", {}, body)
    if method == "GetTask":
        query = {"historyLength": str(params["historyLength"])} if params.get("historyLength") is not None else {}
        return ProtoRequest("GET", f"v1/tasks/{task}", query, None)
    if method == "CancelTask":
        return ProtoRequest("POST", f"v1/tasks/{task}:cancel", {}, {"name": f"tasks/{task}"})
    if method == "SubscribeToTask":
        return ProtoRequest("GET", f"v1/tasks/{task}:subscribe", {}, None)
    if method == "CreateTaskPushNotificationConfig":
        config = _proto_push_to_v03(params)
        body = {"parent": f"tasks/{task}", "configId": params.get("id") or "", "config": config}
        return ProtoRequest("POST", f"v1/tasks/{task}/pushNotificationConfigs", {}, body)
    if method in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        path = f"v1/tasks/{task}/pushNotificationConfigs/{quote(str(params.get('id') or ''), safe='')}"
        return ProtoRequest("GET" if method.startswith("Get") else "DELETE", path, {}, None)
    if method == "ListTaskPushNotificationConfigs":
        return ProtoRequest("GET", f"v1/tasks/{task}/pushNotificationConfigs", {}, None)
    if method == "GetExtendedAgentCard":
        return ProtoRequest("GET", "v1/card", {}, None)
    raise V03Error(f"A2A 0.3 has no {method}")


def proto_result_from_v03(method: str, result: Any) -> Any:
    """The 1.0 result (plain JSON) of a 0.3 REST answer (ProtoJSON)."""
    if method in ("SendMessage", "SendStreamingMessage", "SubscribeToTask"):
        return proto_event_from_v03(result, "result")
    if method in ("GetTask", "CancelTask"):
        return _proto_task_from_v03(result, "result")
    if method in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return _proto_push_from_v03(result, "result")
    if method == "ListTaskPushNotificationConfigs":
        result = _obj(result, "result")
        items = _list(result.get("configs", []), "result.configs")
        configs = [_proto_push_from_v03(c, f"result.configs[{i}]") for i, c in enumerate(items)]
        return {"configs": configs, "nextPageToken": ""}
    if method == "GetExtendedAgentCard":
        return card_from_v03(result)
    return result
