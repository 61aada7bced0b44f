"""Resume from the journal, not from hope: was a stopped run's send sent? (issue 38)

Why: a resumed notebook or recipe run answers the sends its stopped run made instead of sending
them again. Calling a send "sent" because the run's journal named a relay id for it was hope: a
send declined at its y/N prompt, killed at the prompt, or withheld by a halt was reported as "sent
in run R: not sent again", and a row inserted by hand into the ledger was believed.

A send is sent only where this machine's ledger holds the operator's approval for that plan (the
gate's `answer` approved, after the plan it answers, and, for a notebook, the run's own journal
row of that answer) and a transport stage after it that may have acted. Everything else is shown
as what it was (`not sent: declined in run R`) and is planned and asked again.

A row the run's journal did not write stops the resume with one line, nothing sent: a relay id
this ledger never issued, a journal row whose digest does not match its content (edited, or
inserted by hand), a ledger row for the id that names another target or body than the journal,
an approval or an outcome with no plan or approval before it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel

from relay_repl.core.controls import visible
from relay_repl.core.errors import RelayError
from relay_repl.core.host_claims import envelope_of

NOT_ACTED = {"halted", "refused", "withheld"}
"""Stage states after which nothing left this machine (a halt, a refusal before any side effect)."""
NOTHING_SENT_OUTCOMES = {"withheld", "refused", "planned"}

Status = Literal["sent", "declined", "withheld", "unanswered", "approved-unsent", "unplanned"]


class JournalMismatch(RelayError):
    """The ledger holds a row the stopped run's journal did not write: the resume stops, nothing sent."""


class SendStatus(BaseModel):
    """What the ledger proves about one send of a stopped run."""

    relay_id: str
    status: Status
    detail: str = ""

    @property
    def sent(self) -> bool:
        return self.status == "sent"

    def not_sent(self, run_id: str) -> str:
        """`not sent: declined in run R`, and the like, for the operator."""
        words = {"declined": f"declined in run {run_id}",
                 "withheld": f"withheld in run {run_id}" + (f" ({self.detail})" if self.detail else ""),
                 "unanswered": f"never answered in run {run_id} (it stopped at the y/N prompt)",
                 "approved-unsent": f"approved in run {run_id}, but no transport stage followed (nothing left)",
                 "unplanned": f"never planned in run {run_id}"}
        return visible(f"not sent: {words.get(self.status, self.status)}")


def row_digest(kind: str, data: dict[str, Any]) -> str:
    """The digest a journal row carries of its own content (without the digest): an edited row, or
    one written by hand, does not match it."""
    body = {k: v for k, v in data.items() if k != "digest"}
    return hashlib.sha256((kind + "\0" + json.dumps(body, sort_keys=True, ensure_ascii=True)).encode()).hexdigest()


def sealed(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with its digest, as the runner writes a journal row."""
    return {**data, "digest": row_digest(kind, data)}


def check_row(run_id: str, event: Any) -> None:
    """A journal row of run `run_id` as the run wrote it, else JournalMismatch."""
    if event.data.get("digest") != row_digest(event.kind, event.data):
        why = "edited, or written by hand" if "digest" in event.data else \
            "written by hand, or by a relay older than this one, which sealed no row"
        raise JournalMismatch(f"run {run_id}: ledger row #{event.seq} ({event.kind}) does not match what the run "
                              f"wrote ({why}): not resumed, nothing was sent; start a new run")


def issued(ledger: Any, relay_id: str) -> bool:
    """Whether this ledger handed out `relay_id` (its counter for the address has passed it)."""
    address, _, n = relay_id.rpartition("-")
    if not address or not n.isdigit():
        return False
    nxt = ledger.peek_next_id(address).rpartition("-")[2]
    return nxt.isdigit() and 1 <= int(n) < int(nxt)


def send_status(ledger: Any, run_id: str, relay_id: str, *, target: str, body: str | None,
                approved_in_journal: bool | None = None) -> SendStatus:
    """What the ledger proves about the send of `body` to `target` the stopped run made as `relay_id`.

    `approved_in_journal`: for a notebook, whether the run's own journal recorded the operator's
    yes (None: the caller keeps no such row, as a recipe run). Raises JournalMismatch on a row
    the run did not write."""
    def stop(why: str) -> JournalMismatch:
        return JournalMismatch(visible(f"run {run_id}: {why}: not resumed, nothing was sent; look at "
                                       f"`relay why {relay_id}`, or start a new run"))

    if not issued(ledger, relay_id):
        raise stop(f"relay id {relay_id} was never issued by this ledger")
    events = ledger.events(relay_id=relay_id)
    keys = {e.delivery for e in events if e.delivery}  # the `delivery` row names the id in its data, not its column
    deliveries = [e for k in sorted(keys) for e in ledger.events(delivery=k, kind="delivery")]
    events = sorted([*events, *deliveries], key=lambda e: e.seq)
    plan_seq: int | None = None
    approved_seq: int | None = None
    status: Status = "unplanned"
    detail = ""
    for e in events:
        d = e.data
        if e.kind == "delivery":
            if d.get("relay_id") != relay_id or d.get("spec") != target or (body is not None and d.get("body") != body):
                raise stop(f"ledger row #{e.seq} for {relay_id} names another target or body than the run's journal")
        elif e.kind == "plan":
            env = envelope_of(str(d.get("payload") or ""))
            if env is None or env.id != relay_id or (body is not None and env.body != body):
                raise stop(f"ledger row #{e.seq} (plan) for {relay_id} carries another payload than the run's journal")
            plan_seq = e.seq
            status = "unanswered" if approved_seq is None else status
        elif e.kind == "answer":
            if plan_seq is None:
                raise stop(f"ledger row #{e.seq} answers a plan for {relay_id} that was never shown")
            if d.get("approved"):
                if approved_in_journal is False:
                    raise stop(f"ledger row #{e.seq} approves {relay_id}, which the run's journal records as "
                               "not approved")
                approved_seq, status = e.seq, "approved-unsent"
            else:
                status = "withheld" if d.get("withheld") else "declined"
                detail = str(d.get("withheld") or "")
        elif e.kind.startswith("stage:"):
            if approved_seq is None:
                raise stop(f"ledger row #{e.seq} ({e.kind}) for {relay_id} follows no approval")
            if d.get("state") not in NOT_ACTED and e.seq > approved_seq:
                status = "sent"
            elif d.get("state") == "halted" and status != "sent":
                status, detail = "withheld", str(d.get("detail") or "")[:200]
        elif e.kind == "outcome":
            if d.get("host") and approved_seq is not None and d.get("state") not in NOTHING_SENT_OUTCOMES:
                status = "sent"  # a send to a host: its stages ran there, after the approval recorded here
            if approved_seq is None and d.get("state") not in NOTHING_SENT_OUTCOMES | {"interrupted"}:
                raise stop(f"ledger row #{e.seq} says {relay_id} is {d.get('state')}, but no approval of its plan "
                           "is recorded")
    return SendStatus(relay_id=relay_id, status=status, detail=detail)
