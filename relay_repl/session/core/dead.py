"""The dead-letter shelf: deliveries that ended `failed`, `interrupted`, or unanswered past their wait.

Why a shelf and not a re-send button: a delivery that failed or was interrupted may well have
reached its receiver (a SIGKILL between the write and its read-back leaves exactly that), and a
blind re-send delivers the body twice under two ids. So:

- `dead_letters(ledger)` lists them, read-only, with why (the outcome's reason, or the wait that
  ran out); a send whose process died and that no later start has swept yet is listed as
  `interrupted` too (the one liveness rule, computed here, nothing written);
- `retry(session, ref)` first runs the debugger's evidence check (`Debugger.look`: the receiver
  now, and whether the payload is there) and shows it; it refuses when the receiver holds the
  payload, holds it typed but unsubmitted in its composer, or its whereabouts cannot be read
  (a failed or interrupted send), or when the receiver is gone; otherwise it plans a NEW send of the same body (a new relay id: receivers ignore a
  repeated id) that the gate asks y/N for, as any send. The retry is recorded before the gate
  (`dead-retry`, naming the new id), and once its send was approved the delivery counts as
  retried: a second retry is refused, so a dead letter is re-sent at most once;
- `drop(ledger, ref)` records that the operator is done with it (`dead-drop`); nothing is sent.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_repl.core.controls import visible
from relay_repl.core.delivery import DELIVERED, Delivery
from relay_repl.core.envelope import header_of
from relay_repl.core.errors import UsageError
from relay_repl.store.ledger import Event, Ledger

DEAD_STATES = ("failed", "interrupted", "no_reply")
DONE = tuple(s.value for s in DELIVERED)


class DeadLetter(BaseModel):
    """One delivery on the shelf, as the ledger recorded it."""

    model_config = ConfigDict(frozen=True)

    key: str
    relay_id: str | None
    target: str
    transport: str
    state: str
    why: str
    at: float
    body: str
    want: str = "none"
    swept: bool = True  # False: its process is gone and no start has recorded `interrupted` yet


class Shelf(list):
    """`relay dead` / `session.dead()`: prints as a table."""

    def __repr__(self) -> str:
        if not self:
            return "no dead letters: nothing failed, was interrupted or went unanswered (or all were dropped/retried)"
        rows = [("RELAY ID", "TARGET", "STATE", "WHEN", "WHY")]
        for d in self:
            # each cell inert on its own: a reason quoting a screen's line break never starts a row
            rows.append((visible(d.relay_id or d.key), visible(d.target), d.state + ("" if d.swept else "*"),
                         time.strftime("%m-%d %H:%M:%S", time.localtime(d.at)), visible(d.why)))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows]
        if any(not d.swept for d in self):
            lines.append("* its process is gone and no relay start has recorded it yet")
        lines.append("`relay dead retry ID` looks at the receiver first, then plans a new send (y/N); "
                     "`relay dead drop ID` takes it off the shelf")
        return visible("\n".join(lines), keep_newlines=True)  # reasons can quote a receiver's screen


def _want(payload: str | None) -> str:
    return (header_of(payload) or {}).get("want", "none")


def _closed(ledger: Ledger) -> set[str]:
    """Delivery keys taken off the shelf: dropped, or retried with an approved send."""
    out = {e.delivery for e in ledger.events(kind="dead-drop") if e.delivery}
    for e in ledger.events(kind="dead-retry"):
        if e.delivery and retry_approved(ledger, e):
            out.add(e.delivery)
    return out


def retry_approved(ledger: Ledger, retry: Event) -> bool:
    """Whether the send a `dead-retry` event planned got past the gate (then it counts, sent or not)."""
    rid = retry.data.get("retry")
    return bool(rid) and any(e.kind == "answer" and e.data.get("approved") for e in ledger.events(relay_id=rid))


def _letter(ledger: Ledger, key: str, state: str, why: str, at: float, *, swept: bool = True,
            events: list[Event] | None = None) -> DeadLetter:
    events = ledger.events(delivery=key) if events is None else events
    start = next((e for e in events if e.kind == "delivery"), None)
    plan = next((e for e in events if e.kind == "plan"), None)
    remote = next((e for e in events if e.kind == "outcome" and e.data.get("host")), None)
    data = start.data if start else {"spec": remote.data.get("target"), "body": remote.data.get("body"),
                                     "transport": f"ssh {remote.data.get('host')}"} if remote else {}
    rid = data.get("relay_id") or next((e.relay_id for e in events if e.relay_id), None)
    payload = plan.data.get("payload") if plan else None
    want = str(remote.data.get("want") or "none") if remote is not None and payload is None else _want(payload)
    return DeadLetter(key=key, relay_id=rid, target=str(data.get("spec") or "?"),
                      transport=str(data.get("transport") or "?"), state=state, why=why, at=at,
                      body=str(data.get("body") or ""), want=want, swept=swept)


def _answered(ledger: Ledger, relay_id: str) -> bool:
    """Whether a verified answer to `relay_id` reached the inbox (however late)."""
    return any(m.verdict is not None and m.verdict.ok for m in ledger.inbox(answers=relay_id))


def _last_stage(ledger: Ledger, key: str) -> str | None:
    """What the last stage said, for an outcome recorded without a reason (a failed stage says why)."""
    stages = [e for e in ledger.events(delivery=key) if e.kind.startswith("stage:")]
    if not stages:
        return None
    last = stages[-1]
    return f"{last.kind.removeprefix('stage:')} {last.data.get('state')}: {last.data.get('detail') or ''}".rstrip(": ")


def dead_letters(ledger: Ledger) -> Shelf:
    """Every delivery that ended failed or interrupted, or whose answer did not come within its wait
    (and has not come since), oldest first; less those dropped or retried. Read-only."""
    from relay_repl.session.core.unfinished import orphaned

    closed = _closed(ledger)
    found: dict[str, DeadLetter] = {}
    for e in ledger.events(kind="outcome"):
        state = str(e.data.get("state"))
        if e.delivery and e.delivery not in closed and state in ("failed", "interrupted"):
            found[e.delivery] = _letter(ledger, e.delivery, state, e.data.get("reason") or _last_stage(ledger, e.delivery)
                                        or state, e.at)
        elif e.delivery in found:  # a later outcome (the debugger confirmed it) takes it off
            del found[e.delivery]
    for e in ledger.events(kind="no-reply"):
        if not e.delivery or e.delivery in closed or not e.relay_id:
            continue
        if _answered(ledger, e.relay_id):
            continue  # the answer came late: not dead
        found[e.delivery] = _letter(ledger, e.delivery, "no_reply",
                                    f"no answer within {e.data.get('timeout', '?')} s; none has come since", e.at)
    for end in ledger.events(kind="run-end"):  # a recipe step that waited out its timeout (the runner's own wait)
        if end.data.get("state") != "timed-out" or not end.relay_id:
            continue
        run = ledger.events(relay_id=end.relay_id)
        answered = {e.data.get("answers") for e in run if e.kind == "run-answer"}
        for step in (e for e in run if e.kind == "run-step" and e.seq < end.seq):
            rid = step.data.get("relay_id")
            if not rid or rid in answered or _answered(ledger, rid):
                continue
            sent = ledger.events(relay_id=rid)
            keys = [e.delivery for e in sent if e.delivery]
            outs = [e for e in sent if e.kind == "outcome"]
            if not keys or keys[-1] in closed or keys[-1] in found or not outs or outs[-1].data.get("state") not in DONE:
                continue
            found[keys[-1]] = _letter(ledger, keys[-1], "no_reply", f"{end.data.get('reason') or 'no answer'} "
                                      f"(recipe run {end.relay_id}); none has come since", end.at)
    for key, events, start in orphaned(ledger):  # not swept yet: a read-only ledger leaves its mark where it was
        if key in found or key in closed or start is None:
            continue
        found[key] = _letter(ledger, key, "interrupted", f"pid {start.data.get('pid')} ended before an outcome was "
                             "recorded; the receiver may hold it", events[-1].at, swept=False, events=events)
    return Shelf(sorted(found.values(), key=lambda d: d.at))


def find_letter(ledger: Ledger, ref: str) -> DeadLetter:
    """The dead letter with relay id or delivery key `ref`, or a one-line refusal saying why it is not one."""
    ref = ref.strip()
    shelf = dead_letters(ledger)
    for d in reversed(shelf):
        if ref in (d.key, d.relay_id):
            return d
    keys = {e.delivery for e in ledger.events(relay_id=ref) if e.delivery} | (
        {ref} if ledger.events(delivery=ref) else set())
    if not keys:
        raise UsageError(f"no delivery or relay id {ref!r} in the ledger; `relay dead` lists the dead letters")
    for e in ledger.events(kind="dead-retry"):
        if e.delivery in keys and retry_approved(ledger, e):
            raise UsageError(f"{ref} was already retried as {e.data.get('retry')}: it is sent at most once again "
                             f"(`relay why {e.data.get('retry')}`)")
    if any(e.delivery in keys for e in ledger.events(kind="dead-drop")):
        raise UsageError(f"{ref} was dropped from the dead letters (`relay why {ref}`)")
    raise UsageError(f"{ref} is not a dead letter (it did not fail, was not interrupted and is not unanswered): "
                     f"`relay why {ref}` shows its events")


def drop(ledger: Ledger, ref: str, reason: str = "dropped by the operator") -> DeadLetter:
    """Take a dead letter off the shelf (an event; nothing is sent or removed)."""
    d = find_letter(ledger, ref)
    ledger.event("dead-drop", delivery=d.key, relay_id=d.relay_id, data={"reason": reason, "state": d.state})
    return d


class RetryOutcome(BaseModel):
    """What `retry` did: the evidence it read, and the new delivery if it planned one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    letter: DeadLetter
    evidence: str
    refused: str | None = None
    delivery: Delivery | None = None

    @property
    def exit_code(self) -> int:
        if self.delivery is not None:
            return self.delivery.exit_code
        return 1


