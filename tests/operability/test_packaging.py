"""Packaging: the license, type hints, metadata, the examples after a non-editable install, and
the import-name clash warning (issue 15, "Packaging")."""

from __future__ import annotations

import email
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import a2a

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
#: What a build needs from the checkout (a copy, so that the build leaves nothing in the tree).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "a2a", "agents", "supervisor", "examples")


# ---- fast: what the checkout declares ----------------------------------------------------------------


def test_the_license_file_matches_the_declared_license() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_the_packages_carry_py_typed() -> None:
    for package in ("a2a", "agents", "supervisor"):
        assert (ROOT / package / "py.typed").is_file(), package


def test_urls_classifiers_and_one_version() -> None:
    assert PROJECT["urls"]["Homepage"].startswith("https://")
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert not [c for c in PROJECT["classifiers"] if c.startswith("License ::")]  # the SPDX expression says it
    assert PROJECT["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "a2a.__version__"}


def test_importing_a2a_loads_neither_client_nor_server() -> None:
    probe = "import sys, a2a; print(' '.join(m for m in sys.modules if m.startswith(('a2a.', 'aiohttp', 'httpx'))))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.split() == ["a2a._clash"], done.stdout
    assert a2a.A2AClient.__name__ == "A2AClient"  # and the names still resolve, on first use


@pytest.mark.parametrize(
    ("raised", "shown"),
    [
        # Too old a dependency: a name we use is missing (what aiohttp < 3.14 did to a2a.server).
        ("AttributeError(\"module 'msgspec' has no attribute 'Probe'\")", "module 'msgspec' has no attribute 'Probe'"),
        ("ImportError(\"cannot import name 'Probe' from 'msgspec'\")", "cannot import name 'Probe' from 'msgspec'"),
        ("ModuleNotFoundError(\"No module named 'msgspec'\", name='msgspec')", "No module named 'msgspec'"),
    ],
)
@pytest.mark.parametrize("name", ["Agent", "A2AClient"])
def test_a_dependency_that_fails_to_import_is_named(tmp_path: Path, raised: str, shown: str, name: str) -> None:
    """``from a2a import Agent`` with a broken dependency reports the dependency's error, not
    "cannot import name 'Agent'" (the lazy names are imported on first use)."""
    fake = tmp_path / "msgspec"
    fake.mkdir()
    (fake / "__init__.py").write_text(f"raise {raised}\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", f"from a2a import {name}"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert shown in last, done.stderr
    assert f"cannot import name {name!r}" not in done.stderr


def test_a_clash_is_one_line_naming_the_other_distribution(tmp_path: Path) -> None:
    """A fake ``a2a-sdk`` next to us on sys.path: importing a2a says so, in one line."""
    info = tmp_path / "a2a_sdk-0.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: a2a-sdk\nVersion: 0.3.0\n")
    (info / "top_level.txt").write_text("a2a\n")
    (info / "RECORD").write_text("a2a/__init__.py,,\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", "import a2a"], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    )
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "'a2a'" in lines[0] and "a2a-sdk" in lines[0] and "cannot share a virtual environment" in lines[0]
    quiet = subprocess.run([sys.executable, "-c", "import a2a"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert quiet.stderr == ""


# ---- slow: a real wheel, installed without a checkout ----------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tree = tmp_path_factory.mktemp("tree")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, tree / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(tree)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    (found,) = out.glob("a2a_net-*.whl")
    yield found


@pytest.mark.slow
def test_the_wheel_has_license_types_metadata_and_examples(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
    assert metadata["Version"] == a2a.__version__
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("Project-URL")
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for package in ("a2a", "agents", "supervisor"):
        assert f"{package}/py.typed" in names
    data = f"a2a_net-{a2a.__version__}.data/data/share/a2a-net/examples/"
    for example in ("echo_agent.py", "supervisor.yaml", "client.py"):
        assert data + example in names


@pytest.mark.slow
def test_the_installed_wheel_finds_its_examples_without_a_checkout(wheel: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    # --ignore-installed: without it pip uninstalls this environment's a2a-net first (its console script too).
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--ignore-installed",
            "--no-deps",
            "--no-index",
            "--prefix",
            str(prefix),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    installed = Path(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))
    ours = sysconfig.get_path("purelib")  # this environment's dependencies (aiohttp ...)
    # -S: no site processing, so neither this checkout's editable install nor its .pth files are seen;
    # the installed wheel comes first on the path, the dependencies after it.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), ours])}
    work = tmp_path / "work"
    work.mkdir()

    def a2a_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", "-m", "a2a", *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    shown = a2a_cli("examples")
    assert shown.returncode == 0, shown.stderr
    assert str(prefix) in shown.stdout.splitlines()[0] and "echo_agent.py" in shown.stdout
    copied = a2a_cli("examples", "--copy")
    assert copied.returncode == 0, copied.stderr
    assert (work / "examples" / "echo_agent.py").is_file() and (work / "examples" / "supervisor.yaml").is_file()
    probe = (
        "import a2a; from a2a.loader import load_agent; "
        "print(a2a.__file__); print(load_agent('examples/echo_agent.py:agent').name)"
    )
    loaded = subprocess.run(
        [sys.executable, "-S", "-c", probe], cwd=work, env=env, capture_output=True, text=True, check=False
    )
    assert loaded.returncode == 0, loaded.stderr
    module_file, name = loaded.stdout.split()
    assert module_file.startswith(str(installed)) and name == "Echo"
    assert a2a_cli("supervise", "--help").returncode == 0  # the plugin commands come with the wheel
