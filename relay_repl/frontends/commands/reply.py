"""`relay reply`: answer a relay message into the operator's inbox (how a Codex agent replies)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    """Add `relay reply` to the subparsers."""
    s = sub.add_parser(
        "reply",
        help="answer a relay message into the operator's inbox",
        description="Answer the relay message whose id you were given, into the inbox of the relay REPL that sent it. "
        "This is how a Codex agent (which cannot send natively) replies: run it as one command, e.g.\n"
        "  relay reply 'root.host.4242-3' 'tests pass on main'\n"
        "Only ids the operator sent are accepted; the reply carries hop+1 and stops at the hop cap.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("relay_id", help="the id= value of the message you are answering")
    s.add_argument("text", nargs="+", help="the reply, one line")
    s.set_defaults(func=cmd_reply)


def cmd_reply(args: argparse.Namespace) -> int:
    from relay_repl.session.reply import reply

    env, path = reply(args.relay_id, " ".join(args.text))
    print(f"replied to {args.relay_id} as {env.id} (hop {env.hop}) into {path}")
    return 0
