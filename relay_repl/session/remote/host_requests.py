"""Requests made by agents on other hosts (issue 31, across hosts): taken up the channel, held and
decided here.

Why here and not on the host: a request's state changes only from the operator's relay, and every
plan a host sends is checked against the send that was asked for (issue 38: a host's word is a
claim). So an agent on h2 asks h2's relay (its `relay serve` inbox establishes it by h2's kernel and
keeps a copy its asker reads), `await session.host_requests("h2")` takes what h2 holds up the
channel, checks each row (core/host_requests.py) and holds it in THIS ledger as `h2/<id>`, asked by
`h2/kind:name`, its verdict shown as the host's word (`host h2 says: verified`). From then on it is
an ordinary request: `approve_request("h2/beta-3")` shows the plan for its target and sends it as
an ordinary HOST/ send (the plan checked as an `AskedSend`: this relay wrote the quoted body), the
answer comes back judged on that host (its word), and goes back to the asker as another checked
HOST/ send carrying `re=beta-3`. Each state change here is written into the host's copy
(`request_state`, one ssh call), so the asker's relay_request_status reads it there.

Naming: a target the asker names without a host is on its host (`claude:alpha` from h2 is
`h2/claude:alpha`); `HOST/kind:name` is a host of this relay's hosts.toml; `local/kind:name` is
this machine (unless hosts.toml names a host `local`, which is then refused as ambiguous).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from relay_repl.core.envelope import HOP_CAP, MAX_BODY, Envelope
from relay_repl.core.errors import EnvelopeError, HostClaim
from relay_repl.core.host_claims import neutral, one_line_shape
from relay_repl.core.host_requests import AskedRequest, HostRequestRow, asked_from_row, row_problem
from relay_repl.core.peertext import quote
from relay_repl.core.request import Request, request_hop
from relay_repl.session.remote.remote import record_claim, split_spec
from relay_repl.session.remote.request_mirror import MirroredStore
from relay_repl.session.core.requests import RequestTable

if TYPE_CHECKING:
    from relay_repl.session.remote.remote_send import RemoteSends
    from relay_repl.session.core.requests import Requests
    from relay_repl.session.core.shared import Shared

LOCAL = "local"
"""How an agent on a host names this (the operator's) machine in `to`: `local/claude:alpha`."""


def asked_of(req: Request) -> AskedRequest | None:
    """The host's request as first taken, from its record here (None: a local request)."""
    host, rid = split_spec(req.id)
    if host is None:
        return None
    try:
        env = Envelope.parse(req.line)
    except EnvelopeError:
        env = None
    return AskedRequest(host=host, id=rid, asker=split_spec(req.asker)[1], says=req.verdict,
                        to=env.to.strip() if env is not None else req.to, body=req.body, want=req.want, hop=req.hop)


class HostRequests:
    """Takes the requests held on hosts into this ledger, each row checked (see the module doc)."""

    def __init__(self, shared: Shared, asks: Requests, remote: RemoteSends) -> None:
        self.shared = shared
        self.asks = asks
        self.remote = remote
        self._said: set[str] = set()  # each claim is said and recorded once (a host is pulled every few seconds)

    def target(self, host: str, to: str) -> str:
        """The asker's `to` as this relay names it (see the module doc)."""
        there, rest = split_spec(to)
        if there is None:
            return f"{host}/{to}"
        if there == LOCAL:
            if any(h.name == LOCAL for h in self.remote.hosts.entries):
                raise HostClaim(host, f"a request to {to!r} (`local` names a host in hosts.toml too: ambiguous)")
            return rest
        return to

    async def pull(self, host: str) -> RequestTable:
        """What `host` holds, checked and held here; returns the requests newly held (said each)."""
        since = time.time()  # a request decided here after this is listed by the host as it was before: not a claim
        res = neutral(await self.remote.hosts.channel(host).request("requests", {}, timeout=60))
        if not isinstance(res, dict) or not isinstance(res.get("held"), list):
            raise self._claim(host, "its requests as a value of the wrong shape", None, res)
        halt = res.get("halt")
        if isinstance(halt, dict) and self.shared.ledger.active_halt() is None:  # a halt only stops: believed
            self.shared.ledger.halt(f"host {host} says: {halt.get('reason')}", by=f"host {host}")
            self.shared.say(f"relay: host {host} says a relay-halt is in force there ({halt.get('reason')}): every "
                            "send and held request here is halted too")
            self.asks.sweep()
        new: list[Request] = []
        for raw in res["held"][:200]:
            try:
                req = self._one(host, raw, since)
            except HostClaim as claim:
                if str(claim) not in self._said:
                    self._said.add(str(claim))
                    self.shared.say(f"relay: {claim}")
                continue
            if req is not None:
                new.append(req)
        return RequestTable(new)

    def _one(self, host: str, raw: Any, since: float) -> Request | None:
        try:
            row = HostRequestRow.model_validate(raw)
        except ValidationError as exc:
            raise self._claim(host, f"a request of the wrong shape ({one_line_shape(exc)})", None, raw) from None
        key = f"{host}/{row.id}"
        held = self.asks.store.get(key)
        kept = asked_of(held) if held is not None else None
        if held is not None and held.state != "held" and held.history and held.history[-1].at >= since:
            return None  # decided while the listing was on its way: the host's copy is told with the decision
        if held is not None and held.state != "held" and isinstance(self.asks.store, MirroredStore) \
                and self.asks.store.host_may_lag(key, since):
            return None  # decided here, the host not yet told (or told after it began this listing): not its word
        problem = row_problem(host, row, kept, held.state if held is not None else None)
        if problem is not None:
            raise self._claim(host, problem, key, raw)
        if kept is not None:
            return None  # held here already: the same words
        ledger = self.shared.ledger
        asked = asked_from_row(host, row)
        if ledger.active_halt() is not None:
            ledger.event("request-refused", relay_id=key, data={"why": "halted", "host": host})
            self.shared.say(f"relay: request {key} from {asked.asker_spec} not held: relay-halt is in force")
            return None
        hop = request_hop(row.hop, self.asks.shared.ledger.last_hop_to(asked.asker_spec))
        verdict = f"host {host} says: {row.verdict}"
        if hop > HOP_CAP or len(quote(asked.asker_spec, verdict, row.body)) > MAX_BODY:
            why = f"hop {hop}, past the cap {HOP_CAP}" if hop > HOP_CAP else "its quoted body is over the cap"
            ledger.event("request-refused", relay_id=key, data={"why": why, "host": host})
            self.shared.say(f"relay: request {key} from {asked.asker_spec} not held: {why}")
            return None
        req = Request.held(id=key, asker=asked.asker_spec, verdict=verdict,
                           evidence=f"host {host} says: {row.evidence}" if row.evidence else f"host {host} says so",
                           asker_pid=None, to=self.target(host, row.to), body=row.body, want=row.want, hop=hop,
                           line=row.line, expiry=self.asks.expiry)
        if not self.asks.keep(req):
            return None
        return req

    def _claim(self, host: str, what: str, key: str | None, frame: Any) -> HostClaim:
        claim = HostClaim(host, what)
        if str(claim) not in self._said:
            record_claim(self.shared.ledger, claim, key, "requests", frame=frame)
        return claim
