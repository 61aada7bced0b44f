"""`relay dead`: the dead-letter shelf (failed, interrupted, unanswered); `dead retry ID`, `dead drop ID`."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from relay_repl.core.controls import visible


def register(sub: Any) -> None:
    """Add `relay dead` (and its `retry` and `drop`) to the subparsers."""
    s = sub.add_parser(
        "dead",
        help="deliveries that failed, were interrupted or went unanswered (retry ID, drop ID)",
        description="The dead-letter shelf: every delivery that ended failed or interrupted (a relay killed mid-send), "
        "or whose answer did not come within its wait and has not come since, with why. Read-only.\n\n"
        "  relay dead                 the shelf, oldest first (--json: one object per line)\n"
        "  relay dead retry ID        look at the receiver first (the debugger's evidence check, shown); when it does\n"
        "                             not hold the payload, plan a new send of the same body (a new relay id) and ask\n"
        "                             y/N; refused when it holds it or cannot tell. A dead letter is retried at most once\n"
        "  relay dead drop ID         take it off the shelf (recorded; nothing is sent or removed)\n\n"
        "exit codes: retry 0 delivered, 3 pending, 1 refused (evidence, No, gone) or failed; 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--json", action="store_true", help="one JSON object per dead letter")
    s.set_defaults(func=cmd_dead, fast_exit=True)
    dsub = s.add_subparsers(dest="dead_command", metavar="{retry,drop}")
    r = dsub.add_parser("retry", help="evidence check, then a new plan of the same body (y/N)",
                        description="Look at the receiver (read-only, shown), then, unless it holds the payload or "
                        "cannot tell, plan a new send of the same body to the same target and ask y/N.")
    r.add_argument("id", help="the dead letter's relay id (or delivery key)")
    r.add_argument("--transport", "-t", help="require this transport for the new send (default: chosen as for send)")
    r.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for receiver evidence (default 30)")
    r.add_argument("--json", action="store_true", help="the evidence and the new delivery as JSON; the rest on stderr")
    r.set_defaults(func=cmd_dead_retry, fast_exit=False)
    d = dsub.add_parser("drop", help="take a dead letter off the shelf (nothing is sent)")
    d.add_argument("id")
    d.add_argument("--reason", default="dropped by the operator", help="recorded with it")
    d.set_defaults(func=cmd_dead_drop, fast_exit=False)


def _letter_json(d: Any) -> dict:
    return d.model_dump(mode="json")


def cmd_dead(args: argparse.Namespace) -> int:
    from relay_repl.session.core.dead import dead_letters
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    try:
        shelf = dead_letters(led)
    finally:
        led.close()
    if args.json:
        for d in shelf:
            print(json.dumps(_letter_json(d), ensure_ascii=True))
    else:
        print(repr(shelf))
    return 0


def _must_be_a_letter(ref: str) -> None:
    """Not a dead letter: said from a read-only ledger, before a writer, an inbox or anything else is made."""
    from relay_repl.session.core.dead import find_letter
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    try:
        find_letter(led, ref)
    finally:
        led.close()


def cmd_dead_drop(args: argparse.Namespace) -> int:
    import relay_repl.store.paths as paths
    from relay_repl.core.errors import UsageError
    from relay_repl.session.core.dead import drop
    from relay_repl.store.ledger import Ledger

    if not paths.ledger_path().exists():  # nothing was ever sent from here: no ledger is made to say so
        raise UsageError(f"no delivery or relay id {args.id!r}: there is no ledger at {paths.ledger_path()}")
    _must_be_a_letter(args.id)
    d = drop(Ledger.default(), args.id, args.reason)
    print(visible(f"dropped {d.relay_id or d.key} ({d.state} to {d.target}): off the shelf; `relay why "
                  f"{d.relay_id or d.key}` still shows it"))
    return 0


def cmd_dead_retry(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.frontends.commands.common import inbox_open, stderr_gate
    from relay_repl.session.app import make_session
    from relay_repl.session.core.dead import retry

    import relay_repl.store.paths as paths
    from relay_repl.core.errors import UsageError

    if not paths.ledger_path().exists():  # nothing was ever sent from here: nothing to retry, nothing made
        raise UsageError(f"no delivery or relay id {args.id!r}: there is no ledger at {paths.ledger_path()}")
    _must_be_a_letter(args.id)

    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    out = err if args.json else (lambda line: print(line, flush=True))
    gate = stderr_gate(err) if args.json else None

    async def run() -> Any:
        session = make_session(fake=args.fake, approve=gate, echo=out)
        async with inbox_open(session, out):
            return await retry(session, args.id, transport=args.transport, timeout=args.timeout, say=out)

    result = anyio.run(run)
    d = result.delivery
    if args.json:
        print(json.dumps({"letter": _letter_json(result.letter), "evidence": result.evidence,
                          "refused": result.refused,
                          "retry": None if d is None else {"relay_id": d.relay_id, "outcome": d.outcome,
                                                           "state": d.state.value, "reason": d.reason}},
                         ensure_ascii=True))
    elif d is not None:
        print(visible(f"retry {d.relay_id}: {d.summary()}"))
    return result.exit_code
