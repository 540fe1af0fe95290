"""The supervisor's graph for LangGraph Studio (``langgraph.json`` points here).

Studio runs the compiled graph itself, without the ``RunContext`` that ``Supervisor`` passes, so
this module makes one per thread from the configuration in ``$A2A_SUPERVISOR_CONFIG`` (default
``examples/supervisor.yaml``). Progress events go to the log; the state (TODO items, delegations,
results) is what Studio shows. Studio brings its own checkpointer.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from .delegation import Delegator
from .events import Event
from .graph import build_graph, set_fallback_context
from .model import ModelHandle
from .runtime import RunContext
from .supervisor import Supervisor

__all__ = ["graph"]

log = logging.getLogger("supervisor.studio")

_CONFIG = os.environ.get("A2A_SUPERVISOR_CONFIG") or str(
    Path(__file__).resolve().parents[1] / "examples" / "supervisor.yaml"
)
_supervisor: Supervisor | None = None


def _log(event: Event) -> None:
    log.info("%s", event.to_dict())


def _model(sup: Supervisor) -> ModelHandle | None:
    from .config import ModelConfig
    from .model import _api_key

    settings = sup.config.supervisor
    config = None if settings.offline else (settings.model or ModelConfig.from_env())
    if config is None:
        return None
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(
        model=config.model,
        base_url=config.base_url,
        api_key=_api_key(config),  # type: ignore[arg-type]
        temperature=config.temperature,
        timeout=config.timeout,
        max_retries=config.max_retries,
    )
    return ModelHandle(chat, config.model, config.input_cost_per_mtok, config.output_cost_per_mtok)


def _context(thread_id: str) -> RunContext:
    global _supervisor
    if _supervisor is None:
        _supervisor = Supervisor.from_yaml(_CONFIG)
    sup = _supervisor
    settings = sup.config.supervisor
    delegator = Delegator(
        run_id=thread_id, registry=sup.registry, depth=0, max_depth=settings.max_depth, emit=_log, interactive=False
    )
    return RunContext(
        run_id=thread_id, config=sup.config, registry=sup.registry, delegator=delegator, model=_model(sup), emit=_log
    )


set_fallback_context(_context)

#: The compiled graph Studio serves.
graph: Any = build_graph().compile()
