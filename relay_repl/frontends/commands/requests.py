"""`relay requests`: the agents' requests held for the operator's decision (read-only; `relay approve`, `relay deny` decide)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add `relay requests` to the subparsers."""
    s = sub.add_parser(
        "requests",
        help="list the agents' requests to send that are held for your decision",
        description="The requests agents made (the MCP tool relay_send, `relay ask`) that wait for your decision, "
        "oldest first: id, asking session (established by kernel pid), target, want, hop, flags, time left. "
        "Read-only. `relay approve ID` shows the plan and asks y/N; `relay deny ID --why TEXT` refuses. "
        "Refused when run inside an agent session: an agent never lists or decides requests.",
    )
    s.add_argument("--all", action="store_true", help="every recent request, whatever its state")
    s.add_argument("--json", action="store_true", help="one JSON object per request")
    s.set_defaults(func=cmd_requests, fast_exit=True)


def cmd_requests(args: argparse.Namespace) -> int:
    import json

    from relay_repl.core.controls import visible
    from relay_repl.session.core.asking import refuse_inside_agent
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.requests import RequestStore

    refuse_inside_agent("listing requests")
    led = Ledger.read_only_default()
    try:
        store = RequestStore(led)
        reqs = store.all() if args.all else store.held()
    finally:
        led.close()
    if args.json:
        for r in reqs:
            print(json.dumps({**r.receipt(), "asker": r.asker, "verdict": r.verdict, "body": r.body},
                             ensure_ascii=True))
        return 0
    if not reqs:
        print("no held requests" if not args.all else "no requests")
    for r in reqs:
        print(r.line_for_operator() if r.seen_state() == "held" and not args.all else r.summary())
    if reqs and not args.all:
        print(visible("  relay approve ID shows the plan and asks y/N; relay deny ID --why TEXT refuses"),
              file=sys.stderr)
    return 0
