"""The one-delivery debugger: look at a stuck delivery, step it, resume it, abandon it.

Why it is rebuilt from the ledger and not kept in memory: the delivery that needs
debugging is usually one a `relay send` left pending (exit 3) in a process that has
since exited. The ledger holds every plan, answer and stage with the evidence it
read, plus (event `delivery`) the target as it was resolved and (event `outcome`)
the transport's own notes (the pane, the queue item, the msg_id), so any later
process can carry on exactly where the sender stopped.

Rules (the same as the send path, never weaker):
- `look()` is read-only: it sends nothing, ever.
- `step()` performs exactly ONE stage. A stage with a side effect (press Enter once)
  shows its own plan and asks y/N first; No leaves the receiver untouched.
- A stage that could make the payload land twice is refused unless a fresh look
  shows it has not landed; and a payload whose whereabouts cannot be read is never
  typed again (the bytes may still be waiting in a stalled terminal).
- A receiver that died, was renamed or moved to another pane is reported as such,
  never as an exception.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from relay_repl.core.approval import Approval
from relay_repl.core.controls import safe_echo, visible
from relay_repl.core.delivery import Delivery, DeliveryState, Evidence
from relay_repl.core.errors import DiscoveryError, RelayError
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target
from relay_repl.store.ledger import Event, Ledger
from relay_repl.transports.base import Look, StageLog, Transport
from relay_repl.session.core.gating import GateAnswer


class DebugHost(Protocol):
    """What a Debugger uses of the session that made it (`Session` is one).

    A protocol rather than an import of Session: the session imports the debugger, so the
    debugger naming Session back was an import cycle (hidden from the layer contract by a
    TYPE_CHECKING import here and a function-level one there; issue 19)."""

    @property
    def ledger(self) -> Ledger: ...

    @property
    def _transports(self) -> dict[str, Transport]: ...

    @property
    def echo(self) -> Callable[[str], None] | None: ...

    async def refresh(self) -> list[Target]: ...

    async def target(self, spec: str | Target) -> Target: ...

    async def _gated(self, plan: Plan, *, delivery: str | None = None,
                     target: Target | None = None) -> GateAnswer: ...

    async def _run_armed(self, d: Delivery, log: StageLog, approval: Approval | None,
                         step: Callable[[Approval], Awaitable[None]]) -> None: ...

    def record_outcome(self, d: Delivery, **more: Any) -> None: ...

CONFIRM_WAIT = 10.0
"""Seconds one `confirm` step reads receiver evidence before it stops (read-only)."""


class Recorded(BaseModel):
    """A delivery rebuilt from the ledger, with the target as it was resolved at send time."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    delivery: Delivery
    target: Target | None = None
    approved: bool | None = None


def _recorded_target(data: Any) -> Target | None:
    """The target a delivery event recorded; one recorded before its kind's detail had its present
    shape comes back without that detail (the common fields are what the walk shows)."""
    if not isinstance(data, dict):
        return None
    for attempt in (data, {k: v for k, v in data.items() if k != "detail"}):
        try:
            return Target.model_validate(attempt)
        except ValueError:
            continue
    return None


def _plan_target_spec(plan: Plan | None) -> str | None:
    if plan and plan.action.startswith("send to "):
        return plan.action[len("send to "):].strip()
    return None


def rebuild(ledger: Ledger, ref: str) -> Recorded:
    """The delivery with key or relay id `ref`, as the ledger recorded it (the newest one for an id)."""
    ref = ref.strip()
    events = ledger.events(delivery=ref)
    if not events:
        keys = [e.delivery for e in ledger.events(relay_id=ref) if e.delivery]
        if not keys:
            raise DiscoveryError(f"no delivery or relay id {ref!r} in the ledger at {ledger.path}; "
                             "`relay log` lists recent ones")
        events = ledger.events(delivery=keys[-1])
    return _from_events(events)


