"""The guarded public API: exported names (kept, existing, in order) and the layering rules."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "a2a"

# The names each public module exported when this test was written. Removing one breaks users:
# it must fail here. Adding one is fine (add it here too, to guard it).
PINNED: dict[str, set[str]] = {
    "a2a": {
        "A2AClient",
        "A2AServer",
        "Agent",
        "ApiKey",
        "ApiKeyAuth",
        "BearerAuth",
        "BearerToken",
        "RequestContext",
        "RetryBudget",
        "RetryPolicy",
        "ServerConfig",
        "__version__",
        "errors",
        "types",
    },
    "a2a.types": {
        "INTERRUPTED_STATES",
        "TERMINAL_STATES",
        "UNSET",
        "APIKeySecurityScheme",
        "AgentCapabilities",
        "AgentCard",
        "AgentCardSignature",
        "AgentExtension",
        "AgentInterface",
        "AgentProvider",
        "AgentSkill",
        "Artifact",
        "AuthenticationInfo",
        "AuthorizationCodeOAuthFlow",
        "CancelTaskRequest",
        "ClientCredentialsOAuthFlow",
        "DeleteTaskPushNotificationConfigRequest",
        "DeviceCodeOAuthFlow",
        "GetExtendedAgentCardRequest",
        "GetTaskPushNotificationConfigRequest",
        "GetTaskRequest",
        "HTTPAuthSecurityScheme",
        "ImplicitOAuthFlow",
        "JSONRPCError",
        "JSONRPCErrorResponse",
        "JSONRPCRequest",
        "JSONRPCResponse",
        "ListTaskPushNotificationConfigsRequest",
        "ListTaskPushNotificationConfigsResponse",
        "ListTasksRequest",
        "ListTasksResponse",
        "Message",
        "MutualTlsSecurityScheme",
        "OAuth2SecurityScheme",
        "OAuthFlows",
        "OpenIdConnectSecurityScheme",
        "Part",
        "PasswordOAuthFlow",
        "RequestId",
        "Role",
        "SecurityRequirement",
        "SecurityScheme",
        "SendMessageConfiguration",
        "SendMessageRequest",
        "SendMessageResponse",
        "StreamResponse",
        "StringList",
        "SubscribeToTaskRequest",
        "Task",
        "TaskArtifactUpdateEvent",
        "TaskPushNotificationConfig",
        "TaskState",
        "TaskStatus",
        "TaskStatusUpdateEvent",
        "UnsetType",
        "Wire",
    },
    "a2a.errors": {
        "ERROR_DOMAIN",
        "ERROR_TABLE",
        "A2AError",
        "AuthenticationRequiredError",
        "CardResolutionError",
        "ClientError",
        "ContentTypeNotSupportedError",
        "ExtendedAgentCardNotConfiguredError",
        "ExtensionSupportRequiredError",
        "HTTPStatusError",
        "InternalError",
        "InvalidAgentResponseError",
        "InvalidParamsError",
        "InvalidRequestError",
        "InvalidResponseError",
        "MethodNotFoundError",
        "ParseError",
        "PayloadTooLargeError",
        "ProtocolError",
        "PushNotificationNotSupportedError",
        "RequestTimeoutError",
        "TaskNotCancelableError",
        "TaskNotFoundError",
        "TransportError",
        "UnsupportedOperationError",
        "VersionNotSupportedError",
        "error_for_code",
    },
    "a2a.loader": {"AgentLoadError", "load_agent", "load_object"},
    "a2a.extras": {"EXTRAS", "MissingExtra", "install_command", "needs_extra", "require"},
    "a2a.backoff": {"MAX_RETRY_AFTER", "Backoff", "parse_retry_after"},
    "a2a.client": {
        "A2AClient",
        "ApiKey",
        "BearerToken",
        "CredentialProvider",
        "RetryBudget",
        "RetryPolicy",
        "choose_interface",
        "credentials_from_env",
        "fetch_card",
        "user_message",
    },
    "a2a.server": {
        "CARD_PATH",
        "DEFAULT_MAX_BODY_BYTES",
        "JSONRPC_PATH",
        "REST_PATH",
        "SKILL_METADATA_KEY",
        "A2AServer",
        "Agent",
        "ApiKeyAuth",
        "Authenticator",
        "BearerAuth",
        "CallContext",
        "InMemoryTaskStore",
        "RequestContext",
        "RequestHandler",
        "ServerConfig",
        "Skill",
        "TaskStore",
        "agent_message",
    },
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def ruf022_key(name: str) -> tuple[int, list[int | str]]:
    """ruff RUF022's "isort-style" order: SCREAMING_SNAKE_CASE, then CamelCase, then the rest;
    a natural sort within each group (digit runs compare as numbers)."""
    if name.isupper():
        group = 0
    elif name[:1].isupper():
        group = 1
    else:
        group = 2
    return group, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_all_is_a_list_without_duplicates(name: str) -> None:
    exported = _module(name).__all__
    assert isinstance(exported, list)
    assert all(isinstance(n, str) for n in exported)
    assert len(exported) == len(set(exported)), [n for n in exported if exported.count(n) > 1]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_all_is_sorted_as_ruf022_wants(name: str) -> None:
    exported = list(_module(name).__all__)
    assert exported == sorted(exported, key=ruf022_key)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_names_are_still_exported(name: str) -> None:
    missing = PINNED[name] - set(_module(name).__all__)
    assert not missing, f"{name} no longer exports {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_exported_name_exists(name: str) -> None:
    module = _module(name)
    absent = [n for n in module.__all__ if not hasattr(module, n)]
    assert not absent, f"{name}.__all__ names {absent}, which the module does not define"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_star_import_gives_exactly_all(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {name} import *", namespace)
    namespace.pop("__builtins__", None)
    assert set(namespace) == set(_module(name).__all__)


def test_top_level_reexports_are_the_same_objects() -> None:
    import a2a
    import a2a.client
    import a2a.server

    for name in ("A2AClient", "ApiKey", "BearerToken", "RetryBudget", "RetryPolicy"):
        assert getattr(a2a, name) is getattr(a2a.client, name)
    for name in ("A2AServer", "Agent", "ApiKeyAuth", "BearerAuth", "RequestContext", "ServerConfig"):
        assert getattr(a2a, name) is getattr(a2a.server, name)
    assert a2a.__version__ and re.fullmatch(r"\d+\.\d+\.\d+.*", a2a.__version__)


# ---- layering ---------------------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                assert len(package) >= node.level, f"{path}:{node.lineno} imports beyond the top level"
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # "from . import errors" imports the submodule a2a.errors
            found.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return found


def _sources(folder: Path) -> list[Path]:
    files = sorted(folder.rglob("*.py"))
    assert files, f"no sources under {folder}"
    return files


def _top(module: str) -> str:
    return module.split(".")[0]


def test_relative_import_resolution() -> None:
    # A check on the checker: a relative import from a2a/client/client.py resolves into a2a.
    found = _imports(PACKAGE / "client" / "client.py")
    assert any(module == "a2a.errors" for _, module in found)
    assert all(not module.startswith(".") for _, module in found)


def test_a2a_never_imports_agents_or_supervisor() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources(PACKAGE)
        for line, module in _imports(path)
        if _top(module) in ("agents", "supervisor")
    ]
    assert not offenders, "\n".join(offenders)


def test_types_import_nothing_else_from_a2a() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources(PACKAGE / "types")
        for line, module in _imports(path)
        if _top(module) == "a2a" and not (module == "a2a.types" or module.startswith("a2a.types."))
    ]
    assert not offenders, "\n".join(offenders)


def test_protocol_does_no_io() -> None:
    # The sans-IO layer: no network, no event loop, no server or client code.
    banned = {"aiohttp", "httpx", "websockets", "asyncio", "socket", "a2a.server", "a2a.client", "a2a.transport"}
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in _sources(PACKAGE / "protocol")
        for line, module in _imports(path)
        if any(module == b or module.startswith(b + ".") for b in banned)
    ]
    assert not offenders, "\n".join(offenders)
