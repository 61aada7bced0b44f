"""`relay` is assembled from one module per command (frontends/commands/): each registers its
own subparser, and cli.COMMAND_NAMES lists them in the order `relay --help` shows."""

from __future__ import annotations

import argparse
import importlib
import sys
import pkgutil

import relay_repl.frontends.commands as commands
from relay_repl.frontends import cli


def test_every_command_module_is_registered_once_and_registers_its_own_name():
    modules = {m.name for m in pkgutil.iter_modules(commands.__path__)} - {"common"}
    assert {m.__name__.rsplit(".", 1)[1] for m in cli.COMMANDS} == modules
    for mod in cli.COMMANDS:
        p = argparse.ArgumentParser()
        sub = p.add_subparsers(dest="command")
        mod.register(sub)
        assert list(sub.choices) == [mod.__name__.rsplit(".", 1)[1]], mod.__name__


def test_a_new_command_is_one_module_plus_one_line(monkeypatch):
    """What `relay hosts` or `relay serve` will be: a module with register(sub) and a handler."""
    fake = importlib.util.module_from_spec(importlib.machinery.ModuleSpec("hello", None))

    def register(sub):
        s = sub.add_parser("hello", help="say hello")
        s.set_defaults(func=lambda args: 7)

    fake.register = register
    monkeypatch.setitem(sys.modules, "relay_repl.frontends.commands.hello", fake)
    monkeypatch.setattr(cli, "COMMAND_NAMES", (*cli.COMMAND_NAMES, "hello"))
    assert "hello" in cli.build_parser().format_help()
    assert cli.main(["hello"]) == 7


def test_only_the_repl_starts_the_lab_and_the_lab_commands_need_no_pointing():
    parser = cli.build_parser()
    uses = {words: getattr(parser.parse_args(list(words)), "lab_use", "as-is")
            for words in [("repl",), ("targets",), ("lab", "status"), ("fidelity",), ("send", "a", "b")]}
    assert uses == {("repl",): "start", ("targets",): "as-is", ("lab", "status"): "none", ("fidelity",): "none",
                    ("send", "a", "b"): "as-is"}
