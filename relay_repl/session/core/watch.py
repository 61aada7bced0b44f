"""What `relay watch` shows, kept apart from the screen: targets, deliveries, inbox, events.

Why a model without prompt_toolkit: the view is rebuilt from ledger rows as they land (a
`LedgerFollower` batch at a time), and what it holds (each delivery's state, stage and last
evidence; the answers linked to it; the newest events) is tested here without a terminal.
The full-screen app (session/core/watch_view.py) only draws `sections()`.

Every text a peer can have written (an answer's body, a claim, a stage's evidence quoting a
receiver's screen) passes the one neutraliser before it is drawn.

Agent requests (sends an agent asks the operator to approve, issue 31) come from the ledger's
`request` events like everything else: held when one arrives, gone from the list when the
operator's relay records it approved, denied, expired or halted (or when its expiry passes).
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from relay_repl.core.controls import visible
from relay_repl.core.delivery import DELIVERED
from relay_repl.core.inbound import OK_VERDICTS, InboundMessage
from relay_repl.core.target import Target
from relay_repl.store.ledger import Event

FINISHED_SHOWN = 12  # finished deliveries kept below the ones in flight
EVENTS_SHOWN = 200   # event lines kept (the view shows the newest that fit)
INBOX_SHOWN = 50
PENDING = {"planned", "typed", "submitted", "queued", "dequeued", "held", "unknown", "in flight"}
DONE = {s.value for s in DELIVERED}

REQUESTS_NOTE = ("none held (an agent asks with relay_send or `relay ask`; you decide with "
                 "`await session.approve_request(ID)` / `relay approve ID`, or deny it)")
REQUESTS_SHOWN = 4
DECIDED_SHOWN = 3  # requests decided lately, kept below the held ones with their state


def clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at * 1000) % 1000:03d}"


class Row(BaseModel):
    """One delivery as the view shows it."""

    key: str
    relay_id: str | None = None
    target: str = "?"
    transport: str = "?"
    state: str = "planned"
    stage: str = "plan"
    evidence: str = ""
    started: float = 0.0
    updated: float = 0.0
    finished: bool = False
    answer: str | None = None
    want: str = "none"
    answered: str | None = None  # replied/acknowledged once a verified answer arrived: later stages keep it
    host: str | None = None

    @property
    def ref(self) -> str:
        return self.relay_id or self.key


class WatchModel:
    """The state of the view, built from ledger batches (`apply`) and discovery (`set_targets`)."""

    def __init__(self) -> None:
        self.targets: list[Target] = []
        self.targets_at: float | None = None
        self.targets_problem: str | None = None
        self.rows: dict[str, Row] = {}
        self._by_delivery: dict[str, str] = {}
        self.inbox: deque[InboundMessage] = deque(maxlen=INBOX_SHOWN)
        self.events: deque[str] = deque(maxlen=EVENTS_SHOWN)
        self.halt: str | None = None
        self.last_event: int = 0
        self.requests: dict[str, dict[str, Any]] = {}  # held agent requests, by id, from their `request` events
        self.decided: dict[str, dict[str, Any]] = {}  # the requests decided since (newest last), with their state

    # -- input ------------------------------------------------------------------------------
    def set_targets(self, targets: Iterable[Target], problem: str | None = None) -> None:
        self.targets = sorted(targets, key=lambda t: (t.host or "", not t.live, t.kind, t.name))
        self.targets_at = time.time()
        self.targets_problem = problem

    def _row(self, e: Event) -> Row | None:
        """The row an event belongs to (made on its first event), keyed by relay id when it has one."""
        rid = e.relay_id or (e.data.get("relay_id") if e.kind == "delivery" else None)
        if e.delivery and e.delivery in self._by_delivery:
            ref = self._by_delivery[e.delivery]
        elif rid and rid in self.rows:
            ref = rid
        elif e.delivery or (rid and e.kind == "plan"):
            ref = rid or e.delivery or ""
            self.rows[ref] = Row(key=e.delivery or ref, relay_id=rid, started=e.at)
        else:
            return None
        if e.delivery:
            self._by_delivery[e.delivery] = ref
        row = self.rows[ref]
        row.relay_id = row.relay_id or rid
        if e.delivery and row.key == row.relay_id:
            row.key = e.delivery
        row.updated = e.at
        return row

    def apply(self, events: Iterable[Event], inbox: Iterable[InboundMessage] = ()) -> None:
        for e in events:
            self.last_event = max(self.last_event, e.seq)
            self.events.append(self._event_line(e))
            if e.kind == "halt":
                self.halt = str(e.data.get("reason") or "relay-halt")
                continue
            if e.kind == "halt-cleared":
                self.halt = None
                continue
            if e.kind == "request":
                self._request(e)
                continue
            if e.kind.startswith(("run-", "notebook-", "dead-", "debug")) or e.kind == "turn-reply":
                continue
            row = self._row(e)
            if row is None:
                continue
            d = e.data
            if e.kind == "delivery":
                row.target = str(d.get("spec") or row.target)
                row.transport = str(d.get("transport") or row.transport)
            elif e.kind == "plan":
                row.transport = str(d.get("transport") or row.transport)
                want = re.search(r" want=(\w+)", str(d.get("payload") or "").split("]", 1)[0])
                row.want = want.group(1) if want else row.want
                if d.get("host"):
                    row.host = str(d["host"])
                    row.target = str(d.get("target") or row.target).split(" ", 1)[0]
                elif row.target == "?":
                    row.target = str(d.get("action", "")).removeprefix("send to ").strip() or row.target
            elif e.kind == "answer":
                if not d.get("approved"):
                    row.state, row.stage, row.finished = "withheld", "gate", True
                    row.evidence = "the operator answered No: nothing was sent"
                else:
                    row.state, row.stage = "approved", "gate"
            elif e.kind.startswith("stage:"):
                row.stage = e.kind.removeprefix("stage:")
                row.state = row.answered or str(d.get("state") or row.state)
                row.evidence = str(d.get("detail") or "")
            elif e.kind == "outcome":
                row.state = str(d.get("state") or row.state)
                if row.answered and row.state in DONE:
                    row.state = row.answered
                row.stage = str(d.get("stage") or row.stage)
                if d.get("reason"):
                    row.evidence = str(d["reason"])
                if d.get("target"):
                    row.target = str(d["target"])
                if d.get("host"):
                    row.host, row.transport = str(d["host"]), f"ssh {d['host']}"
                if d.get("want"):
                    row.want = str(d["want"])
                row.finished = row.state not in PENDING
            elif e.kind == "no-reply":
                row.state, row.finished = str(d.get("state") or "no_reply"), True
                row.evidence = f"no answer within {d.get('timeout', '?')} s"
            elif e.kind == "abandoned":
                row.state, row.finished = "abandoned", True
            elif e.kind == "remote-reply":  # an answer judged on the host the send was made on
                msg = d.get("message") or {}
                v = (msg.get("verdict") or {}).get("verdict") or "no verdict"
                row.answer = f"{msg.get('relay_id') or '?'} ({v}, judged on {d.get('host', '?')})"
                if v in OK_VERDICTS:
                    row.state = row.answered = "acknowledged" if row.want == "ack" else "replied"
        for m in inbox:
            self.inbox.append(m)
            self.events.append(self._inbox_line(m))
            if m.answers and m.answers in self.rows:
                row = self.rows[m.answers]
                from relay_repl.store.timeline import message_verdict

                v = message_verdict(m)
                row.answer = f"{m.relay_id or '#' + str(m.seq)} ({v})"
                row.updated = m.at
                if m.verdict is not None and m.verdict.ok:
                    row.state = row.answered = "acknowledged" if row.want == "ack" else "replied"

    # -- lines ------------------------------------------------------------------------------
    @staticmethod
    def _event_line(e: Event) -> str:
        from relay_repl.store.timeline import event_summary

        what = event_summary(e)
        if e.kind.startswith("run-"):
            what = " ".join(f"{k}={e.data[k]}" for k in ("round", "step", "target", "state") if e.data.get(k) is not None)
        rid = e.relay_id or (e.data.get("relay_id") if e.kind == "delivery" else None) or "-"
        if e.kind == "delivery":
            what = f"to {e.data.get('spec', '?')} via {e.data.get('transport', '?')}"
        return visible(f"#{e.seq} {clock(e.at)} {e.kind} {rid} {what}")

    @staticmethod
    def _inbox_line(m: InboundMessage) -> str:
        from relay_repl.store.timeline import message_verdict

        v = message_verdict(m)
        link = f"re {m.answers}" if m.answers else "unlinked"
        body = m.body
        if body == m.line and body.startswith("[relay/1 ") and "] " in body:  # a header the parser refused
            body = body.split("] ", 1)[1]  # (its fields are in the columns before): the words, not a cut header
        # the words before the long ids and the claimed sender, so a narrow pane still shows them
        return visible(f"inbox #{m.seq} {clock(m.at)} [{v}] {link}: {body}  — id {m.relay_id or '-'} from "
                       f"{m.peer or '?'}")

    def deliveries(self) -> list[Row]:
        """In flight first (oldest first), then the newest finished ones."""
        live = sorted((r for r in self.rows.values() if not r.finished), key=lambda r: r.started)
        done = sorted((r for r in self.rows.values() if r.finished), key=lambda r: r.updated)[-FINISHED_SHOWN:]
        return [*live, *done]

    def _request(self, e: Event) -> None:
        """An agent request's event: held (its first, with asker, target and words) or decided (gone)."""
        if not e.relay_id:
            return
        if e.data.get("state") == "held" and e.data.get("asker"):
            self.requests[e.relay_id] = {**e.data, "id": e.relay_id, "at": e.at}
        elif e.data.get("state") != "held":
            was = self.requests.pop(e.relay_id, None) or self.decided.pop(e.relay_id, None)
            if was is None:
                return  # decided before the view's first rows: not shown
            changes = {k: v for k, v in e.data.items() if v is not None}
            self.decided[e.relay_id] = {**was, **changes, "decided_at": e.at}
            while len(self.decided) > DECIDED_SHOWN:
                self.decided.pop(next(iter(self.decided)))

    def held_requests(self, now: float | None = None) -> list[dict[str, Any]]:
        """Agent requests held for the operator, oldest first (one past its expiry is no longer held)."""
        at = time.time() if now is None else now
        return [r for r in self.requests.values() if not (r.get("expires") and at >= float(r["expires"]))]

    def request_lines(self, width: int = 200) -> list[str]:
        """One neutralised line per held request: who asks (as established), for whom, what, and any flag."""
        lines = []
        for r in self.held_requests():
            flags = r.get("flags") or []
            flag = f" FLAG: {', '.join(map(str, flags))}" if flags else ""
            lines.append(visible(f"{r['id']} {clock(r['at'])} from {r.get('asker')} [{r.get('verdict', '?')}] to "
                                 f"{r.get('to')} want={r.get('want')} hop {r.get('hop')}{flag}: "
                                 f"{r.get('body', '')}")[:width])
        return lines

    def decided_lines(self, width: int = 200) -> list[str]:
        """One neutralised line per request decided lately (newest last): its state now and why."""
        lines = []
        for r in self.decided.values():
            why = f" ({r['why']})" if r.get("why") else ""
            sent = f"; sent as {r['delivery_id']} ({r.get('delivery_state') or '?'})" if r.get("delivery_id") else ""
            back = f"; answer to the asker {r['answer_id']} ({r.get('answer_state')})" if r.get("answer_id") else ""
            lines.append(visible(f"·{r['id']} {clock(r['decided_at'])} {r.get('state')}{why}{sent}{back}: from "
                                 f"{r.get('asker')} to {r.get('to')}: {r.get('body', '')}")[:width])
        return lines

    def target_lines(self) -> list[str]:
        if not self.targets:
            return ["(none found)" if self.targets_at else "(discovering …)"]
        rows: list[tuple[str, ...]] = [("TARGET", "STATE", "PANE", "HOST", "PID")]
        for t in self.targets:
            state = t.state if t.live else f"stale: {t.stale_reason or 'not running'}"
            rows.append((t.spec, state, t.pane or "-", t.host or "local", str(t.pid or "-")))
        return _table(rows)

    def delivery_lines(self, width: int = 200) -> list[str]:
        rows: list[tuple[str, ...]] = [("RELAY ID", "TARGET", "VIA", "STATE", "STAGE", "AGE", "LAST EVIDENCE / ANSWER")]
        now = time.time()
        for r in self.deliveries():
            age = f"{now - r.started:.0f}s" if r.started else "-"
            tail = f"answer {r.answer}" if r.answer else r.evidence
            mark = "" if not r.finished else "·"
            rows.append((mark + r.ref, r.target, r.transport, r.state, r.stage, age, " ".join(tail.split())))
        if len(rows) == 1:
            return ["(no deliveries yet)"]
        return [line[:width] for line in _table(rows)]

    def inbox_lines(self, n: int, width: int = 200) -> list[str]:
        return [self._inbox_line(m)[:width] for m in list(self.inbox)[-n:]] or ["(no messages)"]


def _table(given: Sequence[tuple[str, ...]]) -> list[str]:
    rows = [tuple(visible(c) for c in r) for r in given]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
