"""The graph ``langgraph.json`` names, for ``langgraph dev``, LangGraph Server and Studio.

A host runs it with input ``{"objective": ...}`` and, optionally, settings in the run's
``context`` or ``configurable`` (``config_file``, ``agents``, ``supervisor``, ``a2a``); without
them the agents come from ``$A2A_SUPERVISOR_CONFIG`` (default ``examples/supervisor.yaml``).
Nothing live is needed: ``supervisor.hosted`` builds what a run needs from those settings. The
host brings its own checkpointer.

The imports are absolute: a host may load this file by its path, outside of its package.
"""

from __future__ import annotations

from typing import Any

from supervisor.graph import build_graph

__all__ = ["graph"]

#: The compiled graph the host serves.
graph: Any = build_graph().compile()
