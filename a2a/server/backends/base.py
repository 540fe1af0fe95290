"""Where an agent's state lives, chosen by one URL: ``memory:``, ``sqlite:///path/to/tasks.db``
(``sqlite:////absolute/path.db``, ``?durability=full``), ``redis://host:port/db``
(``?namespace=``).

A backend provides four things that belong together, and ``open_backend(url)`` opens them at
once as a ``Backend``:

- ``tasks``: the task store (tasks and idempotency records);
- ``events``: the event bus that carries each task's stream to its readers;
- ``push``: push-notification configs and pending deliveries, kept beside the tasks (same
  SQLite file, same Redis), so that they survive exactly as long as the tasks do;
- ``coordination``: what the processes serving the agent tell each other (one process:
  nothing; Redis: cancel requests, leases, recovery of a dead replica's tasks).

Each scheme is opened by its backend's own module (the module parses the rest of its URL);
``register_backend`` adds a scheme. A bad URL is a ``BackendError`` with a one-line message.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..engine.bus import EventBus, InMemoryEventBus
from ..engine.coordination import Coordination, SingleProcessCoordination
from ..push.store import InMemoryPushStore, PushStore
from .store import InMemoryTaskStore, TaskStore

__all__ = [
    "Backend",
    "BackendError",
    "BackendURL",
    "Opener",
    "default_sqlite_path",
    "default_store_url",
    "open_backend",
    "register_backend",
]


class BackendError(ValueError):
    """A backend URL that names no backend, or names one wrongly; or a backend that lacks
    what the server was asked to offer (push notifications without a push store)."""


@dataclass(frozen=True, slots=True)
class Backend:
    """Everything one backend provides. The request handler closes each part on shutdown."""

    tasks: TaskStore
    events: EventBus = field(default_factory=InMemoryEventBus)
    #: Push configs beside the tasks (``None``: this backend keeps none, so push notifications
    #: cannot be offered).
    push: PushStore | None = None
    coordination: Coordination = field(default_factory=SingleProcessCoordination)

    @classmethod
    def in_memory(cls) -> Backend:
        """Everything in this process, gone with it."""
        return cls(InMemoryTaskStore(), push=InMemoryPushStore())

    @classmethod
    def around(cls, tasks: TaskStore) -> Backend:
        """A one-process backend around a task store made in code. Only an in-memory task store
        gets a push store here (an in-memory one: both are gone with the process): push configs
        of durable tasks must be as durable, in the same place, which only the store's backend
        module knows how to open (``open_backend(url)``)."""
        push = InMemoryPushStore() if isinstance(tasks, InMemoryTaskStore) else None
        return cls(tasks, push=push)


@dataclass(frozen=True, slots=True)
class BackendURL:
    """A backend URL, split for its opener."""

    url: str
    scheme: str
    netloc: str
    path: str
    query: dict[str, list[str]]
    #: Redis keys go under this prefix unless the URL says ``?namespace=``.
    namespace: str
    #: The backend's files are for this process only (``a2a serve`` locks its SQLite file).
    exclusive: bool

    def option(self, name: str, default: str) -> str:
        """The query parameter ``name`` (its first value), or ``default``."""
        return self.query.get(name, [default])[0]

    def without_query(self) -> str:
        return self.url.split("?", 1)[0]

    def error(self, problem: str) -> BackendError:
        return BackendError(f"{self.url!r}: {problem}")


#: Opens a backend from its URL; raises ``BackendError`` (``url.error(...)``) for a bad one.
Opener = Callable[[BackendURL], Backend]

#: Scheme -> its opener, or where to import it from ("module:function"): the built-in backends
#: are imported on first use (the Redis client alone takes a tenth of a second to import).
_OPENERS: dict[str, Opener | str] = {}


def register_backend(scheme: str, opener: Opener | str) -> None:
    """Open ``scheme://...`` URLs with ``opener`` (or the function named ``"module:function"``,
    imported when such a URL is first opened)."""
    _OPENERS[scheme.lower()] = opener


def _open_memory(_url: BackendURL) -> Backend:
    return Backend.in_memory()


register_backend("memory", _open_memory)
register_backend("sqlite", f"{__package__}.sqlite.tasks:open_sqlite_backend")
register_backend("redis", f"{__package__}.redis.tasks:open_redis_backend")
register_backend("rediss", f"{__package__}.redis.tasks:open_redis_backend")


def open_backend(url: str, *, namespace: str = "a2a", exclusive: bool = False) -> Backend:
    """Open the backend ``url`` names. Redis keys go under ``namespace`` (or ``?namespace=``);
    ``exclusive``: a SQLite file is locked for this process (what ``a2a serve`` does)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    opener = _OPENERS.get(scheme)
    if opener is None:
        others = sorted(set(_OPENERS) - {"memory", "sqlite", "redis", "rediss"})
        more = f" (or a URL starting {', '.join(s + ':' for s in others)})" if others else ""
        raise BackendError(
            f"unknown store {url!r}: use memory:, sqlite:///path/to/tasks.db or redis://host:port/db{more}"
        )
    if isinstance(opener, str):
        module, _, function = opener.partition(":")
        opener = _OPENERS[scheme] = getattr(importlib.import_module(module), function)
    query = parse_qs(parts.query)
    return opener(BackendURL(url, scheme, parts.netloc, parts.path, query, namespace, exclusive))


def default_store_url(agent_name: str, port: int) -> str:
    """What ``a2a serve`` uses without ``--store``: a SQLite file per agent and port (so a
    restart on the same port finds its tasks, and two servers never share a file), or memory
    for an ephemeral server on port 0."""
    if port == 0:
        return "memory:"
    return f"sqlite:///{default_sqlite_path(agent_name, port).resolve()}"


def default_sqlite_path(agent_name: str, port: int) -> Path:
    """``$A2A_DATA_DIR``, else ``$XDG_DATA_HOME/a2a-net``, else ``~/.local/share/a2a-net``;
    the file ``tasks-<agent name>-<port>.db``."""
    base = os.environ.get("A2A_DATA_DIR") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share"), "a2a-net"
    )
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", agent_name).strip("-").lower() or "agent"
    return Path(base) / f"tasks-{slug}-{port}.db"
