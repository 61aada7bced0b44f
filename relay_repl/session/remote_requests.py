"""Requests made by agents on another host (issue 31, across hosts): held there, decided here.

Why the host keeps them: an agent on host h2 is established by h2's kernel (its `relay serve`
inbox judges the connection's pid there, as this machine's inbox judges local agents), and its
request's state is read back by that agent from h2's ledger. So the request is held in h2's
ledger by h2's relay, and the operator's decisions travel over the ssh channel: listing
(`requests`), approving (`approve_request`: the plan for the target, and the answer's plan back
to the asker, built there and asked at THIS gate with their route, exactly as a HOST/ send) and
denying (`deny_request`). Here a host's request is named `HOST/<id>`, its asker `HOST/kind:name`,
and a target it named without a host is on that host.

The host's inbox listens only while its `relay serve` session lives: the first `host_requests(HOST)`
opens it (and says so), and it stays open as long as this session's channel to that host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_repl.core.delivery import Delivery
from relay_repl.core.errors import UsageError
from relay_repl.core.request import Request
from relay_repl.session.remote import ASK_BOUND, open_route, plan_asker, split_spec
from relay_repl.session.requests import RequestTable
from relay_repl.session.shared import Shared

if TYPE_CHECKING:
    from relay_repl.session.remote_send import RemoteSends


def on_host(host: str, req: Request) -> Request:
    """A host's request as this side names it: id and asker `HOST/...`; a target named without a host is there."""
    to = req.to if split_spec(req.to)[0] is not None else f"{host}/{req.to}"
    return req.model_copy(update={"id": f"{host}/{req.id}", "asker": f"{host}/{req.asker}", "to": to})


def host_ref(ref: str) -> tuple[str, str]:
    """`h2/beta-3` -> ("h2", "beta-3"); a local id is a usage error here."""
    host, rid = split_spec(str(ref).strip())
    if host is None:
        raise UsageError(f"{ref!r} names no host: a host's request is HOST/<id> (`await session.host_requests(HOST)` "
                         "lists them)")
    return host, rid


class HostRequests:
    """The operator's side of the requests held on hosts (see the module doc)."""

    def __init__(self, shared: Shared, remote: RemoteSends) -> None:
        self.shared = shared
        self.remote = remote

    async def held(self, host: str) -> RequestTable:
        res = await self.remote.hosts.channel(host).request("requests", {}, timeout=60)
        reqs = [on_host(host, Request.model_validate(r)) for r in (res or {}).get("held") or []]
        if res and res.get("inbox"):
            self.shared.ledger.event("host-requests", data={"host": host, "inbox": res["inbox"], "held": len(reqs)})
        return RequestTable(reqs)

    async def approve(self, ref: str, *, wait: float = 60.0, timeout: float = 30.0) -> Delivery:
        """The host builds the plan (and, with want=reply|ack, the answer's plan back to its asker); each is
        shown here with its route and asked at this gate; only an approved plan's digest goes back."""
        host, rid = host_ref(ref)
        self.shared.check_halt()
        ch, route = await open_route(self.remote.hosts, host)
        asked: list[str] = []
        on_ask = plan_asker(host, route, self.shared.approve, self.shared.ledger, self.shared.say, asked)
        res = await ch.request("approve_request", {"id": rid, "wait": wait, "timeout": timeout},
                               timeout=wait + timeout + 2 * ASK_BOUND, on_ask=on_ask)
        d = Delivery.model_validate(res["delivery"])
        req = Request.model_validate(res["request"])
        self.shared.ledger.event("host-request", relay_id=ref, data={"host": host, "state": req.state,
                                                                     "delivery_id": req.delivery_id,
                                                                     "answer_id": req.answer_id})
        self.shared.say(f"request {ref} on {host}: {req.state}" + (f" ({req.why})" if req.why else ""))
        return d.model_copy(update={"target": f"{host}/{d.target}"})

    async def deny(self, ref: str, why: str | None = None) -> Request:
        host, rid = host_ref(ref)
        got = await self.remote.hosts.channel(host).request("deny_request", {"id": rid, "why": why}, timeout=60)
        req = on_host(host, Request.model_validate(got))
        self.shared.ledger.event("host-request", relay_id=ref, data={"host": host, "state": req.state, "why": req.why})
        return req
