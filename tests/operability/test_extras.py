"""The extras: what each brings (declared in pyproject.toml), the one-line hint when code needs a
missing one, and a fresh environment with the core only (``pip install a2a-net``)."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from a2a.extras import EXTRAS, MissingExtra, install_command, needs_extra, require

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DECLARED: dict[str, list[str]] = PROJECT["optional-dependencies"]
#: What a build needs from the checkout.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "a2a", "agents", "supervisor", "examples")
#: What ``pip install a2a-net`` brings, by distribution name.
CORE = {"aiohttp", "httpx", "httpcore", "websockets", "msgspec"}


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (``"redis>=5; ..."`` -> ``"redis"``)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def _distributions(extra: str) -> set[str]:
    """The distributions an extra brings, self-references (``a2a-net[...]``) followed."""
    found: set[str] = set()
    for requirement in DECLARED[extra]:
        if _name(requirement) == "a2a-net":
            inner = re.search(r"\[(.*)\]", requirement)
            assert inner, requirement
            for other in inner.group(1).split(","):
                found |= _distributions(other.strip())
        else:
            found.add(_name(requirement))
    return found


# ---- the table and the declarations agree ------------------------------------------------------


def test_the_core_is_the_four_libraries_and_what_we_import_of_theirs() -> None:
    assert {_name(r) for r in PROJECT["dependencies"]} == CORE


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_every_module_of_an_extra_comes_with_a_distribution_it_declares(extra: str) -> None:
    providers = packages_distributions()  # import name -> the installed distributions that provide it
    declared = _distributions(extra)
    for module in EXTRAS[extra]:
        assert {_name(d) for d in providers.get(module, [])} & declared, (extra, module, providers.get(module))


def test_all_brings_every_extra_and_test_brings_all() -> None:
    everything = set().union(*(_distributions(e) for e in EXTRAS))
    assert _distributions("all") == everything
    assert everything <= _distributions("test")


def test_install_command_names_known_extras_only() -> None:
    assert install_command("supervisor", "agents") == "pip install 'a2a-net[supervisor,agents]'"
    with pytest.raises(ValueError, match="unknown extra"):
        install_command("supervisr")


# ---- the hint ------------------------------------------------------------------------------------


def test_needs_extra_names_the_missing_module_and_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # import redis -> ModuleNotFoundError(name="redis")
    with pytest.raises(MissingExtra) as caught, needs_extra("the Redis backend", "redis"):
        import redis  # noqa: F401
    assert str(caught.value) == "the Redis backend needs 'redis', which is not installed: pip install 'a2a-net[redis]'"
    assert caught.value.name == "redis" and caught.value.extras == ("redis",)
    assert isinstance(caught.value.__cause__, ModuleNotFoundError)


def test_needs_extra_lets_other_import_errors_through(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that is not the extra's (a dependency of a dependency, or a typo) is reported as itself."""
    monkeypatch.setitem(sys.modules, "hiredis_not_ours", None)
    with pytest.raises(ModuleNotFoundError) as caught, needs_extra("the Redis backend", "redis"):
        import hiredis_not_ours  # type: ignore[import-not-found]  # noqa: F401
    assert not isinstance(caught.value, MissingExtra)
    with pytest.raises(ImportError, match="cannot import name") as broken, needs_extra("x", "redis"):
        from msgspec import no_such_name  # type: ignore[attr-defined]  # noqa: F401
    assert not isinstance(broken.value, MissingExtra)


def test_require_looks_modules_up_without_importing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    require("a2a demo", "supervisor", "agents")  # all installed here
    monkeypatch.setitem(sys.modules, "rich", None)
    with pytest.raises(MissingExtra, match=r"^a2a demo needs 'rich', .*: pip install 'a2a-net\[supervisor,agents\]'$"):
        require("a2a demo", "supervisor", "agents")


