"""The extras of the a2a-net distribution, and the one-line hint when code needs one that is missing.

``pip install a2a-net`` brings the A2A library (server, client, the ``a2a`` command's serve, send,
get, list, cancel, card, subscribe and push) with aiohttp, httpx, websockets and msgspec. The rest
comes with extras (``pip install 'a2a-net[redis]'``): ``EXTRAS`` says which import names each one
brings. Code that needs an extra checks for it first (``require``: finds the modules without
importing them), or imports it inside ``needs_extra``::

    with needs_extra("the Redis store", "redis"):
        import redis.asyncio

so that without it the import fails with ``MissingExtra`` (a ``ModuleNotFoundError``) whose message
is one line ending in the ``pip install`` that brings it. Any other import error passes through as
it is: a broken or too old dependency is reported as itself, not as a missing extra.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["EXTRAS", "MissingExtra", "install_command", "needs_extra", "require"]

#: Extra -> the top-level import names of the packages it brings (those that a2a-net imports).
EXTRAS: dict[str, frozenset[str]] = {
    "supervisor": frozenset({"langgraph", "langchain_core", "langchain_openai", "openai", "rich", "yaml", "pydantic"}),
    "agents": frozenset(
        {"markdownify", "bs4", "pydantic", "langgraph", "langchain_core", "langchain_openai", "openai"}
    ),
    "redis": frozenset({"redis"}),
    "asgi": frozenset({"uvicorn", "granian"}),
    "otel": frozenset({"opentelemetry"}),
    "uvloop": frozenset({"uvloop"}),
}


def install_command(*extras: str) -> str:
    """``pip install 'a2a-net[a,b]'``: what brings ``extras``."""
    unknown = [e for e in extras if e not in EXTRAS]
    if unknown or not extras:
        raise ValueError(f"unknown extra(s) {unknown or list(extras)}: the extras are {', '.join(EXTRAS)}")
    return f"pip install 'a2a-net[{','.join(extras)}]'"


class MissingExtra(ModuleNotFoundError):
    """``what`` needs the module ``name``, which comes with ``extras``; the message says how to install them."""

    def __init__(self, what: str, name: str, extras: tuple[str, ...]) -> None:
        super().__init__(f"{what} needs {name!r}, which is not installed: {install_command(*extras)}", name=name)
        self.what = what
        self.extras = extras


@contextmanager
def needs_extra(what: str, *extras: str) -> Iterator[None]:
    """Turn a missing module of ``extras`` raised inside the block into ``MissingExtra`` (saying
    ``what`` needs it and which ``pip install`` brings it); every other error passes through."""
    install_command(*extras)  # an unknown extra is a bug here, not at the user's
    try:
        yield
    except MissingExtra:
        raise
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        if not any(top in EXTRAS[extra] for extra in extras):
            raise
        raise MissingExtra(what, top, extras) from exc


def require(what: str, *extras: str) -> None:
    """Raise ``MissingExtra`` unless every module of ``extras`` is installed (looked up, not imported)."""
    install_command(*extras)
    for name in sorted(set().union(*(EXTRAS[extra] for extra in extras))):
        if importlib.util.find_spec(name) is None:
            raise MissingExtra(what, name, extras)
