"""What ``a2a serve`` prints once it listens: where, what, and how it is protected."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import __version__
from .output import binding_name

if TYPE_CHECKING:
    from ..server import A2AServer

__all__ = ["print_banner"]

CARD_PATH = "/.well-known/agent-card.json"


def print_banner(server: A2AServer, url: str, *, store: str, auth: Sequence[str]) -> None:
    """The first line (``Serving 'NAME' at URL``) is what scripts and tests read; the rest is for people."""
    card = server.card(url)
    lines = [f"Serving {server.agent.name!r} at {url}"]
    lines += [f"  skill {skill.id}: {skill.description}" for skill in card.skills]
    bound = server.bound_url or url
    lines.append(f"  listening on {bound.removeprefix('http://')}" + (f" (public URL {url})" if bound != url else ""))
    lines.append(f"  card at {url}{CARD_PATH}")
    lines += [f"  {binding_name(i.protocol_binding):<10} {i.url}" for i in card.supported_interfaces]
    lines.append("  tasks in memory (gone when the server stops)" if store == "memory:" else f"  tasks in {store}")
    lines.append(f"  auth: {', '.join(auth)}" if auth else "  auth: off (anyone who can reach the port may call it)")
    lines.append(f"  a2a-net {__version__}; Ctrl-C stops")
    print("\n".join(lines), flush=True)
