"""`relay whoami`: your own address (what a peer needs to answer you)."""

from __future__ import annotations

import argparse
from typing import Any

from relay_repl.frontends.kind_words import KindsHelp


def register(sub: Any) -> None:
    """Add `relay whoami` to the subparsers."""
    s = sub.add_parser(
        "whoami",
        help="show your own address: what a peer needs to answer you",
        description="Your own address, the thing a peer needs to answer you: inside an agent session ({kinds}) "
        "that session's address as its kind reads it (e.g. $CODEX_THREAD_ID inside Codex, the session name "
        "inside Claude Code), otherwise the operator's address and any running relay inboxes.",
        formatter_class=KindsHelp,
    )
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=cmd_whoami)


def cmd_whoami(args: argparse.Namespace) -> int:
    import json

    from relay_repl.session.core.inbox import read_records
    from relay_repl.session.core.whoami import own_address

    me = own_address()
    inboxes = [r.model_dump() for r in read_records() if r.live]
    if args.json:
        print(json.dumps({"role": me.role, "agent": me.agent, "address": me.address, "sender": me.sender,
                          "inbox": me.inbox, "relay_inboxes": inboxes}))
    else:
        print(f"{me.sender}" + (f"  inbox {me.inbox}" if me.inbox else ""))
        for r in inboxes:
            print(f"  relay inbox: pid {r['pid']} {r['sender']} at {r['socket']}")
        if not inboxes and me.agent == "relay":
            print("  no relay REPL inbox is running: start `relay` to receive replies")
    return 0
