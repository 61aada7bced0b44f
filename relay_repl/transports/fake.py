"""An in-memory transport and target, for unit tests and the offline demo.

It stands in for a receiver, not for a real transport: tests of codex-queue,
the Claude socket or tmux run against the real clients in the lab. What it
proves is the session's own rules: nothing is delivered before the gate says
yes, and exactly the planned payload arrives.
"""

from __future__ import annotations

from relay_repl.core.approval import Approval
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target
from relay_repl.transports.base import Capabilities, Look, StageLog, Transport


class InMemoryTransport(Transport):
    name = "memory"
    capabilities = Capabilities(durable=True, receipts=True)

    def __init__(self) -> None:
        self.received: list[str] = []

    def delivered_when(self, target: Target, envelope: Envelope) -> str:
        return f"the in-memory inbox of {target.spec} holds exactly this payload"

    async def send(self, delivery: Delivery, target: Target, payload: str, log: StageLog, *,
                   approval: Approval | None = None) -> None:
        self.require(approval, target, payload, f"in-memory write for {target.spec}")
        log.checkpoint("write")
        self.received.append(payload)
        log("write", DeliveryState.QUEUED, f"appended to the in-memory inbox ({len(self.received)} held)")

    async def look(self, delivery: Delivery, target: Target, payload: str) -> Look:
        landed = payload in self.received
        return Look(transport=self.name, landed=landed, records=[{"held": len(self.received)}],
                    verdict="landed: the in-memory inbox holds the payload" if landed else "not in the in-memory inbox")

    async def confirm(self, delivery: Delivery, target: Target, payload: str, log: StageLog, timeout: float) -> None:
        if payload in self.received:
            log("confirm", DeliveryState.IN_TURN, "payload found verbatim in the in-memory inbox")
        else:
            log("confirm", DeliveryState.UNKNOWN, "payload not found in the in-memory inbox")


def fake_target(name: str = "inbox") -> Target:
    return Target(
        kind="fake",
        name=name,
        address=f"memory:{name}",
        pid=None,
        live=True,
        state="idle",
        transports=("memory",),
        identified_by="the built-in in-memory demo target (relay --fake)",
    )
