"""Configuration: YAML validated by pydantic; every error names its field and its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor import ConfigError, Supervisor, load_config, parse_config

ROOT = Path(__file__).resolve().parents[2]


def problems(text: str) -> list[tuple[int | None, str, str]]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "sup.yaml")
    return [(i.line, i.path, i.message) for i in caught.value.issues]


def test_errors_name_the_field_and_its_line() -> None:
    text = """\
supervisor:
  mode: plan_upfrnt
  max_concurrency: 0
  budget:
    tokens: 100
    wall: 5
agents:
  - name: a
    url: http://127.0.0.1:1
  - name: b
    command: ["x"]
    timeout: -1
a2a:
  retry:
    max_attempts: zero
"""
    found = problems(text)
    assert (2, "supervisor.mode", "Input should be 'plan_upfront' or 'conversational'") in found
    assert (3, "supervisor.max_concurrency", "Input should be greater than or equal to 1") in found
    assert any(p[:2] == (6, "supervisor.budget.wall") and "unknown option 'wall'" in p[2] for p in found)
    assert (12, "agents[1].timeout", "Input should be greater than 0") in found
    assert any(p[:2] == (15, "a2a.retry.max_attempts") for p in found)


def test_the_message_shows_file_line_and_field() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("agents:\n  - name: a\n    url: ftp://x\n", "sup.yaml")
    assert "sup.yaml:3: agents[0].url: url must start with http://, https://, ws:// or wss://" in str(caught.value)


def test_an_agent_needs_exactly_one_way_to_reach_it() -> None:
    found = problems("agents:\n  - name: a\n  - name: b\n    url: http://x\n    module: m:a\n")
    assert (
        found[0][:2] == (2, "agents[0]") and "needs exactly one of url, command or module (found: none)" in found[0][2]
    )
    assert found[1][:2] == (3, "agents[1]") and "(found: url, module)" in found[1][2]


def test_duplicate_agent_names_are_refused() -> None:
    found = problems("agents:\n  - {name: a, url: 'http://x'}\n  - {name: a, url: 'http://y'}\n")
    assert found == [(2, "agents", "two agents are named 'a'; names must be unique")]


def test_env_vars_are_expanded_and_a_missing_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_TOKEN", "s3cr3t-value")
    monkeypatch.setenv("AGENT_HOST", "127.0.0.1:9")
    config = parse_config(
        "agents:\n  - name: a\n    url: http://${AGENT_HOST}\n    auth: {type: bearer, token: '${AGENT_TOKEN}'}\n"
        "  - name: b\n    url: http://${NOT_SET:-127.0.0.1:10}\n"
    )
    a, b = config.agents
    assert a.url == "http://127.0.0.1:9" and a.auth is not None and a.auth.token is not None
    assert a.auth.token.get_secret_value() == "s3cr3t-value" and "s3cr3t-value" not in repr(a)
    assert b.url == "http://127.0.0.1:10"
    found = problems("agents:\n  - name: a\n    url: http://x\n    auth:\n      type: api_key\n      key: ${MISSING}\n")
    assert found == [(6, "agents[0].auth.key", "environment variable MISSING is not set (referenced as ${MISSING})")]


def test_yaml_syntax_errors_have_a_line() -> None:
    found = problems("supervisor:\n  mode: [unclosed\n")
    assert found[0][0] is not None and "not valid YAML" in found[0][2]


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "nope.yaml")


def test_per_agent_overrides_apply_on_top_of_the_defaults() -> None:
    config = parse_config(
        "a2a: {timeout: 30, retry: {max_attempts: 5, initial_backoff: 0.5}}\n"
        "agents:\n  - {name: a, url: 'http://x', timeout: 3, retry: {max_attempts: 2}}\n  - {name: b, url: 'http://y'}\n"
    )
    a, b = config.agents
    assert config.agent_timeout(a) == 3 and config.agent_timeout(b) == 30
    assert config.agent_retry(a).max_attempts == 2 and config.agent_retry(a).initial_backoff == 0.5
    assert config.agent_retry(b).max_attempts == 5


def test_the_example_configuration_is_valid_and_documented() -> None:
    config = load_config(ROOT / "examples" / "supervisor.yaml")
    assert config.agents
    readme = (ROOT / "supervisor" / "README.md").read_text()
    for option in [
        *type(config.supervisor).model_fields,
        *type(config.a2a).model_fields,
        "auth",
        "required",
        "command",
        "module",
    ]:
        assert f"`{option}`" in readme, f"{option} is not documented in supervisor/README.md"


def test_a_model_without_a_key_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    sup = Supervisor([{"name": "a", "url": "http://127.0.0.1:9"}], model={"model": "gpt-x"})
    import asyncio

    with pytest.raises(ConfigError, match=r"supervisor.model.api_key_env: no API key for model 'gpt-x'"):
        asyncio.run(sup.run("x"))
