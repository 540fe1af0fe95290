"""``a2a demo``: the built-in agents as their own services, and the supervisor over them.

::

    a2a demo [--json] [--offline]

What it does, in order:

1. Makes a temporary directory (the files agent's workspace, and the agents' logs) and serves a
   small HTML page on loopback from this process, so that the web agent has a page to fetch
   without the internet.
2. Starts ``agents.files`` and ``agents.web`` as child processes serving HTTP on free loopback
   ports (``a2a serve agents.files:agent --port 0``, each URL read from its first line of
   output); the files agent works in the temporary workspace (``A2A_FILES_WORKSPACE``), the web
   agent may fetch loopback addresses (``A2A_WEB_ALLOW=127.0.0.1/32``).
3. Runs the supervisor with those two URLs and ``agents.code`` as a ``command`` agent, which the
   supervisor starts itself over stdio (``a2a serve agents.code:agent --stdio``).
4. Gives it a sample objective that needs all three: fetch the page (web), write a small Python
   script to the workspace (files), then run it (code). The code agent runs every program in a
   fresh directory of its own, so the run step carries the script's text as well.
5. Shows which agents were started (name, binding, URL or command, PID), the live progress tree
   (the TODO list and each delegation), and the answer, which holds the script's output.
6. Stops everything it started: the supervisor ends the stdio agent, then each HTTP agent is sent
   SIGTERM by its PID (SIGKILL after a grace period) and reaped, the page server is closed and
   the temporary directory removed. This happens on success, on failure, and on Ctrl-C (the first
   cancels the run, every remote task is sent CancelTask; a second stops at once). On Linux the
   HTTP agents also get ``PR_SET_PDEATHSIG``, so they end even if this process is killed outright;
   the stdio agent ends by itself when its input closes.

Without a model (no ``A2A_MODEL``, or ``--offline``) the offline planner plans and the agents are
sent structured input (``{"tool": ..., "arguments": {...}}``): no API key is needed. With
``A2A_MODEL`` (``A2A_MODEL_BASE_URL``, ``A2A_MODEL_API_KEY``) the model plans, judges the results
and writes the answer, and the agents, which inherit the environment, can use it too.

``--json`` prints one JSON object per line instead of the tree: the supervisor's events (see
``supervisor/events.py``; the answer is in ``run_finished``) framed by the demo's own:
``demo_started`` (workspace, page, model), ``demo_agent`` (one per agent: name, binding, url or
command, pid, skills) and ``demo_stopped`` (each process, its PID and exit status). Exit status: 0
when the run completed, 1 when it did not or something could not start (one line on stderr says
why), 2 for a configuration error, 130 when interrupted.

``a2a/cli/main.py`` loads this command through the ``a2a_net.commands`` entry point
(``register``); ``python -m supervisor.demo`` runs it on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from a2a.extras import require
from a2a.process import ChildProcess

if TYPE_CHECKING:
    from aiohttp import web
    from rich.console import Console
    from rich.text import Text

    from .supervisor import Supervisor

from .cli import standalone_parser

__all__ = [
    "EXPECTED_OUTPUT",
    "PAGE",
    "SCRIPT",
    "SCRIPT_NAME",
    "Child",
    "DemoError",
    "build_parser",
    "first_line",
    "main",
    "objective",
    "register",
    "run",
    "serve_page",
    "spawn_http_agent",
    "start_process",
    "stop_child",
    "wait_for_url",
]

#: The script the demo writes and runs, and what it prints.
SCRIPT_NAME = "primes.py"
SCRIPT = 'print("primes < 30:", [n for n in range(2, 30) if all(n % d for d in range(2, n))])'
EXPECTED_OUTPUT = "primes < 30: [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]"

#: Seconds an HTTP agent may take to print its URL; a stdio agent to answer (discovery).
START_TIMEOUT = 30.0
#: Seconds a delegation may take; the whole run.
DELEGATION_TIMEOUT = 120.0
RUN_WALL_TIME = 300.0
#: Seconds between SIGTERM and SIGKILL, and the most we wait after SIGKILL.
STOP_GRACE = 5.0
KILL_WAIT = 5.0
#: The most of an agent's first line of output kept (it holds the URL).
_FIRST_LINE_BYTES = 64 * 1024

PAGE = """<!doctype html>
<html><head><title>a2a-net demo</title></head>
<body><main>
<h1>a2a-net demo</h1>
<p>This page is served on 127.0.0.1 by <code>a2a demo</code>, so that the web agent has a page to
fetch without the internet.</p>
</main></body></html>
"""

#: Runs ``a2a.cli.main`` in a child that gets SIGTERM when its parent dies (Linux), so an HTTP
#: agent never outlives the demo, even one killed with SIGKILL. Argument 1 is the parent's PID
#: (a parent that is already gone: exit at once), the rest are the ``a2a`` arguments.
_LAUNCHER = """\
import ctypes, os, runpy, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
sys.argv = ["a2a", *sys.argv[2:]]
runpy.run_module("a2a.cli.main", run_name="__main__", alter_sys=True)
"""

log = logging.getLogger("supervisor.demo")

_SERVING = re.compile(r"^Serving .* at (\S+)\s*$")


class DemoError(Exception):
    """Something the demo needs could not be done: one line for the user, and the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def objective(page_url: str) -> str:
    """The sample objective: one step per line (the offline planner's rule for several lines)."""
    return "\n".join(
        [
            f"Fetch the demo page {page_url} with the web agent",
            f"Write {SCRIPT_NAME} to the workspace: {SCRIPT}",
            f"Then run {SCRIPT_NAME} with Python: {SCRIPT}",
        ]
    )


