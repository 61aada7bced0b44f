"""The transport protocol: declared capabilities, a plan, staged sends, confirmation.

A transport never decides whether to act: the session builds the plan with
`plan()`, asks the gate, and only then calls `send()` and `confirm()`. Each
stage records what it read or did through `StageLog`, which appends to the
delivery and to the ledger's event log, so a stuck delivery can be explained.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.versions import unverified_refusal
from relay_repl.core.delivery import Delivery, DeliveryState, Evidence
from relay_repl.core.envelope import Envelope
from relay_repl.core.approval import NO_APPROVAL, Approval, Scope, check
from relay_repl.core.errors import Halted, NoApproval
from relay_repl.store.ledger import Ledger
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target


class Capabilities(BaseModel):
    """What a transport can promise; ranking compares these, never names."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    durable: bool = False        # survives a busy or offline receiver
    native_reply: bool = False   # the receiver can answer natively without help
    receipts: bool = False       # some outcomes come back to the sender
    live_only: bool = False      # needs the receiver running now
    same_uid_only: bool = False  # only inside the same-uid trust boundary
    needs_pane: bool = False     # needs a rostered tmux pane


class Look(BaseModel):
    """What a read-only look at the receiver found for one delivery (the debugger's `look()`).

    Nothing is sent to take it. `landed` is the question a retry depends on: True when
    the receiver's own evidence carries the payload, False when that evidence was read
    and does not, None when it could not be read (then nothing may be re-sent)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    transport: str
    receiver: str = "present"   # present | gone | renamed | moved | dormant
    landed: bool | None = None
    staged: bool | None = None  # tmux: the exact payload sits in the composer now
    waiting: bool | None = None  # a durable path still holds it for the receiver (a queue row): it may land later
    verdict: str
    reasons: list[str] = []
    capture: str | None = None
    records: list[dict[str, Any]] = []
    data: dict[str, Any] = {}

    def render(self) -> str:
        lines = [f"look ({self.transport}): {self.verdict}"]
        lines.append(f"  receiver: {self.receiver}; landed: "
                     f"{ {True: 'yes', False: 'no', None: 'cannot tell'}[self.landed] }"
                     + ("" if self.staged is None else f"; payload in the composer: {'yes' if self.staged else 'no'}")
                     + ("" if not self.waiting else "; waiting in a durable queue for the receiver"))
        lines += [f"  - {r}" for r in self.reasons]
        for key, value in self.data.items():
            lines.append(f"  {key}: {value}")
        for rec in self.records[:8]:
            lines.append(f"  record: {json.dumps(rec, ensure_ascii=False, default=str)[:300]}")
        if self.capture:
            lines.append("  pane now:")
            lines += ["  | " + ln for ln in self.capture.splitlines()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.render()


CONFIRM_POLL_MAX = 0.2
"""The longest sleep between two reads of the receiver's record while a send waits to be taken (the
transports' confirm): the reads were every 0.1 s however long the wait, each a worker-thread hop, so
relay's own CPU per send grew with how long a busy receiver took (issue 33: 2 ms per Claude send with
16 sessions on 2 CPUs). Each confirm starts shorter and grows to this."""

_STOPPED = frozenset({DeliveryState.FAILED, DeliveryState.REFUSED, DeliveryState.HALTED, DeliveryState.ABANDONED})


class StageLog:
    """Records each stage's evidence on the delivery and in the ledger, and is the
    stage boundary where a relay-halt stops a send.

    Every stage of every transport goes through here, so this is where a halt that
    arrived meanwhile (an inbox line, another process's ledger halt, session.halt())
    is noticed: while `armed` (the session arms it for the side-effecting part of a
    send), each recorded stage and each explicit `checkpoint()` raises `Halted` if
    a halt is in force, and the transport does nothing more.
    """

    def __init__(self, delivery: Delivery, ledger: Ledger, echo: Any = None) -> None:
        self.delivery = delivery
        self.ledger = ledger
        self.echo = echo
        self.armed = False
        self._held: list[str] | None = None  # inside `together`: the lines echoed once its commit is made

    def checkpoint(self, next_step: str) -> None:
        """Call right before a side effect (typing, a key, a write, an enqueue): raises
        `Halted` when a relay-halt is in force, so the side effect never happens."""
        if not self.armed:
            return
        halt = self.ledger.active_halt()
        if halt is not None:
            self.delivery.extra.halted_before = next_step
            raise Halted(halt.reason, halt.by)

    def __call__(self, stage: str, state: DeliveryState, detail: str, **data: Any) -> Evidence:
        ev = Evidence(stage=stage, state=state, detail=detail, data=data)
        self.delivery.evidence.append(ev)
        self.delivery.stage = stage
        self.delivery.state = state
        self.ledger.event(
            f"stage:{stage}",
            delivery=self.delivery.key,
            relay_id=self.delivery.relay_id,
            data={"state": state.value, "detail": detail, **data},
        )
        if self.echo is not None:
            line = f"  [{stage}] {state.value}: {detail}"
            if self._held is not None:
                self._held.append(line)
            else:
                self.echo(line)
        if state not in _STOPPED:
            self.checkpoint(f"the step after {stage}")
        return ev

    @contextmanager
    def together(self) -> Iterator[None]:
        """The stages recorded inside, read from one look at the receiver's evidence (a Codex read-back
        that shows the item gone and the turn carrying it), are one ledger commit (issue 33: a commit
        each before), their lines echoed once it is made: both or neither, nothing said before. Only
        while unarmed (confirming): an armed stage may raise Halted, which would take the evidence
        recorded before it along, so armed stages stay a commit each."""
        if self.armed or self._held is not None:
            yield
            return
        held: list[str] = []
        self._held = held
        try:
            with self.ledger.one_commit():
                yield
        finally:
            self._held = None
        if self.echo is not None:
            for line in held:
                self.echo(line)

    def progress(self, text: str) -> None:
        """A line for the operator during a long wait; not an event."""
        if self.echo is not None:
            self.echo(f"  … {text}")

    def fail(self, stage: str, reason: str, **data: Any) -> Evidence:
        self.delivery.reason = reason
        return self(stage, DeliveryState.FAILED, reason, **data)


class Transport(ABC):
    name: str
    """A class attribute, or set per instance by a generic transport named from its entry point."""
    capabilities: Capabilities
    relies_on: ClassVar[str | None] = None
    """The reverse-engineered client behaviour this transport trusts, in words ("the screen
    classifiers ... were"), or None. Such a transport refuses a target whose client version
    is neither pinned nor verified on this machine (`version_refusal`)."""

    def refusal(self, target: Target) -> str | None:
        """Why this transport cannot serve this target, or None."""
        if not target.live:
            return f"{target.spec} is not live"
        if self.capabilities.needs_pane and not target.pane:
            return f"{target.spec} has no rostered tmux pane"
        return self.version_refusal(target)

    def version_refusal(self, target: Target) -> str | None:
        """The version policy (agents.versions) at this seam: one line naming the version,
        what is unverified and `relay fidelity`, or None. A target whose version could not
        be read (status unknown) is let through; its plan says so."""
        if self.relies_on is None or target.client_status != "unverified":
            return None
        return unverified_refusal(target.kind, target.client_version, self.relies_on)

    def payload(self, envelope: Envelope) -> str:
        return envelope.compose()

    @abstractmethod
    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        """The receiver evidence that will count as delivered, in words."""

    def plan_notes(self, target: Target) -> tuple[str, ...]:
        """Warnings specific to this transport and target (goal threads, busy receivers...)."""
        return ()

    def plan_files(self, target: Target) -> tuple[str, ...]:
        """Every file `send` would create or replace (path and why); shown in the plan."""
        return ()

    async def before_asking(self, target: Target) -> tuple[str | None, str | None]:
        """A read-only look at the receiver before the plan is shown: (what it shows now, for the plan's
        notes; why the send would be refused, or None). A refusal here ends the send before the question
        (nothing asked, nothing done); `send` still checks everything again after the yes. Most
        transports have nothing to look at: (None, None)."""
        return None, None

    def plan(self, target: Target, envelope: Envelope, *, fallback: str = "none", notes: tuple[str, ...] = ()) -> Plan:
        notes = tuple(notes) + self.plan_notes(target)
        return Plan(
            action=f"send to {target.spec}",
            target=target.describe(),
            identified_by=target.identified_by,
            transport=self.name,
            fallback=fallback,
            payload=self.payload(envelope),
            delivered_when=self.delivered_when(target, envelope),
            notes=notes,
            files=self.plan_files(target),
            relay_id=envelope.id,
        )

    @abstractmethod
    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                   approval: Approval | None = None) -> None:
        """Do the side effect, stage by stage, under the gate's `approval` for this plan
        (`require` first: without it nothing happens)."""

    def require(self, approval: Approval | None, target: Target, payload: str | None, what: str,
                delivery: Delivery | None = None) -> Scope:
        """The approval's scope if it is live and covers this transport, `target` (spec, pid,
        address, pane, and the process start time it was approved with), `payload` and
        `delivery` (its relay id); else NoApproval, before anything is done."""
        scope = check(approval, what=what, transport=self.name, payload=payload, target=target.spec,
                      pid=target.pid, address=target.address, pane=target.pane,
                      relay_id=delivery.relay_id if delivery is not None else None)
        if scope.pid is not None and scope.proc_start is not None:
            from relay_repl.system.proc import proc_start

            now = proc_start(scope.pid)
            if now is not None and str(now) != scope.proc_start:
                raise NoApproval(f"{what} refused: pid {scope.pid} is another process now (started {now}, "
                                 f"approved {scope.proc_start}); {NO_APPROVAL}")
        return scope

    @abstractmethod
    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        """Read receiver evidence until delivered or the timeout; never re-send."""

    def __or__(self, other: Any) -> Any:
        """`a | b`: a chain that tries b only when a refused before any side effect."""
        if isinstance(other, (Transport, Chain)):
            return Chain((self,)) | other
        return NotImplemented

    def refused_before_side_effect(self, delivery: Delivery) -> bool:
        """True when this delivery was refused before anything left (a chain may then try
        the next transport). False unless the transport knows it for sure."""
        return False

    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        """Read the receiver's evidence for this delivery now, sending nothing."""
        return Look(transport=self.name, verdict=f"{self.name} has no read-only look at the receiver")

    def __repr__(self) -> str:
        caps = ", ".join(k for k, v in self.capabilities.model_dump().items() if v) or "none"
        return f"<Transport {self.name} [{caps}]>"


