"""The rules of session/core/unfinished.py over plain rows: which earlier send is still open, and
the plan note that names it. Standard library only.

Why apart: `relay send`'s plain pre-plan (issue 40, frontends/send_plain.py) prints the note
"an earlier send of this same body ... is interrupted" before pydantic (the ledger's `Event` model)
is loaded. `unfinished.earlier_unfinished` calls `earlier_notes` here with the ledger's Events, and the
plain path with rows read by `plain_events`: any object with `kind`, `delivery`, `relay_id` and
`data` (a dict) serves, so the words and the rule have one home.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from relay_repl.system.proc import same_process

FINISHED = frozenset({"in_turn", "acknowledged", "replied", "no_reply", "withheld", "refused", "failed", "halted",
                      "abandoned"})
"""`DELIVERED | NOT_DONE | {abandoned}` as values (a test holds it equal to core.delivery's)."""


def alive(data: dict[str, Any]) -> bool:
    """The process a `delivery` event names is still running (pid and start time, the one liveness rule)."""
    pid, start = data.get("pid"), data.get("proc_start")
    if not isinstance(pid, int):
        return False  # written before owners were recorded: nobody can still be running it
    return same_process(pid, start)[0] if start else False


def last_stage(stages: Sequence[Any]) -> tuple[str, str, str]:
    if not stages:
        return "gate", "planned", "approved, no stage recorded yet (nothing may have been sent)"
    last = stages[-1]
    return last.kind.removeprefix("stage:"), str(last.data.get("state")), str(last.data.get("detail") or "")


def earlier_notes(starts: Iterable[Any], events_of: Callable[[str], Sequence[Any]], spec: str) -> list[str]:
    """Plan notes for earlier sends (their `delivery` events, `starts`) that are interrupted or pending."""
    notes: list[str] = []
    for start in starts:
        key = start.delivery or ""
        events = events_of(key)
        rid = start.data.get("relay_id") or next((e.relay_id for e in events if e.relay_id), "?")
        outcomes = [e for e in events if e.kind == "outcome"]
        answered = [e for e in events if e.kind == "answer"]
        if not answered or not answered[-1].data.get("approved"):
            if not outcomes or outcomes[-1].data.get("state") == "withheld":
                continue  # declined or not yet answered: nothing was sent
        stages = [e for e in events if e.kind.startswith("stage:")]
        stage, state, detail = last_stage(stages)
        if outcomes:
            now = str(outcomes[-1].data.get("state"))
            if now in FINISHED:
                continue
        elif alive(start.data):
            now = f"still in flight in pid {start.data.get('pid')}"
        else:
            now = "interrupted"
        notes.append(f"an earlier send of this same body to {spec} is {now}: relay id {rid}, last stage {stage} "
                     f"({state}{': ' + detail[:160] if detail else ''}); look first (`relay why {rid}`): "
                     "sending again may deliver it twice")
    return notes


class Row:
    """One `events` row, plainly (the attributes `Event` has)."""

    __slots__ = ("seq", "at", "kind", "delivery", "relay_id", "data")

    def __init__(self, seq: int, at: float, kind: str, delivery: str | None, relay_id: str | None, data: str) -> None:
        self.seq, self.at, self.kind, self.delivery, self.relay_id = seq, at, kind, delivery, relay_id
        self.data = json.loads(data)
        if not isinstance(self.data, dict):
            raise ValueError("an event's data is not an object")


_COLS = "seq, at, kind, delivery, relay_id, data"


def plain_earlier_notes(con: sqlite3.Connection, spec: str, body: str) -> list[str]:
    """`earlier_unfinished(ledger, spec, body)` through a bare connection (the same statements)."""
    starts = [Row(*r) for r in con.execute(
        f"SELECT {_COLS} FROM events WHERE kind = 'delivery' AND json_extract(data, '$.spec') = ? AND "
        "json_extract(data, '$.body') = ? ORDER BY seq", (spec, body))]

    def events_of(key: str) -> list[Row]:
        return [Row(*r) for r in con.execute(f"SELECT {_COLS} FROM events WHERE seq > 0 AND delivery = ? ORDER BY seq",
                                             (key,))]

    return earlier_notes(starts, events_of, spec)


def open_orphans(con: sqlite3.Connection) -> bool | None:
    """Whether a send is open (approved or staged, no outcome) whose process is gone: what `make_session`'s
    sweep would record and announce. None when it cannot tell plainly (then the models sweep)."""
    since = next(iter(con.execute("SELECT seq FROM marks WHERE name = 'unfinished_from'").fetchall()), (0,))[0]
    keys = [r[0] for r in con.execute(
        "SELECT DISTINCT e.delivery FROM events e WHERE e.seq >= ? AND +e.delivery IS NOT NULL AND "
        "(e.kind LIKE 'stage:%' OR (e.kind = 'answer' AND json_extract(e.data, '$.approved') = 1)) AND "
        "NOT EXISTS (SELECT 1 FROM events o WHERE o.delivery = e.delivery AND o.kind = 'outcome')", (since,))]
    for key in keys:
        start = con.execute(f"SELECT {_COLS} FROM events WHERE delivery = ? AND kind = 'delivery' ORDER BY seq LIMIT 1",
                            (key,)).fetchone()
        if start is None or not alive(Row(*start).data):
            return True
    return False
