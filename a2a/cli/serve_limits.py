"""The ``a2a serve`` flags of the server's resource bounds (``HttpLimits``, and the WebSocket
and stdio connections'): their defaults and meaning are the dataclasses', so that the flags and
the configuration agree."""

from __future__ import annotations

import argparse
from types import SimpleNamespace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server.engine.limits import HttpLimits

__all__ = ["DEFAULTS", "DEFAULT_MAX_EXECUTING", "add_limit_flags", "limits_from_flags"]

#: ``HttpLimits()``'s defaults, as literals: building the parser must not import the server
#: (every command builds it). A test keeps them equal to the dataclass's.
DEFAULTS = SimpleNamespace(
    header_timeout=10.0,
    body_timeout=60.0,
    idle_timeout=60.0,
    max_connections_per_client=256,
    request_encodings=("gzip", "deflate"),
)
_DEFAULTS = DEFAULTS
#: ``a2a.server.channels.rpc_connection.DEFAULT_MAX_EXECUTING`` (the same test).
DEFAULT_MAX_EXECUTING = 8


def add_limit_flags(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("connection limits (HTTP; protocol.md §11)")
    group.add_argument(
        "--header-timeout",
        metavar="S",
        type=float,
        default=_DEFAULTS.header_timeout,
        help=f"seconds to send a request's headers (default {_DEFAULTS.header_timeout:g})",
    )
    group.add_argument(
        "--body-timeout",
        metavar="S",
        type=float,
        default=_DEFAULTS.body_timeout,
        help=f"seconds to send a request's body, else 408 (default {_DEFAULTS.body_timeout:g})",
    )
    group.add_argument(
        "--idle-timeout",
        metavar="S",
        type=float,
        default=_DEFAULTS.idle_timeout,
        help=f"seconds a kept-alive connection may wait for its next request (default {_DEFAULTS.idle_timeout:g})",
    )
    group.add_argument(
        "--max-connections",
        metavar="N",
        type=int,
        help="connections held at once (default: from the descriptor limit, at most 4096); "
        "at the cap the longest idle one is closed, else a newcomer gets 503",
    )
    group.add_argument(
        "--max-connections-per-client",
        metavar="N",
        type=int,
        default=_DEFAULTS.max_connections_per_client,
        help=f"connections one address may hold (default {_DEFAULTS.max_connections_per_client})",
    )
    group.add_argument(
        "--request-encodings",
        metavar="LIST",
        default=",".join(_DEFAULTS.request_encodings),
        help="Content-Encodings of request bodies to inflate, comma-separated, or 'none' (then 415) "
        f"(default {','.join(_DEFAULTS.request_encodings)})",
    )
    connection = serve.add_argument_group("connection limits (WebSocket and stdio; protocol.md §6)")
    connection.add_argument(
        "--max-executing",
        metavar="N",
        type=_at_least_one,
        default=DEFAULT_MAX_EXECUTING,
        help="calls of one connection that run at once, the others waiting their turn in order; a call "
        f"waiting over 50 ms (a blocking send) gives its turn up (default {DEFAULT_MAX_EXECUTING})",
    )


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is too few: at least 1")
    return number


def limits_from_flags(args: argparse.Namespace) -> HttpLimits:
    """``ValueError`` for a value out of range (the dataclass checks)."""
    from ..server.engine.limits import HttpLimits

    encodings = () if args.request_encodings.strip().lower() == "none" else tuple(args.request_encodings.split(","))
    return HttpLimits(
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        idle_timeout=args.idle_timeout,
        max_connections=args.max_connections,
        max_connections_per_client=args.max_connections_per_client,
        request_encodings=encodings,
    )
