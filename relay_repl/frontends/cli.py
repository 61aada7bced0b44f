"""`relay` command line: the REPL by default, one-liners as subcommands.

Thin on purpose: every subcommand calls the same session object the REPL
holds. This module only assembles the parser and dispatches; each command lives
in its own module under `frontends/commands/`, which registers its subparser
(`register(sub)`) and holds its handler. A new command is one new module plus
one name in COMMAND_NAMES. Imports are deferred so `relay --help` and the REPL start fast.

A subparser may set, beside `func`, `lab_use="start"` (the REPL: `--lab` first starts what
is missing of the lab) or `lab_use="none"` (the lab's own commands: `--lab` needs no
pointing), `fast_exit=True` (a read-only command that may skip interpreter teardown), and
`whole_parser=True` (`relay completion`: `main` hands it `build_parser` there, so the command needs
no import of this module).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from relay_repl.frontends.kind_words import KindsRawHelp
from relay_repl import __version__
from relay_repl.frontends import argparse_gettext
from relay_repl.core.controls import visible  # pure, no dependency: every echo of a peer's text passes it

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name alike)
if TYPE_CHECKING:
    from typing import Any
# The subcommands in the order `relay --help` lists them; each module (frontends/commands/NAME.py)
# registers its own subparser. Imported by name when used: a one-liner loads its own command's
# module only, not the other ~27 (`relay targets` and a send's plan are cold starts; issue 40).
COMMAND_NAMES = ("repl", "targets", "send", "lab", "fidelity", "recipes", "run", "log", "why", "verify", "doctor",
                 "debug", "whoami", "clean", "reply", "notebook", "mcp", "hosts", "serve",
                 "dead", "watch", "halts", "unhalt", "completion", "ask", "requests", "approve", "deny")


def command_module(name: str) -> ModuleType:
    """The module of the subcommand `name` (one of COMMAND_NAMES), imported on first use."""
    return importlib.import_module(f"relay_repl.frontends.commands.{name}")


def __getattr__(name: str) -> tuple[ModuleType, ...]:
    """`COMMANDS`: every command module, in `relay --help` order (imports them all)."""
    if name == "COMMANDS":
        return tuple(command_module(n) for n in COMMAND_NAMES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DESCRIPTION = """\
Relay one-line messages between live AI coding-agent sessions ({kinds})
on this machine, safely and verifiably.

