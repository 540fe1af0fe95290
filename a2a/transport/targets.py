"""Targets that name a connection rather than an HTTP agent: ``ws://`` / ``wss://`` URLs and ``stdio:``.

``stdio:COMMAND LINE`` starts the agent as a child process; the command line is split like a
POSIX shell would (``shlex``), so quote it as one argument in a shell::

    a2a send stdio:"a2a serve examples/echo_agent.py:agent --stdio" hello
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from .base import DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_RESPONSE_BYTES
from .multiplex import ConnectionTransport
from .stdio import StdioTransport
from .ws import WebSocketTransport

__all__ = ["STDIO_PREFIX", "is_connection_target", "stdio_argv", "transport_for_target"]

STDIO_PREFIX = "stdio:"


def is_connection_target(target: str) -> bool:
    """True for a WebSocket URL or a ``stdio:`` command line (no HTTP card to fetch first)."""
    return target.startswith((STDIO_PREFIX, "ws://", "wss://"))


def stdio_argv(target: str) -> list[str]:
    """The command line of a ``stdio:`` target, split as a shell would."""
    try:
        argv = shlex.split(target.removeprefix(STDIO_PREFIX))
    except ValueError as exc:
        raise ValueError(f"cannot split the command line of {target!r}: {exc}") from exc
    if not argv:
        raise ValueError(
            f'{target!r} names no command: write stdio:"COMMAND LINE", '
            'e.g. stdio:"a2a serve examples/echo_agent.py:agent --stdio"'
        )
    return argv


def transport_for_target(
    target: str,
    *,
    headers: Mapping[str, str],
    max_message_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
) -> ConnectionTransport:
    """The transport for a connection target. ``idle_timeout`` bounds a WebSocket peer's silence
    (a child process over stdio is watched instead: its exit ends every call at once)."""
    if target.startswith(STDIO_PREFIX):
        return StdioTransport(stdio_argv(target), headers=headers, max_line_bytes=max_message_bytes)
    if target.startswith(("ws://", "wss://")):
        return WebSocketTransport(
            target, headers=headers, max_message_bytes=max_message_bytes, idle_timeout=idle_timeout
        )
    raise ValueError(f"{target!r} is neither a ws:// or wss:// URL nor a stdio: command line")
