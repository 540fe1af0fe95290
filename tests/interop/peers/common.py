"""What every peer module shares: the cached environment builders and the process helpers.

An environment is a directory under ``$A2A_PEER_CACHE`` (default ``<repo>/.cache/peers``)
with a marker file recording exactly what was installed. It is rebuilt from scratch when the
marker differs (a new pin) or is missing (a build that died half way), under an exclusive
lock so that several pytest-xdist workers build it once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

# The process helpers are the ones the reference SDK's tests use: one way to start and stop.
from sdk_env import REPO_ROOT, free_port, sdk_environ, stop, wait_ready

__all__ = [
    "REPO_ROOT",
    "cache_dir",
    "free_port",
    "node_project",
    "peer_environ",
    "start",
    "stop",
    "venv_python",
    "wait_ready",
]

MARKER_NAME = ".a2a-net-peer-pins"
BUILD_TIMEOUT = 900.0  # a cold build downloads packages; a warm one never gets here


def cache_dir() -> Path:
    return Path(os.environ.get("A2A_PEER_CACHE") or REPO_ROOT / ".cache" / "peers")


def peer_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment minus what would let our ``a2a`` shadow a peer's, plus ``extra``."""
    env = sdk_environ()
    env.update(extra or {})
    return env


def _cached(name: str, pins: str, build: Callable[[Path], None]) -> Path:
    """The directory of environment ``name`` built with ``pins``; ``build`` fills an empty one."""
    target = cache_dir() / name
    marker = target / MARKER_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if marker.exists() and marker.read_text() == pins:
            return target
        # Missing, half-built or other pins: start from nothing so no stale package survives.
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        build(target)
        marker.write_text(pins)  # only after a successful build
    return target


def venv_python(name: str, requirements: Sequence[str]) -> Path:
    """A venv ``name`` with exactly ``requirements`` installed (pip); return its python."""

    def build(target: Path) -> None:
        run([sys.executable, "-m", "venv", str(target)], f"creating the {name} venv")
        pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        run([*pip, *requirements], f"installing {name}")

    return _cached(name, "\n".join(requirements) + "\n", build) / "bin" / "python"


def node_project(name: str, dependencies: Mapping[str, str]) -> Path:
    """A node project ``name`` with exactly ``dependencies`` (npm, exact versions); return its dir."""
    package = {"name": f"a2a-net-peer-{name}", "private": True, "type": "module", "dependencies": dict(dependencies)}
    pins = json.dumps(package, indent=2, sort_keys=True) + "\n"

    def build(target: Path) -> None:
        (target / "package.json").write_text(pins)
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is not installed: the JS peers need Node.js 18+ and npm")
        run(
            [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact"],
            f"installing {name} (npm)",
            cwd=target,
        )

    return _cached(name, pins, build)


def run(cmd: Sequence[str], what: str, cwd: Path | None = None) -> None:
    proc = subprocess.run(
        list(cmd), check=False, capture_output=True, text=True, timeout=BUILD_TIMEOUT, env=peer_environ(), cwd=cwd
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-30:])
        raise RuntimeError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")


def start(
    cmd: Sequence[str],
    *,
    what: str,
    pattern: str = r"^READY (\S+)",
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[subprocess.Popen[str], str]:
    """Start ``cmd``, wait for the stdout line matching ``pattern``; return the process and group 1.

    stderr is inherited so pytest shows the peer's log when a test fails. Stop it with ``stop``.
    """
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, text=True, env=peer_environ(env), cwd=cwd)
    return proc, wait_ready(proc, timeout=timeout, pattern=pattern, what=what)


@contextlib.contextmanager
def serving(started: tuple[subprocess.Popen[str], str]) -> Iterator[str]:
    """A peer's URL for the block (``started``: the process and URL a ``start_server`` gives),
    the process stopped after it."""
    proc, url = started
    try:
        yield url
    finally:
        stop(proc)
