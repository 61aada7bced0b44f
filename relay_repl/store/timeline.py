"""Readable tables over ledger rows: the events of one relay id, the operator's inbox.

Why objects and not printed text: in the REPL `session.why(id)` and `session.inbox`
are values you can index and filter, and they print as the same table `relay why`
shows, instead of a screenful of reprs.
"""

from __future__ import annotations

import time
from typing import Any

from relay_repl.core.controls import visible
from relay_repl.core.peertext import consent_acts, consent_flag
from relay_repl.core.errors import UsageError
from relay_repl.store.ledger import Event, InboxMessage


def _clock(at: float, full: bool = False) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S" if full else "%H:%M:%S", time.localtime(at))


def event_summary(e: Event) -> str:
    """One line saying what an event recorded."""
    d = e.data
    if e.kind == "plan":
        return f"plan shown: {d.get('transport', '?')} to {d.get('target', '?')}"
    if e.kind == "answer":
        return "approved" if d.get("approved") else f"declined{': ' + d['why'] if d.get('why') else ''}"
    if e.kind.startswith("stage:") or e.kind == "outcome":
        text = f"{d.get('state', '')}: {d.get('detail') or d.get('reason') or ''}".rstrip(": ")
        return text
    for key in ("detail", "reason", "verdict", "state", "line"):
        if d.get(key):
            return str(d[key])
    return ""


def format_events(events: list[Event], *, full_time: bool = True, width: int = 120) -> str:
    # each cell inert on its own: a line break in a stage's detail (a receiver's words) never starts a row
    rows = [(str(e.seq), _clock(e.at, full_time), visible(e.kind), visible(e.relay_id or "-"), visible(event_summary(e)))
            for e in events]
    head = ("SEQ", "TIME", "EVENT", "RELAY ID", "WHAT")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(4)]
    out = []
    for r in [head, *rows]:
        line = "  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4]
        out.append(line if len(line) <= width else line[: width - 1] + "…")
    return "\n".join(out)


class Timeline(list):
    """Every event recorded for one relay id, oldest first; prints as a table.

    `answers` are the inbox messages whose `re=` header names this id (linked by the
    header, never by the body), shown beside the send with their verdicts;
    `received` is the inbox message that carried this id, if one did.
    """

    def __init__(self, relay_id: str, events: list[Event], answers: list[InboxMessage] | None = None,
                 received: list[InboxMessage] | None = None) -> None:
        super().__init__(events)
        self.relay_id = relay_id
        self.answers = list(answers or [])
        self.received = list(received or [])

    def __repr__(self) -> str:
        if not self and not self.received:
            return f"no events for relay id {self.relay_id!r} (`relay log` lists recent ones)"
        out = [f"relay id {self.relay_id}: {len(self)} events"]
        if self:
            out.append(format_events(list(self), full_time=False))
        for m in self.received:
            link = f"answers {m.answers}" if m.answers else "unlinked (answers nothing sent here)"
            out.append(f"received as inbox #{m.seq} from {m.peer or '?'}: {link}")
            out.append(f"  verdict {m.verdict}" if m.verdict else f"  verdict {inbox_verdict(m.origin)}")
        for m in self.answers:
            out.append(f"answer: inbox #{m.seq} {m.relay_id or ''}: {m.body!r}")
            if consent_flag(m.body):
                out.append(f"  FLAG: {consent_flag(m.body)}")
            out.append(f"  verdict {m.verdict}" if m.verdict else f"  verdict {inbox_verdict(m.origin)}")
        if not self.answers and any(e.kind == "plan" and e.data.get("reply_route") for e in self):
            out.append("answer: none received yet")
        # peer text (lines, claims) never reaches the terminal raw, and a line break in it never starts a line
        return "\n".join(visible(line) for part in out for line in part.split("\n"))


def message_verdict(m: InboxMessage) -> str:
    """The verdict, with the session the kernel pid was found to be (never the claim)."""
    if m.verdict is not None:
        return m.verdict.shown + (f" {m.verdict.session}" if m.verdict.session else "")
    return inbox_verdict(m.origin)


def inbox_verdict(origin: dict[str, Any]) -> str:
    """The verdict on who sent an inbound message, from its kernel pid (never the claimed name)."""
    for key in ("verdict", "origin_verdict"):
        if origin.get(key):
            v = origin[key]
            return str(v.get("verdict") if isinstance(v, dict) else v)
    if origin.get("malformed"):
        return "malformed"
    pid = origin.get("verifiedPeerPid")
    return f"pid {pid}, unverified" if pid else "unknown process"


class InboxTable(list):
    """The messages that reached the operator's inbox; prints as a table with their verdicts."""

    def __call__(self, *args: object, **kwargs: object) -> None:
        """`session.inbox()`: it is the table itself, so say so rather than "not callable"."""
        raise UsageError("session.inbox is the table itself, not a method: type `session.inbox` to see it "
                         "(`session.inbox[-1]` is the newest message)")

    def __repr__(self) -> str:
        if not self:
            return "inbox: no messages yet (replies appear here and above the prompt)"
        rows = [("#", "TIME", "FROM", "VERDICT", "PID", "RELAY ID", "ANSWERS", "LINE")]
        for m in self:
            assert isinstance(m, InboxMessage)
            line = visible(m.line if len(m.line) <= 70 else m.line[:69] + "…")
            acts = consent_acts(m.body)
            line = f"[FLAG asks: {', '.join(acts)}] {line}" if acts else line
            pid = str(m.origin.get("verifiedPeerPid") or "?")
            rows.append((str(m.seq), _clock(m.at), m.peer or "?", message_verdict(m), pid, m.relay_id or "-",
                         m.answers or "unlinked", line))
        rows = [(*(visible(c) for c in r),) for r in rows]  # type: ignore[misc]  # FROM is a claim: shown, never acted on by the terminal
        widths = [max(len(r[i]) for r in rows) for i in range(7)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:7], widths)) + "  " + r[7] for r in rows)
