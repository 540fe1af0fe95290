"""``a2a supervise``: run the supervisor from the command line.

::

    a2a supervise "objective" [-c supervisor.yaml] [--agent URL ...] [--json] [--resume RUN_ID]

Shows a live tree (one line per delegation: agent, description, state, elapsed time, attempts,
status text, tokens), then the answer; ``--json`` prints one JSON event per line instead.
Ctrl-C cancels the run (every remote task in flight is sent CancelTask); a second Ctrl-C stops
at once. Exit status: 0 completed, 1 failed or partial (something is missing), 2 a usage or
configuration error, 130 cancelled.

``a2a/cli/main.py`` does not import this module: it is loaded through an entry point and calls
``register(subparsers)``. ``python -m supervisor`` runs it on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

# Only what building the parser needs is imported here: the a2a command imports this module for
# every invocation, and LangGraph is loaded only when a run starts (without the supervisor extra
# the command is still listed, and says how to install it when run).
from a2a.extras import require

from .strategy import STRATEGIES

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from . import events as ev
    from .config import SupervisorConfig
    from .supervisor import Supervisor

__all__ = ["EXIT_CODES", "SubParsers", "build_parser", "main", "register", "run", "standalone_parser"]

#: What ``register`` functions add their subcommand to (``a2a``'s subparsers).
SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: Exit status by run status.
EXIT_CODES = {"completed": 0, "partial": 1, "failed": 1, "canceled": 130}
USAGE_ERROR = 2


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("objective", nargs="?", help="what to achieve (not needed with --resume)")
    parser.add_argument("-c", "--config", metavar="FILE", help="the supervisor's YAML configuration")
    parser.add_argument(
        "--agent",
        action="append",
        default=[],
        metavar="URL",
        help="an agent to use, by URL (http(s):// or ws(s)://) or stdio:COMMAND; named after its card; repeat",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON event per line instead of the live view")
    parser.add_argument("--resume", metavar="RUN_ID", help="continue a run whose supervisor died (same config)")
    parser.add_argument("--run-id", help="the id of a new run (default: a random one)")
    parser.add_argument(
        "--thread", metavar="ID", help="continue (or start) the conversation ID: earlier turns are seen"
    )
    parser.add_argument("--mode", choices=["plan_upfront", "conversational"], help="override supervisor.mode")
    parser.add_argument(
        "--strategy",
        choices=list(STRATEGIES),
        help="override supervisor.strategy: " + "; ".join(f"{s.name}: {s.summary}" for s in STRATEGIES.values()),
    )
    parser.add_argument("--max-concurrency", type=int, metavar="N", help="override supervisor.max_concurrency")
    parser.add_argument("--offline", action="store_true", help="use the offline planner even if a model is set")
    parser.add_argument("--checkpoint", metavar="FILE", help="the SQLite checkpoint database")
    interactive = parser.add_mutually_exclusive_group()
    interactive.add_argument(
        "--interactive",
        dest="interactive",
        action="store_true",
        default=None,
        help="relay agents' questions (INPUT_REQUIRED) to you (default: when on a terminal)",
    )
    interactive.add_argument(
        "--batch", dest="interactive", action="store_false", help="never ask: an agent's question fails its item"
    )


def register(subparsers: SubParsers) -> None:
    """Add the ``supervise`` subcommand (``func=run``) to the ``a2a`` command."""
    parser = subparsers.add_parser(
        "supervise",
        help="plan an objective and delegate it to agents",
        description="Plan an objective into a TODO list, delegate it to A2A agents in parallel, then answer.",
    )
    _add_arguments(parser)
    parser.set_defaults(func=run)


def standalone_parser(register: Callable[[SubParsers], None]) -> argparse.ArgumentParser:
    """An ``a2a`` parser with the one subcommand that ``register`` adds (for ``python -m ...``)."""
    parser = argparse.ArgumentParser(prog="a2a")
    register(parser.add_subparsers(dest="command", required=True))
    return parser


def build_parser() -> argparse.ArgumentParser:
    return standalone_parser(register)


def _config(args: argparse.Namespace) -> SupervisorConfig:
    from .config import SupervisorConfig, load_config

    config = load_config(args.config) if args.config else SupervisorConfig()
    settings: dict[str, Any] = {}
    for name in ("mode", "strategy", "max_concurrency"):
        value = getattr(args, name, None)
        if value is not None:
            settings[name] = value
    if args.offline:
        settings["offline"] = True
    if args.checkpoint:
        settings["checkpoint"] = {"backend": "sqlite", "path": args.checkpoint}
    if settings:
        merged = config.supervisor.model_dump() | settings
        config = config.model_copy(update={"supervisor": type(config.supervisor).model_validate(merged)})
    return config


class _Interrupts:
    """First Ctrl-C (or SIGTERM): cancel the run cleanly. Second: stop at once."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.count = 0
        self.main = asyncio.current_task()

    def __call__(self) -> None:
        self.count += 1
        if self.count == 1:
            print("\ncancelling the run (Ctrl-C again to stop at once)...", file=sys.stderr)
            self.supervisor.cancel()
        elif self.main is not None:
            self.main.cancel()

    def install(self) -> list[signal.Signals]:
        loop = asyncio.get_running_loop()
        installed = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self)
                installed.append(sig)
        return installed


