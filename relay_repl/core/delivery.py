"""A delivery as an explicit state, never a boolean.

Operators of neighbouring tools keep hitting "exit 0 but the text was typed and
never submitted" and "reported failed but it was in fact queued". So every
send carries a state from this vocabulary, the stage it reached, and the
evidence each stage read; the front ends map states to outcomes and exit codes.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from relay_repl.core.readable import Readable

from relay_repl.core.turn_reply import TurnReply
from relay_repl.core.controls import gist, visible
from relay_repl.core.inbound import InboundMessage
from relay_repl.core.plan import Plan

ReplyWaiter = Callable[["Delivery", float], Awaitable["InboundMessage | None"]]


class DeliveryState(str, Enum):
    PLANNED = "planned"            # plan built, gate not yet asked
    WITHHELD = "withheld"          # gate said No (or no terminal): nothing happened
    REFUSED = "refused"            # a rule refused before any side effect (loop guard, screen, downgrade)
    TYPED = "typed"                # tmux: payload staged in the composer, Enter not pressed
    SUBMITTED = "submitted"        # tmux: Enter pressed, no receiver evidence yet
    QUEUED = "queued"              # native queue/socket accepted it, not yet consumed
    DEQUEUED = "dequeued"          # consumed from the queue, turn not yet seen
    HELD = "held"                  # receiver parked it for approval
    IN_TURN = "in_turn"            # receiver evidence: the payload is in the receiver's turn/transcript
    ACKNOWLEDGED = "acknowledged"  # an ack linked to our relay id (re=) reached our inbox, verified
    REPLIED = "replied"            # a reply linked to our relay id (re=) reached our inbox, verified
    NO_REPLY = "no_reply"          # delivered, but the reply asked for did not come within the wait
    FAILED = "failed"              # a stage failed; see reason
    HALTED = "halted"              # a relay-halt stopped it after the gate or at a stage boundary; see reason
    INTERRUPTED = "interrupted"    # its process died mid-send (found on a later start): look before re-sending
    UNKNOWN = "unknown"            # evidence could not be read
    ABANDONED = "abandoned"        # the operator gave up on it (debugger): no further stage is run


DELIVERED = frozenset({DeliveryState.IN_TURN, DeliveryState.ACKNOWLEDGED, DeliveryState.REPLIED,
                       DeliveryState.NO_REPLY})
ANSWERED = frozenset({DeliveryState.ACKNOWLEDGED, DeliveryState.REPLIED})
NOT_DONE = frozenset({DeliveryState.WITHHELD, DeliveryState.REFUSED, DeliveryState.FAILED, DeliveryState.HALTED,
                      DeliveryState.ABANDONED})
# every other state is pending: the delivery may still complete, so it is never re-sent blindly


class Evidence(BaseModel):
    """What one stage read or did, with when."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    stage: str
    state: DeliveryState
    detail: str
    data: dict[str, Any] = Field(default_factory=dict)
    at: float = Field(default_factory=time.time)


class DeliveryExtra(BaseModel):
    """What a send records beyond its stages, each field with its one writer (typed, so a
    misspelt key fails where it is written). Read back from the ledger by the debugger."""

    model_config = ConfigDict(validate_assignment=True, extra="ignore", defer_build=True)  # an older ledger's keys are
    # dropped; built on first use, off the targets path

    halted_before: str | None = Field(default=None, description="the step a relay-halt stopped it before")
    reply_via: str | None = Field(default=None, description="the reply route asked for (native, relay-reply, mcp, turn)")
    turn_ended: str | None = Field(default=None, description="why no turn reply can come any more")
    turn_reply: TurnReply | None = Field(default=None, description="the turn reply read from the receiver's record")
    replayed: bool = Field(default=False, description="a notebook cell's send shown again from the ledger")
    msg_id: str | None = Field(default=None, description="socket transports: the frame id the receiver's record carries")
    sender_pid: int | None = Field(default=None, description="socket transports: the pid that wrote the frame")
    sender_proc_start: str | None = Field(default=None, description="and its start time")
    unverified_claims: list[str] = Field(default_factory=list, description="receipts whose sender could not be proven")
    item_id: str | None = Field(default=None, description="queue transports: the queued item's id")
    client_id: str | None = Field(default=None, description="queue transports: the id its turn's user message carries")
    tmux: dict[str, Any] | None = Field(default=None, description="the tmux transport's progress (its TmuxProgress, "
                                        "which reads and writes this)")


