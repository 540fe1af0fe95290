"""Option values that begin with a dash (``a2a.cli.options.attach_dashed_values``), on the real parsers."""

from __future__ import annotations

import argparse

import pytest

from a2a.cli.main import _parser
from a2a.cli.options import attach_dashed_values


def parse(*words: str) -> tuple[argparse.Namespace, list[str]]:
    parser = _parser(plugins=False)
    return parser.parse_known_args(attach_dashed_values(parser, words))


@pytest.mark.parametrize("token", ["-abc", "--M_TN1X3COCLoD-ybdSQzkPlROEmyUi", "-", "--x=y"])
def test_a_dash_led_value_stays_the_options_value(token: str) -> None:
    args, extra = parse("send", "http://127.0.0.1:1", "hello", "--token", token, "--json")
    assert (args.token, args.json, args.text, extra) == (token, True, "hello", [])


def test_a_one_letter_option_takes_the_value_glued_on() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-t")
    assert parser.parse_args(attach_dashed_values(parser, ["-t", "-x"])).t == "-x"


def test_a_value_left_out_is_still_reported_missing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse("send", "http://127.0.0.1:1", "hello", "--token", "--json")
    assert "--token: expected one argument" in capsys.readouterr().err


def test_flags_and_the_double_dash_are_left_as_they_are() -> None:
    parser = _parser(plugins=False)
    words = ["send", "http://127.0.0.1:1", "--", "-hello"]
    assert attach_dashed_values(parser, words) == words
    assert parser.parse_known_args(words)[0].text == "-hello"
    flags = ["send", "http://127.0.0.1:1", "hi", "--stream", "--json"]
    assert attach_dashed_values(parser, flags) == flags


def test_a_push_subcommands_option_is_found_too() -> None:
    args, _ = parse("push", "create", "http://127.0.0.1:1", "t1", "https://h.example/w", "--webhook-token", "-w")
    assert args.webhook_token == "-w"


def test_an_agents_own_options_after_serve_pass_through_untouched() -> None:
    args, extra = parse("serve", "examples/echo_agent.py:agent", "--model", "-q", "--host", "-x")
    assert extra == ["--model", "-q"]
    assert args.host == "-x"


def test_a_double_dash_after_the_options_still_marks_the_text() -> None:
    # Parsed the intermixed way, the flags do not use TEXT up: "--" then gives it its value.
    args, extra = parse("send", "http://127.0.0.1:1", "--json", "--", "-hello")
    assert (args.text, args.json, extra) == ("-hello", True, [])


def test_an_agent_factory_option_without_its_value_says_how_to_give_a_dashed_one() -> None:
    from a2a.cli.main import _factory_options
    from a2a.cli.options import UsageError

    assert _factory_options(["--model", "-q", "--name=--x"]) == {"model": "-q", "name": "--x"}
    with pytest.raises(UsageError, match=r"--name needs a value \(one beginning with '--' is given as --name=VALUE\)"):
        _factory_options(["--name", "--x"])
