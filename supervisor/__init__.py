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
    from .result import AgentMetrics, Delegation, RunMetrics, RunResult, TodoItem
    from .supervisor import RunExistsError, RunNotFoundError, Supervisor

#: Where each public name lives. Imported on first use, so that ``import supervisor.cli`` (which
#: the ``a2a`` command does for every invocation) stays fast: LangGraph loads only for a run.
_WHERE = {
    "events": "",
    **dict.fromkeys(
        [
            "A2ADefaults",
            "AgentConfig",
            "AuthConfig",
            "BreakerConfig",
            "BudgetConfig",
            "CheckpointConfig",
            "ConfigError",
            "ConfigIssue",
            "ContextConfig",
            "ModelConfig",
            "RetryConfig",
            "SkillConfig",
            "SupervisorConfig",
            "SupervisorSettings",
            "load_config",
            "parse_config",
        ],
        ".config",
    ),
    **dict.fromkeys(["AgentMetrics", "Delegation", "RunMetrics", "RunResult", "TodoItem"], ".result"),
    **dict.fromkeys(["RunExistsError", "RunNotFoundError", "Supervisor"], ".supervisor"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(f".{name}" if where == "" else where, __name__)
    if where:
        value = getattr(value, name)
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
