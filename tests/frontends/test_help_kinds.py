"""Help texts that enumerate the agent kinds list every registered kind (frontends/kind_words.py),
filled when help is printed, never when the parser is built (a command that prints no help loads
no kind's package)."""

from __future__ import annotations

import re

import pytest

from relay_repl.agents import registry
from relay_repl.frontends import cli

ENUMERATING = (["--help"], ["doctor", "--help"], ["verify", "--help"], ["targets", "--help"], ["whoami", "--help"],
               ["lab", "--help"], ["lab", "up", "--help"], ["lab", "install", "--help"], ["fidelity", "--help"],
               ["send", "--help"])


def _help(words: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(words)
    assert e.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse re-wraps: compare with the breaks folded


@pytest.mark.parametrize("words", ENUMERATING, ids=" ".join)
def test_help_names_every_registered_kind(words, capsys):
    out = _help(words, capsys)
    assert not re.search(r"\{(kinds|lab_kinds|binaries|kind_flags|targets|transports|kernel_kinds|unproven_kinds)\}",
                         out), out
    for k in registry.kinds():
        assert k.facts.label in out or k.facts.pin().binary in out or f"{k.facts.prefix}:NAME" in out, (k.facts.kind, out)


def test_doctor_and_lab_name_each_kind_by_label_and_client(capsys):
    doctor = _help(["doctor", "--help"], capsys)
    install = _help(["lab", "install", "--help"], capsys)
    for k in registry.kinds():
        assert k.facts.label in doctor and k.facts.pin().binary in doctor
        spec = k.lab_driver().spec
        if spec is not None:
            assert k.facts.label in install and f"--{spec.count_flag}" in install


def test_building_the_parser_loads_no_kind(monkeypatch):
    def boom():
        raise AssertionError("a kind's package was loaded to build the parser")

    monkeypatch.setattr(registry, "kinds", boom)
    cli.build_parser(["doctor"])
    cli.build_parser()  # every subcommand, as `relay --help` builds it (its text is filled only when printed)


def test_relay_mcp_help_shows_each_kinds_own_setup_lines(capsys):
    """How a client is told to start `relay mcp` is its kind's fact (`AgentKind.facts.mcp_setup`): the help
    shows every registered kind's lines as written, and commands/mcp.py holds none of them (before,
    it carried Codex's, Claude Code's and Gemini CLI's config by hand, so a kind added or removed
    edited a front end)."""
    from pathlib import Path

    import relay_repl.frontends.commands.mcp as mcp

    with pytest.raises(SystemExit):
        cli.main(["mcp", "--help"])
    out = capsys.readouterr().out
    source = Path(mcp.__file__).read_text()
    assert "{mcp_setup}" not in out
    for k in registry.kinds():
        assert k.facts.mcp_setup, f"{k.facts.kind} says nothing about starting relay mcp"
        for line in k.facts.mcp_setup:
            assert f"  {line}\n" in out, (k.facts.kind, line)
            assert line.strip() not in source, (k.facts.kind, line)
