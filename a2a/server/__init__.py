"""The server side: agent authoring, the request handler, stores, auth and the aiohttp app."""

from .app import CARD_PATH, DEFAULT_MAX_BODY_BYTES, JSONRPC_PATH, REST_PATH, A2AServer, ServerConfig
from .authoring.agent import SKILL_METADATA_KEY, Agent, Skill
from .authoring.context import RequestContext, agent_message
from .backends.store import InMemoryTaskStore, TaskStore
from .engine.auth import ApiKeyAuth, Authenticator, BearerAuth
from .engine.handler import CallContext, RequestHandler
from .engine.limits import HttpLimits

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
