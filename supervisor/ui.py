"""Live progress in the terminal (rich), and the ``--json`` event lines.

``LiveView`` folds the events of a run into a tree, redrawn as they arrive::

    Objective: summarise the repository
    ├── ✓ 1. read README.md  (Files)
    │   └── Files · read README.md · completed · 0.4s · 1 attempt · 120 tok
    ├── ⠿ 2. list the TODOs  (Code)
    │   └── Code · list the TODOs · working · 3.2s · 2 attempts · "scanning src/"
    └── · 3. write the summary  (Writer) waits for 1, 2

then the final answer and a summary line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text
from rich.tree import Tree

from . import events as ev

__all__ = ["LiveView", "TerminalApproval", "json_line", "redrawing"]

#: Seconds between redraws while no event arrives (elapsed times keep counting).
REDRAW_INTERVAL = 0.25


@contextlib.asynccontextmanager
async def redrawing(
    view: LiveView, update: Callable[[RenderableType], None], interval: float = REDRAW_INTERVAL
) -> AsyncIterator[None]:
    """Redraw ``view`` every ``interval`` seconds for as long as the block runs.

    Events redraw the view too, but a delegation that works quietly sends none: without a
    timer its elapsed time would stay where the last event left it. The timer runs on the
    event loop (not in rich's refresh thread), so it never renders while an event changes the view.
    """

    async def tick() -> None:
        while True:
            await asyncio.sleep(interval)
            update(view.render())

    ticker = asyncio.create_task(tick(), name="supervisor-live-redraw")
    try:
        yield
    finally:
        ticker.cancel()
        await asyncio.gather(ticker, return_exceptions=True)


_ICONS = {
    "pending": ("·", "dim"),
    "running": ("⠿", "cyan"),
    "review": ("?", "yellow"),
    "done": ("✓", "green"),
    "failed": ("✗", "red"),
    "skipped": ("-", "dim"),
    "canceled": ("⊘", "yellow"),
}
_STATE_STYLE = {
    "completed": "green",
    "failed": "red",
    "rejected": "red",
    "timeout": "red",
    "error": "red",
    "refused": "red",
    "canceled": "yellow",
    "input_required": "magenta",
}


def json_line(event: ev.Event) -> str:
    """One event as one line of JSON (what ``--json`` prints)."""
    return json.dumps(event.to_dict(), default=str, ensure_ascii=False)


@dataclass
class _Delegation:
    item_id: str
    agent: str
    description: str
    started: float
    state: str = "starting"
    ended: float | None = None
    attempts: int = 0
    text: str | None = None
    tokens: int = 0
    note: str | None = None


@dataclass
class _Item:
    description: str
    status: str = "pending"
    agent: str | None = None
    depends_on: list[str] = field(default_factory=list)
    detail: str | None = None
    delegations: list[str] = field(default_factory=list)


class LiveView:
    """The run as a tree of TODO items and their delegations."""

    def __init__(self, *, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.objective = ""
        self.run_id = ""
        self.items: dict[str, _Item] = {}
        self.delegations: dict[str, _Delegation] = {}
        #: Agent -> its status line (why it cannot be used).
        self.agents_down: dict[str, str] = {}
        self.notices: list[str] = []
        self.finished: ev.RunFinished | None = None

    # ---- events --------------------------------------------------------------------------

    def handle(self, event: ev.Event) -> None:
        handler = getattr(self, f"_on_{event.kind}", None)
        if handler is not None:
            handler(event)

    def _on_run_started(self, event: ev.RunStarted) -> None:
        self.objective, self.run_id = event.objective, event.run_id

    def _on_agent_status(self, event: ev.AgentStatus) -> None:
        if event.status == "down" and event.unsupported_version is not None:
            self.agents_down[event.agent] = f"agent {event.agent} speaks A2A {event.unsupported_version}: not supported"
        elif event.status == "down":
            self.agents_down[event.agent] = f"agent {event.agent} is down: {event.error or 'unreachable'}"
        else:
            self.agents_down.pop(event.agent, None)

    def _on_plan_updated(self, event: ev.PlanUpdated) -> None:
        for entry in event.items:
            item = self.items.setdefault(entry["id"], _Item(entry["description"]))
            item.description, item.agent = entry["description"], entry.get("agent")
            item.depends_on = list(entry.get("depends_on") or [])
            if item.status == "pending":
                item.status = entry.get("status") or "pending"

    def _on_item_status(self, event: ev.ItemStatus) -> None:
        item = self.items.setdefault(event.item_id, _Item(event.item_id))
        item.status, item.agent, item.detail = event.status, event.agent or item.agent, event.detail

    def _on_delegation_started(self, event: ev.DelegationStarted) -> None:
        self.delegations[event.delegation_id] = _Delegation(
            event.item_id,
            event.agent,
            event.description,
            self.clock(),
            note="reattached"
            if event.reattached
            else (f"failover from {event.failover_from}" if event.failover_from else None),
        )
        item = self.items.setdefault(event.item_id, _Item(event.description))
        if event.delegation_id not in item.delegations:
            item.delegations.append(event.delegation_id)
        item.status, item.agent = "running", event.agent

    def _on_delegation_progress(self, event: ev.DelegationProgress) -> None:
        d = self.delegations.get(event.delegation_id)
        if d is not None:
            d.state, d.attempts, d.text = event.state, event.attempts, event.text or d.text

    def _on_delegation_retrying(self, event: ev.DelegationRetrying) -> None:
        d = self.delegations.get(event.delegation_id)
        if d is not None:
            d.attempts, d.text = event.attempt, f"retrying in {event.delay:.1f}s: {event.error}"

    def _on_delegation_finished(self, event: ev.DelegationFinished) -> None:
        d = self.delegations.get(event.delegation_id)
        if d is not None:
            d.state, d.attempts, d.ended = event.state, event.attempts, self.clock()
            d.tokens = event.input_tokens + event.output_tokens
            if event.error:
                d.text = event.error

    def _on_failover(self, event: ev.Failover) -> None:
        self.notices.append(f"item {event.item_id}: failover {event.from_agent} → {event.to_agent} ({event.reason})")

    def _on_circuit_opened(self, event: ev.CircuitOpened) -> None:
        self.notices.append(f"circuit open for {event.agent} after {event.failures} failures")

    def _on_budget_exhausted(self, event: ev.BudgetExhausted) -> None:
        self.notices.append(f"budget {event.budget} exhausted ({event.used:g} of {event.limit:g})")

    def _on_input_requested(self, event: ev.InputRequested) -> None:
        self.notices.append(f"{event.agent} asks (item {event.item_id}): {event.question}")

    def _on_run_finished(self, event: ev.RunFinished) -> None:
        self.finished = event

    # ---- drawing ---------------------------------------------------------------------------

    def _delegation_line(self, did: str) -> Text:
        d = self.delegations[did]
        elapsed = (d.ended or self.clock()) - d.started
        parts = [
            d.agent,
            d.description,
            d.state,
            f"{elapsed:.1f}s",
            f"{d.attempts} attempt{'s' if d.attempts != 1 else ''}",
        ]
        if d.tokens:
            parts.append(f"{d.tokens} tok")
        if d.note:
            parts.append(d.note)
        line = Text(" · ".join(parts), style=_STATE_STYLE.get(d.state, ""))
        if d.text:
            shown = d.text.replace("\n", " ")
            line.append(f' · "{shown[:80]}{"…" if len(shown) > 80 else ""}"', style="dim")
        return line

    def tree(self) -> Tree:
        tree = Tree(Text(f"Objective: {self.objective}", style="bold"))
        for item_id, item in self.items.items():
            icon, style = _ICONS.get(item.status, ("?", ""))
            label = Text(f"{icon} {item_id}. {item.description}", style=style)
            if item.agent:
                label.append(f"  ({item.agent})", style="dim")
            if item.status == "pending" and item.depends_on:
                label.append(f" waits for {', '.join(item.depends_on)}", style="dim")
            if item.status in ("failed", "skipped") and item.detail:
                label.append(f"  {item.detail[:100]}", style="red")
            branch = tree.add(label)
            for did in item.delegations:
                branch.add(self._delegation_line(did))
        return tree

    def render(self) -> RenderableType:
        parts: list[RenderableType] = [self.tree()]
        parts.extend(Text(line, style="yellow") for line in self.agents_down.values())
        parts.extend(Text(n, style="yellow") for n in self.notices[-5:])
        return Group(*parts)

    def summary(self) -> RenderableType:
        """The final answer and one line of totals (after ``run_finished``)."""
        event = self.finished
        if event is None:
            return Text("")
        m = event.metrics
        style = {"completed": "green", "partial": "yellow", "canceled": "yellow"}.get(event.status, "red")
        totals = (
            f"{event.status} · run {event.run_id} · {m.get('delegations', 0)} delegations · "
            f"{m.get('retries', 0)} retries · {m.get('failovers', 0)} failovers · {m.get('total_tokens', 0)} tokens"
            f" · ${m.get('total_cost_usd', 0.0):.4f}"
        )
        body: list[RenderableType] = [Panel(escape(event.final or "(no answer)"), title="Answer", expand=True)]
        if event.error:
            body.append(Text(event.error, style="red"))
        body.append(Text(totals, style=style))
        return Group(*body)


def print_json(event: ev.Event, out: TextIO) -> None:
    out.write(json_line(event) + "\n")
    out.flush()


def console_for(out: TextIO) -> Console:
    return Console(file=out)


class TerminalApproval:
    """The CLI's ``ApprovalHook`` question: asked on the terminal (the live view paused meanwhile);
    without a terminal to ask on (``--batch``, ``--json``) a delegation that needs approval is refused."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self.console: Console | None = None
        self.live: Any = None
        self._lock = asyncio.Lock()  # one question at a time

    def attach(self, console: Console, live: Any) -> None:
        self.console, self.live = console, live

    async def __call__(self, request: Any) -> bool:
        if not self.interactive or self.console is None:
            return False
        async with self._lock:
            if self.live is not None:
                self.live.stop()
            self.console.print(
                f"[magenta]Approve[/] delegating item {request.item_id} to [bold]{escape(request.agent)}[/]: "
                f"{escape(request.text[:500])}"
            )
            try:
                answer = await asyncio.to_thread(input, "approve? [y/N] ")
            except EOFError:
                answer = ""
            if self.live is not None:
                self.live.start()
        return answer.strip().lower() in ("y", "yes")
