"""Task stores by URL: ``memory:``, ``sqlite:///path/to/tasks.db``, ``redis://host:port/db``.

``open_backend(url)`` gives the store and the event bus that go with it: the in-memory bus
for memory and SQLite (one process), the Redis bus for Redis (several replicas share tasks,
streams, cancel requests and leases).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..bus import EventBus, InMemoryEventBus
from ..store import InMemoryTaskStore, TaskStore

__all__ = ["StoreURLError", "default_sqlite_path", "default_store_url", "open_backend"]


class StoreURLError(ValueError):
    """A store URL that names no store we have, or names it wrongly."""


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


def _sqlite(url: str, netloc: str, path: str, query: str, exclusive: bool) -> TaskStore:
    """SQLAlchemy's convention: ``sqlite:///rel/tasks.db`` is relative to the working
    directory, ``sqlite:////abs/tasks.db`` absolute (exactly one slash is dropped)."""
    from .sqlite import SQLiteTaskStore

    if netloc or len(path) < 2:
        raise StoreURLError(f"{url!r}: write sqlite:///relative/path.db or sqlite:////absolute/path.db")
    durability = parse_qs(query).get("durability", ["normal"])[0]
    if durability not in ("normal", "full"):
        raise StoreURLError(f"{url!r}: durability must be normal or full, got {durability!r}")
    return SQLiteTaskStore(path[1:], durability="full" if durability == "full" else "normal", exclusive=exclusive)


def open_backend(url: str, *, namespace: str = "a2a", exclusive: bool = False) -> tuple[TaskStore, EventBus]:
    """The store and bus for ``url``. Redis keys go under ``namespace`` (or ``?namespace=``).
    ``exclusive``: a SQLite file is locked for this process (what ``a2a serve`` does)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        return InMemoryTaskStore(), InMemoryEventBus()
    if scheme == "sqlite":
        return _sqlite(url, parts.netloc, parts.path, parts.query, exclusive), InMemoryEventBus()
    if scheme in ("redis", "rediss"):
        from .redis import RedisTaskStore
        from .redis_bus import RedisEventBus

        ns = parse_qs(parts.query).get("namespace", [namespace])[0]
        clean = url.split("?", 1)[0]
        store = RedisTaskStore(clean, namespace=ns)
        return store, RedisEventBus(store.redis, namespace=ns)
    raise StoreURLError(f"unknown store {url!r}: use memory:, sqlite:///path/to/tasks.db or redis://host:port/db")
