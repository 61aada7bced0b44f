"""`relay halts`: the relay-halts in force (who, why, when); `relay unhalt` (commands/unhalt.py) clears them.

Why commands: a relay-halt (in any message, from any peer) stops every later send and wait, and
before this the only way to see or clear one was `session.unhalt()` inside the REPL. `relay halts`
reads the ledger read-only; `relay unhalt` shows a plan naming each halt it clears (who, why, when),
asks y/N through the same gate as a send (on stderr), and clears exactly those: a halt that arrived
after the plan was shown stays in force.
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def register(sub: Any) -> None:
    """Add `relay halts` to the subparsers (`relay unhalt` is commands/unhalt.py)."""
    s = sub.add_parser("halts", help="list the relay-halts in force (who, why, when)",
                       description="List the relay-halts in force: nothing is sent and no wait continues while one "
                       "is. Read-only. `relay unhalt` clears them after a y/N.\n\nexit codes: 0 (with or without halts)")
    s.add_argument("--json", action="store_true", help='{"halts": [{"seq", "at", "by", "reason"}]}')
    s.set_defaults(func=cmd_halts, fast_exit=True)


def when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def rows(halts: list[Any]) -> list[str]:
    from relay_repl.core.controls import visible

    return [visible(f"#{h.seq}  {when(h.at)}  by {h.by}: {h.reason}") for h in halts]


def in_force() -> list[Any]:
    """The halts in force (`Halt`s, oldest first), read without creating or writing the ledger: none
    when there is no ledger yet. `relay halts` lists them; `relay unhalt` asks to clear them."""
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    try:
        return led.halts_in_force()
    finally:
        led.close()


def cmd_halts(args: argparse.Namespace) -> int:
    import json

    halts = in_force()
    if args.json:
        print(json.dumps({"halts": [h.model_dump() for h in halts]}, ensure_ascii=True))
    elif not halts:
        print("no relay-halt in force")
    else:
        print(f"{len(halts)} relay-halt(s) in force: nothing is sent and no wait continues until `relay unhalt`")
        print("\n".join("  " + r for r in rows(halts)))
    return 0