async def _ask(console: Console, live: Live | None, event: ev.InputRequested) -> str | None:
    if live is not None:
        live.stop()
    console.print(f"[magenta]{event.agent} asks[/] (item {event.item_id}): {event.question}")
    try:
        answer = await asyncio.to_thread(input, "your answer (empty to decline): ")
    except EOFError:
        answer = ""
    if live is not None:
        live.start()
    return answer.strip() or None


async def _consume(
    supervisor: Supervisor, events: Any, args: argparse.Namespace, interactive: bool, approval: Any = None
) -> str:
    from rich.console import Console
    from rich.live import Live

    from . import events as ev
    from .ui import LiveView, json_line, redrawing

    out = sys.stdout
    status = "failed"
    if args.json:
        async for event in events:
            out.write(json_line(event) + "\n")
            out.flush()
            if isinstance(event, ev.RunFinished):
                status = event.status
        return status
    console = Console(file=out)
    view = LiveView()
    with Live(view.render(), console=console, refresh_per_second=8, transient=False) as live:
        if approval is not None:
            approval.attach(console, live)
        async with redrawing(view, live.update):
            async for event in events:
                view.handle(event)
                if isinstance(event, ev.InputRequested) and interactive:
                    supervisor.answer(event.delegation_id, await _ask(console, live, event))
                live.update(view.render())
    if not console.is_terminal:
        console.line()  # Live leaves its last frame without a line break when not on a terminal
    console.print(view.summary())
    return view.finished.status if view.finished else status


#: Where the OpenAI client sends requests when no base URL is configured.
DEFAULT_MODEL_URL = "https://api.openai.com/v1"
#: How long the model endpoint gets to accept a connection before the run starts.
MODEL_CONNECT_TIMEOUT = 5.0


async def _unreachable_model(config: SupervisorConfig) -> str | None:
    """One line when the model endpoint does not accept connections, else ``None``.

    The classic first failure ("the local model server is not running") otherwise surfaces
    deep in the first model call, after the agents were discovered. A TCP connect to the
    endpoint's host and port finds it at once; what the endpoint then answers is the run's
    business.
    """
    import os
    from urllib.parse import urlsplit

    from .config import ModelConfig

    settings = config.supervisor
    model = None if settings.offline else (settings.model or ModelConfig.from_env())
    if model is None:
        return None
    url = model.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_MODEL_URL
    parts = urlsplit(url)
    host = parts.hostname
    if host is None:
        return f"the model endpoint {url!r} is not a URL (supervisor.model.base_url or $A2A_MODEL_BASE_URL)"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"the model endpoint {url!r} has a bad port"
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), MODEL_CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc) or type(exc).__name__)
        return f"the model endpoint {url} cannot be reached ({reason}); is the model server running?"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return None


