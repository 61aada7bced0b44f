"""`relay clean`: remove what a crashed relay REPL left (only files it provably created)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_repl.frontends.commands.common import stderr_gate


def register(sub: Any) -> None:
    """Add `relay clean` to the subparsers."""
    s = sub.add_parser(
        "clean",
        help="remove what a crashed relay REPL left behind",
        description="Remove the inbox socket and Claude registry entry a killed relay REPL left behind. Only files "
        "this program provably created are removed (same inode and bytes as written, naming the crashed process's "
        "pid and start time); anything else is left and named. Each removal is printed on stderr. The REPL's "
        "start and `relay send` do the same; read-only commands (targets, whoami, log, why) never remove anything.",
    )
    s.set_defaults(func=cmd_clean)


def cmd_clean(args: argparse.Namespace) -> int:
    """Remove what a killed relay REPL left (its socket, its entry in Claude's registry): files in
    other programs' directories only after their plan is shown and approved (on stderr)."""
    import anyio

    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger

    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731 - stdout stays empty
    gate = stderr_gate(say)
    session = Session(ledger=Ledger.default(), approve=gate, echo=say)
    removed = anyio.run(session.clean, lambda line: say(f"relay: {line}"))
    if not removed:
        print("relay: nothing to clean: no inbox record of a crashed relay", file=sys.stderr)
    return 0
