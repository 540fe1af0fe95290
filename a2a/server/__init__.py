"""The server side: agent authoring, the request handler, stores, auth and the aiohttp app."""

from .agent import SKILL_METADATA_KEY, Agent, Skill
from .app import CARD_PATH, DEFAULT_MAX_BODY_BYTES, JSONRPC_PATH, REST_PATH, A2AServer, ServerConfig
from .auth import ApiKeyAuth, Authenticator, BearerAuth
from .context import RequestContext, agent_message
from .handler import CallContext, RequestHandler
from .limits import HttpLimits
from .store import InMemoryTaskStore, TaskStore

__all__ = [
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
    "HttpLimits",
    "InMemoryTaskStore",
    "RequestContext",
    "RequestHandler",
    "ServerConfig",
    "Skill",
    "TaskStore",
    "agent_message",
]
