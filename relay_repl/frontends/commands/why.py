"""`relay why`: every event of one relay id, or a recipe run's whole timeline, with the answers."""

from __future__ import annotations

import argparse
from typing import Any

from relay_repl.core.controls import visible
from relay_repl.core.peertext import consent_flag
from relay_repl.frontends.commands.common import print_events


def register(sub: Any) -> None:
    """Add `relay why` to the subparsers."""
    s = sub.add_parser(
        "why",
        help="explain one relay id (or a recipe run id)",
        description="Every event the ledger holds for one relay id, oldest first: the plan shown, the answer, "
        "each stage's evidence and the outcome. Given a recipe run id (run-...), the run's whole timeline: its "
        "steps, and every event of every relay id it sent.",
    )
    s.add_argument("relay_id")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=cmd_why)


def cmd_why(args: argparse.Namespace) -> int:
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    events = led.events(relay_id=args.relay_id)
    if any(e.kind == "run-start" for e in events):  # a recipe run: its steps and every event of every id it sent
        ids = {e.data.get("relay_id") for e in events if e.kind == "run-step"}
        ids |= {(e.data.get("answer") or {}).get("relay_id") for e in events if e.kind == "run-answer"}
        for rid in sorted(i for i in ids if i):
            events += led.events(relay_id=rid)
        events.sort(key=lambda e: e.seq)
    if not events:
        from relay_repl.core.errors import RelayError

        # through the one error line (cli.exit_code): neutralised, and a 100 kB id cut in the middle
        raise RelayError(f"no events for relay id {args.relay_id!r}; `relay log` lists recent ones")
    print_events(events, args.json)
    if not args.json:  # the answers beside the send (linked by their re= header), with their verdicts
        for m in led.inbox(answers=args.relay_id):
            print(visible(f"answer: inbox #{m.seq} {m.relay_id or ''} from {m.peer or '?'}: {m.body}"))
            print(visible(f"  verdict {m.verdict}") if m.verdict else "  verdict: none recorded")
            if consent_flag(m.body):
                print(f"  FLAG: the answer {consent_flag(m.body)}")
    return 0
