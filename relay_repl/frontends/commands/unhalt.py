"""`relay unhalt`: clear the relay-halts in force, after a y/N on a plan that names each one.

The plan names every halt it clears (who, why, when: commands/halts.py's rows), is asked through the
same gate as a send (on stderr: stdout keeps the answer) and recorded in the ledger; a yes clears
exactly those halts, so one that arrived after the plan was shown stays in force.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay_repl.store.ledger import Ledger


def register(sub: Any) -> None:
    """Add `relay unhalt` to the subparsers."""
    u = sub.add_parser("unhalt", help="clear the relay-halts in force, after a y/N on a plan that names them",
                       description="Show a plan naming every relay-halt in force (who, why, when), ask y/N on the "
                       "terminal (stderr), and clear exactly those on y. Handle what made a peer halt first.\n\n"
                       "exit codes: 0 cleared (or none in force), 1 declined")
    u.set_defaults(func=cmd_unhalt)


def cmd_unhalt(args: argparse.Namespace) -> int:
    from relay_repl.frontends.commands.halts import in_force
    from relay_repl.store.ledger import Ledger

    if not in_force():  # no ledger, no halt: nothing to create or ask
        print("no relay-halt in force: nothing to clear")
        return 0
    led = Ledger.default()
    try:
        return _unhalt(led)
    finally:
        led.close()


def _unhalt(led: Ledger) -> int:
    """The plan naming each halt in force, asked y/N; a yes clears exactly those."""
    import anyio

    from relay_repl.core.plan import Plan
    from relay_repl.frontends.commands import common
    from relay_repl.frontends.commands.halts import rows
    from relay_repl.session.core.gating import Gatekeeper
    from relay_repl.session.core.shared import Shared, default_me
    from relay_repl.store.paths import ledger_path

    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731 - stdout keeps the answer
    halts = led.halts_in_force()
    me = default_me()
    plan = Plan(action=f"clear {len(halts)} relay-halt(s)", target=f"the ledger {ledger_path()}",
                identified_by="its halts table: each halt not cleared", transport="ledger update",
                payload="\n".join(rows(halts)), delivered_when="`relay halts` lists none of these; sends and waits go on",
                notes=("a peer halted for a reason: handle it first; a halt arriving after this plan is shown stays",))
    gate = Gatekeeper(Shared(ledger=led, approve=common.stderr_gate(say), me=me))
    approval = anyio.run(lambda: gate.gated(plan, on_halts=True))
    if approval is None:
        print("declined: no halt was cleared")
        return 1
    n = led.clear_halts(by=me.sender, seqs=[h.seq for h in halts])
    print(f"cleared {n} relay-halt(s); `relay halts` lists what is in force")
    return 0
