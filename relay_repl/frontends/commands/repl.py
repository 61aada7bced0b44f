"""`relay repl` (and `relay` with no command): the async REPL with `session` preloaded."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add `relay repl` to the subparsers."""
    s = sub.add_parser("repl", help="open the REPL (the default)", description="Open the async REPL with `session` preloaded.")
    s.set_defaults(func=cmd_repl, lab_use="start")


def cmd_repl(args: argparse.Namespace) -> int:
    from relay_repl.frontends.repl import run

    return run(fake=args.fake)
