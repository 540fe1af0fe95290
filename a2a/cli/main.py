"""The ``a2a`` command: serve an agent, or talk to one.

Every failure is one line on stderr and a non-zero exit: 1 for an error from the agent or
the network, 2 for a usage error, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..client import A2AClient, RetryPolicy, credentials_from_env
from ..errors import A2AError, ProtocolError
from ..loader import AgentLoadError, load_agent
from ..server import A2AServer, Agent, ApiKeyAuth, BearerAuth, ServerConfig
from ..server.app import DEFAULT_MAX_BODY_BYTES
from ..server.backend import default_store_url, open_backend
from ..server.stdio import StdioConfig, claim_stdout, serve_stdio
from ..transport.targets import STDIO_PREFIX, stdio_argv
from ..types import Part, TaskState
from .output import print_json, show, show_event
from .serve_limits import add_limit_flags, limits_from_flags

__all__ = ["main"]

log = logging.getLogger("a2a.cli")


class UsageError(Exception):
    """Wrong words on the command line: exit 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="a2a", description="Serve A2A 1.0 agents and talk to them.")
    parser.add_argument("--log-level", default="warning", help="debug, info, warning (default) or error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="serve an agent: a2a serve MODULE:ATTR (or path/to/file.py:ATTR)")
    serve.add_argument("target", help="the agent object, e.g. examples/echo_agent.py:agent")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    serve.add_argument("--public-url", help="the base URL clients should use, when behind a proxy")
    serve.add_argument(
        "--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, help="largest request body (default 4 MiB)"
    )
    serve.add_argument(
        "--auth",
        action="append",
        choices=["bearer", "apikey"],
        default=[],
        help="require credentials: bearer tokens from $A2A_BEARER_TOKENS, API keys from $A2A_API_KEYS "
        "(entries 'principal:secret', comma-separated), or from --credentials-file",
    )
    serve.add_argument("--credentials-file", help="file of 'principal:secret' lines for the --auth schemes")
    serve.add_argument(
        "--no-push", action="store_true", help="do not offer push notifications (they are on by default)"
    )
    serve.add_argument(
        "--push-allow",
        help="webhook targets allowed besides public addresses: comma-separated CIDRs or host names "
        "(e.g. 10.0.0.0/8,hooks.internal); private, loopback and link-local targets are refused otherwise",
    )
    serve.add_argument(
        "--store",
        help="where tasks live: sqlite:///path/to/tasks.db (default: the file tasks-AGENT-PORT.db under "
        "$A2A_DATA_DIR or ~/.local/share/a2a-net; memory: with --port 0 or --stdio), memory:, or "
        "redis://host:port/db (several replicas share tasks)",
    )
    serve.add_argument(
        "--stdio",
        action="store_true",
        help="serve over stdin/stdout instead of HTTP (newline-delimited JSON-RPC; logs go to stderr)",
    )
    add_limit_flags(serve)

    for name, help_text in [
        ("card", "show an agent's card"),
        ("send", "send a message"),
        ("get", "show a task"),
        ("list", "list your tasks"),
        ("cancel", "cancel a task"),
    ]:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument(
            "url",
            help="the agent: a base URL (http://127.0.0.1:8000), a WebSocket URL (ws://127.0.0.1:8000/a2a/ws), "
            'or a command that serves it over stdio: stdio:"a2a serve examples/echo_agent.py:agent --stdio"',
        )
        if name == "send":
            cmd.add_argument(
                "text", nargs="?", default="", help="the message text (may be left out with --skill --data)"
            )
            cmd.add_argument(
                "--skill", help="run this skill of the agent; --data then gives its arguments (a JSON object)"
            )
            cmd.add_argument("--stream", action="store_true", help="show progress as it arrives")
            cmd.add_argument("--task-id", help="continue this task (e.g. one waiting for input)")
            cmd.add_argument("--context-id", help="stay in this conversation")
            cmd.add_argument("--no-wait", action="store_true", help="return the task at once (returnImmediately)")
            cmd.add_argument(
                "--data",
                help='send JSON as a data part too (structured input: \'{"tool": "write", "arguments": {...}}\'); '
                "TEXT may then be empty",
            )
        elif name in ("get", "cancel"):
            cmd.add_argument("task_id")
        if name == "get":
            cmd.add_argument("--history", type=int, help="at most this many history messages")
        if name == "list":
            cmd.add_argument("--context-id")
            cmd.add_argument("--state", help="e.g. working, completed, input-required")
            cmd.add_argument("--page-size", type=int)
            cmd.add_argument("--page-token")
        cmd.add_argument("--json", action="store_true", help="print wire JSON (one object per line)")
        cmd.add_argument("--token", help="bearer token (default: $A2A_TOKEN)")
        cmd.add_argument("--api-key", help="API key (default: $A2A_API_KEY)")
        cmd.add_argument(
            "--binding", choices=["JSONRPC", "HTTP+JSON", "WEBSOCKET"], help="use this interface of the card"
        )
        cmd.add_argument("--timeout", type=float, default=60.0, help="seconds per call (default 60)")
        cmd.add_argument("--retries", type=int, default=4, help="attempts for retryable failures (default 4)")

    _add_plugin_commands(sub)
    return parser


#: Entry-point group through which other packages add subcommands (``a2a supervise``, ``a2a
#: demo``): each entry is a ``register(subparsers)`` that adds its parser with ``func=`` set to
#: an ``async def run(args) -> int``. This keeps ``a2a`` free of imports of those packages.
PLUGIN_GROUP = "a2a_net.commands"


def _add_plugin_commands(sub: Any) -> None:
    from importlib.metadata import entry_points

    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            entry.load()(sub)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the CLI down with it
            log.warning("the a2a command %r could not be loaded: %s: %s", entry.name, type(exc).__name__, exc)


# ---- serve --------------------------------------------------------------------------------


def _load_agent(target: str, options: Sequence[str] = ()) -> Agent:
    """The agent at ``target``; a callable target is a factory, called with ``options``
    (``--name value`` pairs after the target, passed as keyword strings)."""
    return load_agent(target, _factory_options(options))


def _factory_options(options: Sequence[str]) -> dict[str, str]:
    kwargs: dict[str, str] = {}
    items = list(options)
    while items:
        flag = items.pop(0)
        if not flag.startswith("--") or len(flag) < 3:
            raise UsageError(f"unexpected {flag!r}: options for an agent factory are --name value pairs")
        name, eq, value = flag[2:].partition("=")
        if not eq:
            if not items or items[0].startswith("--"):
                raise UsageError(f"option --{name} needs a value")
            value = items.pop(0)
        kwargs[name.replace("-", "_")] = value
    return kwargs


def _auth(args: argparse.Namespace) -> list[BearerAuth | ApiKeyAuth]:
    schemes: list[BearerAuth | ApiKeyAuth] = []
    for kind in dict.fromkeys(args.auth):
        schemes.append(
            BearerAuth(file=args.credentials_file) if kind == "bearer" else ApiKeyAuth(file=args.credentials_file)
        )
    return schemes


async def _serve(args: argparse.Namespace) -> int:
    if args.stdio:
        return await _serve_stdio(args)
    agent = _load_agent(args.target, args.agent_options)
    config = ServerConfig(
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        max_body_bytes=args.max_body_bytes,
        limits=limits_from_flags(args),
        tune_gc=True,  # this process only serves
    )
    store_url = args.store or default_store_url(agent.name, args.port)
    backend = open_backend(store_url, namespace=_namespace(agent), exclusive=True)
    server = A2AServer(
        agent,
        backend=backend,
        auth=_auth(args),
        config=config,
        push=not args.no_push,
        push_allow=args.push_allow,
    )
    # Before anything can be served: a signal during start-up then ends it cleanly too.
    stop = _stop_on_signals()
    try:
        url = await server.start()
    except OSError as exc:
        raise A2AError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    print(f"Serving {agent.name!r} at {url}", flush=True)
    for skill in server.card(url).skills:
        print(f"  skill {skill.id}: {skill.description}", flush=True)
    print(f"  tasks in {_shown_store(store_url)}", flush=True)
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


async def _serve_stdio(args: argparse.Namespace) -> int:
    out_fd = claim_stdout()  # before the agent loads: nothing it prints may reach the protocol stream
    stop = _stop_on_signals()
    agent = _load_agent(args.target, args.agent_options)
    backend = open_backend(args.store or "memory:", namespace=_namespace(agent), exclusive=True)
    config = StdioConfig(max_line_bytes=args.max_body_bytes)
    return await serve_stdio(
        agent,
        backend=backend,
        push=not args.no_push,  # on by default, as over HTTP
        push_allow=args.push_allow,
        auth=_auth(args),
        config=config,
        stdout_fd=out_fd,
        stop=stop,
    )


def _stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (which then no longer end the process abruptly)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _namespace(agent: Agent) -> str:
    """Redis key prefix: one per agent, so several agents can share a Redis."""
    return "a2a:" + "".join(c if c.isalnum() or c in "-_." else "-" for c in agent.name.lower())


def _shown_store(url: str) -> str:
    """The store URL without a password, for printing."""
    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        return parts._replace(netloc=netloc).geturl()
    return url


# ---- client commands ----------------------------------------------------------------------


def _client(args: argparse.Namespace) -> A2AClient:
    if args.url.startswith(STDIO_PREFIX):
        try:
            stdio_argv(args.url)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    retry = RetryPolicy(max_attempts=max(1, args.retries))
    return A2AClient(
        args.url,
        credentials=credentials_from_env(args.token, args.api_key),
        retry=retry,
        timeout=args.timeout,
        binding=args.binding,
    )


def _state(value: str | None) -> TaskState | None:
    if value is None:
        return None
    name = "TASK_STATE_" + value.upper().replace("-", "_").removeprefix("TASK_STATE_")
    try:
        return TaskState(name)
    except ValueError:
        known = ", ".join(s.value.removeprefix("TASK_STATE_").lower().replace("_", "-") for s in TaskState)
        raise UsageError(f"unknown state {value!r}; use one of: {known}") from None


def _data(args: argparse.Namespace) -> Any:
    """The JSON of --data (``None`` without it)."""
    if args.data is None:
        return None
    try:
        return json.loads(args.data)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--data is not valid JSON: {exc}") from None


def _content(args: argparse.Namespace, data: Any) -> str | list[Part]:
    """The message: the text, plus a data part when --data gives JSON (without --skill)."""
    if data is None or args.skill is not None:
        return str(args.text)
    parts = [Part(text=args.text)] if args.text else []
    return [*parts, Part(data=data, media_type="application/json")]


def _arguments(args: argparse.Namespace, data: Any) -> dict[str, Any] | None:
    """With --skill, --data is the skill's arguments: a JSON object."""
    if args.skill is None or data is None:
        return None
    if not isinstance(data, dict):
        raise UsageError("with --skill, --data must be a JSON object of the skill's arguments")
    return data


async def _send(client: A2AClient, args: argparse.Namespace) -> int:
    data = _data(args)
    content, arguments = _content(args, data), _arguments(args, data)
    if args.stream:
        last: Any = None
        events = client.stream(
            content, task_id=args.task_id, context_id=args.context_id, skill=args.skill, arguments=arguments
        )
        async for event in events:
            (print_json if args.json else show_event)(event)
            last = event.payload
        return _exit_for(last)
    result = await client.send(
        content,
        task_id=args.task_id,
        context_id=args.context_id,
        return_immediately=args.no_wait,
        skill=args.skill,
        arguments=arguments,
    )
    (print_json if args.json else show)(result)
    return _exit_for(result)


def _exit_for(result: Any) -> int:
    """Non-zero when the task ended badly, so that scripts can tell."""
    status = getattr(result, "status", None)
    state = status.state if status is not None else None
    return 1 if state in (TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED) else 0


async def _client_command(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        if args.command == "send":
            return await _send(client, args)
        result: Any
        if args.command == "card":
            result = await client.get_card()
        elif args.command == "get":
            result = await client.get_task(args.task_id, history_length=args.history)
        elif args.command == "cancel":
            result = await client.cancel_task(args.task_id)
        else:
            result = await client.list_tasks(
                context_id=args.context_id,
                status=_state(args.state),
                page_size=args.page_size,
                page_token=args.page_token,
            )
        (print_json if args.json else show)(result)
        return 0


# ---- entry point --------------------------------------------------------------------------


def _run(coro_fn: Callable[[argparse.Namespace], Awaitable[int]], args: argparse.Namespace) -> int:
    try:
        import uvloop

        return uvloop.run(coro_fn(args))  # type: ignore[arg-type]
    except ImportError:
        return asyncio.run(coro_fn(args))  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "serve":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.agent_options = extra
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        print(f"a2a: unknown --log-level {args.log_level!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    command = getattr(args, "func", None) or {"serve": _serve}.get(args.command, _client_command)
    try:
        return _run(command, args)
    except KeyboardInterrupt:
        return 130
    except (UsageError, AgentLoadError) as exc:
        print(f"a2a: {exc}", file=sys.stderr)
        return 2
    except ProtocolError as exc:
        print(f"a2a: the agent answered {type(exc).__name__} ({exc.code}): {exc.message}", file=sys.stderr)
        return 1
    except (A2AError, ValueError) as exc:
        print(f"a2a: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
