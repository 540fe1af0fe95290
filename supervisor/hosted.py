"""The run context of a graph that a host runs: LangGraph Server, ``langgraph dev``, Studio, or a
user's own LangGraph application using the supervisor as a subgraph.

``Supervisor`` passes its live ``RunContext`` (clients, processes, the model, the event sink) to
the graph. A host cannot: it has only serialisable settings. So a run without a live context
builds one here, from (first found wins, key by key):

1. the run's ``context`` (LangGraph's ``context=``; the graph's ``context_schema`` is
   ``GraphSettings``),
2. the run's ``configurable`` (``config={"configurable": {...}}``),
3. ``$A2A_SUPERVISOR_CONFIG``, a YAML file (default ``examples/studio.yaml`` when it exists: the
   built-in agents as stdio child processes, so ``langgraph dev`` + ``{"objective": ...}`` needs
   nothing started first).

``GraphSettings``: ``config_file`` (a supervisor YAML), ``agents`` (a list, as in the YAML),
``supervisor`` (options, as in the YAML; e.g. ``{"offline": true}``), ``a2a``. ``agents``,
``supervisor`` and ``a2a`` given directly replace those of the file.

The agents of one set of settings are resolved once per process and shared by its runs (their
stdio processes live as long as the host); each run gets its own delegations and is released
when it ends. Progress events go to the log (logger ``supervisor.hosted``); the state — TODO
items, delegations, results — is what the host shows.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, TypedDict

from langgraph.config import get_stream_writer

from .config import ModelConfig, SupervisorConfig, load_config
from .delegation import Delegator
from .events import Event
from .model import ModelHandle
from .runtime import RunContext

__all__ = ["GraphSettings", "hosted_context", "release", "settings_from"]

log = logging.getLogger("supervisor.hosted")

#: The keys of ``GraphSettings`` (looked up in the run's context, then its configurable).
_KEYS = ("config_file", "agents", "supervisor", "a2a")
_DEFAULT_FILE = Path(__file__).resolve().parents[1] / "examples" / "studio.yaml"


class GraphSettings(TypedDict, total=False):
    """What a host may give a run (all serialisable); see the module's docstring."""

    config_file: str
    agents: list[dict[str, Any]]
    supervisor: dict[str, Any]
    a2a: dict[str, Any]


def settings_from(context: Any, configurable: dict[str, Any]) -> GraphSettings:
    """The settings of a run: its context first, then its configurable, key by key."""
    given = context if isinstance(context, dict) else {}
    settings: dict[str, Any] = {}
    for key in _KEYS:
        if given.get(key) is not None:
            settings[key] = given[key]
        elif configurable.get(key) is not None:
            settings[key] = configurable[key]
    return settings  # type: ignore[return-value]


def _config(settings: GraphSettings) -> SupervisorConfig:
    path = settings.get("config_file") or os.environ.get("A2A_SUPERVISOR_CONFIG")
    if path is None and _DEFAULT_FILE.exists() and "agents" not in settings:
        path = str(_DEFAULT_FILE)
    base = load_config(path) if path else SupervisorConfig()
    values = base.model_dump(exclude_unset=True)
    for key in ("agents", "supervisor", "a2a"):
        if key in settings:
            values[key] = settings[key]  # type: ignore[literal-required]
    return SupervisorConfig.model_validate(values)


def _model(config: SupervisorConfig) -> ModelHandle | None:
    settings = config.supervisor
    model = None if settings.offline else (settings.model or ModelConfig.from_env())
    if model is None:
        return None
    from langchain_openai import ChatOpenAI

    from .model import _api_key

    chat = ChatOpenAI(
        model=model.model,
        base_url=model.base_url,
        api_key=_api_key(model),  # type: ignore[arg-type]
        temperature=model.temperature,
        timeout=model.timeout,
        max_retries=model.max_retries,
    )
    endpoint = model.base_url or "https://api.openai.com/v1"
    return ModelHandle(chat, model.model, model.input_cost_per_mtok, model.output_cost_per_mtok, endpoint)


def _log(event: Event) -> None:
    """Each event to the log, and to the host's ``stream_mode="custom"`` (as ``--json`` prints it)."""
    data = event.to_dict()
    log.info("%s", json.dumps(data, default=str))
    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a run of the graph (a closing delegation after its run)
        return
    writer(data)


#: Supervisors (their agents) by settings, and the contexts of the runs in progress.
_supervisors: dict[str, Any] = {}
_runs: dict[str, RunContext] = {}
#: The run in progress on each thread: a new run there (a resumed interrupt, the next turn)
#: replaces a context its predecessor never released (it stopped at an interrupt, or failed).
_threads: dict[str, str] = {}


def hosted_context(settings: GraphSettings, run_key: str, thread: str | None = None) -> RunContext:
    """The context of the run ``run_key`` (made on its first node, kept until ``release``)."""
    if run_key in _runs:
        return _runs[run_key]
    if thread is not None:
        stale = _runs.pop(_threads.get(thread, ""), None)
        for task in list(stale.delegator.tasks.values()) if stale is not None else []:
            task.cancel()  # a delegation of a run that will never go on (each sends its CancelTask)
        _threads[thread] = run_key
    from .supervisor import Supervisor

    fingerprint = json.dumps(settings, sort_keys=True, default=str)
    sup = _supervisors.get(fingerprint)
    if sup is None:
        sup = _supervisors[fingerprint] = Supervisor(config=_config(settings))
    config = sup.config
    delegator = Delegator(
        run_id=run_key,
        registry=sup.registry,
        depth=0,
        max_depth=config.supervisor.max_depth,
        emit=_log,
        interactive=False,
        hooks=sup.hooks,
    )
    rt = RunContext(
        run_id=run_key,
        config=config,
        registry=sup.registry,
        delegator=delegator,
        model=_model(config),
        emit=_log,
        hooks=sup.hooks,
        approve_by_interrupt=True,
    )
    _runs[run_key] = rt
    return rt


async def release(rt: RunContext) -> None:
    """The run has ended: forget its context (its agents stay up for the next run)."""
    if _runs.get(rt.run_id) is rt:
        del _runs[rt.run_id]
        for thread in [t for t, key in _threads.items() if key == rt.run_id]:
            del _threads[thread]
        await rt.delegator.close()
