"""`relay debug`: one delivery from any earlier process, looked at, stepped, resumed or abandoned."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_repl.core.controls import visible


def register(sub: Any) -> None:
    """Add `relay debug` to the subparsers."""
    s = sub.add_parser(
        "debug",
        help="debug one delivery: look at the receiver, step, resume, abandon",
        description="Debug one delivery from any earlier process (a `relay send` that exited 3, a REPL send), named "
        "by its relay id or delivery key. Prints the stages done and the one next, then a small loop:\n"
        "  look            read the receiver now (pane and screen verdict, queue row, transcript records); sends nothing\n"
        "  step            run exactly the next stage; a key press or write shows its plan and asks y/N first\n"
        "  resume          run the remaining stages, each gated the same way\n"
        "  abandon REASON  record that you gave up on it (nothing is sent or removed)\n"
        "  quit\n\n"
        "exit codes: 0 delivered, 3 still pending, 1 receiver gone / refused / failed / abandoned",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("id", help="a relay id (as printed in the plan) or a delivery key")
    s.add_argument("--look", action="store_true", help="look once (read-only) and exit, no loop")
    s.add_argument("--json", action="store_true", help="with --look: the delivery and the look as one JSON object")
    s.set_defaults(func=cmd_debug)


def _look_json(dbg, lk) -> dict:
    d = dbg.delivery
    return {"key": d.key, "relay_id": d.relay_id, "target": d.target, "transport": d.transport,
            "outcome": d.outcome, "state": d.state.value, "stage": d.stage, "reason": d.reason,
            "next": dbg.next_stage or None, "payload": d.plan.payload if d.plan else None,
            "stages": [e.model_dump(mode="json", include={"stage", "state", "detail", "at"}) for e in d.evidence],
            "look": lk.model_dump(mode="json")}


DEBUG_HELP = "commands: look, step, resume, abandon [reason], show, quit"


def cmd_debug(args: argparse.Namespace) -> int:
    import anyio
    import json

    from relay_repl.session.app import make_session

    say = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else (lambda s: print(s, flush=True))

    async def read_command(ask) -> str | None:
        if ask is not None:
            try:
                return await ask.prompt_async()
            except (EOFError, KeyboardInterrupt):
                return None
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        return line if line else None

    import relay_repl.store.paths as paths
    from relay_repl.core.errors import RelayError

    ledger = paths.state_dir(create=False) / "ledger.sqlite"
    if not ledger.exists():  # debugging reads the ledger; it never creates one
        raise RelayError(f"no ledger at {ledger}: nothing was ever sent from here (set RELAY_HOME, or use --lab)")

    async def run() -> int:
        from relay_repl.store.ledger import Ledger

        # --look only reads: a read-only ledger, and the look is not recorded
        session = make_session(fake=args.fake, echo=say, ledger=Ledger.read_only_at(ledger) if args.look else None)
        dbg = session.debugger(args.id)
        if args.look:
            lk = await dbg.look(record=False)
            if args.json:
                print(json.dumps(_look_json(dbg, lk), ensure_ascii=True, default=str))
            else:
                print(dbg.table())
                print(visible(lk.render(), keep_newlines=True))
            return 1 if lk.receiver == "gone" else 0
        print(dbg.table())
        print(DEBUG_HELP)
        ask: Any = None  # a PromptSession when a terminal asks, else commands come from stdin
        if sys.stdin.isatty() and sys.stdout.isatty():
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter

            ask = PromptSession("debug> ", completer=WordCompleter(["look", "step", "resume", "abandon", "show", "quit"]))
        gone = False
        while True:
            line = await read_command(ask)
            if line is None:
                break
            word, _, rest = line.strip().partition(" ")
            if word in ("q", "quit", "exit"):
                break
            if word in ("l", "look"):
                lk = await dbg.look()
                gone = lk.receiver == "gone"
                print(visible(lk.render(), keep_newlines=True), flush=True)
            elif word in ("s", "step"):
                await dbg.step()
                print(f"now: {dbg.delivery.summary()}", flush=True)
            elif word in ("r", "resume"):
                await dbg.resume()
            elif word in ("a", "abandon"):
                dbg.abandon(rest.strip() or "abandoned by the operator")
                print(f"now: {dbg.delivery.summary()}", flush=True)
            elif word in ("show", "t", "table"):
                print(dbg.table(), flush=True)
            elif word:
                print(f"unknown command {word!r}; {DEBUG_HELP}", flush=True)
        return 1 if gone else dbg.delivery.exit_code

    return anyio.run(run)
