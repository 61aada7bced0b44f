"""The requests table of the operator's session, where a host's request (`h2/beta-3`, taken up the
channel by session/host_requests.py) has each state change written into the host's copy too.

Why at the store: every state change of a request goes through `save` (approve, deny, expiry, halt,
delivery, answer), so none can be missed; the host's copy is what its asker's relay_request_status
reads, and it is written only from here, the operator's relay. One ssh call each (as a halt is).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from relay_repl.core.errors import RelayError
from relay_repl.core.host_requests import host_update
from relay_repl.core.request import Request
from relay_repl.store.requests import RequestStore

if TYPE_CHECKING:
    from relay_repl.session.remote_send import RemoteSends
    from relay_repl.session.shared import Shared


class MirroredStore(RequestStore):
    """The requests table, where each state change of a host's request is also written into that
    host's copy (so its asker reads it there). A host that cannot be told is one line; the state here
    stands (this ledger is the request's record)."""

    def __init__(self, shared: Shared, remote: Callable[[], RemoteSends]) -> None:
        super().__init__(shared.ledger)
        self.shared = shared
        self.remote = remote  # a callable giving RemoteSends (made on first use)

    def save(self, req: Request, *, expect: str | None = None) -> bool:
        changed = super().save(req, expect=expect)
        if changed and "/" in req.id:  # a local id never holds one (the asker's address, `-`, a number)
            from relay_repl.session.remote import split_spec

            host, rid = split_spec(req.id)
            if host is not None:
                self.tell(host, rid, req)
        return changed

    def tell(self, host: str, rid: str, req: Request) -> None:
        from relay_repl.session.remote_send import call_once

        remote: RemoteSends = self.remote()
        try:
            call_once(remote.hosts.channel(host), "request_state",
                      {"id": rid, "update": host_update(req.model_dump(mode="json"))}, what="request_state")
        except RelayError as exc:
            self.ledger.event("host-request-unsaid", relay_id=req.id, data={"host": host, "state": req.state,
                                                                          "why": str(exc)})
            self.shared.say(f"relay: host {host}: request {rid} is {req.state} here, but its asker there was not "
                            f"told ({exc}); it reads the old state until the next change")