class Chain:
    """An ordered list of transports to try: `session.transports.codex_queue | session.transports.tmux`.

    Members are the session's transport handles (transports/chain.py) or, inside the
    package, transport objects; `chain.send(target, body, ...)` is `session.send(...,
    transport=chain)`: planned and asked like any send."""

    def __init__(self, members: Iterable[Any]) -> None:
        self.members: tuple[Any, ...] = tuple(members)

    def __or__(self, other: Any) -> Chain:
        if isinstance(other, Chain):
            return Chain(self.members + other.members)
        if isinstance(other, Transport) or type(other).__name__ == "TransportHandle":
            return Chain((*self.members, other))
        return NotImplemented

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.members]

    async def send(self, target: Any, body: str, **kw: Any) -> Any:
        """`session.send(target, body, transport=<this chain>, ...)`: planned, asked y/N, confirmed."""
        from relay_repl.core.errors import UsageError

        send = next((m._send for m in self.members if type(m).__name__ == "TransportHandle"), None)
        if send is None:
            raise UsageError("this chain was not built from session.transports: send it with "
                             "session.send(target, body, transport=chain)")
        return await send(target, body, transport=self, **kw)

    def __str__(self) -> str:
        return " | ".join(self.names)

    def __repr__(self) -> str:
        return f"<Chain {self} (the next only when the previous refused before any side effect)>"