class _OneLineErrors(logging.Filter):
    """The supervisor's logged failures in one line each (type and message, no traceback),
    unless the log level is debug: a person at a terminal reads the line, a developer asks for more."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None and not logging.getLogger().isEnabledFor(logging.DEBUG):
            exc = record.exc_info[1]
            text = str(exc).splitlines()[0] if str(exc) else ""
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {text}{_request_of(exc)}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def _missing_config(path: str | None) -> str | None:
    """One line for a -c FILE that is not there; the README's examples/supervisor.yaml is
    one command away in an install without a checkout."""
    import os

    if path is None or os.path.exists(path):
        return None
    hint = " (without a checkout, a2a examples --copy puts the examples in ./examples)" if "examples" in path else ""
    return f"no such file: {path}{hint}"


def _request_of(exc: BaseException) -> str:
    """`` (POST http://…/chat/completions)`` when the error, or one it was raised from, carries
    the HTTP request it was making (httpx's and the OpenAI client's errors do): the URL is
    what a person needs to see to find the server that is down."""
    seen: BaseException | None = exc
    for _ in range(8):  # a bounded walk down the chain of causes
        if seen is None:
            break
        try:
            request = getattr(seen, "request", None)
        except RuntimeError:  # httpx raises when an error has no request
            request = None
        if request is not None and getattr(request, "url", None) is not None:
            return f" ({getattr(request, 'method', '')} {request.url})".replace("( ", "(")
        seen = seen.__cause__ or seen.__context__
    return ""


async def run(args: argparse.Namespace) -> int:
    """The ``supervise`` command; returns the exit status."""
    require("a2a supervise", "supervisor")
    from .config import ConfigError
    from .supervisor import RunExistsError, RunNotFoundError, Supervisor

    err = sys.stderr
    if not args.objective and not args.resume:
        print("a2a supervise: give an objective, or --resume RUN_ID", file=err)
        return USAGE_ERROR
    missing = _missing_config(args.config)
    if missing is not None:
        print(f"a2a supervise: {missing}", file=err)
        return USAGE_ERROR
    from .hooks import ApprovalHook
    from .ui import TerminalApproval

    approval = TerminalApproval(interactive=False)  # agents with `approval: true` are asked about
    try:
        config = _config(args)
        supervisor = Supervisor(args.agent, config=config, hooks=[ApprovalHook(approval)])
    except (ConfigError, ValueError) as exc:
        print(f"a2a supervise: {exc}", file=err)
        return USAGE_ERROR
    unreachable = await _unreachable_model(config)
    if unreachable is not None:
        print(f"a2a supervise: {unreachable}", file=err)
        return 1
    interactive = args.interactive
    if interactive is None:
        interactive = config.supervisor.interactive
    if interactive is None:
        interactive = sys.stdin.isatty() and not args.json
    approval.interactive = interactive
    interrupts = _Interrupts(supervisor)
    installed = interrupts.install()
    one_line = _OneLineErrors()
    for handler in logging.getLogger().handlers:
        handler.addFilter(one_line)
    try:
        async with supervisor:
            events = (
                supervisor.stream_resume(args.resume, interactive=interactive, thread=args.thread)
                if args.resume
                else supervisor.stream(args.objective, run_id=args.run_id, interactive=interactive, thread=args.thread)
            )
            status = await _consume(supervisor, events, args, interactive, approval)
    except (RunNotFoundError, RunExistsError, ConfigError) as exc:
        print(f"a2a supervise: {exc}", file=err)
        return USAGE_ERROR
    except asyncio.CancelledError:
        return 130
    finally:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(one_line)
        loop = asyncio.get_running_loop()
        for sig in installed:
            loop.remove_signal_handler(sig)
    return EXIT_CODES.get(status, 1)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m supervisor supervise ...`` (the same as ``a2a supervise ...``)."""
    from a2a.cli.options import attach_dashed_values

    parser = build_parser()
    args = parser.parse_args(attach_dashed_values(parser, sys.argv[1:] if argv is None else argv))
    try:
        return int(asyncio.run(args.func(args)))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
