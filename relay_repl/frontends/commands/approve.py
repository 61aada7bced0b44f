"""`relay approve ID`: the plan for an agent's held request, y/N, then the send (and its answer back)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(sub: Any) -> None:
    """Add `relay approve` to the subparsers."""
    a = sub.add_parser(
        "approve",
        help="show the plan for an agent's held request and ask y/N",
        description="Show the ordinary four-part plan for an agent's held request ID (its words quoted as the "
        "asker's, its consent-only flags and its hop named) and ask y/N; on y send it. With want=reply|ack it "
        "then waits (--wait SECONDS) for the verified answer and asks y/N on taking it back to the asker. "
        "Without a terminal the answer is No.\n\n"
        "exit codes: 0 delivered, 3 pending, 1 refused, failed, withheld or halted, 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("request_id", metavar="ID")
    a.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                   help="with want=reply|ack: how long to wait for the answer (default 60; 0: do not wait)")
    a.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for receiver evidence (default 30)")
    a.set_defaults(func=cmd_approve)


def cmd_approve(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.core.controls import visible
    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session
    from relay_repl.session.core.asking import refuse_inside_agent

    refuse_inside_agent("approving a request")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        from relay_repl.core.errors import UsageError

        raise UsageError(f"relay approve asks y/N on the plan and needs a terminal: run it in one (request "
                         f"{args.request_id} stays held; `relay deny {args.request_id}` refuses it)")

    async def run() -> Any:
        session = make_session(fake=args.fake)
        async with inbox_open(session, print):
            return await session.approve_request(args.request_id, wait=args.wait, timeout=args.timeout)

    d = anyio.run(run)
    print(visible(d.summary()))
    return int(d.exit_code)
