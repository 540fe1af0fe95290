"""The ``a2a`` command: serve an agent, or talk to one.

Every failure is one line on stderr and a non-zero exit: 1 for an error from the agent or
the network, 2 for a usage error, 130 when interrupted; 124 when a blocking ``a2a send``
outlasts ``--timeout`` (the task goes on; its id and the commands that reach it are printed).

Only what a subcommand needs is imported, when it runs: ``a2a send`` never loads the server,
``a2a serve`` never loads httpx's client, and neither loads LangGraph.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

from . import examples, version_line
from .options import UsageError, attach_dashed_values, client_options, closest, unknown_option_message

if TYPE_CHECKING:
    from ..server import Agent, ApiKeyAuth, BearerAuth
from .serve_limits import add_limit_flags, limits_from_flags

__all__ = ["main"]

log = logging.getLogger("a2a.cli")

#: The default of --max-body-bytes (``a2a.server.app.DEFAULT_MAX_BODY_BYTES``, which a test keeps
#: equal to this): a literal here, so that building the parser does not import the server.
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
#: The default of --max-json-depth (``a2a.protocol.nesting.DEFAULT_MAX_JSON_DEPTH``; the same test
#: keeps them equal).
DEFAULT_MAX_JSON_DEPTH = 64
#: The default of --sse-heartbeat (``a2a.server.bindings.sse.DEFAULT_SSE_HEARTBEAT``; the same test).
DEFAULT_SSE_HEARTBEAT = 15.0


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (argparse prints the usage first), and flags
    allowed between the positional arguments of a command (``a2a send URL --skill lookup A100``).

    Plain argparse gives an optional positional (``send``'s TEXT) its default as soon as the
    first flag after the one before it is seen, and then has no place for the word after the
    flag. Every command is therefore parsed the intermixed way: its flags first, then its
    positional arguments from the words left. A parser for which that cannot work (one with
    subcommands, like ``a2a`` or ``a2a push``) is parsed the plain way.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing:  # the two passes of the intermixed parse
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return super().parse_known_intermixed_args(args, namespace)
        except TypeError:  # subcommands (or a REMAINDER): refused before anything is parsed
            self._intermixing = False
            return super().parse_known_args(args, namespace)
        finally:
            self._intermixing = False

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {_with_hint(message)} (see {self.prog} --help)\n")


def _with_hint(message: str) -> str:
    """argparse's "invalid choice: 'sned' (choose from ...)" says which one was meant, shortly."""
    found = re.match(r"(argument [^:]+): invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if found is None:
        return message
    where, word, listed = found.groups()
    choices = re.findall(r"'([^']*)'", listed)
    best = closest(word, choices)
    return f"{where}: unknown {word!r}" + (
        f" (did you mean {best}?)" if best else f"; use one of: {', '.join(choices)}"
    )


# ---- flag types: refused at parse time, in one line ----------------------------------------


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 1 to 65535 (0 picks a free one)")
    return port


def _public_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an absolute http(s) URL (e.g. https://agents.example.com/greeter)"
        )
    return value.rstrip("/")


def _serve_arguments(serve: argparse.ArgumentParser) -> None:
    """Every flag of ``a2a serve``, in this one place."""
    serve.add_argument("target", help="the agent object, e.g. examples/echo_agent.py:agent")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0 picks a free one)")
    serve.add_argument("--public-url", type=_public_url, help="the base URL clients should use, when behind a proxy")
    serve.add_argument(
        "--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, help="largest request body (default 4 MiB)"
    )
    serve.add_argument(
        "--max-json-depth",
        type=int,
        default=DEFAULT_MAX_JSON_DEPTH,
        help=f"deepest nesting of objects and arrays in a request (default {DEFAULT_MAX_JSON_DEPTH})",
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
        "--bindings",
        default="jsonrpc,rest,ws",
        metavar="LIST",
        help="the bindings served and declared in the card, comma-separated: jsonrpc, rest, ws (default: all three)",
    )
    serve.add_argument(
        "--no-v03",
        action="store_true",
        help="do not serve A2A 0.3 beside 1.0 (requests without A2A-Version are then refused -32009)",
    )
    serve.add_argument(
        "--stdio",
        action="store_true",
        help="serve over stdin/stdout instead of HTTP (newline-delimited JSON-RPC; logs go to stderr)",
    )
    serve.add_argument(
        "--sse-heartbeat",
        type=float,
        default=DEFAULT_SSE_HEARTBEAT,
        metavar="SECONDS",
        help="a heartbeat comment on every SSE stream this often (default 15; 0: none)",
    )
    # Operations: the access log (on by default), structured logs, metrics.
    serve.add_argument("--no-access-log", action="store_true", help="no line per request on the logger a2a.access")
    serve.add_argument(
        "--log-format", choices=["text", "json"], default="text", help="json: one JSON object per log line"
    )
    serve.add_argument("--metrics", action="store_true", help="Prometheus metrics at GET /metrics")
    add_limit_flags(serve)


