"""The strategy registry: the configuration, the CLI, the planner's prompt and the docs follow it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from supervisor import ConfigError, parse_config
from supervisor.cli import build_parser
from supervisor.model import PLAN_SYSTEM, system_prompt
from supervisor.strategy import DEFAULT_STRATEGY, STRATEGIES, strategy_named

ROOT = Path(__file__).resolve().parents[2]


def test_the_configuration_takes_every_registered_strategy_and_nothing_else() -> None:
    for name in STRATEGIES:
        assert parse_config(f"supervisor:\n  strategy: {name}\n").supervisor.strategy == name
    assert parse_config("").supervisor.strategy == DEFAULT_STRATEGY in STRATEGIES
    with pytest.raises(ConfigError) as caught:
        parse_config("supervisor:\n  strategy: eager\n", "sup.yaml")
    (issue,) = caught.value.issues
    assert (issue.line, issue.path) == (2, "supervisor.strategy")
    assert issue.message == "Input should be 'sequential', 'parallel' or 'adaptive'"


def test_the_cli_offers_exactly_the_registered_strategies() -> None:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    option = next(a for a in sub.choices["supervise"]._actions if "--strategy" in a.option_strings)
    assert list(option.choices or []) == list(STRATEGIES)


def test_the_planner_is_told_how_its_strategy_runs_the_list() -> None:
    for strategy in STRATEGIES.values():
        assert strategy.planner_note in system_prompt(PLAN_SYSTEM, strategy)
    assert "{strategy}" not in system_prompt(PLAN_SYSTEM)


def test_what_each_strategy_allows() -> None:
    assert [s.capacity(4) for s in STRATEGIES.values()] == [1, 4, 4]
    assert [s.follows_dependencies for s in STRATEGIES.values()] == [True, False, True]
    with pytest.raises(ValueError, match="'sequential', 'parallel' or 'adaptive'"):
        strategy_named("eager")


def test_the_readme_documents_every_strategy() -> None:
    readme = (ROOT / "supervisor" / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `strategy` |"))
    assert all(f"`{name}`" in row for name in STRATEGIES)
