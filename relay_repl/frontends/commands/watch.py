"""`relay watch`: a live, full-screen view of targets, deliveries, requests and the inbox: read-only,
but for deciding a held agent request (a / x), which goes through the ordinary gate, as `relay approve`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


def register(sub: Any) -> None:
    """Add `relay watch` to the subparsers."""
    s = sub.add_parser(
        "watch",
        help="a live full-screen view: targets, deliveries in flight, held requests, the inbox, events",
        description="A live, full-screen view of the conversation, updated as the ledger is written (inotify; no "
        "fast polling): the targets (state, pane, host), the deliveries in flight with their stage and last "
        "evidence, the held agent requests, the inbox, and the newest events. Read-only (nothing is sent or "
        "recorded) except for deciding a held request, which is the ordinary decision: a approves the chosen "
        "request as `relay approve ID` does (the view leaves the screen, the four-part plan is printed, y then "
        "Enter sends it, anything else sends nothing), x denies it as `relay deny ID` does (a reason is asked; "
        "Esc keeps it held); then the view comes back with the request's new state.\n\n"
        "keys: ↑/↓ choose a delivery · Enter opens it in the debugger (its stages and a fresh read-only look at "
        "the receiver; `relay debug ID` steps it) · l looks again · Esc closes · Tab moves the choice to the held "
        "requests (↑/↓ among them) · a approves the chosen request (plan, y/N) · x denies it · r refreshes the "
        "targets · q quits\n\n"
        "In the REPL: `await session.watch()`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.set_defaults(func=cmd_watch)


def cmd_watch(args: argparse.Namespace) -> int:
    import anyio

    import relay_repl.store.paths as paths
    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import DenyGate
    from relay_repl.session.core.watch_view import watch
    from relay_repl.store.ledger import Ledger

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("relay watch is a full-screen view and needs a terminal; `relay log --follow [--json]` "
                         "streams the same events to a pipe")
    path = paths.ledger_path()
    session = make_session(fake=args.fake, approve=DenyGate(), echo=None, ledger=Ledger.read_only_at(path))

    @asynccontextmanager
    async def decide(listen: bool) -> AsyncIterator[Any]:
        """A session for one decision, made as `relay approve` / `relay deny` make theirs: its own ledger
        handle that may write, the terminal gate, and (to approve) its inbox open for the answer."""
        from relay_repl.frontends.commands.common import inbox_open
        from relay_repl.session.core.asking import refuse_inside_agent

        refuse_inside_agent("approving a request" if listen else "denying a request")
        decider = make_session(fake=args.fake)
        try:
            if listen:
                async with inbox_open(decider, print):
                    yield decider
            else:
                yield decider
        finally:
            decider.ledger.close()

    async def run() -> None:
        await watch(session, path, decide)

    anyio.run(run)
    return 0
