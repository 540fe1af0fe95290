"""``Supervisor``: the Python API (the CLI and LangGraph Studio use the same object).

::

    sup = Supervisor.from_yaml("supervisor.yaml")
    result = await sup.run("Summarise README.md and list the TODOs in src/")
    print(result.status, result.final)

    async for event in sup.stream("..."):      # typed progress events
        print(event.to_dict())

    sup.cancel()                               # from anywhere: every remote task gets CancelTask
    await sup.resume("RUN_ID")                 # after the process died: reattach, do not resend
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from a2a import Agent

from . import events as ev
from .config import (
    AgentConfig,
    ConfigError,
    ConfigIssue,
    ModelConfig,
    SupervisorConfig,
    SupervisorSettings,
    load_config,
    validation_issues,
)
from .delegation import Delegator
from .delegation_record import ACTIVE_DELEGATION_STATES
from .graph import build_graph, compiled
from .hooks import ApprovalHook, DelegationRequest, load_hooks
from .model import ModelHandle, ModelUnavailableError, open_model
from .nodes.discover import report_agents
from .registry import Registry
from .result import RunResult, result_from_state
from .runtime import RunContext
from .tokens import TokenCounter, estimate_tokens

__all__ = ["RunExistsError", "RunNotFoundError", "Supervisor"]

log = logging.getLogger("supervisor")

T = TypeVar("T")
AgentSpec = AgentConfig | Mapping[str, Any] | str | Agent
Ask = Callable[[ev.InputRequested], Awaitable[str | None]]

#: The keyword settings ``Supervisor(...)`` takes: every ``supervisor:`` option (``model`` has its own argument).
_SETTING_NAMES = frozenset(SupervisorSettings.model_fields) - {"model"}


@dataclass(frozen=True)
class _Run:
    """A run as it was asked for: a new one (its objective), or one to resume from its checkpoint."""

    run_id: str
    objective: str | None
    depth: int
    resume: bool
    interactive: bool
    #: The conversation (LangGraph thread) it belongs to; ``None``: a run of its own (thread = run id).
    thread: str | None = None
    #: The run of the supervisor that delegated this one (a nested supervisor), if any.
    parent_run_id: str | None = None

    @property
    def thread_id(self) -> str:
        return self.thread or self.run_id


def _with_parent(emit: Callable[[ev.Event], None], parent: str) -> Callable[[ev.Event], None]:
    """``emit`` with every event marked with the parent run (``Event.parent_run_id``)."""

    def marked(event: ev.Event) -> None:
        emit(dataclasses.replace(event, parent_run_id=parent))

    return marked


class RunNotFoundError(LookupError):
    """No checkpoint for that run id (wrong id, or another checkpoint database)."""


class RunExistsError(ValueError):
    """A new run was given the id of a run that is already checkpointed."""


#: ``--agent stdio:COMMAND``: a stdio agent started from this command line.
STDIO_PREFIX = "stdio:"


def _name_from_url(url: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", re.sub(r"^\w+://", "", url)).strip("-") or "agent"


def _agent_config(spec: AgentSpec, name: str | None, options: Mapping[str, Any]) -> tuple[AgentConfig, Agent | None]:
    if isinstance(spec, AgentConfig):
        return (spec.model_copy(update={"name": name}) if name else spec), None
    if isinstance(spec, Agent):
        agent_name = name or re.sub(r"[^A-Za-z0-9_.\-]+", "-", spec.name).strip("-") or "agent"
        return AgentConfig(name=agent_name, module=f"<in-process>:{agent_name}", **options), spec
    if isinstance(spec, str):
        # Given by address only, an agent goes by a stand-in name until its card tells its own.
        stand_in = name is None
        if re.match(r"^(https?|wss?)://", spec):
            return (
                AgentConfig(name=name or _name_from_url(spec), name_from_card=stand_in, url=spec, **options),
                None,
            )
        if spec.startswith(STDIO_PREFIX):
            command = spec[len(STDIO_PREFIX) :].strip()
            if not command:
                raise ValueError(f"{spec!r}: give the command after {STDIO_PREFIX!r}")
            return (
                AgentConfig(name=name or "stdio-agent", name_from_card=stand_in, command=command, **options),
                None,
            )
        if ":" in spec:
            return AgentConfig(name=name or spec.rpartition(":")[2], module=spec, **options), None
        raise ValueError(f"{spec!r} is neither a URL, 'stdio:COMMAND' nor 'module:attribute'")
    return AgentConfig.model_validate({**spec, **({"name": name} if name else {}), **options}), None


async def _no_one_to_ask(_request: DelegationRequest) -> bool:
    return False


def _validated(build: Callable[[], T], source: str, prefix: str = "") -> T:
    """Build config models; pydantic's errors become a ``ConfigError`` naming each field."""
    try:
        return build()
    except ValidationError as exc:
        issues = [
            ConfigIssue(
                f"{prefix}{'.' if prefix and i.path and not i.path.startswith('[') else ''}{i.path}", None, i.message
            )
            for i in validation_issues(exc)
        ]
        raise ConfigError(source, issues) from None


