"""`relay COMMAND ...` builds the parser of that one command, not of all ~20: registering every
subcommand was ~15 ms of CPU on each start, a tenth of `relay targets`' own cold start, which is
measured against `claude agents --json` alone (issue 20 item 4). What each command parses and
prints must be what the whole parser parses and prints."""

from __future__ import annotations

import argparse

import pytest

from relay_repl.frontends import cli


def _sub(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))


def _namespace(ns: argparse.Namespace) -> dict:
    return {k: v for k, v in vars(ns).items()}


def test_a_command_line_builds_only_its_command_and_parses_as_the_whole_parser():
    full = cli.build_parser()
    names = sorted(_sub(full).choices)
    assert len(names) >= 19, names
    for name in names:
        one = cli.build_parser([name])
        assert sorted(_sub(one).choices) == [name], name
        assert _sub(one).choices[name].format_help() == _sub(full).choices[name].format_help(), name
    samples = [["targets", "--json"], ["--fake", "targets"], ["--lab", "--fake", "targets", "--json"],
               ["send", "codex:x", "hello", "--want", "reply"], ["log", "--json", "-n", "5"], ["why", "me-1"],
               ["lab", "status"], ["notebook", "run", "nb.py", "--dry-run"], ["serve", "--stdio"]]
    for words in samples:
        assert _namespace(cli.build_parser(words).parse_args(words)) == _namespace(full.parse_args(words)), words


@pytest.mark.parametrize("words", [["--help"], ["--version"], ["nope"], [], ["--fake"]])
def test_the_top_level_and_an_unknown_command_get_the_whole_parser(words):
    assert sorted(_sub(cli.build_parser(words)).choices) == sorted(_sub(cli.build_parser()).choices)


def test_a_wrong_word_after_a_command_fails_as_before(capsys):
    errors = []
    for p in (cli.build_parser(), cli.build_parser(["targets", "--nope"])):
        with pytest.raises(SystemExit):
            p.parse_args(["targets", "--nope"])
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and "unrecognized arguments: --nope" in errors[0]
