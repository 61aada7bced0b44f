"""An exchange as a sequence of messages between lifelines: what `relay log --diagram` draws.

Why a value apart from the ledger and from the drawing: the reader (store/exchange.py) decides
what counts as a message of a run or of one relay id, the drawing (core/sequence_svg.py) only
places what it is given, and a test can build an exchange by hand (a peer reply carrying
`<script>` and U+202E) without a ledger.

Texts here are as recorded, a peer's words included: the drawing passes every one through
the one neutraliser before it escapes it for SVG.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

OPERATOR = "operator"
"""The operator's lifeline: every send starts there, every answer ends there."""

MessageKind = Literal["send", "reply", "refused"]


class Message(BaseModel):
    """One arrow: a send from the operator, or an answer back to it."""

    model_config = ConfigDict(frozen=True)

    kind: MessageKind
    sender: str = Field(description="the lifeline it leaves (OPERATOR for a send)")
    receiver: str = Field(description="the lifeline it reaches (OPERATOR for an answer)")
    relay_id: str | None = None
    hop: int | None = None
    state: str = Field(description="a send's delivery state (in_turn, replied, failed, ...); an answer's link")
    verdict: str | None = Field(default=None, description="an answer's origin verdict (verified, mismatch, ...)")
    answers: str | None = Field(default=None, description="the relay id an answer names in re=")
    text: str = Field(default="", description="the body (a peer's words for an answer)")
    reason: str | None = Field(default=None, description="why a send was refused, failed or halted")
    at: float = 0.0


class Mark(BaseModel):
    """Something that is not a message but stopped or changed the exchange: a relay-halt."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["halt", "halt-cleared", "run-end"]
    text: str
    at: float


class Exchange(BaseModel):
    """The lifelines (the operator first) and what passed between them, in time order."""

    model_config = ConfigDict(frozen=True)

    ref: str = Field(description="the run id or relay id it was read for")
    title: str
    lifelines: list[str]
    messages: list[Message]
    marks: list[Mark] = Field(default_factory=list)

    @property
    def rows(self) -> list[Message | Mark]:
        """Messages and marks in the order they happened."""
        return sorted([*self.messages, *self.marks], key=lambda r: r.at)