class Supervisor:
    """Plans an objective into a TODO list and delegates it to A2A agents (see ``supervisor/README.md``)."""

    def __init__(
        self,
        agents: Iterable[AgentSpec] = (),
        *,
        model: BaseChatModel | ModelHandle | ModelConfig | Mapping[str, Any] | str | None = None,
        config: SupervisorConfig | None = None,
        token_counter: TokenCounter = estimate_tokens,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        hooks: Iterable[Any] = (),
        **settings: Any,
    ) -> None:
        unknown = set(settings) - _SETTING_NAMES - {"a2a"}
        if unknown:
            raise TypeError(f"unknown Supervisor option(s): {', '.join(sorted(unknown))}")
        base = config.model_copy(deep=True) if config else SupervisorConfig()
        objects: dict[str, Agent] = {}
        agent_configs = list(base.agents)
        for index, spec in enumerate(agents):
            agent, obj = _validated(
                partial(_agent_config, spec, None, {}), "Supervisor(agents=...)", f"agents[{index}]"
            )
            if agent.name_from_card:  # stand-in names must not collide either (two stdio agents)
                taken, stem, n = {a.name for a in agent_configs}, agent.name, 1
                while agent.name in taken:
                    n += 1
                    agent = agent.model_copy(update={"name": f"{stem}-{n}"})
            agent_configs.append(agent)
            if obj is not None:
                objects[agent.name] = obj
        chat_model: BaseChatModel | ModelHandle | None = None
        supervisor_values = base.supervisor.model_dump()
        supervisor_values.update({k: v for k, v in settings.items() if k != "a2a"})
        if isinstance(model, BaseChatModel | ModelHandle):
            chat_model = model
        elif isinstance(model, str):
            supervisor_values["model"] = {"model": model}
        elif isinstance(model, ModelConfig):
            supervisor_values["model"] = model.model_dump()
        elif isinstance(model, Mapping):
            supervisor_values["model"] = dict(model)
        a2a_values = {**base.a2a.model_dump(), **dict(settings.get("a2a") or {})}
        values = {"supervisor": supervisor_values, "agents": agent_configs, "a2a": a2a_values}
        self.config: SupervisorConfig = _validated(partial(SupervisorConfig.model_validate, values), "Supervisor(...)")
        self._chat_model = chat_model
        self.token_counter = token_counter
        self.registry = Registry(self.config, objects=objects)
        self._checkpointer = checkpointer
        #: ``supervisor.hooks``: those given here, then those the configuration names by import path.
        self.hooks: list[Any] = load_hooks([*hooks, *self.config.supervisor.hooks])
        if not any(isinstance(h, ApprovalHook) for h in self.hooks):
            # An agent that needs approval is never delegated to unasked: with no one to ask, refuse.
            self.hooks.append(ApprovalHook(_no_one_to_ask))
        self._memory_saver: InMemorySaver | None = None
        self._entered = False
        self._active: dict[str, RunContext] = {}

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str], **overrides: Any) -> Supervisor:
        """Load ``path`` (``ConfigError`` names each bad field and its line); keyword arguments override it."""
        return cls(config=load_config(path), **overrides)

    # ---- agents --------------------------------------------------------------------------

    async def add_agent(self, agent: AgentSpec, *, name: str | None = None, **options: Any) -> AgentConfig:
        """Add an agent (a URL, ``module:attr``, an ``Agent`` object, a dict or an ``AgentConfig``).

        Inside ``async with`` it is resolved at once; otherwise at the next run.
        """
        config, obj = _validated(lambda: _agent_config(agent, name, options), "add_agent", "agent")
        self.registry.add(config, obj)
        self.config.agents.append(config)
        if self._entered:
            await self.registry.discover(only_pending=True)
        return config

    async def remove_agent(self, name: str) -> None:
        """Remove an agent (its process is stopped, its connections closed)."""
        await self.registry.remove(name)
        self.config.agents[:] = [a for a in self.config.agents if a.name != name]

    @property
    def agents(self) -> list[dict[str, Any]]:
        return [e.summary() for e in self.registry.entries.values()]

    # ---- lifetime ------------------------------------------------------------------------

    async def __aenter__(self) -> Supervisor:
        self._entered = True
        await self.registry.discover()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Cancel runs in flight, stop ``command`` agents and close every connection."""
        self.cancel()
        self._entered = False
        await self.registry.close()

    # ---- running -------------------------------------------------------------------------

    async def run(
        self,
        objective: str,
        *,
        run_id: str | None = None,
        depth: int = 0,
        ask: Ask | None = None,
        thread: str | None = None,
        parent_run_id: str | None = None,
    ) -> RunResult:
        """Run to the end and return the result. ``ask`` answers INPUT_REQUIRED questions (interactive).

        ``thread`` continues a conversation: the run sees the thread's earlier objectives and
        answers, and each agent gets the contextId it had in it (``supervisor.conversation``)."""
        stream = self._stream(objective, run_id, depth, None, ask is not None, thread, parent_run_id)
        return await self._consume(stream, ask)

    def stream(
        self,
        objective: str,
        *,
        run_id: str | None = None,
        depth: int = 0,
        interactive: bool | None = None,
        thread: str | None = None,
        parent_run_id: str | None = None,
    ) -> AsyncIterator[ev.Event]:
        """Run, yielding typed progress events; the last one is ``RunFinished`` (with ``.result``).

        ``parent_run_id``: the run of the supervisor that delegated this one (a nested supervisor,
        ``supervisor.agent``): recorded in the state, on every event, and sent on with every delegation."""
        return self._stream(objective, run_id, depth, None, interactive, thread, parent_run_id)

    async def resume(self, run_id: str, *, ask: Ask | None = None, thread: str | None = None) -> RunResult:
        """Continue a run whose process died: unfinished remote tasks are followed by their ids."""
        return await self._consume(self._stream(None, run_id, 0, run_id, ask is not None, thread), ask)

    def stream_resume(
        self, run_id: str, *, interactive: bool | None = None, thread: str | None = None
    ) -> AsyncIterator[ev.Event]:
        return self._stream(None, run_id, 0, run_id, interactive, thread)

    async def get_thread(self, thread: str) -> list[dict[str, Any]]:
        """The finished turns of a conversation, oldest first (objective, status, answer, item outputs)."""
        async with self._saver() as saver:
            if saver is None:
                return []
            snapshot = await compiled(saver).aget_state(self._graph_config(thread))
        return [dict(turn) for turn in (snapshot.values or {}).get("history") or []]

    def cancel(self, run_id: str | None = None) -> None:
        """Cancel one run (or all): delegations in flight get CancelTask; partial results are kept."""
        for rid, rt in list(self._active.items()):
            if run_id is None or rid == run_id:
                rt.cancel.set()

    def answer(self, delegation_id: str, text: str | None) -> bool:
        """Answer an ``InputRequested`` question (``None`` declines: the item fails)."""
        return any(rt.delegator.answer(delegation_id, text) for rt in self._active.values())

    async def get_run(self, run_id: str) -> RunResult | None:
        """The run as last checkpointed (``None`` if there is no such run)."""
        async with self._saver() as saver:
            if saver is None:
                return None
            snapshot = await compiled(saver).aget_state(self._graph_config(run_id))
        return result_from_state(snapshot.values) if snapshot.values else None

    # ---- the driver ----------------------------------------------------------------------

    async def _consume(self, events: AsyncIterator[ev.Event], ask: Ask | None) -> RunResult:
        result: RunResult | None = None
        async for event in events:
            if isinstance(event, ev.InputRequested) and ask is not None:
                self.answer(event.delegation_id, await ask(event))
            elif isinstance(event, ev.RunFinished):
                result = event.result
        assert result is not None
        return result

    def _graph_config(self, run_id: str) -> RunnableConfig:
        limit = 10_000 + 20 * self.config.supervisor.max_steps
        return {"configurable": {"thread_id": run_id}, "recursion_limit": limit}

    @contextlib.asynccontextmanager
    async def _saver(self) -> AsyncIterator[BaseCheckpointSaver[Any] | None]:
        if self._checkpointer is not None:
            yield self._checkpointer
            return
        checkpoint = self.config.supervisor.checkpoint
        if checkpoint.backend == "none":
            yield None
        elif checkpoint.backend == "memory":
            if self._memory_saver is None:
                self._memory_saver = InMemorySaver()
            yield self._memory_saver
        else:
            from .sqlite_saver import open_sqlite_saver

            path = checkpoint.resolved_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            with open_sqlite_saver(str(path)) as saver:
                yield saver

    def _interactive(self, requested: bool | None) -> bool:
        if requested is not None:
            return requested
        return bool(self.config.supervisor.interactive)

    async def _stream(
        self,
        objective: str | None,
        run_id: str | None,
        depth: int,
        resume: str | None,
        interactive: bool | None,
        thread: str | None = None,
        parent_run_id: str | None = None,
    ) -> AsyncIterator[ev.Event]:
        run_id = run_id or uuid.uuid4().hex[:16]
        run = _Run(run_id, objective, depth, resume is not None, self._interactive(interactive), thread, parent_run_id)
        queue: asyncio.Queue[ev.Event | None] = asyncio.Queue()
        driver = asyncio.create_task(self._drive(run, queue), name=f"supervisor-run-{run_id}")
        try:
            while True:
                event = await queue.get()
                if event is None:
                    break
                yield event
        finally:
            if not driver.done():
                self.cancel(run_id)
            await asyncio.wait([driver])
            driver.result()

    async def _drive(self, run: _Run, queue: asyncio.Queue[ev.Event | None]) -> None:
        """Run the graph; always ends the event stream (``RunFinished``, then ``None``)."""
        run_id = run.run_id
        try:
            try:
                result = await self._execute(run, queue.put_nowait)
            except (RunNotFoundError, RunExistsError, ConfigError):
                raise  # the caller's mistake: raised from stream()/run(), not turned into a failed run
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, ModelUnavailableError):
                    error = str(exc)  # expected in operation: one line, no traceback
                    log.warning("run %s failed: %s", run_id, error)
                else:
                    log.exception("run %s failed", run_id)
                result = result_from_state(
                    {
                        "run_id": run_id,
                        "objective": run.objective or "",
                        "status": "failed",
                        "error": error,
                        "final": "",
                    }
                )
            queue.put_nowait(
                ev.RunFinished(
                    run_id=run_id,
                    status=result.status,
                    final=result.final,
                    error=result.error,
                    metrics=result.metrics.to_dict(),
                    result=result,
                    parent_run_id=run.parent_run_id,
                )
            )
        finally:
            if not self._entered and not self._active:
                await self.registry.close()
            queue.put_nowait(None)

    async def _execute(self, run: _Run, emit: Callable[[ev.Event], None]) -> RunResult:
        run_id, resume, interactive = run.run_id, run.resume, run.interactive
        objective, depth = run.objective, run.depth  # a resumed run takes them from its checkpoint
        parent = run.parent_run_id
        settings = self.config.supervisor
        async with self._saver() as saver, open_model(settings, self._chat_model) as model:
            graph = compiled(saver)
            config = self._graph_config(run.thread_id)
            state: dict[str, Any] = {}
            if saver is not None:
                state = dict((await graph.aget_state(config)).values or {})
            if run.thread is not None and saver is None:
                raise RunExistsError("a conversation (thread) needs checkpoints: checkpoint.backend is 'none'")
            if resume and not state:
                where = settings.checkpoint.resolved_path() if settings.checkpoint.backend == "sqlite" else "memory"
                raise RunNotFoundError(f"no run {run.thread_id!r} in the checkpoints ({where})")
            if not resume and state and run.thread is None:
                raise RunExistsError(f"run {run_id!r} exists already; resume it, or use another run id")
            if not resume and state and not state.get("status"):
                raise RunExistsError(
                    f"thread {run.thread!r} has a run in progress ({state.get('run_id')}); resume it first"
                )
            if resume:
                objective, depth = state["objective"], int(state.get("depth", 0))
                parent = state.get("parent_run_id")
                run_id = str(state.get("run_id") or run_id)
                if state.get("status"):
                    return result_from_state(state)
            assert objective is not None
            if parent:
                emit = _with_parent(emit, parent)
            delegator = Delegator(
                parent_run_id=parent,
                run_id=run_id,
                registry=self.registry,
                depth=depth,
                max_depth=settings.max_depth,
                emit=emit,
                interactive=interactive,
                hooks=self.hooks,
            )
            rt = RunContext(
                run_id=run_id,
                config=self.config,
                registry=self.registry,
                delegator=delegator,
                model=model,
                emit=emit,
                depth=depth,
                interactive=interactive,
                token_counter=self.token_counter,
                hooks=self.hooks,
            )
            self._active[run_id] = rt
            try:
                emit(
                    ev.RunStarted(
                        run_id=run_id,
                        objective=objective,
                        mode=settings.mode,
                        strategy=settings.strategy,
                        model=model.name if model else None,
                        resumed=resume,
                    )
                )
                if resume:
                    await self._rediscover(rt)
                graph_input = (
                    None
                    if resume
                    else {
                        "run_id": run_id,
                        "objective": objective,
                        "depth": depth,
                        "started_at": time.time(),
                        **({"parent_run_id": parent} if parent else {}),
                    }
                )
                saved: dict[str, str] | None = None
                # "sync" makes every yielded state a saved one; without a checkpointer there is
                # nothing to save, and LangGraph fails when asked to wait for a save it never makes.
                durability: Any = {"durability": "sync"} if saver is not None else {}
                async for values in graph.astream(graph_input, config, context=rt, stream_mode="values", **durability):
                    state = values
                    if saver is not None:
                        saved = self._report_checkpoint(rt, state, saved)
            finally:
                await delegator.close()
                self._active.pop(run_id, None)
        return result_from_state(state)

    @staticmethod
    def _report_checkpoint(rt: RunContext, state: dict[str, Any], before: dict[str, str] | None) -> dict[str, str]:
        """With ``durability="sync"`` the state yielded is saved: say which remote tasks it holds."""
        # Raw records (this runs at every step): the active ones with a remote task.
        tasks = {
            str(r["id"]): str(r["task_id"])
            for r in (state.get("delegations") or {}).values()
            if r.get("task_id") and r.get("state") in ACTIVE_DELEGATION_STATES
        }
        if tasks != before:
            rt.emit(ev.CheckpointSaved(run_id=rt.run_id, tasks=tasks))
        return tasks

    async def _rediscover(self, rt: RunContext) -> None:
        report_agents(rt, await self.registry.discover())

    # ---- LangGraph Studio ----------------------------------------------------------------

    def graph(self) -> Any:
        """The uncompiled ``StateGraph`` (for LangGraph Studio; see ``supervisor/studio.py``)."""
        return build_graph()
