"""An agent's request made on another host: what the operator's relay holds, and what it believes.

Why pure values beside core/host_claims.py: an agent on host h2 asks h2's relay (`relay serve`
there establishes it by h2's kernel, which only h2 can read). The request comes up the channel
and is held in the operator's ledger, decided at the operator's one gate and carried out by
ordinary HOST/ sends, each checked as an `AskedSend`. What h2 says about the request itself (who
asked, with what evidence) is h2's word: shown as `host h2 says: ...`, never as relay's verdict.

`AskedRequest` is what the operator's relay took from the host the first time it listed the
request, and what the operator approves; any later word of the host about that request is checked
against it (`row_problem`): the same id under another asker, another body, target or want, a
request listed again as held after the operator decided it, a request the host says was decided
without the operator, or a row whose own envelope says otherwise. Each is a claim, not believed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.envelope import HOP_CAP, Envelope, Want
from relay_repl.core.errors import EnvelopeError


class HostRequestRow(BaseModel):
    """One held request as a host's `requests` op lists it (its own ids and names)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    asker: str  # `codex:beta`, as the host established it
    verdict: str
    evidence: str = ""
    to: str
    body: str
    want: Want = "reply"
    hop: int = Field(ge=0)
    state: str
    line: str


class AskedRequest(BaseModel):
    """A host's request as the operator's relay holds it: the host's claim, fixed when first seen."""

    model_config = ConfigDict(frozen=True)

    host: str
    id: str  # as the host names it: `beta-3` (the asker's own id, its `re=` when the answer goes back)
    asker: str  # as the host established it: `codex:beta`
    says: str  # `host h2 says: verified (...)`: the host's word on who asked, shown as such
    to: str  # as the asker named it
    body: str
    want: Want
    hop: int

    @property
    def key(self) -> str:
        """The request's id in the operator's ledger: `h2/beta-3` (another host's `beta-3` is another request)."""
        return f"{self.host}/{self.id}"

    @property
    def asker_spec(self) -> str:
        return f"{self.host}/{self.asker}"


def asked_from_row(host: str, row: HostRequestRow) -> AskedRequest:
    says = f"host {host} says: {row.verdict}" + (f" ({row.evidence})" if row.evidence else "")
    return AskedRequest(host=host, id=row.id, asker=row.asker, says=says, to=row.to, body=row.body, want=row.want,
                        hop=row.hop)


def envelope_problem(row: HostRequestRow) -> str | None:
    """Why a row is not the request its own envelope carries, or None: an agent's request is its
    envelope (id, sender, target, body, want), so a row that says otherwise is a request never made."""
    try:
        env = Envelope.parse(row.line)
    except EnvelopeError:
        env = None
    if env is None:
        return f"a request {row.id} whose envelope does not parse (a request never made)"
    if (env.id, env.to.strip(), env.body, env.want) != (row.id, row.to, row.body, row.want):
        return f"a request {row.id} whose envelope says otherwise (id {env.id}, to {env.to}) (a request never made)"
    name = row.asker.partition(":")[2]
    if env.address != name or not row.id.startswith(name + "-"):
        return f"request {row.id} from {row.asker}, whose envelope is from {env.sender} (an asker swapped)"
    if row.hop < env.hop:
        return f"request {row.id} at hop {row.hop}, below its envelope's hop {env.hop}"
    return None


def row_problem(host: str, row: HostRequestRow, kept: AskedRequest | None, kept_state: str | None) -> str | None:
    """What in a host's listed request the operator's relay does not believe, in words, or None.

    `kept` is the request as first taken from this host (None: new), `kept_state` its state in the
    operator's ledger. A request's state changes only from the operator's relay: the host may only
    list it as held, and only while it is held here (or new)."""
    if row.state != "held":
        if kept is None:
            return f"a request {row.id} {row.state} that the operator never saw (a request never made here)"
        return f"request {row.id} {row.state} on its own word (a request's state changes only here)"
    problem = envelope_problem(row)
    if problem is not None:
        return problem
    if kept is None:
        if row.hop > HOP_CAP:
            return f"request {row.id} at hop {row.hop}, past the cap {HOP_CAP}"
        return None
    if row.asker != kept.asker:
        return f"request {row.id} from {row.asker} (held here from {kept.asker}: an asker swapped)"
    if row.body != kept.body:
        return f"request {row.id} with another body than the one held here (a body changed)"
    if (row.to, row.want) != (kept.to, kept.want):
        return f"request {row.id} to {row.to} want={row.want} (held here: to {kept.to} want={kept.want})"
    if kept_state is not None and kept_state != "held":
        return f"request {row.id} held again (it is {kept_state} here: a state going backwards)"
    return None


HOST_FIELDS = ("state", "why", "history", "delivery_id", "delivery_state", "answer_from", "answer_id",
               "answer_state", "expires")
"""What the operator's relay writes into the host's copy of a request (so its asker reads it there):
the state and its steps, never who asked or what."""


def host_update(record: dict[str, Any]) -> dict[str, Any]:
    """The operator's record of a request, cut to what goes to the host's copy."""
    return {k: record[k] for k in HOST_FIELDS if k in record}