async def retry(session: Any, ref: str, *, transport: str | None = None, timeout: float = 30.0,
                say: Any = None) -> RetryOutcome:
    """The debugger's evidence check, then (only if it allows) a new plan of the same body, asked y/N."""
    say = say or (lambda line: None)
    ledger = session.ledger
    letter = find_letter(ledger, ref)
    dbg = session.debugger(letter.key)
    say(dbg.table())
    look = await dbg.look()
    evidence = look.render()
    say(visible(f"evidence now:\n{evidence}", keep_newlines=True))
    refused = None
    if look.receiver == "gone":
        refused = f"not retrying: {look.verdict}"
    elif letter.state != "no_reply" and look.landed:
        refused = ("not retrying: the receiver holds the payload already (evidence above), so sending it again would "
                   f"deliver it twice; `relay dead drop {letter.relay_id or letter.key}` takes it off the shelf")
    elif look.waiting:
        refused = ("not retrying: the receiver's queue still holds it (evidence above) and will hand it over when "
                   "the receiver takes its next item: a new send would deliver it twice")
    elif look.staged:
        refused = ("not retrying: the payload sits in the receiver's composer, typed but not submitted (evidence "
                   "above): a new send would type it a second time; `relay debug "
                   f"{letter.relay_id or letter.key}` can submit it (one Enter, asked y/N), or clear it yourself")
    elif letter.state != "no_reply" and look.landed is None:
        refused = ("not retrying: where the payload is cannot be read (evidence above), and sending again could "
                   f"deliver it twice; look again later (`relay debug {letter.relay_id or letter.key} --look`)")
    if refused:
        say(refused)
        return RetryOutcome(letter=letter, evidence=evidence, refused=refused)
    new_id = ledger.next_id(session.me.address)
    ledger.event("dead-retry", delivery=letter.key, relay_id=letter.relay_id,
                 data={"retry": new_id, "state": letter.state, "landed": look.landed})
    why = ("delivered, but unanswered: asking again" if letter.state == "no_reply"
           else f"{letter.state}, and the receiver does not hold it (evidence above)")
    d = await session.send(letter.target, letter.body, want=letter.want if letter.want in ("reply", "ack") else "none",
                           transport=transport, timeout=timeout, relay_id=new_id,
                           heading=f"retry of dead letter {letter.relay_id or letter.key} ({why})")
    return RetryOutcome(letter=letter, evidence=evidence, delivery=d)
