"""`relay log`: the newest ledger events."""

from __future__ import annotations

import argparse
from typing import Any

from relay_repl.frontends.commands.common import print_events


def register(sub: Any) -> None:
    """Add `relay log` to the subparsers."""
    s = sub.add_parser(
        "log",
        help="show the newest ledger events",
        description="Show the newest events of the append-only event log (plans, answers, stages, outcomes).",
    )
    s.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=cmd_log)


def cmd_log(args: argparse.Namespace) -> int:
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    events = led.events()
    print_events(events[-args.n :], args.json)
    return 0
