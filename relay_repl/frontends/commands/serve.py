"""`relay serve --stdio`: the other end of a host's ssh channel (session/serve.py)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add `relay serve` to the subparsers."""
    s = sub.add_parser("serve", help="answer another relay over ssh (`relay serve --stdio`; not for a terminal)",
                       description="Run by a relay on another machine through ssh: newline-delimited JSON requests "
                       "on stdin, one answer per line on stdout. Nothing listens on a port.")
    s.add_argument("--stdio", action="store_true", required=True, help="speak on stdin/stdout (the only mode)")
    s.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from relay_repl.session.serve import run_stdio

    return run_stdio(fake=bool(getattr(args, "fake", False)))
