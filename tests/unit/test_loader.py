"""The one agent loader (``a2a.loader``), used by ``a2a serve`` and the supervisor's ``module:`` agents."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from a2a import Agent
from a2a.loader import AgentLoadError, load_agent, load_object

ROOT = Path(__file__).resolve().parents[2]
ECHO = ROOT / "examples" / "echo_agent.py"

FACTORY = """
from a2a import Agent

def make(name: str = "Made") -> Agent:
    return Agent(name, "made by a factory")

not_an_agent = 42

def makes_a_string() -> str:
    return "no"
"""


def test_an_agent_object_by_path_and_by_module() -> None:
    assert isinstance(load_agent(f"{ECHO}:agent"), Agent)
    assert isinstance(load_agent("tests.supervisor.agents:stdio_worker"), Agent)


def test_a_factory_is_called_with_its_options(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(FACTORY)
    assert load_agent(f"{tmp_path / 'factory.py'}:make").name == "Made"
    assert load_agent(f"{tmp_path / 'factory.py'}:make", {"name": "Other"}).name == "Other"


def test_two_files_with_the_same_name_do_not_replace_each_other(tmp_path: Path) -> None:
    for folder, value in (("one", 1), ("two", 2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "same.py").write_text(f"VALUE = {value}\n")
    assert load_object(f"{tmp_path / 'one' / 'same.py'}:VALUE") == 1
    assert load_object(f"{tmp_path / 'two' / 'same.py'}:VALUE") == 2


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no-colon-here", "expected MODULE:ATTR"),
        ("nosuchmodule:agent", "cannot import module 'nosuchmodule'"),
        ("{tmp}/missing.py:agent", "no such file"),
        ("{tmp}/broken.py:agent", "broken.py failed to load: ZeroDivisionError"),
        ("{tmp}/factory.py:nothing", "has no attribute 'nothing'"),
        ("{tmp}/factory.py:not_an_agent", "is a int, not an a2a Agent or a factory of one"),
        ("{tmp}/factory.py:makes_a_string", "returned a str, not an a2a Agent"),
    ],
)
def test_every_failure_is_one_line_naming_the_problem(tmp_path: Path, target: str, message: str) -> None:
    (tmp_path / "factory.py").write_text(FACTORY)
    (tmp_path / "broken.py").write_text("1 / 0\n")
    with pytest.raises(AgentLoadError, match=message) as caught:
        load_agent(target.format(tmp=tmp_path))
    assert "\n" not in str(caught.value)


def test_an_agent_object_takes_no_factory_options() -> None:
    with pytest.raises(AgentLoadError, match=r"unknown option --name: .* is an agent, not a factory of one"):
        load_agent(f"{ECHO}:agent", {"name": "x"})


def test_an_option_a_factory_does_not_take_is_named_with_the_closest_one(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(FACTORY)
    with pytest.raises(AgentLoadError, match=r"unknown option --nmae \(did you mean --name\?\)") as caught:
        load_agent(f"{tmp_path}/factory.py:make", {"nmae": "x"})
    assert "its options: --name" in str(caught.value)


def test_a_command_flag_with_a_typo_is_suggested_for_an_agent_object() -> None:
    with pytest.raises(AgentLoadError, match=r"unknown option --prot \(did you mean --port\?\)"):
        load_agent(f"{ECHO}:agent", {"prot": "9000"}, other_flags=["--port", "--host"])


def test_a_module_target_is_found_in_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "greeter_here.py").write_text("from a2a import Agent\nagent = Agent('Here', 'found in the cwd')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "greeter_here", raising=False)
    assert load_agent("greeter_here:agent").name == "Here"