def _hidden(modules: list[str], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter in which ``modules`` cannot be imported."""
    hide = f"import sys; sys.modules.update(dict.fromkeys({modules!r}))\n"
    return subprocess.run(
        [sys.executable, "-c", hide + code], capture_output=True, text=True, cwd=ROOT, timeout=60, check=False
    )


def _one_line(done: subprocess.CompletedProcess[str], starts: str, install: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(starts) and lines[0].endswith(f"pip install 'a2a-net[{install}]'"), lines[0]


#: Never connected to: the missing extra is found first.
REDIS_URL = "redis://127.0.0.1:1/0"
CLI = "from a2a.cli import main; sys.exit(main({argv!r}))"


@pytest.mark.parametrize(
    ("argv", "hidden", "install"),
    [
        (["supervise", "plan a trip"], ["langgraph"], "supervisor"),
        (["demo", "--offline"], ["langgraph"], "supervisor,agents"),
        (["demo", "--offline"], ["bs4"], "supervisor,agents"),
        (["serve", "agents.files:agent", "--port", "0"], ["pydantic"], "agents"),
        (
            ["serve", "examples/echo_agent.py:agent", "--port", "0", "--store", "redis://127.0.0.1:1/0"],
            ["redis"],
            "redis",
        ),
    ],
)
def test_a_command_without_its_extra_says_which_install_brings_it(
    argv: list[str], hidden: list[str], install: str
) -> None:
    _one_line(_hidden(hidden, CLI.format(argv=argv)), "a2a: ", install)


@pytest.mark.parametrize(
    ("code", "hidden", "install"),
    [
        ("from supervisor import Supervisor", ["langgraph"], "supervisor"),
        ("import agents.web", ["markdownify"], "agents"),
        ("from a2a.server.backends.redis.tasks import open_redis_backend", ["redis"], "redis"),
    ],
)
def test_an_import_without_its_extra_says_which_install_brings_it(code: str, hidden: list[str], install: str) -> None:
    done = _hidden(hidden, code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("a2a.extras.MissingExtra: ") and last.endswith(f"pip install 'a2a-net[{install}]'"), last


# ---- slow: a fresh environment with the core only ------------------------------------------------


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A new virtual environment with ``pip install <checkout>``, no extras (its dependencies from
    the package index, or pip's cache)."""
    tree = tmp_path_factory.mktemp("tree")
    for name in SOURCES:  # a copy, so that the build leaves nothing in the checkout
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(source, tree / name)
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(tree)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    yield venv


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"a2a serve printed nothing within {timeout}s") from None


@pytest.mark.slow
def test_the_core_install_serves_and_sends_and_hints_at_the_supervisor(core_venv: Path, tmp_path: Path) -> None:
    python = core_venv / "bin" / "python"
    a2a = core_venv / "bin" / "a2a"
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True, timeout=60
    )
    installed = {_name(line) for line in listed.stdout.splitlines()}
    extras = set().union(*(_distributions(e) for e in EXTRAS))
    assert not installed & extras, installed & extras
    assert installed >= CORE
    env = {k: v for k, v in os.environ.items() if not k.startswith(("A2A_", "PYTHON"))}
    env["A2A_DATA_DIR"] = str(tmp_path)
    # Outside the checkout, so that only the installed package is importable.
    server = subprocess.Popen(
        [str(a2a), "serve", str(ROOT / "examples" / "echo_agent.py") + ":agent", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = _first_line(server, 60)
        assert first.startswith("Serving 'Echo' at "), (first, server.stderr)
        url = first.rsplit(" at ", 1)[1].strip()
        sent = subprocess.run(
            [str(a2a), "send", url, "hello from the core"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert sent.returncode == 0, sent.stderr
        assert "hello from the core" in sent.stdout
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    assert server.returncode == 0, err
    supervise = subprocess.run(
        [str(a2a), "supervise", "plan a trip"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    _one_line(supervise, "a2a: a2a supervise needs ", "supervisor")
