"""The inbox and waiting for replies: the operator's own inbox (open, attach, list it as a
peer, close, clean), linking an answer to the delivery its `re=` names, and the waits
(`d.wait_reply()`, `session.expect()`, the turn reply) that end on it, on a timeout or on a
relay-halt.

Its own part of the session because an answer arrives on the inbox's schedule, not the
sender's: the inbox's callback links it and wakes whoever waits, whichever part sent.
Only the asked session's verified answer becomes `d.reply`; anything else stays in
`d.replies` (issue 16 case 1).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from relay_repl.core.approval import spend
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.errors import LoopHalt, RelayError, UsageError
from relay_repl.core.inbound import InboundMessage, Verdict
from relay_repl.core.plan import ReplyContext
from relay_repl.core.target import Target
from relay_repl.core.turn_reply import TurnReply
from relay_repl.session.core.finder import Finder
from relay_repl.session.core.gating import Gatekeeper
from relay_repl.session.core.shared import Shared

if TYPE_CHECKING:
    from relay_repl.agents.kind import InboxListing
    from relay_repl.session.core.inbox import Inbox, InboxRecord
    from relay_repl.store.timeline import InboxTable, Timeline


def answer_refusal(v: Verdict | None, asked: str) -> str | None:
    """Why an answer is not the asked session's own (one phrase), or None when it is."""
    if v is None:
        return "unjudged"
    if not v.ok:
        if v.verdict == "mismatch" and v.detail.startswith("answered by "):
            return f"mismatch: {v.detail}"
        return f"{v.verdict} ({v.detail})" if v.detail else v.verdict
    if v.session != asked:
        return f"mismatch: answered by {v.session or 'no discovered session'}, asked {asked}"
    return None


class _Waiter:
    """One wait in `Answers.next_arrival`: woken (an answer to its id, a halt, or the shared look
    found something for it) ends the sleep; `nudge` only interrupts it (woken, or made the looker)."""

    __slots__ = ("woken", "nudge")

    def __init__(self) -> None:
        self.woken = False
        self.nudge = anyio.Event()

    def wake(self) -> None:
        self.woken = True
        self.nudge.set()


