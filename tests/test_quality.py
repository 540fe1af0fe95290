"""The same tooling as CI, as tests: ruff (lint and format) and mypy (strict on a2a/, agents/ and supervisor/)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # ruff and mypy over the whole tree

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["a2a", "agents", "supervisor", "tests", "examples", "benchmarks"]
TIMEOUT = 600


def _tool(name: str) -> str:
    sibling = Path(sys.executable).with_name(name)
    found = str(sibling) if sibling.is_file() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed in this environment (pip install -e '.[test]')")
    return found


def _run(*command: str) -> None:
    targets = [t for t in TARGETS if (ROOT / t).exists()]
    assert targets, "nothing to check"
    cmd = [*command, *targets] if command[0].endswith("ruff") else list(command)
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    if proc.returncode != 0:
        pytest.fail(f"$ {' '.join(cmd)}\nexit {proc.returncode}\n{proc.stdout}\n{proc.stderr}".rstrip(), pytrace=False)


def test_ruff_check() -> None:
    _run(_tool("ruff"), "check", "--no-cache")


def test_ruff_format() -> None:
    _run(_tool("ruff"), "format", "--check", "--no-cache")


def test_mypy_strict() -> None:
    # The configuration (the three packages, strict = true, the pydantic plugin) lives in pyproject.toml.
    _run(_tool("mypy"), "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"))


def test_mypy_covers_every_package() -> None:
    # A package left out of [tool.mypy] would silently lose its type checks.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert sorted(config["packages"]) == ["a2a", "agents", "supervisor"]
    assert config["strict"] is True
    assert "pydantic.mypy" in config["plugins"]
