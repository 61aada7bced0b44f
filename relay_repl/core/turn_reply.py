"""The turn reply as a value: what a receiver's own record says its turn ended with.

Kept in core (the readers are each agent's, agents/turn_reply.py and the kinds' packages)
because a delivery records the one it found (`Delivery.extra.turn_reply`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.readable import Readable

TurnStatus = Literal["answered", "no final message", "aborted"]
PROVENANCE = "receiver's own record"


class TurnReply(Readable, BaseModel):
    """What the receiver's own record says its turn ended with."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    kind: str = Field(description="the agent kind whose record this is")
    status: TurnStatus
    text: str | None = Field(default=None, description="the final message, when the turn ended with one")
    turn_id: str | None = None
    source: str = Field(description="the transcript or rollout file read")
    record: str = Field(description="which record(s) carried it, in words")
    at: str | None = Field(default=None, description="the record's own timestamp")
    anchor: str = Field(description="what tied the turn to our message (client_id, msg_id or exact text)")
    provenance: str = PROVENANCE

    def __str__(self) -> str:
        said = repr(self.text) if self.text is not None else f"({self.status})"
        return f"{said} — {self.record} in {self.source} ({self.provenance}; matched by {self.anchor})"

    def __repr__(self) -> str:
        """Whose turn, how it ended, then its words (neutralised, cut at the end)."""
        from relay_repl.core.controls import gist, visible

        said = f': "{gist(self.text, 160)}"' if self.text is not None else ""
        return visible(f"<TurnReply {self.kind} {self.status} ({self.provenance}, {self.record}){said}>")
