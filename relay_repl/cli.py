"""`relay` command line: the REPL by default, one-liners as subcommands.

Thin on purpose: every subcommand calls the same session object the REPL
holds. Imports are deferred so `relay --help` and the REPL start fast.
"""

from __future__ import annotations

import argparse
import sys

from . import __version__

DESCRIPTION = """\
Relay one-line messages between live AI coding-agent sessions (Claude Code,
Codex) on this machine, safely and verifiably.

With no subcommand, `relay` opens an async Python REPL with `session`
preloaded. Every side effect (a keystroke, a socket write, a queue insert)
first prints a four-part plan — target, transport and fallback, exact payload,
what counts as delivered — and waits for y/N. No means nothing happens; with
no terminal the answer is No.
"""

EPILOG = """\
examples:
  relay                         open the REPL
  relay --fake                  the REPL with an in-memory demo target (fake:inbox)
  relay log                     the newest events in the ledger
  relay why operator.host.42-3  every event recorded for one relay id

State (ledger, history, lab) lives in $RELAY_HOME, else $XDG_STATE_HOME/relay-repl.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="relay", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", action="version", version=f"relay {__version__}")
    p.add_argument("--fake", action="store_true", help="add the in-memory demo target fake:inbox (no agent needed)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("repl", help="open the REPL (the default)", description="Open the async REPL with `session` preloaded.")
    s.set_defaults(func=_cmd_repl)

    s = sub.add_parser(
        "log",
        help="show the newest ledger events",
        description="Show the newest events of the append-only event log (plans, answers, stages, outcomes).",
    )
    s.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=_cmd_log)

    s = sub.add_parser(
        "why",
        help="explain one relay id",
        description="Every event the ledger holds for one relay id, oldest first: the plan shown, the answer, "
        "each stage's evidence and the outcome.",
    )
    s.add_argument("relay_id")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=_cmd_why)

    s = sub.add_parser(
        "whoami",
        help="show your own address (seed section 1)",
        description="Your own address, the thing a peer needs to answer you: $CODEX_THREAD_ID inside Codex, the "
        "session name inside Claude Code, otherwise the operator's address and any running relay inboxes.",
    )
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=_cmd_whoami)

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
    s.set_defaults(func=_cmd_reply)
    return p


def _cmd_whoami(args: argparse.Namespace) -> int:
    import json

    from .inbox import read_records
    from .whoami import own_address

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


def _cmd_reply(args: argparse.Namespace) -> int:
    from .reply import reply

    env, path = reply(args.relay_id, " ".join(args.text))
    print(f"replied to {args.relay_id} as {env.id} (hop {env.hop}) into {path}")
    return 0


def _cmd_repl(args: argparse.Namespace) -> int:
    from .repl import run

    return run(fake=args.fake)


def _print_events(events: list, as_json: bool) -> None:
    import json
    import time

    for e in events:
        if as_json:
            print(json.dumps(e.model_dump(), ensure_ascii=False))
        else:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at))
            data = e.data.get("detail") or e.data.get("state") or e.data.get("approved", "")
            print(f"{e.seq:>6} {when} {e.kind:<16} {e.relay_id or '-':<28} {data}")


def _cmd_log(args: argparse.Namespace) -> int:
    from .ledger import Ledger

    led = Ledger.default()
    events = led.events()
    _print_events(events[-args.n :], args.json)
    return 0


def _cmd_why(args: argparse.Namespace) -> int:
    from .ledger import Ledger

    events = Ledger.default().events(relay_id=args.relay_id)
    if not events:
        print(f"relay: no events for relay id {args.relay_id!r}; `relay log` lists recent ones", file=sys.stderr)
        return 1
    _print_events(events, args.json)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", _cmd_repl)
    from .errors import RelayError

    try:
        return int(func(args) or 0)
    except RelayError as exc:
        print(f"relay: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("relay: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