def _parser(plugins: bool = True) -> argparse.ArgumentParser:
    parser = _Parser(prog="a2a", description="Serve A2A 1.0 agents and talk to them.")
    parser.add_argument("-V", "--version", action="version", version=version_line())
    parser.add_argument("--log-level", default="warning", help="debug, info, warning (default) or error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    # allow_abbrev=False: an agent factory's option must never be taken for a prefix of a flag.
    serve = sub.add_parser(
        "serve", help="serve an agent: a2a serve MODULE:ATTR (or path/to/file.py:ATTR)", allow_abbrev=False
    )
    _serve_arguments(serve)
    client_options(sub)
    examples.register(sub)
    if plugins:
        _add_plugin_commands(sub)
    _accept_global_flags(sub.choices.values())
    return parser


def _accept_global_flags(commands: Iterable[argparse.ArgumentParser]) -> None:
    """The global flags are accepted after the subcommand too (without overriding one given before it)."""
    for command in commands:
        if "--log-level" not in command._option_string_actions:
            command.add_argument("--log-level", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        for action in command._subparsers._group_actions if command._subparsers else ():
            if isinstance(action, argparse._SubParsersAction):
                _accept_global_flags(action.choices.values())


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


def _serve_flags(parser: argparse.ArgumentParser) -> list[str]:
    serve = _subparser(parser, "serve")
    return [flag for flag in serve._option_string_actions if flag.startswith("--")]


def _load_agent(target: str, options: Sequence[str] = (), flags: Sequence[str] = ()) -> Agent:
    """The agent at ``target``; a callable target is a factory, called with ``options``
    (``--name value`` pairs after the target, passed as keyword strings)."""
    from ..loader import load_agent

    return load_agent(target, _factory_options(options), other_flags=flags)


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
                raise UsageError(f"option --{name} needs a value (one beginning with '--' is given as --{name}=VALUE)")
            value = items.pop(0)
        kwargs[name.replace("-", "_")] = value
    return kwargs


def _bindings(value: str) -> frozenset[str]:
    """``--bindings``: a non-empty comma-separated subset of jsonrpc, rest, ws."""
    from ..server.app import BINDINGS

    chosen = [b.strip().lower() for b in value.split(",") if b.strip()]
    unknown = [b for b in chosen if b not in BINDINGS]
    if unknown or not chosen:
        raise UsageError(f"--bindings takes a comma-separated list of {', '.join(BINDINGS)}; got {value!r}")
    return frozenset(chosen)


def _auth(args: argparse.Namespace) -> list[BearerAuth | ApiKeyAuth]:
    from ..server import ApiKeyAuth, BearerAuth

    schemes: list[BearerAuth | ApiKeyAuth] = []
    for kind in dict.fromkeys(args.auth):
        schemes.append(
            BearerAuth(file=args.credentials_file) if kind == "bearer" else ApiKeyAuth(file=args.credentials_file)
        )
    return schemes


def _log_access(log_format: str) -> None:
    """The access log on stderr, at INFO whatever --log-level says (it is asked for by default),
    through its own batching handler (``AccessLogHandler``: a line costs a fifth of a plain
    handler's)."""
    from ..server.operations.access_log import ACCESS_LOGGER, AccessLogHandler

    access = logging.getLogger(ACCESS_LOGGER)
    access.setLevel(logging.INFO)
    handler = AccessLogHandler(sys.stderr)
    if log_format == "json":
        from ..server.operations.json_logs import JsonFormatter

        handler.setFormatter(JsonFormatter())
    access.addHandler(handler)
    access.propagate = False  # written once, by this handler
    # No log line of this process shows its pid, and reading it is a system call per record.
    logging.logProcesses = False


async def _serve(args: argparse.Namespace) -> int:
    if args.stdio:
        return await _serve_stdio(args)
    from ..errors import A2AError
    from ..server import A2AServer, ServerConfig
    from ..server.backends.base import default_store_url, open_backend
    from ..server.channels.ws import WebSocketConfig
    from .banner import print_banner

    agent = _load_agent(args.target, args.agent_options, args.serve_flags)
    config = ServerConfig(
        host=args.host,
        port=args.port,
        public_url=args.public_url,
        max_body_bytes=args.max_body_bytes,
        max_json_depth=args.max_json_depth,
        sse_heartbeat=args.sse_heartbeat or None,
        limits=limits_from_flags(args),
        tune_gc=True,  # this process only serves
        access_log=not args.no_access_log,
        metrics=args.metrics,
        bindings=_bindings(args.bindings),
        serve_v03=not args.no_v03,
        websocket=WebSocketConfig(max_executing=args.max_executing),
    )
    if config.access_log:
        _log_access(args.log_format)
    store_url = args.store or default_store_url(agent.name, args.port)
    backend = open_backend(store_url, namespace=_namespace(agent), exclusive=True)
    auth = _auth(args)
    server = A2AServer(
        agent,
        backend=backend,
        auth=auth,
        config=config,
        push=not args.no_push,
        push_allow=args.push_allow,
    )
    # Before anything can be served: a signal during start-up then ends it cleanly too.
    stop = _stop_on_signals()
    try:
        url = await server.start()
    except OSError as exc:
        await server.stop()
        raise A2AError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    except Exception as exc:  # the store (an unreachable Redis ...) or a start step of the agent
        log.debug("start-up failed", exc_info=True)
        await server.stop()
        raise A2AError(
            f"cannot start serving {agent.name!r} (tasks in {_shown_store(store_url)}): {type(exc).__name__}: {exc}"
        ) from exc
    print_banner(server, url, store=_shown_store(store_url), auth=list(dict.fromkeys(args.auth)))
    try:
        await stop.wait()
    finally:
        await server.stop()
    return 0


async def _serve_stdio(args: argparse.Namespace) -> int:
    from ..errors import A2AError
    from ..server.backends.base import open_backend
    from ..server.channels.stdio import StdioConfig, claim_stdout, serve_stdio

    out_fd = claim_stdout()  # before the agent loads: nothing it prints may reach the protocol stream
    stop = _stop_on_signals()
    agent = _load_agent(args.target, args.agent_options, args.serve_flags)
    backend = open_backend(args.store or "memory:", namespace=_namespace(agent), exclusive=True)
    config = StdioConfig(
        max_line_bytes=args.max_body_bytes, max_json_depth=args.max_json_depth, max_executing=args.max_executing
    )
    try:
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
    except A2AError:
        raise
    except Exception as exc:  # the store (an unreachable Redis ...): one line; the traceback at debug
        log.debug("serving over stdio failed", exc_info=True)
        store = _shown_store(args.store or "memory:")
        raise A2AError(
            f"cannot serve {agent.name!r} over stdio (tasks in {store}): {type(exc).__name__}: {exc}"
        ) from exc


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


# ---- entry point --------------------------------------------------------------------------


def _run(coro_fn: Callable[[argparse.Namespace], Awaitable[int]], args: argparse.Namespace) -> int:
    # uvloop pays for a server (and a supervisor's many streams); a client command makes a call
    # or two, and starts sooner without importing it.
    if args.command not in CLIENT_COMMANDS:
        try:
            import uvloop

            return uvloop.run(coro_fn(args))  # type: ignore[arg-type]
        except ImportError:
            pass
    return asyncio.run(coro_fn(args))  # type: ignore[arg-type]


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise KeyError(name)


def _quiet_broken_pipe() -> int:
    """The reader of our output went away (``a2a send ... | head``): stop quietly, as ``cat`` does.
    stdout is pointed at /dev/null so that the interpreter's last flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141  # 128 + SIGPIPE, what a shell reports for a program ended by a broken pipe


#: The commands that talk to an agent.
CLIENT_COMMANDS = frozenset({"card", "send", "get", "list", "cancel", "subscribe", "push"})
#: The commands defined here (every other one comes from a plugin).
BUILT_IN = CLIENT_COMMANDS | {"serve", "examples"}


def _command_word(words: Sequence[str]) -> str | None:
    """The subcommand's name: the first word that is neither a global option nor its value."""
    items = iter(words)
    for word in items:
        if word == "--log-level":
            next(items, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    from ..errors import A2AError, ProtocolError
    from ..extras import MissingExtra
    from ..loader import AgentLoadError

    words = list(sys.argv[1:] if argv is None else argv)
    # A built-in command needs no plugin: reading the entry points (and importing the plugins'
    # parsers) is a third of the start-up of `a2a send`.
    parser = _parser(plugins=_command_word(words) not in BUILT_IN)
    args, extra = parser.parse_known_args(attach_dashed_values(parser, words))
    if extra and args.command != "serve":
        command_parser = _subparser(parser, args.command)
        if getattr(args, "push_command", None):
            command_parser = _subparser(command_parser, args.push_command)
        print(f"{command_parser.prog}: {unknown_option_message(command_parser, extra)}", file=sys.stderr)
        return 2
    args.agent_options = extra
    args.serve_flags = _serve_flags(parser)
    level = getattr(logging, str(args.log_level).upper(), None)
    if not isinstance(level, int):
        print(f"a2a: unknown --log-level {args.log_level!r}", file=sys.stderr)
        return 2
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if getattr(args, "log_format", "text") == "json":
        from ..server.operations.json_logs import JsonFormatter

        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonFormatter())
    command = getattr(args, "func", None)
    if command is None:
        if args.command == "serve":
            command = _serve
        else:
            from .commands import client_command

            command = client_command
    try:
        return _run(command, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except (UsageError, AgentLoadError, MissingExtra) as exc:
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
