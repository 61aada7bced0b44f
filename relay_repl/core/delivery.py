"""A delivery as an explicit state, never a boolean.

Operators of neighbouring tools keep hitting "exit 0 but the text was typed and
never submitted" and "reported failed but it was in fact queued". So every
send carries a state from this vocabulary, the stage it reached, and the
evidence each stage read; the front ends map states to outcomes and exit codes.
"""

from __future__ import annotations

import time
import uuid
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.plan import Plan


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
    ACKNOWLEDGED = "acknowledged"  # receiver answered carrying our relay id
    FAILED = "failed"              # a stage failed; see reason
    HALTED = "halted"              # a relay-halt stopped it after the gate or at a stage boundary; see reason
    INTERRUPTED = "interrupted"    # its process died mid-send (found on a later start): look before re-sending
    UNKNOWN = "unknown"            # evidence could not be read
    ABANDONED = "abandoned"        # the operator gave up on it (debugger): no further stage is run


DELIVERED = frozenset({DeliveryState.IN_TURN, DeliveryState.ACKNOWLEDGED})
NOT_DONE = frozenset({DeliveryState.WITHHELD, DeliveryState.REFUSED, DeliveryState.FAILED, DeliveryState.HALTED,
                      DeliveryState.ABANDONED})
# every other state is pending: the delivery may still complete, so it is never re-sent blindly


class Evidence(BaseModel):
    """What one stage read or did, with when."""

    model_config = ConfigDict(frozen=True)

    stage: str
    state: DeliveryState
    detail: str
    data: dict[str, Any] = Field(default_factory=dict)
    at: float = Field(default_factory=time.time)


class Delivery(BaseModel):
    """One send in progress: its plan, the stages it passed, and its outcome."""

    model_config = ConfigDict(validate_assignment=True)

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
    extra: dict[str, Any] = Field(default_factory=dict)

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
        why = f": {self.reason}" if self.reason else ""
        where = f" at stage {self.stage}" if self.outcome == "pending" else ""
        return f"{self.outcome}{where} ({self.state.value}) via {self.transport} to {self.target}{why}"

    def __repr__(self) -> str:
        return f"<Delivery {self.key} {self.relay_id or ''} {self.summary()}>"
