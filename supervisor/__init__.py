"""The a2a-net supervisor: plan an objective into a TODO list, delegate it to A2A agents in
parallel (with retries, failover, limits and live progress), then synthesize the answer.

::

    from supervisor import Supervisor

    sup = Supervisor.from_yaml("supervisor.yaml")
    result = await sup.run("Summarise README.md and list the TODOs in src/")

Built on LangGraph (``supervisor.graph``); delegation goes through ``a2a.A2AClient`` only, so
HTTP, WebSocket, stdio and in-process agents look the same. Configuration: ``supervisor/README.md``.
"""

import importlib
from typing import TYPE_CHECKING, Any

from a2a.extras import needs_extra

if TYPE_CHECKING:
    from . import events
    from .config import (
        A2ADefaults,
        AgentConfig,
        AuthConfig,
        BreakerConfig,
        BudgetConfig,
        CheckpointConfig,
        ConfigError,
        ConfigIssue,
        ContextConfig,
        ModelConfig,
        RetryConfig,
        SkillConfig,
        SupervisorConfig,
        SupervisorSettings,
        load_config,
        parse_config,
    )
    from .delegation_record import Delegation
    from .result import AgentMetrics, RunMetrics, RunResult, TodoItem
    from .supervisor import RunExistsError, RunNotFoundError, Supervisor

#: The modules that define the public names, searched in this order. Each is imported on first
#: use, so that ``import supervisor.cli`` (which the ``a2a`` command does for every invocation)
#: stays fast: LangGraph loads only for a run.
_MODULES = (".config", ".delegation_record", ".result", ".supervisor")


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with needs_extra("the supervisor package", "supervisor"):
        if name == "events":
            value: Any = importlib.import_module(".events", __name__)
        else:
            modules = (importlib.import_module(m, __name__) for m in _MODULES)
            value = next(getattr(m, name) for m in modules if name in m.__all__)
    globals()[name] = value
    return value


__all__ = [
    "A2ADefaults",
    "AgentConfig",
    "AgentMetrics",
    "AuthConfig",
    "BreakerConfig",
    "BudgetConfig",
    "CheckpointConfig",
    "ConfigError",
    "ConfigIssue",
    "ContextConfig",
    "Delegation",
    "ModelConfig",
    "RetryConfig",
    "RunExistsError",
    "RunMetrics",
    "RunNotFoundError",
    "RunResult",
    "SkillConfig",
    "Supervisor",
    "SupervisorConfig",
    "SupervisorSettings",
    "TodoItem",
    "events",
    "load_config",
    "parse_config",
]