class Answers:
    """The operator's inbox, the answers linked to deliveries, and the waits for them."""

    def __init__(self, shared: Shared, finder: Finder, gate: Gatekeeper) -> None:
        self.shared = shared
        self.finder = finder
        self.gate = gate
        self.inbox_server: Inbox | None = None
        self.registration: InboxListing | None = None
        self._wakeups: set[anyio.Event] = set()
        self._arrived: dict[str, int] = {}  # relay id -> how many messages answering it on_inbound has seen
        self._keyed: dict[str, set[_Waiter]] = {}  # relay id -> who sleeps until its next answer
        self._loop_thread: int | None = None  # the thread whose event loop those sleep on
        self._looker: _Waiter | None = None  # the one wait that reads the ledger for all (next_arrival)
        self._looked_at = float("-inf")  # when it last did (event-loop time)
        self._look_seq: int | None = None  # the newest inbox message the shared look has read
        self._taken: set[int] = set()  # inbox messages answering an id that on_inbound took in since
        on_halt = getattr(shared.ledger, "on_halt", None)
        if on_halt is not None:
            on_halt(self._halted)

    # -- where an answer goes ------------------------------------------------------------
    def reply_context(self, relay_id: str, via: str | None) -> ReplyContext:
        """What a target's agent needs to say how it would answer: this inbox and its peer listing."""
        inbox, reg = self.inbox_server, self.registration
        return ReplyContext(relay_id=relay_id, inbox=str(inbox.path) if inbox is not None else None,
                            listed_name=reg.name if reg is not None else None,
                            listed_socket=str(reg.socket_path) if reg is not None else None, via=via)

    async def register_inbox(self, name: str = "relay-operator", *, pins: dict[str, object] | None = None) -> bool:
        """List the inbox as a peer (gated) of the agent kind whose sessions answer only to a listed
        peer (`AgentKind.replies.answers_listed_inbox`): its own listing names it, its native send reaches it."""
        from relay_repl.agents.registry import kind_for, kind_names

        inbox = self.inbox_server
        if inbox is None:
            raise UsageError("no inbox is listening here: only the `relay` REPL runs one")
        # the first kind in name order that lists peers, loaded one at a time: the others' packages
        # stay unimported before this plan (a recipe run's first, issue 40)
        lister = next((k for n in kind_names() if (k := kind_for(n)) is not None and k.replies.answers_listed_inbox),
                      None)
        if lister is None:
            raise UsageError("no registered agent kind lists peers: answers come by `relay reply`, MCP or turn reply")
        # refuses unverified versions; `pins`: the values a plain phase drew for the plan it showed
        reg = await anyio.to_thread.run_sync(lambda: lister.replies.inbox_listing(name, pins=pins))
        if reg is None:
            raise UsageError(f"{lister.facts.label} offers no peer listing for the inbox")
        approval = await self.gate.gated(reg.plan())
        if approval is None:
            return False
        try:
            await inbox.listen(path=reg.socket_path, approval=approval)  # listen first: a SendMessage never meets a dead socket
            reg.write(approval)
        finally:
            spend(approval)
        for path in reg.files():
            inbox.own_file(str(path))
        self.registration = reg
        self.shared.ledger.event("inbox-registered", data={"name": reg.name, "record": str(reg.files()[0])})
        return True

    # -- the inbox's life ----------------------------------------------------------------
    async def open_inbox(self, task_group: TaskGroup, echo: Callable[[str], None] | None = None) -> Inbox:
        """Clean what crashed inboxes left, then listen on this session's own inbox in
        `task_group` and attach it: replies and receipts now have somewhere to go."""
        import sys

        from relay_repl.session.core.inbox import Inbox, clean_stale

        clean_stale(echo=lambda line: print(f"relay: {line}", file=sys.stderr))  # stderr: `--json` stays JSON
        me = self.shared.me
        inbox = Inbox(self.shared.ledger, address=me.address, sender=me.sender, echo=echo)
        await inbox.listen(task_group)
        self.attach_inbox(inbox)
        return inbox

    async def clean(self, echo: Callable[[str], None] | None = None) -> list[InboxRecord]:
        """Remove what crashed relay inboxes left (`relay clean`): relay's own files at once; files in
        other programs' directories (Claude's registry, its socket directories) only after the plan
        naming each one is shown and approved. Returns the inbox records cleaned."""
        from relay_repl.session.core.inbox import clean_plan, clean_stale

        plan = clean_plan()
        approval = await self.gate.gated(plan) if plan is not None else None
        try:
            return clean_stale(echo=echo, approval=approval)
        finally:
            spend(approval)

    async def close_inbox(self) -> list[str]:
        """Remove the inbox's sockets and any registry entry it wrote (even while cancelled); the files removed."""
        if self.inbox_server is not None:
            with anyio.CancelScope(shield=True):
                return list(await self.inbox_server.close() or [])
        return []

    def attach_inbox(self, inbox: Inbox) -> None:
        """Called by the REPL once its inbox listens: replies now have somewhere to go."""
        self.inbox_server = inbox
        self.shared.me = self.shared.me.model_copy(update={"inbox": str(inbox.path)})
        callbacks = getattr(inbox, "on_message", None)
        if callbacks is not None and self.on_inbound not in callbacks:
            callbacks.append(self.on_inbound)

    # -- linking an answer -----------------------------------------------------------------
    def on_inbound(self, msg: InboundMessage) -> None:
        """Link an inbox message to the delivery its `re=` names; wake every waiter.

        Only the asked session's answer becomes `d.reply`: its verdict must be ok AND name
        the delivery's target (for a forward, where the forward went). Anything else is kept
        in `d.replies`, whatever the route (issue 16 case 1)."""
        ledger, echo = self.shared.ledger, self.shared.echo
        if msg.answers:
            hits = [d for d in self.shared.deliveries if d.relay_id == msg.answers]
            if hits:
                d = hits[-1]
                d.replies.append(msg)
                v = msg.verdict
                why_not = answer_refusal(v, d.target)
                if why_not is None and v is not None and d.reply is None:
                    d.reply = msg
                    if d.outcome != "refused":
                        d.state = DeliveryState.ACKNOWLEDGED if d.want == "ack" else DeliveryState.REPLIED
                        d.reason = None
                    ledger.event("linked", delivery=d.key, relay_id=d.relay_id,
                                 data={"seq": msg.seq, "reply_id": msg.relay_id, "session": v.session,
                                       "pid": v.pid, "state": d.state.value})
                elif why_not is not None:
                    ledger.event("answer-rejected", delivery=d.key, relay_id=d.relay_id,
                                 data={"seq": msg.seq, "why": why_not,
                                       "detail": f"inbox #{msg.seq} not accepted as the answer: {why_not}",
                                       "verdict": v.model_dump(mode="json") if v else None})
                    if echo:
                        echo(f"warning: inbox #{msg.seq} answers {d.relay_id} but is {why_not}: kept in "
                             "d.replies, NOT accepted as the answer")
        if msg.answers:
            self._arrived[msg.answers] = self._arrived.get(msg.answers, 0) + 1
            self._taken.add(msg.seq)
            for w in self._keyed.pop(msg.answers, ()):
                w.wake()
        for ev in list(self._wakeups):
            ev.set()
        self._wakeups.clear()

    # -- waiting on one relay id's answers ---------------------------------------------------
    def arrivals(self, relay_id: str) -> int:
        """How many messages answering `relay_id` this session has taken in so far: read it before
        looking in the ledger, and hand it to `next_arrival` (an answer that came in between is
        then not slept through)."""
        return self._arrived.get(relay_id, 0)

    async def next_arrival(self, relay_id: str, seen: int, timeout: float, look_every: float | None = None) -> None:
        """Sleep until a message answering `relay_id` arrives after the `seen`-th (`arrivals`), or
        `timeout` seconds. Why: a recipe's wait read the ledger every 50 ms per target, so relay's
        own CPU grew with how long the receivers took (issue 33: 15 ms per target with a 1 s model,
        9 ms without). Only a wake-up: whoever waits still reads the ledger, the one record, and
        decides from it.

        What this session does not take in (another process's `relay halt`, or its inbox message
        answering this id) only the ledger shows. Without `look_every` it is read at the caller's next
        look, at the latest `timeout` on. With it, the waits share one look every `look_every`
        seconds: one of them (the looker) reads the halt in force and the inbox messages added since
        the last look, for all, and wakes every wait on a halt, or the waits a message nobody here
        took in answers (issue 33: one look per wait every 0.5 s was most of what a 1 s model added
        to relay's CPU). The first look wakes every wait, which then read for themselves: what came
        before it is theirs to see."""
        if self._arrived.get(relay_id, 0) != seen:
            return
        self._loop_thread = threading.get_ident()
        me = _Waiter()
        self._keyed.setdefault(relay_id, set()).add(me)
        deadline = anyio.current_time() + timeout
        try:
            while not me.woken:
                now = anyio.current_time()
                if now >= deadline:
                    return
                until = deadline
                if look_every is not None:
                    if self._looker is None:  # no wait is registered: this one looks for all from now
                        self._looker = me  # (it has just read the ledger for itself; the first look is at once)
                        self._looked_at = now if self._look_seq is not None else float("-inf")
                    if self._looker is me:
                        due = self._looked_at + look_every
                        if now >= due:
                            self._look()
                            continue
                        until = min(deadline, due)
                if me.nudge.is_set():
                    me.nudge = anyio.Event()
                with anyio.move_on_after(until - now):
                    await me.nudge.wait()
        finally:
            waiting = self._keyed.get(relay_id)
            if waiting is not None:
                waiting.discard(me)
                if not waiting:
                    del self._keyed[relay_id]
            if self._looker is me:  # hand the looking to another wait, if any
                self._looker = next((w for ws in self._keyed.values() for w in ws), None)
                if self._looker is not None:
                    self._looker.nudge.set()

    def _look(self) -> None:
        """The waits' shared look at the ledger (`next_arrival`): the halt in force, and the inbox
        messages after the last look that this session did not take in."""
        self._looked_at = anyio.current_time()
        ledger = self.shared.ledger
        first = self._look_seq is None
        if first:
            self._look_seq = ledger.last_inbox_seq()
        if first or ledger.active_halt():
            self.wake_all()
            return
        links = ledger.inbox_links(self._look_seq or 0)
        for seq, answers in links:
            if answers and seq not in self._taken:
                for w in self._keyed.pop(answers, ()):
                    w.wake()
        if links:
            self._look_seq = links[-1][0]
            self._taken = {seq for seq in self._taken if seq > self._look_seq}

    def _halted(self) -> None:
        """A halt recorded in this process: wake the waits if it was recorded on their event loop
        (an event is set only from its own loop; a halt recorded in a worker thread is read at the
        waits' next look, as another process's is)."""
        if threading.get_ident() == self._loop_thread:
            self.wake_all()

    def wake_all(self) -> None:
        """Wake every wait now (a relay-halt recorded in this process: each wait reads it and stops)."""
        for waiting in self._keyed.values():
            for w in waiting:
                w.wake()
        self._keyed.clear()
        for ev in list(self._wakeups):
            ev.set()
        self._wakeups.clear()

    # -- waiting ---------------------------------------------------------------------------
    async def wait_reply(self, d: Delivery, timeout: float) -> InboundMessage | None:
        """Wait for `d`'s verified answer; None (state no_reply) after `timeout` seconds."""
        if d.outcome == "refused" or d.state is DeliveryState.FAILED:
            raise UsageError(f"{d.relay_id} was not delivered ({d.summary()}): no answer can come")
        if d.want == "none":
            raise UsageError(f"{d.relay_id} asked for no answer (want=none): nothing will come; send with want='reply'")
        turn = d.extra.reply_via == "turn"  # read from the target's own record: no inbox needed
        if self.inbox_server is None and not turn:
            raise UsageError("no inbox is listening here, so no answer can arrive")
        ledger = self.shared.ledger
        say = self.shared.echo or (lambda line: None)
        start = anyio.current_time()
        deadline = start + timeout
        last_note = start
        async with anyio.create_task_group() as tg:
            if turn:
                tg.start_soon(self._watch_turn, d, timeout)
            while d.reply is None and not d.extra.turn_ended:
                if ledger.active_halt():
                    break  # raised below, outside the task group, as the LoopHalt it is
                now = anyio.current_time()
                if now >= deadline:
                    break
                if now - last_note >= 5:
                    last_note = now
                    say(f"  … waiting for {d.target} to answer {d.relay_id} ({deadline - now:.0f}s left)")
                ev = anyio.Event()
                self._wakeups.add(ev)
                with anyio.move_on_after(min(deadline - now, 1.0)):  # 1 s: a halt from another process is seen too
                    await ev.wait()
                self._wakeups.discard(ev)
            tg.cancel_scope.cancel()
        self.shared.check_halt()  # a relay-halt (even in this very answer) stops every wait in progress
        if d.reply is not None:
            return d.reply
        why = d.extra.turn_ended if d.extra.turn_ended else f"no reply within {timeout:g} s"
        if d.replies:
            why += f" ({len(d.replies)} unverified answer(s) in d.replies)"
        if d.outcome == "delivered":
            d.state = DeliveryState.NO_REPLY
        d.reason = why if d.outcome == "delivered" else f"{why}; the delivery itself is still pending at stage {d.stage}"
        ledger.event("no-reply", delivery=d.key, relay_id=d.relay_id, data={"timeout": timeout, "state": d.state.value})
        say(f"{d.relay_id}: {d.reason}")
        return None

    async def _watch_turn(self, d: Delivery, timeout: float) -> None:
        """The turn route: read the target's own final message and link it as `d`'s answer."""
        from relay_repl.session.core.turn_replies import wait_turn_reply

        try:
            tgt = await self.finder.resolve(d.target)
            found = await wait_turn_reply(d, tgt, self.shared.ledger, timeout, stop=lambda: d.reply is not None)
        except LoopHalt:
            return  # the wait itself sees the halt and stops with it
        except RelayError as exc:
            d.extra.turn_ended = f"no turn reply can be read: {exc}"
            found = None
        if found is not None and d.reply is None:
            if found.status == "answered":
                self.link_turn_reply(d, tgt, found)
            else:  # the turn ended without an answer: say so now rather than wait out the timeout
                d.extra.turn_ended = f"{d.target}'s turn ended: {found.status} ({found.record} in {found.source})"
        for ev in list(self._wakeups):
            ev.set()

    def link_turn_reply(self, d: Delivery, tgt: Target, found: TurnReply) -> InboundMessage:
        """Keep a turn reply in the inbox (so `session.inbox` and `why` show it) and link it to `d`.

        Its verdict is "receiver's own record": no process connected, the harness of the
        target wrote it, tied to our message by an id the model never sees."""
        verdict = Verdict(verdict="receiver's own record", session=tgt.spec, session_pid=tgt.pid, claim=None,
                          detail=f"{found.record} in {found.source}, matched by {found.anchor}")
        origin = {"kind": "turn-reply", "status": found.status, "source": found.source, "record": found.record,
                  "anchor": found.anchor, "turn_id": found.turn_id, "at": found.at}
        line = found.text if found.text is not None else f"({found.status}: the turn ended without a final message)"
        msg = self.shared.ledger.add_inbox(line, origin=origin, relay_id=None, peer=tgt.spec, answers=d.relay_id,
                                           verdict=verdict)
        if self.shared.echo:
            # an answer's own lines each shown indented under it: none can pass for a line relay wrote
            self.shared.echo(f"turn reply ← {tgt.spec} ({found.status}): " + line.replace("\n", "\n    "))
        self.on_inbound(msg)
        return msg

    async def expect(self, delivery: Delivery | str, timeout: float = 60.0) -> InboundMessage | None:
        """Wait for the verified answer to a delivery (or relay id); see Delivery.wait_reply."""
        return await self.shared.find_delivery(delivery).wait_reply(timeout)

    async def turn_reply(self, delivery: Delivery | str, timeout: float = 60.0) -> TurnReply | None:
        """The receiver's own final message in the turn `delivery` started, read from its
        rollout (Codex) or transcript (Claude): a reply route that needs no tool and no
        permission. Returns a TurnReply (answered / no final message / aborted) or None
        after `timeout`; recorded as `turn-reply` in `why(id)`."""
        from relay_repl.session.core.turn_replies import wait_turn_reply

        d = self.shared.find_delivery(delivery)
        tgt = await self.finder.resolve(d.target)
        ledger = self.shared.ledger
        found = await wait_turn_reply(d, tgt, ledger, timeout, echo=self.shared.echo)
        if found is not None and ledger.halt_if_carried(found.text, where=f"{tgt.spec}'s turn reply to "
                                                        f"{d.relay_id}", by=tgt.spec):
            self.shared.check_halt()
        return found

    # -- what the ledger kept --------------------------------------------------------------
    def why(self, relay_id: Delivery | str) -> Timeline:
        """Every event recorded for one relay id (or a Delivery), oldest first: a list that prints as a
        table, with the answers linked to it (by their `re=` header) and their verdicts beside the send."""
        from relay_repl.store.timeline import Timeline

        rid = relay_id.relay_id if isinstance(relay_id, Delivery) else str(relay_id)
        rid = rid or ""
        ledger = self.shared.ledger
        return Timeline(rid, ledger.events(relay_id=rid), answers=ledger.inbox(answers=rid),
                        received=[m for m in ledger.inbox() if m.relay_id == rid])

    @property
    def table(self) -> InboxTable:
        """Every message that reached the operator's inbox (kept in the ledger), as a table with verdicts."""
        from relay_repl.store.timeline import InboxTable

        return InboxTable(self.shared.ledger.inbox())