def _from_events(events: list[Event]) -> Recorded:
    key = events[0].delivery or ""
    plan: Plan | None = None
    target: Target | None = None
    transport: str | None = None
    relay_id: str | None = None
    approved: bool | None = None
    state, stage, reason = DeliveryState.PLANNED, "plan", None
    evidence: list[Evidence] = []
    extra: dict[str, Any] = {}
    started = events[0].at
    for e in events:
        relay_id = relay_id or e.relay_id
        if e.kind == "delivery":
            transport = e.data.get("transport") or transport
            relay_id = e.data.get("relay_id") or relay_id
            target = _recorded_target(e.data.get("target"))
        elif e.kind == "plan":
            try:
                plan = Plan.model_validate(e.data)
            except ValueError:
                plan = None
            if plan:
                transport = transport or plan.transport
        elif e.kind == "answer":
            approved = bool(e.data.get("approved"))
        elif e.kind.startswith("stage:"):
            data = dict(e.data)
            st = DeliveryState(data.pop("state", "unknown"))
            detail = str(data.pop("detail", ""))
            evidence.append(Evidence(stage=e.kind[len("stage:"):], state=st, detail=detail, data=data, at=e.at))
            state, stage = st, e.kind[len("stage:"):]
            if st in (DeliveryState.FAILED, DeliveryState.REFUSED):
                reason = detail
        elif e.kind == "outcome":
            state = DeliveryState(e.data.get("state") or state.value)
            stage = e.data.get("stage") or stage
            reason = e.data.get("reason") or reason
            if isinstance(e.data.get("extra"), dict):
                extra = e.data["extra"]
    spec = (target.spec if target else None) or _plan_target_spec(plan) or "?"
    extra = {**_stage_extra(evidence), **extra}
    d = Delivery(key=key, relay_id=relay_id, target=spec, transport=transport or "?", plan=plan, state=state,
                 stage=stage, reason=reason, evidence=evidence, started=started, extra=extra)
    return Recorded(delivery=d, target=target, approved=approved)


def _stage_extra(evidence: list[Evidence]) -> dict[str, Any]:
    """What a transport's stages recorded of its own ids (the queue item, its client id, the socket frame's
    msg_id): the outcome's `extra` holds them, but a send killed before its outcome left only its stages,
    and without them a later look cannot find the item (it would say nothing was queued)."""
    out: dict[str, Any] = {}
    for ev in evidence:
        for key in ("item_id", "msg_id", "client_id"):
            if isinstance(ev.data.get(key), str) and key not in out:
                out[key] = ev.data[key]
        row = ev.data.get("row")
        if isinstance(row, dict) and isinstance(row.get("client_id"), str):
            out.setdefault("client_id", row["client_id"])
    return out


class Receiver(BaseModel):
    """Where the receiver is now, compared with where the delivery was sent."""

    model_config = ConfigDict(frozen=True)

    status: str  # present | gone | renamed | moved | dormant
    detail: str
    target: Target | None = None


def _pid_alive(pid: int | None) -> bool:
    from relay_repl.system.proc import pid_alive

    return bool(pid) and pid_alive(pid)


