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

from . import errors, types
from .client import A2AClient, ApiKey, BearerToken, RetryBudget, RetryPolicy
from .server import A2AServer, Agent, ApiKeyAuth, BearerAuth, RequestContext, ServerConfig

__version__ = "0.1.0"

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