def _a2a_argv(*arguments: str, watch_parent: bool = False) -> list[str]:
    """``a2a ARGUMENTS`` with this interpreter (so it works without the venv on PATH)."""
    if watch_parent and sys.platform == "linux":
        return [sys.executable, "-c", _LAUNCHER, str(os.getpid()), *arguments]
    return [sys.executable, "-m", "a2a.cli.main", *arguments]


# ---- the processes -----------------------------------------------------------------------------


@dataclass
class Child:
    """One agent process this demo started (HTTP), or that its supervisor started (stdio)."""

    name: str
    #: What it runs, as a user would type it (the real argv uses this interpreter).
    command: str
    binding: str
    pid: int
    url: str | None = None
    #: The process, when this demo started it (HTTP agents; see ``start_process``).
    process: ChildProcess | None = None
    #: The supervisor's stdio transport to it, when the supervisor started it (the stdio agent).
    transport: Any = None
    log: Path | None = None
    returncode: int | None = None
    skills: list[str] = field(default_factory=list)

    def log_tail(self) -> str:
        if self.log is None:
            return ""
        try:
            lines = self.log.read_text("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1].strip() if lines else ""


class _FirstLine(asyncio.SubprocessProtocol):
    """Keeps the first line a child writes on stdout (``a2a serve`` prints its URL there); the
    rest is read and dropped, so that the pipe never fills up."""

    def __init__(self) -> None:
        self.line: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._start = bytearray()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1 or self.line.done():
            return
        self._start += data
        end = self._start.find(b"\n")
        if end >= 0 or len(self._start) >= _FIRST_LINE_BYTES:
            self.line.set_result(bytes(self._start[: end + 1] if end >= 0 else self._start))
            self._start.clear()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.line.done():
            self.line.set_result(bytes(self._start))  # stdout closed before a whole line


async def start_process(argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> ChildProcess:
    """Start ``argv`` with no input and stderr to the file ``log``; ``first_line`` gives what it
    prints first. Its own session: a Ctrl-C at the terminal reaches only the demo, which stops it
    in order (``stop_child``)."""
    with log.open("wb") as err:
        return await ChildProcess.start(argv, protocol=_FirstLine(), stdin=subprocess.DEVNULL, stderr=err, env=env)


async def first_line(process: ChildProcess, timeout: float) -> bytes:
    """The first line ``process`` (from ``start_process``) wrote on stdout, with its newline
    (without, or empty, when it closed stdout first); ``TimeoutError`` after ``timeout`` seconds."""
    protocol = process.protocol
    assert isinstance(protocol, _FirstLine), "a process from start_process"
    return await asyncio.wait_for(asyncio.shield(protocol.line), timeout)


async def spawn_http_agent(name: str, target: str, env: dict[str, str], tmp: Path, children: list[Child]) -> Child:
    """Start ``a2a serve TARGET --port 0`` as a child (see ``wait_for_url``).

    The child is added to ``children`` as soon as it exists, so it is stopped whatever happens next.
    """
    log = tmp / f"{name}.log"
    argv = _a2a_argv("serve", target, "--host", "127.0.0.1", "--port", "0", watch_parent=True)
    process = await start_process(argv, log, {**os.environ, **env})
    child = Child(name, f"a2a serve {target} --port 0", "HTTP", process.pid, process=process, log=log)
    children.append(child)
    return child


async def wait_for_url(child: Child) -> str:
    """The URL from the first line ``a2a serve`` prints (``Serving 'NAME' at URL``)."""
    assert child.process is not None
    try:
        line = (await first_line(child.process, START_TIMEOUT)).decode("utf-8", "replace")
    except TimeoutError:
        raise DemoError(f"the {child.name} agent (pid {child.pid}) printed no URL within {START_TIMEOUT:g}s") from None
    found = _SERVING.match(line)
    if found is None:
        why = child.log_tail() or line.strip() or "no output"
        raise DemoError(f"the {child.name} agent ({child.command}) did not start: {why}")
    child.url = found.group(1)
    return child.url


async def stop_child(child: Child) -> None:
    """SIGTERM by PID, SIGKILL after ``STOP_GRACE``; the process is reaped (bounded waits)."""
    if child.process is not None:
        child.returncode = await child.process.stop(STOP_GRACE, kill_wait=KILL_WAIT)


async def serve_page(html: str) -> tuple[web.AppRunner, str]:
    """The demo page on a free loopback port: (runner to clean up, its URL)."""
    from aiohttp import web

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text=html, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    host, port = runner.addresses[0][:2]
    return runner, f"http://{host}:{port}/"


# ---- output ------------------------------------------------------------------------------------


class Output:
    """The tree and tables on a console, or one JSON object per line (``--json``)."""

    def __init__(self, as_json: bool) -> None:
        from rich.console import Console

        self.json = as_json
        self.console: Console = Console(file=sys.stdout, highlight=False)

    def event(self, kind: str, **fields: Any) -> None:
        if self.json:
            self.line({"event": kind, "at": time.time(), **fields})

    def line(self, data: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(data, default=str, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def say(self, text: Any) -> None:
        """Human text: on stdout normally, on stderr with ``--json`` (stdout is all JSON lines)."""
        if self.json:
            print(text if isinstance(text, str) else str(text), file=sys.stderr, flush=True)
        else:
            self.console.print(text)

    def agents(self, children: Sequence[Child]) -> None:
        for child in children:
            self.event(
                "demo_agent",
                agent=child.name,
                binding=child.binding,
                url=child.url,
                command=child.command,
                pid=child.pid,
                skills=child.skills,
            )
        if self.json:
            return
        from rich.text import Text

        width = max(len(c.name) for c in children) if children else 0
        text = Text("Agents started, each its own service:", style="bold")
        for child in children:
            text.append(f"\n  {child.name:<{width}}  ")
            text.append(child.binding, style="cyan")
            text.append(f"  {child.url or child.command}  pid {child.pid}")
            text.append(f"  skills: {', '.join(child.skills)}", style="dim")
        self.console.print(text)


# ---- the run -----------------------------------------------------------------------------------


class _Signals:
    """First Ctrl-C (or SIGTERM): cancel the run, or the start-up. Second: stop at once.

    Once the clean-up has begun, further signals are only acknowledged: it is bounded anyway.
    """

    def __init__(self) -> None:
        self.count = 0
        self.main = asyncio.current_task()
        self.supervisor: Supervisor | None = None
        self.cleaning = False
        self.installed: list[signal.Signals] = []

    def __call__(self) -> None:
        self.count += 1
        if self.cleaning:
            print("\nstopping the agents (this takes a few seconds at most)...", file=sys.stderr)
        elif self.count == 1 and self.supervisor is not None:
            print("\ncancelling the run (Ctrl-C again to stop at once)...", file=sys.stderr)
            self.supervisor.cancel()
        elif self.main is not None:
            self.main.cancel()

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self)
                self.installed.append(sig)

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in self.installed:
            loop.remove_signal_handler(sig)


def _model_name(offline: bool) -> str | None:
    from .config import ModelConfig

    if offline:
        return None
    config = ModelConfig.from_env()
    return config.model if config else None


@dataclass
class _Started:
    """Everything this run started, so that the clean-up finds it whatever happened."""

    tmp: Path
    children: list[Child] = field(default_factory=list)
    supervisor: Supervisor | None = None
    page: web.AppRunner | None = None


async def _stdio_child(supervisor: Supervisor, name: str, command: str) -> Child | None:
    """The stdio agent the supervisor started: found by its transport, to show and check its PID."""
    entry = supervisor.registry.get(name)
    client = entry.client if entry is not None else None
    if client is None:
        return None
    transport = await client.connect()
    pid = getattr(transport, "pid", None)
    return Child(name, command, "stdio", pid, transport=transport) if pid is not None else None


async def _consume(supervisor: Supervisor, objective_text: str, out: Output) -> Any:
    """Run the objective, showing the live tree (or the JSON events); the ``RunFinished`` event."""
    from . import events as ev
    from .ui import LiveView, json_line

    finished: ev.RunFinished | None = None
    stream = supervisor.stream(objective_text, interactive=False)
    if out.json:
        async for event in stream:
            out.line(json.loads(json_line(event)))
            if isinstance(event, ev.RunFinished):
                finished = event
        return finished
    from rich.live import Live

    view = LiveView()
    with Live(view.render(), console=out.console, refresh_per_second=8, transient=False) as live:
        async for event in stream:
            view.handle(event)
            if isinstance(event, ev.PlanUpdated):
                live.console.print(_plan_text(event))
            live.update(view.render())
            if isinstance(event, ev.RunFinished):
                finished = event
    if not out.console.is_terminal:
        out.console.line()  # Live leaves its last frame without a line break when not on a terminal
    out.console.print(view.summary())
    return finished


def _plan_text(event: Any) -> Text:
    """The TODO list as planned: who does each item with which skill, and what it waits for."""
    from rich.text import Text

    text = Text(f"TODO list ({event.reason or 'plan'}):", style="bold")
    for item in event.items:
        text.append(f"\n  {item['id']}. ")
        text.append(f"{item.get('agent') or '?'} · {item.get('skill') or '-'}", style="cyan")
        text.append(f"  {item['description']}")
        if item.get("depends_on"):
            text.append(f"  (after {', '.join(item['depends_on'])})", style="dim")
    return text


async def _demo(args: argparse.Namespace, out: Output, signals: _Signals, started: _Started) -> int:
    workspace = started.tmp / "workspace"
    workspace.mkdir()
    model = _model_name(args.offline)
    started.page, page_url = await serve_page(PAGE)
    out.event("demo_started", workspace=str(workspace), page=page_url, model=model, pid=os.getpid())
    if not out.json:
        how = (
            f"the model {model} (A2A_MODEL) plans and writes the answer"
            if model
            else "no model: the offline planner plans, and the agents get structured input"
        )
        out.say(f"[bold]a2a demo[/]: the built-in agents, each its own service, and the supervisor ({how})")
        out.say(f"  workspace of the files agent: {workspace}")
        out.say(f"  a page for the web agent, served here: {page_url}")
    files_env = {"A2A_FILES_WORKSPACE": str(workspace)}
    files = await spawn_http_agent("files", "agents.files:agent", files_env, started.tmp, started.children)
    web_env = {"A2A_WEB_ALLOW": "127.0.0.1/32"}
    web_agent = await spawn_http_agent("web", "agents.web:agent", web_env, started.tmp, started.children)
    # Loaded while the agents start (LangGraph takes a moment to import).
    from .supervisor import Supervisor

    await asyncio.gather(wait_for_url(files), wait_for_url(web_agent))
    supervisor = started.supervisor = Supervisor(
        [
            {"name": "files", "url": files.url, "required": True},
            {"name": "web", "url": web_agent.url, "required": True},
            {"name": "code", "command": _a2a_argv("serve", "agents.code:agent", "--stdio"), "required": True},
        ],
        offline=args.offline,
        strategy="adaptive",
        checkpoint={"backend": "memory"},
        interactive=False,
        budget={"wall_time": RUN_WALL_TIME},
        a2a={"timeout": DELEGATION_TIMEOUT, "discovery_timeout": START_TIMEOUT},
    )
    # Discovery fetches the two cards and starts the code agent; _cleanup closes the supervisor
    # (which stops that agent) even when this is interrupted half-way.
    await supervisor.__aenter__()
    code = await _stdio_child(supervisor, "code", "a2a serve agents.code:agent --stdio")
    if code is not None:
        started.children.append(code)
    down = [e for e in supervisor.registry.entries.values() if not e.up]
    if down:
        raise DemoError("; ".join(f"the {e.name} agent is down: {e.error}" for e in down))
    for child in started.children:
        entry = supervisor.registry.get(child.name)
        if entry is not None:
            child.skills = [s.id for s in entry.skills]
            if child.binding == "HTTP" and entry.transport:
                child.binding = f"HTTP ({entry.transport})"
    out.agents(started.children)
    signals.supervisor = supervisor
    try:
        finished = await _consume(supervisor, objective(page_url), out)
    finally:
        signals.supervisor = None
    if finished is None:
        raise DemoError("the run ended without a result")
    if finished.status == "canceled":
        raise DemoError("interrupted: the run was cancelled", status=130)
    if finished.status != "completed":
        raise DemoError(f"the run ended {finished.status}: {_what_went_wrong(finished)}")
    return 0


def _what_went_wrong(finished: Any) -> str:
    """The run's error, or its first unfinished item and why, on one line."""
    if finished.error:
        return str(finished.error).replace("\n", " ")
    items = finished.result.items if finished.result is not None else []
    for item in items:
        if item.status != "done":
            why = f": {item.error}" if item.error else ""
            return f"item {item.id} ({item.agent or 'no agent'}) {item.status}{why}".replace("\n", " ")
    return "no answer"


async def _cleanup(out: Output, started: _Started) -> list[str]:
    """Stop everything in ``started`` and remove its directory; the problems found.

    The supervisor first (it ends the stdio agent: end of input, SIGTERM, SIGKILL), then every
    HTTP agent by its PID, then the page server. Each wait is bounded.
    """
    problems = []
    if started.supervisor is not None:
        try:
            await started.supervisor.close()
        except Exception as exc:  # noqa: BLE001 - whatever it was, the processes below are still stopped
            problems.append(f"closing the supervisor: {type(exc).__name__}: {exc}")
    await asyncio.gather(*(stop_child(c) for c in started.children if c.process is not None))
    for child in started.children:
        if child.process is None:
            child.returncode = getattr(child.transport, "returncode", None)
            if child.returncode is None:
                # Not reaped, so the PID is still that child's: end it.
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(child.pid, signal.SIGKILL)
                problems.append(f"the {child.name} agent (pid {child.pid}) had to be killed")
        elif child.returncode is None:
            problems.append(f"the {child.name} agent (pid {child.pid}) did not end")
    if started.page is not None:
        await started.page.cleanup()
    shutil.rmtree(started.tmp, ignore_errors=True)
    stopped = [{"agent": c.name, "pid": c.pid, "returncode": c.returncode} for c in started.children]
    out.event("demo_stopped", processes=stopped, removed=str(started.tmp))
    if not out.json:
        listed = ", ".join(f"{c.name} (pid {c.pid})" for c in started.children)
        out.say(f"Stopped {listed or 'nothing (no agent had started)'}; removed {started.tmp}.")
    return problems


async def run(args: argparse.Namespace) -> int:
    """The ``demo`` command; returns the exit status."""
    require("a2a demo", "supervisor", "agents")  # the supervisor, and the agents it starts
    from .config import ConfigError

    out = Output(bool(args.json))
    signals = _Signals()
    signals.install()
    started = _Started(Path(tempfile.mkdtemp(prefix="a2a-demo-")))
    status, message, problems = 1, None, []
    try:
        status = await _demo(args, out, signals, started)
    except DemoError as exc:
        message, status = str(exc), exc.status
    except ConfigError as exc:
        lines = " ".join(line.strip() for line in str(exc).splitlines())
        message, status = f"{lines} (or run: a2a demo --offline)", 2
    except asyncio.CancelledError:
        message, status = "interrupted", 130
    except Exception as exc:  # reported in one line; --log-level debug shows the traceback
        log.debug("a2a demo failed", exc_info=True)
        message = f"{type(exc).__name__}: {exc}"
    finally:
        signals.cleaning = True
        try:
            problems = await _cleanup(out, started)
        finally:
            signals.remove()
    if problems and status == 0:
        message, status = "; ".join(problems), 1
    if message:
        print(f"a2a demo: {message}", file=sys.stderr)
    return status


# ---- the command -------------------------------------------------------------------------------


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON event per line instead of the live view")
    parser.add_argument(
        "--offline", action="store_true", help="use the offline planner even if a model is configured (A2A_MODEL)"
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``demo`` subcommand (``func=run``) to the ``a2a`` command."""
    parser = subparsers.add_parser(
        "demo",
        help="start the built-in agents and run the supervisor over them",
        description="Start the files and web agents over HTTP and the code agent over stdio, run the supervisor "
        "on a sample objective that needs all three (live progress), print the answer, stop everything.",
    )
    _add_arguments(parser)
    parser.set_defaults(func=run)


def build_parser() -> argparse.ArgumentParser:
    return standalone_parser(register)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m supervisor.demo [--json] [--offline]`` (the same as ``a2a demo``)."""
    from a2a.cli.options import attach_dashed_values

    parser = build_parser()
    args = parser.parse_args(attach_dashed_values(parser, ["demo", *(sys.argv[1:] if argv is None else argv)]))
    try:
        try:
            import uvloop  # as ``a2a`` runs its commands
        except ImportError:
            return int(asyncio.run(args.func(args)))
        return int(uvloop.run(args.func(args)))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
