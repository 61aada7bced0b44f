"""An agent's request to send: held until the operator decides, with its states as the asker reads them.

Why a value of its own and not a send: an agent that asks relay to send (the MCP tool
`relay_send`, `relay ask` in its shell) starts nothing. Its words wait in the operator's
ledger as a `Request` until the operator approves the ordinary four-part plan built for the
resolved target (session/core/requests.py), denies it, or it expires. The asker reads the request's
state as a typed receipt (`receipt()`); every state in it was written by the operator's relay,
never by the asker (a request's state changes only from the operator's side).

States, in the order a request moves through them:
- `held`      waiting for the operator (the answer the asking tool gets at once);
- `approved`  the operator said y to the plan for it;
- `denied`    the operator said no (`why` says why: their text, or "answered No at the plan");
- `expired`   nobody decided within its expiry (default 10 minutes): nothing was sent;
- `halted`    a relay-halt stopped it while it was held: nothing was sent;
- then the delivery's own states, from receiver evidence: `queued`, `in_turn`, `delivered`, `failed`.

Hop: a request carries the hop of the exchange its asker is in (the last relay message the
operator's relay delivered to it, + 1), never less than the hop its envelope claims, so an
agent's request never resets hop; past the cap (4) it is refused.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.controls import visible
from relay_repl.core.envelope import HOP_CAP, Want
from relay_repl.core.peertext import consent_acts
from relay_repl.core.request_frames import ANSWER_TYPE as ANSWER_TYPE, FRAME_TYPE as FRAME_TYPE
from relay_repl.core.request_frames import request_hop as request_hop  # the frames' one home (`relay ask` loads no model)

RequestState = Literal["held", "approved", "denied", "expired", "halted",
                       "queued", "in_turn", "delivered", "failed"]
DECIDED = frozenset({"approved", "denied", "expired", "halted", "queued", "in_turn", "delivered", "failed"})
"""Every state but `held`: a request in one of them is never approved (or denied) again."""

DEFAULT_EXPIRY = 600.0
"""Seconds a request waits for the operator before it expires (10 minutes); `RELAY_REQUEST_EXPIRY` or
`session.request_expiry` change it for requests held from then on."""



class Step(BaseModel):
    """One state a request took, when, and why (the asker's receipt lists them all)."""

    model_config = ConfigDict(frozen=True)

    state: RequestState
    at: float
    why: str | None = None


class Request(BaseModel):
    """One agent's request to send, as the operator's ledger keeps it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="R: the id of the asker's request envelope (unique; a replay is dropped)")
    asker: str = Field(description="the asking session, as its kernel pid established it (e.g. codex:beta)")
    verdict: str = Field(description="how the asker was established: the inbox's verdict on the connection")
    evidence: str = Field(default="", description="what established it (the verdict's detail)")
    asker_pid: int | None = Field(default=None, description="the connecting process (SO_PEERCRED)")
    to: str = Field(description="the target the asker named (resolved only when the operator plans it)")
    body: str = Field(description="the asker's words, one line")
    want: Want = "reply"
    flags: tuple[str, ...] = Field(default=(), description="consent-only acts the body asks for (core.peertext)")
    hop: int = Field(ge=0, le=HOP_CAP, description="the hop the message to `to` would carry")
    state: RequestState = "held"
    why: str | None = Field(default=None, description="why it is denied, expired, halted or failed")
    created: float = Field(default_factory=time.time)
    expires: float
    line: str = Field(description="the asker's request envelope, as it arrived")
    history: tuple[Step, ...] = ()
    delivery_id: str | None = Field(default=None, description="the relay id of the operator's send to `to`")
    delivery_state: str | None = Field(default=None, description="that delivery's own state (DeliveryState value)")
    answer_from: str | None = Field(default=None, description="who answered (the session asked, verified)")
    answer_id: str | None = Field(default=None, description="the relay id of the message that took the answer to the asker")
    answer_state: str | None = Field(default=None, description="that message's state: delivered, failed, withheld, ...")

    @classmethod
    def held(cls, *, id: str, asker: str, verdict: str, evidence: str, asker_pid: int | None, to: str, body: str,
             want: Want, hop: int, line: str, expiry: float = DEFAULT_EXPIRY, now: float | None = None) -> Request:
        """A request as it arrives: held, flagged for any consent-only act its body asks for."""
        at = time.time() if now is None else now
        return cls(id=id, asker=asker, verdict=verdict, evidence=evidence, asker_pid=asker_pid, to=to, body=body,
                   want=want, flags=consent_acts(body), hop=hop, created=at, expires=at + expiry, line=line,
                   history=(Step(state="held", at=at),))

    def moved(self, state: RequestState, why: str | None = None, *, now: float | None = None, **more: object) -> Request:
        """This request in `state` (a new value; the history keeps every step)."""
        at = time.time() if now is None else now
        data = self.model_dump()
        data.update(more)
        data.update(state=state, why=why if why is not None else (self.why if state == self.state else None),
                    history=(*self.history, Step(state=state, at=at, why=why)))
        return type(self).model_validate(data)

    def due(self, now: float | None = None) -> bool:
        """Held past its expiry: the operator's relay records it expired when it sees this."""
        return self.state == "held" and (time.time() if now is None else now) >= self.expires

    def seen_state(self, now: float | None = None) -> RequestState:
        """The state as of `now`: a held request past its expiry reads `expired` even before the
        operator's relay has recorded it (the expiry was set by the operator's relay)."""
        return "expired" if self.due(now) else self.state

    def flag(self) -> str:
        """`FLAG: asks for a consent-only act (push, force): ...` or "" (the request line and the plan)."""
        if not self.flags:
            return ""
        return (f"FLAG: asks for a consent-only act ({', '.join(self.flags)}): only the operator may approve it, "
                "not a peer")

    def line_for_operator(self) -> str:
        """`request R from codex:beta [verified]: send to claude:alpha (want=reply, hop 1): «...»`, neutralised."""
        flag = f" {self.flag()}" if self.flags else ""
        return visible(f"request {self.id} from {self.asker} [{self.verdict}]: send to {self.to} "
                       f"(want={self.want}, hop {self.hop}){flag}: «{self.body}»")

    def receipt(self, now: float | None = None) -> dict[str, object]:
        """What the asker reads (`relay_request_status`, `relay ask --status`): the typed state and its steps."""
        state = self.seen_state(now)
        history = [s.model_dump(exclude_none=True) for s in self.history]
        if state == "expired" and self.state == "held":
            history.append({"state": "expired", "at": self.expires, "why": self.expiry_why()})
        out: dict[str, object] = {"request": self.id, "state": state, "to": self.to, "want": self.want,
                                  "hop": self.hop, "created": self.created, "expires": self.expires,
                                  "history": history}
        why = self.expiry_why() if state == "expired" and self.state == "held" else self.why
        if why:
            out["why"] = why
        if self.flags:
            out["flags"] = list(self.flags)
        for key in ("delivery_id", "delivery_state", "answer_from", "answer_id", "answer_state"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    def expiry_why(self) -> str:
        return f"not decided within {self.expires - self.created:.0f} s: nothing was sent"

    def summary(self) -> str:
        """One line: id, asker, target, state (and why)."""
        state = self.seen_state()
        why = f" ({self.why})" if self.why and state != "held" else ""
        return visible(f"{self.id} from {self.asker} to {self.to}: {state}{why}")

    def __repr__(self) -> str:
        return f"<Request {self.summary()}>"


def delivery_step(state: str, outcome: str) -> RequestState:
    """The request state a delivery's state and outcome (core.delivery) read as, for the asker."""
    if outcome == "delivered":
        return "delivered"
    if outcome == "pending":
        return "in_turn" if state == "in_turn" else "queued"
    return "failed"