class Delivery(Readable, BaseModel):
    """One send in progress: its plan, the stages it passed, and its outcome."""

    model_config = ConfigDict(validate_assignment=True, defer_build=True)  # built on first use, off the targets path

    key: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    relay_id: str | None = None
    target: str
    transport: str
    plan: Plan | None = None
    state: DeliveryState = DeliveryState.PLANNED
    stage: str = "plan"
    reason: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    started: float = Field(default_factory=time.time)
    extra: DeliveryExtra = Field(default_factory=DeliveryExtra)
    want: str = "none"
    reply: InboundMessage | None = Field(default=None, description="the verified answer linked to this delivery (re=)")
    replies: list[InboundMessage] = Field(default_factory=list,
                                          description="every inbox message whose re= names this delivery, any verdict")
    _waiter: ReplyWaiter | None = PrivateAttr(default=None)

    async def wait_reply(self, timeout: float = 60.0) -> InboundMessage | None:
        """Wait (without blocking the REPL) for the verified answer to this delivery.

        Returns the answer (also in `d.reply`), or None after `timeout` seconds,
        leaving `d.state` as `no_reply` (the delivery itself stays delivered).
        A relay-halt arriving meanwhile stops the wait with LoopHalt.
        """
        if self._waiter is None:
            if self.reply is not None:
                return self.reply
            from relay_repl.core.errors import UsageError

            raise UsageError("this delivery was not made by a session, so nothing is listening for its reply")
        # the session's waiter returns an answer already in at once, but a relay-halt in force
        # (even one carried by that very answer) still stops the wait: no wait continues under a halt
        return await self._waiter(self, timeout)

    @property
    def outcome(self) -> str:
        if self.state in DELIVERED:
            return "delivered"
        if self.state is DeliveryState.HALTED:
            return "halted"
        if self.state is DeliveryState.ABANDONED:
            return "abandoned"
        if self.state in NOT_DONE:
            return "refused" if self.state in {DeliveryState.WITHHELD, DeliveryState.REFUSED} else "failed"
        return "pending"

    @property
    def exit_code(self) -> int:
        """0 delivered, 3 pending (stage named in the message), 1 refused, failed or halted."""
        return {"delivered": 0, "pending": 3}.get(self.outcome, 1)

    def summary(self) -> str:
        """Outcome, target and why in one line; an answer's sender, verdict and first words after."""
        why = f": {self.reason}" if self.reason else ""
        if self.reply is not None:
            verdict = self.reply.verdict.shown if self.reply.verdict else "no verdict"
            why += f"; answer {self.reply.relay_id or ''} from {self.reply.sender} ({verdict}): \"{gist(self.reply.body, 80)}\""
        where = f" at stage {self.stage}" if self.outcome == "pending" else ""
        return visible(f"{self.outcome}{where} ({self.state.value}) via {self.transport} to {self.target}{why}")

    def __repr__(self) -> str:
        """What matters first: the outcome and to whom (summary), then the ids to look it up by."""
        return f"<Delivery {self.summary()}; id {self.relay_id or '-'}, key {self.key}>"


class DeliveryTable(list):
    """This session's deliveries (`session.deliveries`), printed as a table: newest last, each with
    its outcome, where it stands and its answer, so the list reads at a glance in the REPL."""

    def __repr__(self) -> str:
        if not self:
            return "no deliveries yet (`await session.send(...)` makes one)"
        rows: list[tuple[str, ...]] = [("RELAY ID", "TARGET", "TRANSPORT", "OUTCOME", "STATE", "STAGE", "ANSWER")]
        for d in self:
            answer = "-"
            if d.reply is not None:
                verdict = d.reply.verdict.shown if d.reply.verdict else "no verdict"
                answer = f"{verdict}: {gist(d.reply.body, 50)}"
            rows.append((d.relay_id or "-", d.target, d.transport, d.outcome, d.state.value, d.stage, answer))
        rows = [tuple(visible(c) for c in r) for r in rows]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
