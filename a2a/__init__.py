"""a2a-net: the Agent2Agent (A2A) 1.0 protocol, server and client.

Serve an agent::

    from a2a import Agent

    agent = Agent("Greeter", "Says hello")

    @agent.skill(tags=["greeting"])
    async def greet(text: str) -> str:
        return f"Hello, {text}!"

    # a2a serve my_module:agent

Call one::

    from a2a import A2AClient

    async with A2AClient("http://127.0.0.1:8000") as client:
        reply = await client.send("world")
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._clash import warn_of_clashes

if TYPE_CHECKING:
    from . import errors, types
    from .client import A2AClient, ApiKey, BearerToken, RetryBudget, RetryPolicy
    from .server import A2AServer, Agent, ApiKeyAuth, BearerAuth, RequestContext, ServerConfig

#: The one version of the package (pyproject.toml reads it from here).
__version__ = "0.1.0"

#: Marks this package as a2a-net's ``a2a`` (the reference SDK uses the same import name).
__a2a_net__ = True

#: Where each public name lives. Each module is imported on first use, so that ``a2a --version``
#: and ``import a2a.types`` do not pay for aiohttp and httpx.
_HOMES = {
    "A2AClient": ".client",
    "ApiKey": ".client",
    "BearerToken": ".client",
    "RetryBudget": ".client",
    "RetryPolicy": ".client",
    "A2AServer": ".server",
    "Agent": ".server",
    "ApiKeyAuth": ".server",
    "BearerAuth": ".server",
    "RequestContext": ".server",
    "ServerConfig": ".server",
}


def __getattr__(name: str) -> Any:
    if name in ("errors", "types"):
        value: Any = _import(f".{name}")
    elif name in _HOMES:
        value = getattr(_import(_HOMES[name]), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _import(module: str) -> Any:
    """Import ``module`` (relative to this package) for a lazy name. An ``AttributeError`` raised
    while importing it (a dependency without a name we use, e.g. too old a version) becomes an
    ``ImportError`` that says so: ``from a2a import Agent`` would otherwise turn it into "cannot
    import name 'Agent'" and hide it. Import errors pass through as they are."""
    try:
        return importlib.import_module(module, __name__)
    except AttributeError as exc:
        raise ImportError(f"importing {__name__}{module} failed: {type(exc).__name__}: {exc}") from exc


__all__ = [
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
]

warn_of_clashes()
