"""`relay deny ID [--why TEXT]`: refuse an agent's held request; nothing is sent."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add `relay deny` to the subparsers."""
    d = sub.add_parser(
        "deny",
        help="refuse an agent's held request (its asker reads denied, and why)",
        description="Refuse an agent's held request ID: nothing is sent; the asker's status reads `denied` "
        "with --why TEXT (default: denied by the operator).",
    )
    d.add_argument("request_id", metavar="ID")
    d.add_argument("--why", default=None, help="the reason the asker reads")
    d.set_defaults(func=cmd_deny)


def cmd_deny(args: argparse.Namespace) -> int:
    from relay_repl.core.controls import visible
    from relay_repl.session.app import make_session
    from relay_repl.session.core.asking import refuse_inside_agent

    refuse_inside_agent("denying a request")
    from relay_repl.core.errors import UsageError
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.requests import RequestStore

    led = Ledger.read_only_default()  # an unknown id is said before a ledger (or RELAY_HOME) is made
    try:
        known = RequestStore(led).get(str(args.request_id).strip()) is not None
    finally:
        led.close()
    if not known:
        raise UsageError(f"no request {args.request_id!r}; `relay requests` lists the held ones")
    session = make_session(fake=args.fake, echo=lambda line: None)
    req = session.deny_request(args.request_id, why=args.why)
    print(visible(f"request {req.id} from {req.asker} denied: {req.why}; nothing was sent"))
    return 0
