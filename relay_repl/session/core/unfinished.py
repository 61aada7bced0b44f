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

from relay_repl.core.delivery import DELIVERED, NOT_DONE, DeliveryState
from relay_repl.store.ledger import Event, Ledger
from relay_repl.system.proc import proc_start, same_process

_FINISHED = {s.value for s in (*DELIVERED, *NOT_DONE)} | {"abandoned"}


def owner() -> dict[str, Any]:
    """Who is sending: recorded with each delivery so a later start can tell dead from running."""
    pid = os.getpid()
    return {"pid": pid, "proc_start": proc_start(pid)}


def _alive(data: dict[str, Any]) -> bool:
    pid, start = data.get("pid"), data.get("proc_start")
    if not isinstance(pid, int):
        return False  # written before owners were recorded: nobody can still be running it
    return same_process(pid, start)[0] if start else False


def _last_stage(stages: list[Event]) -> tuple[str, str, str]:
    if not stages:
        return "gate", "planned", "approved, no stage recorded yet (nothing may have been sent)"
    last = stages[-1]
    return last.kind.removeprefix("stage:"), str(last.data.get("state")), str(last.data.get("detail") or "")


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
    notes: list[str] = []
    for start in ledger.deliveries_of(spec, body):
        key = start.delivery or ""
        events = ledger.events(delivery=key)
        rid = start.data.get("relay_id") or next((e.relay_id for e in events if e.relay_id), "?")
        outcomes = [e for e in events if e.kind == "outcome"]
        answered = [e for e in events if e.kind == "answer"]
        if not answered or not answered[-1].data.get("approved"):
            if not outcomes or outcomes[-1].data.get("state") == "withheld":
                continue  # declined or not yet answered: nothing was sent
        stages = [e for e in events if e.kind.startswith("stage:")]
        stage, state, detail = _last_stage(stages)
        if outcomes:
            now = str(outcomes[-1].data.get("state"))
            if now in _FINISHED:
                continue
        elif _alive(start.data):
            now = f"still in flight in pid {start.data.get('pid')}"
        else:
            now = "interrupted"
        notes.append(f"an earlier send of this same body to {spec} is {now}: relay id {rid}, last stage {stage} "
                     f"({state}{': ' + detail[:160] if detail else ''}); look first (`relay why {rid}`): "
                     "sending again may deliver it twice")
    return notes
