"""Load an agent from ``package.module:attr`` or ``path/to/file.py:attr``.

The one loader behind ``a2a serve TARGET`` and the supervisor's ``module:`` agents::

    agent = load_agent("examples/echo_agent.py:agent")
    agent = load_agent("agents.files:make_agent", {"root": "/srv/docs"})   # a factory, with options

Whatever goes wrong (no such file or module, no such attribute, not an agent, the module raised
while it was imported) is an ``AgentLoadError`` whose message says why in one line.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from .server.agent import Agent

__all__ = ["AgentLoadError", "load_agent", "load_object"]


class AgentLoadError(Exception):
    """The target could not be loaded; the message says why, in one line."""


def load_agent(target: str, factory_options: Mapping[str, str] | None = None) -> Agent:
    """The ``Agent`` at ``target``; a callable target is a factory, called with ``factory_options``
    as keyword arguments (an agent object takes none)."""
    obj = load_object(target)
    if isinstance(obj, Agent):
        if factory_options:
            given = " ".join(f"--{name}" for name in factory_options)
            raise AgentLoadError(f"{target} is an agent, not a factory: it takes no options ({given})")
        return obj
    if not callable(obj):
        raise AgentLoadError(f"{target} is a {type(obj).__name__}, not an a2a Agent or a factory of one")
    made = obj(**(factory_options or {}))
    if not isinstance(made, Agent):
        raise AgentLoadError(f"{target}(...) returned a {type(made).__name__}, not an a2a Agent")
    return made


def load_object(target: str) -> Any:
    """The attribute ``attr`` of the module or file that ``target`` names (anything, not only agents)."""
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise AgentLoadError(f"expected MODULE:ATTR or path/to/file.py:ATTR, got {target!r}")
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        module = _load_file(Path(module_part))
    else:
        module = _import(module_part)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise AgentLoadError(f"{module_part} has no attribute {attr!r}") from None


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise AgentLoadError(f"cannot import module {name!r}: {exc}") from exc
    except Exception as exc:  # an import runs arbitrary code: report whatever it raised, in one line
        raise AgentLoadError(f"{name} failed to load: {type(exc).__name__}: {exc}") from exc


def _load_file(path: Path) -> ModuleType:
    """Execute the file as a module of its own (anew on every load, as ``python path/to/file.py`` would)."""
    if not path.is_file():
        raise AgentLoadError(f"no such file: {path}")
    resolved = path.resolve()
    # Named after the file's full path, so that two files with the same name do not replace each other.
    name = f"_a2a_agent_{path.stem}_{hashlib.sha1(str(resolved).encode(), usedforsecurity=False).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentLoadError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Let the file import its neighbours, as "python path/to/file.py" would.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise AgentLoadError(f"{path} failed to load: {type(exc).__name__}: {exc}") from exc
    return module
