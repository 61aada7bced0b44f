"""The options of one send, as one value: `Session.send` keeps them as keywords (what a REPL
user types) and builds this once; `Sender` and a chain's members pass it on whole, so the
fifteen keywords are written in one place and a new option cannot be dropped on one path."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from relay_repl.core.envelope import Want
from relay_repl.transports.base import Chain, Transport
from relay_repl.transports.chain import TransportHandle


class SendOptions(BaseModel):
    """How one message is sent (see Session.send for each field's meaning).

    `fallback` is the plan's fallback line a chain hands each member (it names the members
    still to try); None lets the ranking name it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    want: Want = "none"
    transport: str | Transport | TransportHandle | Chain | None = None
    to_role: str = "peer"
    durable: bool = False
    native_reply: bool = False
    timeout: float = 30.0
    hop: int = 0
    heading: str | None = None
    relay_id: str | None = None
    reply_via: str | None = None
    fallback: str | None = None
    re: str | None = None  # the id this message answers (an agent's request whose answer it carries)
