"""`relay watch`: a live, full-screen, read-only view of targets, deliveries, requests and the inbox."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add `relay watch` to the subparsers."""
    s = sub.add_parser(
        "watch",
        help="a live full-screen view: targets, deliveries in flight, the inbox, events (read-only)",
        description="A live, full-screen view of the conversation, updated as the ledger is written (inotify; no "
        "fast polling): the targets (state, pane, host), the deliveries in flight with their stage and last "
        "evidence, the held agent requests (none can exist yet), the inbox, and the newest events. Read-only: "
        "nothing is sent or recorded.\n\n"
        "keys: ↑/↓ choose a delivery · Enter opens it in the debugger (its stages and a fresh read-only look at "
        "the receiver; `relay debug ID` steps it) · l looks again · Esc closes · r refreshes the targets · q quits\n\n"
        "In the REPL: `await session.watch()`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    import anyio

    import relay_repl.store.paths as paths
    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session
    from relay_repl.session.gate import DenyGate
    from relay_repl.session.watch_view import watch
    from relay_repl.store.ledger import Ledger

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("relay watch is a full-screen view and needs a terminal; `relay log --follow [--json]` "
                         "streams the same events to a pipe")
    path = paths.ledger_path()
    session = make_session(fake=args.fake, approve=DenyGate(), echo=None, ledger=Ledger.read_only_at(path))

    async def run() -> None:
        await watch(session, path)

    anyio.run(run)
    return 0
