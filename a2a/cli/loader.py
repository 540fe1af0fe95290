"""Load an agent object from ``module:attr`` or ``path/to/file.py:attr``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

__all__ = ["AgentLoadError", "load_object"]


class AgentLoadError(Exception):
    """The target could not be loaded; the message says why, in one line."""


def load_object(target: str) -> Any:
    module_part, sep, attr = target.rpartition(":")
    if not sep or not module_part or not attr:
        raise AgentLoadError(f"expected MODULE:ATTR or path/to/file.py:ATTR, got {target!r}")
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        module = _load_file(Path(module_part))
    else:
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            raise AgentLoadError(f"cannot import module {module_part!r}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise AgentLoadError(f"{module_part} has no attribute {attr!r}") from None


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise AgentLoadError(f"no such file: {path}")
    name = f"_a2a_agent_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentLoadError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Let the file import its neighbours, as "python path/to/file.py" would.
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise AgentLoadError(f"{path} failed to load: {type(exc).__name__}: {exc}") from exc
    return module
