"""The requests table of the operator's session, where a host's request (`h2/beta-3`, taken up the
channel by session/remote/host_requests.py) has each state change written into the host's copy too.

Why at the store: every state change of a request goes through `save` (approve, deny, expiry, halt,
delivery, answer), so none can be missed; the host's copy is what its asker's relay_request_status
reads, and it is written only from here, the operator's relay. One ssh call each (as a halt is).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from relay_repl.core.errors import RelayError
from relay_repl.core.host_requests import host_update
from relay_repl.core.request import Request
from relay_repl.store.requests import RequestStore

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from relay_repl.session.remote.remote_send import RemoteSends
    from relay_repl.session.core.shared import Shared


class MirroredStore(RequestStore):
    """The requests table, where each state change of a host's request is also written into that
    host's copy (so its asker reads it there). A host that cannot be told is one line; the state here
    stands (this ledger is the request's record).

    Telling a host is one ssh call of up to HALT_TIMEOUT seconds. Where a session serves requests
    (`tell_from`, given the task group its sweeper runs in), the call runs on a worker thread and
    the event loop (the REPL's prompt, the inbox) goes on meanwhile; the changes are told one at a
    time in the order they were made, so a host never reads `approved` after `delivered`. Elsewhere
    (a one-shot command, no task group) the call is made at once, as before."""

    def __init__(self, shared: Shared, remote: Callable[[], RemoteSends]) -> None:
        super().__init__(shared.ledger)
        self.shared = shared
        self.remote = remote  # a callable giving RemoteSends (made on first use)
        self._tg: TaskGroup | None = None
        self._queued: deque[tuple[str, str, Request]] = deque()
        self._telling: set[str] = set()  # the ids whose change is being told right now (a worker thread's call)
        self._told_at: dict[str, float] = {}  # id -> when its host last answered a change of it (time.time())
        self._not_told: set[str] = set()  # ids whose last change could not be told (said once, `_unsaid`)
        self._draining = False

    def tell_from(self, task_group: TaskGroup) -> None:
        """Tell hosts off the event loop, from a task in `task_group` (the session's own)."""
        self._tg = task_group

    def save(self, req: Request, *, expect: str | None = None) -> bool:
        changed = super().save(req, expect=expect)
        if changed and "/" in req.id:  # a local id never holds one (the asker's address, `-`, a number)
            from relay_repl.session.remote.remote import split_spec

            host, rid = split_spec(req.id)
            if host is not None:
                self._queued.append((host, rid, req))
                if not self._draining:
                    self._drain_soon()
        return changed

    def host_may_lag(self, key: str, since: float) -> bool:
        """Whether the host's copy of request `key` may honestly still read an older state in a listing
        the host began at `since` (time.time()): a change of it is queued or being told, its last change
        could not be told (the operator was told so), or the host took the last one after `since`."""
        return (key in self._telling or key in self._not_told or self._told_at.get(key, float("-inf")) >= since
                or any(req.id == key for _host, _rid, req in self._queued))

    def _drain_soon(self) -> None:
        """Start the task that tells the queued changes, or tell them here when no loop runs them."""
        if self._tg is not None and _on_event_loop():
            try:
                self._tg.start_soon(self._drain)
                self._draining = True
                return
            except RuntimeError:  # its task group has ended: no loop will run the task
                pass
        while self._queued:
            self.tell(*self._queued.popleft())

    async def _drain(self) -> None:
        import anyio

        try:
            with anyio.CancelScope(shield=True):  # a change made is told even as the session closes
                while self._queued:
                    host, rid, req = self._queued.popleft()
                    try:  # the channel is found (made) here on the loop, where the session's other calls make theirs
                        ch = self.remote().hosts.channel(host)
                    except RelayError as exc:
                        self._unsaid(host, rid, req, exc)
                        continue
                    self._telling.add(req.id)
                    try:
                        failed = await anyio.to_thread.run_sync(self._call, host, rid, req, ch)
                    finally:
                        self._telling.discard(req.id)
                    if failed is not None:
                        self._unsaid(host, rid, req, failed)
        finally:
            self._draining = False

    def tell(self, host: str, rid: str, req: Request) -> None:
        self._telling.add(req.id)
        try:
            failed = self._call(host, rid, req)
        finally:
            self._telling.discard(req.id)
        if failed is not None:
            self._unsaid(host, rid, req, failed)

    def _call(self, host: str, rid: str, req: Request, ch: Any = None) -> RelayError | None:
        """One `request_state` call to `host` (blocking: a thread of its own when a loop runs, given the
        host's channel `ch`); the error, if any."""
        from relay_repl.session.remote.remote_send import call_once

        try:
            if ch is None:
                ch = self.remote().hosts.channel(host)
            call_once(ch, "request_state",
                      {"id": rid, "update": host_update(req.model_dump(mode="json"))}, what="request_state")
        except RelayError as exc:
            return exc
        import time

        self._told_at[req.id] = time.time()  # after the host answered: a listing it began before may predate it
        self._not_told.discard(req.id)
        return None

    def _unsaid(self, host: str, rid: str, req: Request, exc: RelayError) -> None:
        self._not_told.add(req.id)
        self.ledger.event("host-request-unsaid", relay_id=req.id, data={"host": host, "state": req.state,
                                                                      "why": str(exc)})
        self.shared.say(f"relay: host {host}: request {rid} is {req.state} here, but its asker there was not "
                        f"told ({exc}); it reads the old state until the next change")


def _on_event_loop() -> bool:
    """Whether this thread runs an event loop (a sync `save` called from async code)."""
    import anyio

    try:
        anyio.get_current_task()
    except RuntimeError:  # anyio's NoEventLoopError: a thread with no loop (a one-shot, a worker)
        return False
    return True