With no subcommand, `relay` opens an async Python REPL with `session`
preloaded. Every side effect (a keystroke, a socket write, a queue insert)
first prints a four-part plan — target, transport and fallback, exact payload,
what counts as delivered — and waits for y/N: only y then Enter, typed after the
plan was shown, approves. No means nothing happens; with no terminal the answer is No.
"""

EPILOG = """\
examples:
  relay                         open the REPL on the agents running on this machine
  relay --lab                   start what is missing of the offline lab and open the REPL on it
  relay targets                 list live (and stale) agent sessions
  relay send codex:fix-tests 'please rerun the suite' --want reply
  relay --lab targets --json    any subcommand, pointed at the lab as it is (never restarts it)
  relay lab up / status / down  manage the offline lab
  relay --fake                  the REPL with an in-memory demo target (fake:inbox)
  relay log                     the newest events in the ledger
  relay why operator.host.42-3  every event recorded for one relay id
  relay verify ID --in claude:alpha   who really sent relay id ID (the receiver's origin records)
  relay recipes                 saved multi-round exchanges; `relay run NAME -p KEY=VALUE`
  relay why run-1a2b3c4d        a recipe run's whole timeline
  relay clean                   remove what a crashed relay REPL left (only files it provably created)
  relay halts / relay unhalt    the relay-halts in force; clear them after a y/N
  relay completion bash         shell completion (bash, zsh, fish); see `relay completion --help`

State (ledger, history, lab) lives in $RELAY_HOME, else $XDG_STATE_HOME/relay-repl.
"""


def build_parser(words: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the command line `words`, of the one command it names
    (when it names one and asks nothing of the top level: `relay --help` lists them all).

    Registering all ~20 subcommands cost ~15 ms of CPU on every command, a tenth of
    `relay targets`' own cold start, measured against `claude agents --json` alone; one
    subcommand's parser parses that command's words as the whole parser would."""
    argparse_gettext.install()  # ~30 subparsers: one locale walk per message, not per use
    from relay_repl.frontends.inert_parser import InertParser

    p = InertParser(
        prog="relay", description=DESCRIPTION, epilog=EPILOG, formatter_class=KindsRawHelp
    )
    p.add_argument("--version", action="version", version=f"relay {__version__}")
    p.add_argument("--fake", action="store_true", help="add the in-memory demo target fake:inbox (no agent needed)")
    p.add_argument("--lab", action="store_true",
                   help="point the command at the offline lab as it is (a dead lab session shows as stale); with no command "
                        "(the REPL) first start what is missing of the lab")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    name, named = _named_command(words or [])
    for command in COMMAND_NAMES if named is None else (named,):
        command_module(command).register(sub)
    if named is not None and name not in sub.choices:  # its module registers another name
        return build_parser()
    return p


def _named_command(words: list[str]) -> tuple[str, str | None]:
    """The first word after the leading --fake/--lab and the command module named so, if any
    (any other top-level flag first, --help or --version, wants the whole parser)."""
    i = 0
    while i < len(words) and words[i] in ("--fake", "--lab"):
        i += 1
    name = words[i] if i < len(words) else ""
    return name, name if name in COMMAND_NAMES else None


def main(argv: list[str] | None = None, *, extra: dict[str, Any] | None = None) -> int:
    """`extra`: attributes set on the parsed arguments (frontends/send_plain.py hands `cmd_send` the
    relay id and gate of the plan it already printed)."""
    words = sys.argv[1:] if argv is None else argv
    import relay_repl.system.prefetch as prefetch

    if prefetch.wanted(words):
        prefetch.start()  # before anything else: the listing overlaps parsing and imports (a no-op if entry.py did)
    # Bare `relay` is the REPL, whose start is measured against a bare ptpython: building the
    # whole parser (~15 ms, mostly argparse's gettext lookups per subcommand) buys it nothing.
    args = build_parser(words).parse_args(argv) if words else argparse.Namespace(fake=False, lab=False, command=None)
    if getattr(args, "func", None) is None:  # no command: the REPL
        args.func, args.lab_use = command_module("repl").cmd_repl, "start"
    for key, value in (extra or {}).items():
        setattr(args, key, value)
    func = args.func
    if getattr(args, "whole_parser", None) is True:
        args.whole_parser = build_parser
    lab_use = getattr(args, "lab_use", "as-is")
    from relay_repl.core.errors import RelayError

    try:
        if args.lab and lab_use != "none":  # `relay --lab lab ...` needs no pointing
            command_module("lab").use_lab(start=lab_use == "start")
        code = int(func(args) or 0)
        if argv is None:
            sys.stdout.flush()  # here, so a reader that left early (`| head`) is caught below, not at exit
        if getattr(args, "fast_exit", False) and argv is None:  # a real process, not a call from tests
            command_module("targets").fast_exit(code)
        return code
    except BrokenPipeError:
        from relay_repl.frontends.commands.common import closed_pipe

        return closed_pipe()
    except (RelayError, BaseExceptionGroup, KeyboardInterrupt) as exc:
        return exit_code(exc)



def exit_code(exc: BaseException) -> int:
    """The exit code of a command that `exc` ended, its reason printed as one line; an error
    that is not relay's (nor a task group holding one, nor Ctrl-C) is raised again.

    Apart from `main` so that bare `relay` (frontends/entry.py), which starts its REPL without
    importing this module, reports its errors the same way."""
    from relay_repl.core.errors import first_relay_error

    if isinstance(exc, KeyboardInterrupt):
        print("relay: interrupted", file=sys.stderr)
        return 130
    err = first_relay_error(exc)  # itself, or the first inside a task group's errors
    if err is None:
        raise exc
    line = visible(f"relay: {err}")  # a halt's reason names a peer's claim
    if len(line) > 1500:  # a 100 kB argument quoted back: the middle goes, the next step at the end stays
        line = f"{line[:1000]}…({len(line) - 1400:,} characters)…{line[-400:]}"
    print(line, file=sys.stderr)
    return err.exit_code


if __name__ == "__main__":
    sys.exit(main())
