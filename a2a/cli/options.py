"""The flags of the client commands (card, send, get, list, cancel, subscribe, push), and what
the CLI says about a flag it does not know."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["UsageError", "attach_dashed_values", "client_options", "closest", "unknown_option_message"]


class UsageError(Exception):
    """Wrong words on the command line: exit 2."""


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` was most likely a typo of (``--prot`` → ``--port``), if any is close."""
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_option_message(parser: argparse.ArgumentParser, extra: Sequence[str]) -> str:
    """``unknown option --strem (did you mean --stream?)`` for the first word argparse left over."""
    word = extra[0]
    if word == "--":
        # Left over only by a parser that is not parsed the intermixed way (see main._Parser):
        # an optional argument passed by, and then nothing after ``--`` has a place.
        return "'--' came after the options: put them first, then the arguments, '--' before one that begins with '-'"
    if not word.startswith("-"):
        return f"unexpected argument {word!r}"
    flag = word.split("=", 1)[0]
    hint = closest(flag, [f for f in parser._option_string_actions if f.startswith("--")])
    return f"unknown option {flag}" + (f" (did you mean {hint}?)" if hint else "")


def _option_strings(parser: argparse.ArgumentParser, known: set[str], valued: set[str]) -> None:
    """Collect every option string of ``parser`` and its subcommands, and those that take one value."""
    for action in parser._actions:
        known.update(action.option_strings)
        if action.option_strings and action.nargs is None:
            valued.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for command in {id(p): p for p in action.choices.values()}.values():
                _option_strings(command, known, valued)


def attach_dashed_values(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[str]:
    """``--token -Xy`` as ``--token=-Xy``: a value that begins with a dash stays the option's value.

    argparse takes any word that begins with ``-`` for an option, so ``--token`` followed by a
    generated secret that happens to start with ``-`` (one in 64 for URL-safe base64) failed
    with "expected one argument". A word that is itself one of our option strings (``--token
    --json``) is left alone, so a forgotten value is still reported as missing. Everything
    after ``--`` is left as it is.
    """
    known: set[str] = set()
    valued: set[str] = set()
    _option_strings(parser, known, valued)
    out: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            out.extend(words[index:])
            break
        following = words[index + 1] if index + 1 < len(words) else None
        if (
            word in valued
            and following is not None
            and following.startswith("-")
            and following != "--"
            and following.split("=", 1)[0] not in known
        ):
            # a long option takes "=value"; a one-letter one takes the value glued on (-tVALUE)
            out.append(f"{word}={following}" if word.startswith("--") else word + following)
            index += 2
            continue
        out.append(word)
        index += 1
    return out


#: The client's defaults (``a2a.transport.base``'s, which a test keeps equal to these): literals,
#: so that building the parser does not import the client.
DEFAULT_IDLE_TIMEOUT = 60.0
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024

_TARGET_HELP = (
    "the agent: a base URL (http://127.0.0.1:8000), a WebSocket URL (ws://127.0.0.1:8000/a2a/ws), "
    'or a command that serves it over stdio: stdio:"a2a serve examples/echo_agent.py:agent --stdio"'
)


def _connection_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--json", action="store_true", help="print wire JSON (one object per line)")
    cmd.add_argument("--token", help="bearer token (default: $A2A_TOKEN)")
    cmd.add_argument("--api-key", help="API key (default: $A2A_API_KEY)")
    cmd.add_argument("--binding", choices=["JSONRPC", "HTTP+JSON", "WEBSOCKET"], help="use this interface of the card")
    cmd.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds per call (default 60); a send whose task outlasts it prints the task's id and exits 124",
    )
    cmd.add_argument("--retries", type=int, default=4, help="attempts for retryable failures (default 4)")
    cmd.add_argument(
        "--idle-timeout",
        type=float,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="SECONDS",
        help="give up a stream (and resume it) after this long without an event or a heartbeat (default 60; 0: never)",
    )
    cmd.add_argument(
        "--max-response-bytes",
        type=int,
        default=DEFAULT_MAX_RESPONSE_BYTES,
        help="largest answer (or stream event) to accept (default 16 MiB)",
    )


def _send_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("text", nargs="?", default="", help="the message text (may be left out with --skill --data)")
    cmd.add_argument("--skill", help="run this skill of the agent; --data then gives its arguments (a JSON object)")
    cmd.add_argument("--stream", action="store_true", help="show progress as it arrives")
    cmd.add_argument("--task-id", help="continue this task (e.g. one waiting for input)")
    cmd.add_argument("--context-id", help="stay in this conversation")
    cmd.add_argument("--no-wait", action="store_true", help="return the task at once (returnImmediately)")
    cmd.add_argument(
        "--data",
        help='send JSON as a data part too (structured input: \'{"tool": "write", "arguments": {...}}\'); '
        "TEXT may then be empty",
    )
    cmd.add_argument(
        "--cancel-on-interrupt",
        action="store_true",
        help="with --stream: Ctrl-C cancels the task (by default it only stops watching it)",
    )
    cmd.add_argument(
        "--no-prompt",
        action="store_true",
        help="when the task asks for input, print how to answer instead of asking (the default off a terminal)",
    )


def client_options(sub: Any) -> None:
    """Add the client subcommands to ``a2a``'s subparsers."""
    commands = [
        ("card", "show an agent's card"),
        ("send", "send a message"),
        ("get", "show a task"),
        ("list", "list your tasks"),
        ("cancel", "cancel a task"),
        ("subscribe", "follow a task's events until it ends"),
    ]
    for name, help_text in commands:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("url", help=_TARGET_HELP)
        if name == "send":
            _send_options(cmd)
        elif name in ("get", "cancel", "subscribe"):
            cmd.add_argument("task_id")
        if name == "get":
            cmd.add_argument("--history", type=int, help="at most this many history messages")
        if name == "list":
            cmd.add_argument("--context-id")
            cmd.add_argument("--state", help="e.g. working, completed, input-required")
            cmd.add_argument("--page-size", type=int)
            cmd.add_argument("--page-token")
        _connection_options(cmd)
    _push_options(sub)


def _push_options(sub: Any) -> None:
    push = sub.add_parser("push", help="a task's push notification configs (webhooks): create, list, get, delete")
    actions = push.add_subparsers(dest="push_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="have the agent POST the task's later events to a webhook")
    create.add_argument("url", help=_TARGET_HELP)
    create.add_argument("task_id")
    create.add_argument("webhook", help="the https:// URL to POST events to")
    create.add_argument("--webhook-token", help="a token the agent sends with each notification")
    create.add_argument("--config-id", help="the config's id (default: chosen by the agent)")
    listing = actions.add_parser("list", help="list a task's push configs")
    listing.add_argument("url", help=_TARGET_HELP)
    listing.add_argument("task_id")
    listing.add_argument("--page-size", type=int)
    listing.add_argument("--page-token")
    for name, help_text in (("get", "show one push config"), ("delete", "delete one push config")):
        cmd = actions.add_parser(name, help=help_text)
        cmd.add_argument("url", help=_TARGET_HELP)
        cmd.add_argument("task_id")
        cmd.add_argument("config_id")
    for cmd in (create, listing, actions.choices["get"], actions.choices["delete"]):
        _connection_options(cmd)