class Debugger:
    """`dbg = session.debugger(d_or_id)`: prints as a table of the stages done and the one next.

    `await dbg.look()` reads the receiver (read-only); `await dbg.step()` runs exactly the
    next stage (asking y/N before a side effect); `await dbg.resume()` runs the rest, gated
    the same way; `dbg.abandon(reason)` records that you gave up on it.
    """

    def __init__(self, session: DebugHost, recorded: Recorded) -> None:
        self.session = session
        self.delivery = recorded.delivery
        self.sent_to = recorded.target
        self.approved = recorded.approved
        self.last_look: Look | None = None
        self._where: Receiver | None = None

    # -- what is next ------------------------------------------------------------------
    @property
    def next_stage(self) -> str:
        """The stage `step()` would run, in words ('' when there is none)."""
        d = self.delivery
        if d.outcome != "pending":
            return ""
        if d.state is DeliveryState.PLANNED:
            return "send (the gate never said yes, or the sender stopped before any stage)"
        if d.state is DeliveryState.TYPED:
            return "submit: press Enter once, if the exact payload still sits in the composer"
        return "confirm: read the receiver's evidence (read-only)"

    def _declined(self, d: Delivery, log: StageLog, nothing: str, withheld: str | None) -> None:
        """The step's plan was answered No, or a relay-halt arrived while it was shown (`withheld`: the
        gate withheld the yes): the halt stops the delivery, as it does a send."""
        if withheld is None:
            self._say(f"declined: {nothing}")
            return
        d.reason = f"{withheld}: {nothing}"
        log("halt", DeliveryState.HALTED, d.reason)
        self._say(f"withheld: {d.reason}")

    def _say(self, text: str) -> None:
        (self.session.echo or safe_echo(print))(text)

    # -- the receiver now --------------------------------------------------------------------
    async def receiver(self) -> Receiver:
        """Re-discover, then compare with the target the delivery was sent to."""
        try:
            targets = await self.session.refresh()
        except RelayError as exc:
            return Receiver(status="gone", detail=f"discovery failed: {exc}")
        rec, spec = self.sent_to, self.delivery.target
        if rec is None:  # a ledger from before targets were recorded: resolve by name
            try:
                return Receiver(status="present", detail=f"{spec} resolves now", target=await self.session.target(spec))
            except RelayError as exc:
                return Receiver(status="gone", detail=f"receiver gone: {exc}")
        # the address is what the transports reach (a Claude process's own socket, a Codex thread id)
        same = ([t for t in targets if t.kind == rec.kind and t.address == rec.address] if rec.address else
                [t for t in targets if t.kind == rec.kind and rec.pid and t.pid == rec.pid])
        live = [t for t in same if t.live]
        if live:
            t = live[0]
            if t.name != rec.name:
                return Receiver(status="renamed", target=t,
                                detail=f"receiver renamed: {rec.spec} is now {t.spec} (same pid {t.pid})")
            if rec.pane and t.pane != rec.pane:
                return Receiver(status="moved", target=t,
                                detail=f"receiver changed pane: sent to pane {rec.pane}, now {t.pane or 'no pane'}")
            return Receiver(status="present", target=t, detail=f"{t.describe()} (the session it was sent to)")
        if rec.pid and _pid_alive(rec.pid) and not rec.live:
            return Receiver(status="dormant", target=rec, detail=f"{rec.spec} was not running when sent")
        dormant = [t for t in same if t.transports and self.delivery.transport in t.transports]
        if dormant:
            return Receiver(status="dormant", target=dormant[0],
                            detail=f"{rec.spec} is not running; {self.delivery.transport} keeps what was sent for it")
        now = [t for t in targets if t.spec == rec.spec and t.live]
        after = f"; {rec.spec} now names another session ({now[0].describe()})" if now else ""
        what = f"pid {rec.pid} no longer runs" if rec.pid and not _pid_alive(rec.pid) else "no longer discovered"
        return Receiver(status="gone", detail=f"receiver gone: {rec.spec} ({what}){after}")

    # -- walk ----------------------------------------------------------------------------
    async def walk(self, recheck: float = 5.0) -> Delivery:
        """Walk the delivery's stages with the evidence each one read, then, if it is still
        pending, read the receiver's evidence again (read-only: nothing is re-sent, so a
        duplicate cannot happen) for up to `recheck` seconds. (What `session.debug(d)` did.)"""
        d = self.delivery
        say = self._say
        say(f"{d!r}")
        if d.plan:
            say(f"  payload: {d.plan.payload}")
            say(f"  delivered means: {d.plan.delivered_when}")
        for i, ev in enumerate(d.evidence, 1):
            when = time.strftime("%H:%M:%S", time.localtime(ev.at))
            say(f"  {i}. {when} [{ev.stage}] {ev.state.value}: {ev.detail}")
            for key, value in list(ev.data.items())[:6]:
                text = str(value)
                say(f"       {key}: {text[:160]}{'…' if len(text) > 160 else ''}")
        self.session.ledger.event("debug", delivery=d.key, relay_id=d.relay_id, data={"state": d.state.value})
        if d.outcome != "pending":
            say(f"  final: {d.summary()}")
            return d
        if d.state is DeliveryState.TYPED:
            say("  the payload was typed but never shown in full, so Enter was never pressed; look at the pane "
                "(`relay lab attach NAME` or `tmux attach`) and submit or clear it yourself: relay will not")
            return d
        transports = self.session._transports
        if d.plan is None or d.transport not in transports:
            say("  no transport to re-read evidence with")
            return d
        await self.session.refresh()
        target = await self.session.target(d.target)
        say(f"  re-reading receiver evidence for up to {recheck:g}s (nothing is sent) …")
        await transports[d.transport].confirm(d, target, d.plan.payload,
                                              StageLog(d, self.session.ledger, echo=say), recheck)
        say(f"  now: {d.summary()}")
        return d

    # -- look ----------------------------------------------------------------------------
    async def look(self, record: bool = True) -> Look:
        """Read the receiver now, read-only; prints and returns what was found. `record=False`
        (`relay debug --look`, a read-only command) leaves the ledger as it was."""
        d = self.delivery
        where = self._where = await self.receiver()
        tr = self.session._transports.get(d.transport)
        if where.target is None or where.status == "gone":
            lk = Look(transport=d.transport, receiver="gone", landed=None, verdict=where.detail)
        elif tr is None or d.plan is None:
            lk = Look(transport=d.transport, receiver=where.status, landed=None,
                      verdict=f"no {d.transport} transport here to read the receiver with")
        else:
            try:
                lk = await tr.look(d, where.target, d.plan.payload)
            except (RelayError, OSError, ValueError) as exc:
                lk = Look(transport=d.transport, receiver=where.status, landed=None,
                          verdict=f"the receiver's evidence could not be read: {exc}")
            status = where.status if where.status != "present" else lk.receiver
            reasons = lk.reasons if where.status == "present" else [where.detail, *lk.reasons]
            lk = lk.model_copy(update={"receiver": status, "reasons": reasons})
        self.last_look = lk
        if record:
            self.session.ledger.event("debug-look", delivery=d.key, relay_id=d.relay_id,
                                      data={"receiver": lk.receiver, "landed": lk.landed, "staged": lk.staged,
                                            "verdict": lk.verdict})
        return lk

    # -- step / resume / abandon -------------------------------------------------------------
    async def step(self) -> Delivery:
        """Run exactly the next stage and stop; a side effect asks y/N first."""
        d = self.delivery
        if d.outcome != "pending":
            self._say(f"nothing to step: {d.summary()}")
            return d
        lk = await self.look()
        if lk.receiver == "gone":
            self._say(f"not stepping: {lk.verdict}")
            return d
        tr = self.session._transports.get(d.transport)
        target = self._where.target if self._where else None
        if tr is None or target is None or d.plan is None:
            self._say(f"not stepping: {lk.verdict}")
            return d
        log = StageLog(d, self.session.ledger, echo=self._say)
        payload = d.plan.payload
        if d.state is DeliveryState.TYPED:
            if lk.receiver in ("moved", "renamed"):
                self._say(f"not pressing Enter: {lk.verdict}; {'; '.join(lk.reasons[:1])}")
                return d
            if lk.landed:
                self._say("the payload has already landed: the next stage is confirm (read-only)")
                await self._confirm(tr, target, payload, log)
                return d
            if lk.landed is None or not lk.staged:
                self._say(f"refused: Enter would not submit this payload, and typing it again could land it twice "
                          f"({lk.verdict}). Look again later; abandon it if it never shows")
                return d
            plan = Plan(action=f"submit the staged payload to {d.target} (debugger step)",
                        target=target.describe(), identified_by=target.identified_by, transport=d.transport,
                        fallback="none", payload="<Enter> (one key; nothing is typed)",
                        delivered_when=d.plan.delivered_when, relay_id=d.relay_id,
                        notes=(f"the composer already holds exactly: {payload}",
                               "a fresh look shows the receiver has not taken it; the screen is re-read right "
                               "before the key and Enter is withheld if anything changed"))
            submit = getattr(tr, "submit_staged", None)
            if submit is None:
                self._say(f"{d.transport} has no separate submit stage")
                return d
            answer = await self.session._gated(plan, delivery=d.key, target=target)
            approval = answer.approval
            if approval is None:
                self._declined(d, log, "no key was sent", answer.withheld)
                return d
            await self.session._run_armed(d, log, approval,
                                          lambda a: submit(d, target, payload, log, approval=a))
        elif d.state is DeliveryState.PLANNED:
            if lk.landed is not False or d.evidence:
                self._say(f"refused: sending now could land it twice ({lk.verdict}); nothing was sent")
                return d
            answer = await self.session._gated(d.plan, delivery=d.key, target=target)
            approval = answer.approval
            if approval is None:
                self._declined(d, log, "nothing was sent", answer.withheld)
                return d
            if self.session.ledger.active_halt() is None:  # a halt after the yes: nothing is sent or recorded
                self.session.ledger.record_sent(d.relay_id or "", 0, d.target)
            await self.session._run_armed(d, log, approval, lambda a: tr.send(d, target, payload, log, approval=a))
        else:
            await self._confirm(tr, target, payload, log)
        self.session.record_outcome(d, debugger=True)
        return d

    async def _confirm(self, tr: Any, target: Target, payload: str, log: StageLog) -> None:
        d = self.delivery
        before = (d.state, len(d.evidence))
        self._say(f"reading receiver evidence for up to {CONFIRM_WAIT:g}s (nothing is sent) …")
        await tr.confirm(d, target, payload, log, CONFIRM_WAIT)
        if (d.state, len(d.evidence)) == before:
            self._say(f"no new receiver evidence: still {d.state.value}")

    async def resume(self) -> Delivery:
        """Run the remaining stages, each gated as in `step()`; stops at the first that does not advance."""
        d = self.delivery
        for _ in range(6):
            if d.outcome != "pending":
                break
            before = (d.state, len(d.evidence))
            await self.step()
            if (d.state, len(d.evidence)) == before:
                break
        self._say(f"now: {d.summary()}")
        return d

    def abandon(self, reason: str = "abandoned by the operator") -> Delivery:
        """Record that no further stage will be run for it (nothing is sent or removed)."""
        d = self.delivery
        if d.outcome in ("delivered", "abandoned"):
            self._say(f"not abandoning: {d.summary()}")
            return d
        d.state, d.reason = DeliveryState.ABANDONED, reason
        self.session.ledger.event("abandoned", delivery=d.key, relay_id=d.relay_id, data={"reason": reason})
        self.session.record_outcome(d, debugger=True)
        return d

    # -- printing ----------------------------------------------------------------------------
    def table(self) -> str:
        d = self.delivery
        head = f"delivery {d.key}  relay id {d.relay_id or '-'}  to {d.target} via {d.transport}"
        rows = [("#", "TIME", "STAGE", "STATE", "EVIDENCE")]
        for i, ev in enumerate(d.evidence, 1):
            ev_keys = [k for k in ev.data if k not in ("capture", "screen", "reading", "hint")]
            extra = f" [{', '.join(ev_keys[:5])}]" if ev_keys else ""
            rows.append((str(i), time.strftime("%H:%M:%S", time.localtime(ev.at)), ev.stage, ev.state.value,
                         visible(ev.detail + extra)[:110]))  # a line break in it never starts a row
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = [head]
        if d.plan:
            lines.append(f"  payload: {visible(d.plan.payload)}")
        if self.approved is False:
            lines.append("  the operator answered No at the gate: nothing was sent")
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4] for r in rows]
        if len(rows) == 1:
            lines.append("  (no stage ran)")
        lines.append(f"  now: {d.summary()}")
        nxt = self.next_stage
        lines.append(f"  next: {nxt}" if nxt else "  next: nothing (the delivery is finished)")
        return visible("\n".join(lines), keep_newlines=True)  # payloads and evidence may hold a peer's text

    def __repr__(self) -> str:
        return self.table()
