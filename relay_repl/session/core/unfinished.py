"""Sends that never got an outcome: interrupted ones, and pending ones of the same body.

Why: a `relay send` killed with SIGKILL (or a machine that lost power) leaves the
ledger with the plan, the yes and some stages, but no outcome. The payload may well
have reached the receiver. Re-running the same send would then deliver the body twice
under two ids, with nobody told. So:

- on every start (`make_session`) and before every plan, a send that has an approved
  answer or stages but no outcome, and whose process is gone (pid and start time, the
  one liveness rule), is given the outcome `interrupted`, with its last stage;
- a new send of the same body to the same target, while an earlier one is interrupted
  or still pending, says so in the plan: the earlier relay id and what its last stage
  proved, so the operator can look (`relay why ID`) before answering y.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from relay_repl.core.delivery import DeliveryState
from relay_repl.store.ledger import Event, Ledger
from relay_repl.session.core.unfinished_rule import alive, earlier_notes, last_stage
from relay_repl.system.proc import proc_start

_alive, _last_stage = alive, last_stage  # their home: unfinished_rule.py (the plain pre-plan reads them too)


def owner() -> dict[str, Any]:
    """Who is sending: recorded with each delivery so a later start can tell dead from running."""
    pid = os.getpid()
    return {"pid": pid, "proc_start": proc_start(pid)}


def orphaned(ledger: Ledger) -> Iterator[tuple[str, list[Event], Event | None]]:
    """Each unfinished send whose process is gone (the one liveness rule): its key, its events and
    its `delivery` start event (None when none was recorded). A send still running elsewhere is skipped."""
    mine = ledger.started_here
    for key in ledger.unfinished_deliveries():
        if key in mine:
            continue  # started by this very process, which is running: not orphaned
        events = ledger.events(delivery=key)
        start = next((e for e in events if e.kind == "delivery"), None)
        if start is not None and _alive(start.data):
            continue  # still running in another process
        yield key, events, start


def sweep_interrupted(ledger: Ledger) -> list[str]:
    """Give each dead process's unfinished send the outcome `interrupted`; returns their relay ids."""
    found: list[str] = []
    for key, events, start in orphaned(ledger):
        stages = [e for e in events if e.kind.startswith("stage:")]
        stage, state, detail = _last_stage(stages)
        rid = next((e.relay_id for e in events if e.relay_id), None)
        who = f"pid {start.data.get('pid')}" if start is not None and start.data.get("pid") else "its process"
        reason = (f"interrupted: {who} ended before an outcome was recorded; its last stage was {stage} ({state}"
                  f"{': ' + detail if detail else ''}); the receiver may hold it: look before sending again")
        data = {"state": DeliveryState.INTERRUPTED.value, "stage": stage, "last_state": state, "reason": reason,
                "found_by": os.getpid()}
        if ledger.add_outcome_if_missing(key, rid, data):
            found.append(rid or key)
    return found


def earlier_unfinished(ledger: Ledger, spec: str, body: str) -> list[str]:
    """Plan notes for earlier sends of exactly `body` to `spec` that are interrupted or pending."""
    return earlier_notes(ledger.deliveries_of(spec, body), lambda key: ledger.events(delivery=key), spec)
