"""Load an agent from ``package.module:attr`` or ``path/to/file.py:attr``.

The one loader behind ``a2a serve TARGET`` and the supervisor's ``module:`` agents::

    agent = load_agent("examples/echo_agent.py:agent")
    agent = load_agent("agents.files:make_agent", {"root": "/srv/docs"})   # a factory, with options

Whatever goes wrong (no such file or module, no such attribute, not an agent, the module raised
while it was imported) is an ``AgentLoadError`` whose message says why in one line.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server.authoring.agent import Agent

__all__ = ["AgentLoadError", "load_agent", "load_object"]


class AgentLoadError(Exception):
    """The target could not be loaded; the message says why, in one line."""


def load_agent(
    target: str, factory_options: Mapping[str, str] | None = None, *, other_flags: Sequence[str] = ()
) -> Agent:
    """The ``Agent`` at ``target``; a callable target is a factory, called with ``factory_options``
    as keyword arguments (an agent object takes none). An option the factory does not take is
    an error naming it and the closest one it does take, or of ``other_flags`` (the command's
    own flags, for one placed after the target with a typo: ``--prot`` for ``--port``)."""
    from .server.authoring.agent import Agent  # here: importing the loader (for AgentLoadError) stays cheap

    obj = load_object(target)
    options = dict(factory_options or {})
    if isinstance(obj, Agent):
        if options:
            name = next(iter(options))
            raise AgentLoadError(
                f"unknown option --{_flag(name)}{_hint(name, [], other_flags)}: "
                f"{target} is an agent, not a factory of one, so it takes no options"
            )
        return obj
    if not callable(obj):
        raise AgentLoadError(f"{target} is a {type(obj).__name__}, not an a2a Agent or a factory of one")
    _check_options(target, obj, options, other_flags)
    try:
        made = obj(**options)
    except Exception as exc:  # the factory's own code: its failure, in one line
        raise AgentLoadError(f"{target} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(made, Agent):
        raise AgentLoadError(f"{target}(...) returned a {type(made).__name__}, not an a2a Agent")
    return made


def _flag(name: str) -> str:
    return name.replace("_", "-")


def _hint(name: str, parameters: Sequence[str], other_flags: Sequence[str]) -> str:
    """`` (did you mean --tools?)``, or nothing when no option is close."""
    candidates = [f"--{_flag(p)}" for p in parameters] + [f for f in other_flags if f.startswith("--")]
    found = difflib.get_close_matches(f"--{_flag(name)}", candidates, n=1, cutoff=0.6)
    return f" (did you mean {found[0]}?)" if found else ""


def _check_options(target: str, factory: Any, options: Mapping[str, str], other_flags: Sequence[str]) -> None:
    """Refuse, before the call, an option the factory has no parameter for."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable: let the call decide
        return
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    accepted = [
        p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    ]
    for name in options:
        if name not in accepted:
            takes = ", ".join(f"--{_flag(p)}" for p in accepted) or "none"
            hint = _hint(name, accepted, other_flags)
            raise AgentLoadError(f"unknown option --{_flag(name)}{hint} for {target} (its options: {takes})")
    missing = [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and p.name not in options
    ]
    if missing:
        raise AgentLoadError(
            f"{target} needs the option{'s' if len(missing) > 1 else ''} "
            + ", ".join(f"--{_flag(m)} VALUE" for m in missing)
        )


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
    # The current directory first, as ``python -m`` and uvicorn have it: ``a2a serve greeter:agent``
    # finds greeter.py here (the console script's own path starts at its bin/ folder instead).
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
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
