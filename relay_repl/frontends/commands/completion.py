"""`relay completion bash|zsh|fish`: the shell completion script, generated from relay's own parser.

Never hand-written: shtab (a small, maintained library) walks the argparse parser that `relay`
itself parses with, so every subcommand and flag a release has is completed (but `relay serve`, which
another relay runs over ssh and no one types), and a new one needs no edit here. Two kinds of argument get words of their own, read where that costs no discovery: a
TARGET (`relay send <Tab>`, `verify --in`) from the specs the ledger recorded for past sends, and a
recipe (`relay run <Tab>`) from the recipe shelves; the script asks `relay completion --words KIND`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

SHELLS = ("bash", "zsh", "fish")
WORDS = {"target": "targets", "recipe": "recipes"}  # an argument's dest -> the words it completes from
NOT_TYPED = ("serve",)  # run by another relay over ssh, "not for a terminal": offering it makes `se<Tab>` ambiguous


def register(sub: Any) -> None:
    """Add `relay completion` to the subparsers."""
    s = sub.add_parser(
        "completion",
        help="print the shell completion script for bash, zsh or fish",
        description="Print a completion script for every relay subcommand and flag, generated from relay's own "
        "argument parser (shtab). Target names complete from the targets you sent to before (the ledger, read "
        "only), recipe names from the recipe shelves; nothing is discovered at Tab.\n\n"
        "  bash:  relay completion bash > ~/.local/share/bash-completion/completions/relay\n"
        "  zsh:   relay completion zsh > ~/.zfunc/_relay   (with fpath+=(~/.zfunc) before compinit)\n"
        "  fish:  relay completion fish > ~/.config/fish/completions/relay.fish",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("shell", nargs="?", choices=SHELLS, help="the shell to print the script for")
    s.add_argument("--words", choices=sorted(WORDS.values()), help=argparse.SUPPRESS)  # what the script asks at Tab
    s.set_defaults(func=cmd_completion, fast_exit=True, whole_parser=True)  # cli.main hands over its build_parser


def cmd_completion(args: argparse.Namespace) -> int:
    from relay_repl.core.errors import UsageError

    if args.words:
        print("\n".join(words(args.words)))
        return 0
    if args.shell is None:
        raise UsageError("name the shell: `relay completion bash` (or zsh, fish); `relay completion --help` says "
                         "where to put the script")
    print(script(args.shell, args.whole_parser))
    return 0


def typed_parser(build_parser: Callable[[], argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """relay's whole parser (from cli.build_parser, handed over by cli.main) without the subcommands
    no one types (NOT_TYPED)."""
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name in NOT_TYPED:
                action.choices.pop(name, None)
            action._choices_actions = [a for a in action._choices_actions if a.dest not in NOT_TYPED]
    return parser


def script(shell: str, build_parser: Callable[[], argparse.ArgumentParser]) -> str:
    """The completion script for `shell`, from the whole parser."""
    import shtab

    parser = typed_parser(build_parser)
    for action in walk(parser):
        if action.dest in WORDS:  # `send TARGET`, `verify --in TARGET`, `run RECIPE`
            action.complete = shtab.cmd(f"relay completion --words {WORDS[action.dest]}")  # type: ignore[attr-defined]
    return shtab.complete(parser, shell=shell)


def walk(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """Every action of `parser` and of its subparsers, at any depth."""
    out: list[argparse.Action] = []
    for action in parser._actions:
        out.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += walk(sub)
    return out


def words(kind: str) -> list[str]:
    """The words for one kind of argument, from what relay keeps (never discovery); only words the
    shells take as they are (SHELL_SAFE)."""
    return [w for w in _kept_words(kind) if SHELL_SAFE.fullmatch(w)]


SHELL_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/%@+,=-]*")
"""What a completion word may hold. bash's `compgen -W` EXPANDS each word of its list (parameters,
`$(...)` command substitution, arithmetic, braces), and a target's spec holds the session's name,
which is whatever its registry record (or a remote host's listing) says: a target named
`$(touch /tmp/x)` sent to once (a plan answered No records it too) ran that command at the next
`relay send <Tab>`. Specs (`claude:alpha`, `h2/codex:beta`, `%3`) and recipe names fit."""


def _kept_words(kind: str) -> list[str]:
    if kind == "targets":
        from relay_repl.store.paths import ledger_path
        from relay_repl.store.recent_targets import recent_targets

        return recent_targets(ledger_path())
    from relay_repl.session.runs.recipes import list_notebooks, list_recipes

    try:
        return sorted({p.stem for p, _ in list_recipes()} | {p.stem for p, _ in list_notebooks()})
    except (OSError, ValueError):
        return []
