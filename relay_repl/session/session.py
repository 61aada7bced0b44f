"""The object the operator holds: discovery, the gate, sends, the ledger.

Every side effect goes through `_gated()`: the plan is built, shown, logged,
and only a yes from the injected approver lets the transport act. A no leaves
nothing on the target and one `answer` event in the ledger. The yes is an
`Approval` (core/approval.py) minted by the gate for that plan's scope (target
with pid and start time, transport, exact payload, files); every primitive below
refuses without it, and it is spent when the delivery (or debugger step) ends.
`session.transports` holds handles that send through `session.send`, never the
transport objects themselves (transports/chain.py).

Conversations: a send that asks for an answer (want=reply|ack) first asks the
target's agent module how the answer will come back (the plan shows it) and
refuses when there is no route. Answers reach the inbox, which judges their
origin and reads their `re=` header; the session links a verified answer to
its delivery (`d.reply`, state `replied`/`acknowledged`) and wakes whoever
waits in `d.wait_reply()` / `session.expect()`. A relay-halt ends every wait.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from relay_repl.core.approval import Approval, Scope, spend
from relay_repl.core.delivery import ANSWERED, Delivery, DeliveryState
from relay_repl.core.envelope import Envelope, Want, check_body, contains_halt
from relay_repl.core.peertext import forwarded_notes, provenance_notes
from relay_repl.core.controls import control_refusal, safe_echo
from relay_repl.core.errors import (AmbiguousTarget, describe, EnvelopeError, Halted, LoopHalt, PolicyRefusal, RelayError,
                                    StaleTarget,
                                    UnknownTarget, UsageError)
from relay_repl.core.inbound import InboundMessage, Verdict
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.session.gate import ApproveFn, DenyGate, ask
from relay_repl.session.unfinished import earlier_unfinished, owner, sweep_interrupted
from relay_repl.store.ledger import Ledger
from relay_repl.core.plan import Plan
from relay_repl.core.target import Me, Target, TargetTable
from relay_repl.agents.discovery import Provider, discover_all
from relay_repl.transports.base import StageLog, Transport
from relay_repl.transports.chain import Chain, TransportTable, chain_of, raw_of


def default_me() -> Me:
    """The operator's address until an inbox is registered: user@host-pid."""
    import socket

    user = os.environ.get("USER") or "operator"
    return Me(address=f"{user}.{socket.gethostname().split('.')[0]}.{os.getpid()}")


def _prefixes() -> list[str]:
    """What operators type before a name, one per registered agent kind (for usage errors)."""
    from relay_repl.agents.registry import kinds

    return [k.prefix for k in kinds()]

class Session:
    """What `session` is in the REPL. Async throughout; cheap to refresh."""

    def __init__(
        self,
        *,
        ledger: Ledger,
        approve: ApproveFn | None = None,
        me: Me | None = None,
        providers: Sequence[Provider] = (),
        transports: Sequence[Transport] = (),
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.approve: ApproveFn = approve or DenyGate()
        self.me = me or default_me()
        self.providers = list(providers)
        self._transports: dict[str, Transport] = {t.name: t for t in transports}
        self._table = TransportTable(self._transports, self.send)
        self.deliveries: list[Delivery] = []
        self.echo = echo  # through the property below: every echo shows peer text through `visible`
        self._targets: list[Target] = []
        self._refreshed = False
        self.inbox_server: Any = None
        self.registration: Any = None
        self._wakeups: set[anyio.Event] = set()
        self.repl_inputs: list[Any] = []  # what the REPL ran (session.notebook.ReplInput), for save_notebook

    # -- discovery -------------------------------------------------------------
    async def refresh(self) -> list[Target]:
        found = await discover_all(self.providers)
        self._targets = found
        self._refreshed = True
        return found

    @property
    def transports(self) -> TransportTable:
        """The transports as handles: `session.transports.tmux.send(target, body)` plans and asks like
        `session.send`; `a | b` chains them; `session.transports[NAME] = transport` installs one."""
        return self._table

    @property
    def targets(self) -> TargetTable:
        """The last discovered targets, printed as a table (`await session.refresh()` re-reads)."""
        return TargetTable(self._targets)

    async def target(self, spec: str | Target) -> Target:
        """Resolve `claude:alpha`, `codex:<name or uuid>`, `%<pane>`, `fake:inbox`.

        Refuses to guess: unknown, ambiguous and stale each raise a one-line
        error saying what to do next.
        """
        if isinstance(spec, Target):
            return spec
        if not self._refreshed:
            await self.refresh()
        spec = spec.strip()
        if not spec:
            raise UsageError(f"empty target: name one like {', '.join(p + ':NAME' for p in _prefixes())} or %<pane id>")
        if spec.startswith("%"):
            hits = [t for t in self._targets if t.pane == spec]
        else:
            prefix, sep, name = spec.partition(":")
            if not sep:
                raise UsageError(f"target {spec!r} needs a kind: {' or '.join(p + ':' + spec for p in _prefixes())} "
                                 "(see `relay targets`)")
            # prefixes come from the agent kinds via their targets: a new agent needs no change here
            of_kind = [t for t in self._targets if prefix in (t.prefix or t.kind, t.kind)]
            if not of_kind:
                known = sorted({t.prefix or t.kind for t in self._targets}) or _prefixes()
                raise UsageError(f"no discovered target of kind {prefix!r} in {spec!r}: use "
                                 f"{', '.join(k + ':' for k in known)} or %<pane id>")
            hits = [t for t in of_kind if t.name == name or t.address == name]
        live = [t for t in hits if t.live]
        if len(live) == 1:
            return live[0]
        if len(live) > 1:
            cands = "; ".join(t.describe() for t in live)
            raise AmbiguousTarget(f"{spec} is ambiguous, {len(live)} live sessions match: {cands}. Name one by pid or uuid")
        # Not running, yet still reachable by a durable path (an unloaded Codex thread keeps
        # queue rows until it is resumed): resolvable, and the plan says it is not loaded.
        dormant = [t for t in hits if t.transports]
        if len(dormant) == 1:
            return dormant[0]
        if len(dormant) > 1:
            raise AmbiguousTarget(f"{spec} matches {len(dormant)} sessions that are not running: name one by uuid")
        if hits:
            why = hits[0].stale_reason or "its process is gone"
            raise StaleTarget(f"{spec} is stale ({hits[0].describe()}): {why}; nothing will be sent to it")
        raise UnknownTarget(f"no target {spec}: run `relay targets` (or `await session.refresh()`) to list live sessions")

    # -- the gate ------------------------------------------------------------------
    async def _gated(self, plan: Plan, *, delivery: str | None = None, target: Target | None = None) -> Approval | None:
        """Show, log and ask; the gate's approval for exactly this plan and `target` (pid and
        process start time included), or None for a No."""
        self.ledger.event("plan", delivery=delivery, relay_id=plan.relay_id, data=plan.model_dump())
        scope = self._scope(plan, target)
        try:
            approval = await ask(self.approve, plan, scope)
        except BaseException:
            self.ledger.event("answer", delivery=delivery, relay_id=plan.relay_id, data={"approved": False, "why": "prompt aborted"})
            raise
        data: dict[str, Any] = {"approved": approval is not None}
        if approval is not None:
            data["approval"] = approval.digest
        self.ledger.event("answer", delivery=delivery, relay_id=plan.relay_id, data=data)
        return approval

    @staticmethod
    def _scope(plan: Plan, target: Target | None) -> Scope:
        if target is None:
            return Scope.of(plan)
        from relay_repl.system.proc import proc_start

        start = target.proc_start or (proc_start(target.pid) if target.pid else None)
        return Scope.of(plan, target=target.spec, pid=target.pid, proc_start=None if start is None else str(start),
                        address=target.address, pane=target.pane)

    def choose_transport(self, target: Target, requested: str | None = None, *, durable: bool = False,
                         native_reply: bool = False) -> Any:
        """Rank the transports by capability (see transports.ranking)."""
        from relay_repl.transports.ranking import Requirements, choose

        if requested is not None and requested not in self._transports:
            raise UsageError(f"unknown transport {requested!r}; known: {', '.join(self._transports) or 'none'}")
        return choose(target, list(self._transports.values()), Requirements(durable=durable, native_reply=native_reply),
                      requested)

    # -- sending -------------------------------------------------------------------
    async def send(
        self,
        target: str | Target,
        body: str,
        *,
        want: Want = "none",
        transport: str | Transport | Chain | None = None,
        to_role: str = "peer",
        durable: bool = False,
        native_reply: bool = False,
        timeout: float = 30.0,
        hop: int = 0,
        heading: str | None = None,
        relay_id: str | None = None,
        reply_via: str | None = None,
        _fallback: str | None = None,
    ) -> Delivery:
        """Plan, ask, send, confirm. Returns the Delivery with its explicit state.

        `durable=True` requires a durable path (never downgraded to a live-only
        one); `native_reply=True` requires one the receiver can answer natively.
        `hop` is for the initiator of a multi-round exchange (a recipe): 0 at the
        start of each round it declares, the chain's hop + 1 inside a round.
        `heading` is printed above the plan (where a recipe run stands);
        `relay_id` is one the caller took from `ledger.next_id` beforehand, so it
        could record the id before anything happened (a recipe, for resume).
        A body holding a control character is refused before anything else.
        `reply_via` asks for one reply route (native, relay-reply, mcp, turn) instead of the
        one the target's configuration allows best; the plan names the route either way.
        `transport` may be a name, a transport object (`session.transports.tmux`) or a chain
        (`session.transports.codex_queue | session.transports.tmux`).
        """
        chain = chain_of(transport)
        if chain is not None:
            return await self._send_chain(chain, target, body, want=want, to_role=to_role, durable=durable,
                                          native_reply=native_reply, timeout=timeout, hop=hop, heading=heading,
                                          relay_id=relay_id, reply_via=reply_via)
        assert transport is None or isinstance(transport, str)
        check_body(body)
        tgt = await self.target(target)
        self._check_halt()
        route = await self._route(tgt, want, reply_via) if want != "none" else None
        native, extra = self._native_for_route(route, transport)
        choice = self.choose_transport(tgt, transport, durable=durable, native_reply=native_reply or native)
        earlier = self._earlier(tgt, body) + provenance_notes(body)  # which bytes are a peer's, and what they ask
        relay_id = relay_id or self.ledger.next_id(self.me.address)
        envelope = Envelope.make(sender=self.me.sender, to=to_role, id=relay_id, hop=hop, want=want, body=body)
        return await self._deliver(tgt, envelope, choice.transport, _fallback or choice.fallback, timeout,
                                   tuple(choice.notes) + extra + earlier,
                                   reply_route=self.reply_route(tgt, relay_id, via=route.via).how if route else None,
                                   heading=heading, reply_via=route.via if route else None)

    async def _send_chain(self, chain: Chain, target: str | Target, body: str, *, relay_id: str | None,
                          **kw: Any) -> Delivery:
        """Each transport of the chain in order; the next only when the previous refused before any
        side effect (at choice time, or at a stage that sent nothing). One relay id throughout."""
        check_body(body)
        tgt = await self.target(target)
        self._check_halt()
        rid = relay_id or self.ledger.next_id(self.me.address)
        members = list(chain.members)
        skipped: list[str] = []
        for i, t in enumerate(members):
            if self._transports.get(t.name) is not raw_of(t):
                skipped.append(f"{t.name}: not a transport of this session")
                continue
            rest = [m.name for m in members[i + 1:]]
            fallback = (f"{' then '.join(rest)} (chain {chain}: tried only if {t.name} refuses before any side effect)"
                        if rest else f"none (last of chain {chain})")
            if skipped:
                fallback += f"; passed over: {'; '.join(skipped)}"
            try:
                d = await self.send(tgt, body, transport=t.name, relay_id=rid, _fallback=fallback, **kw)
            except LoopHalt:
                raise
            except (PolicyRefusal, UsageError) as exc:  # refused before any plan: nothing happened
                skipped.append(f"{t.name}: {exc}")
                continue
            if rest and d.state is DeliveryState.REFUSED and t.refused_before_side_effect(d):
                skipped.append(f"{t.name}: {d.reason}")
                (self.echo or print)(f"chain {chain}: {t.name} refused before any side effect; trying {rest[0]}")
                continue
            return d
        raise PolicyRefusal(f"no transport of chain {chain} can reach {tgt.spec}: {'; '.join(skipped)}")

    def _native_for_route(self, route: ReplyRoute | None, transport: str | None) -> tuple[bool, tuple[str, ...]]:
        """Whether the route needs a natively answerable transport. An explicitly requested
        transport is kept (never silently replaced), with a note that the route is weaker."""
        if route is None or not route.needs_native_reply:
            return False, ()
        chosen = self._transports.get(transport) if transport else None
        if chosen is not None and not chosen.capabilities.native_reply:
            return False, (f"{transport} does not tell the receiver which listed peer to answer: it can answer "
                           "only if it finds this inbox in its peer list by itself",)
        return True, ()

    # -- reply routes -------------------------------------------------------------------
    def reply_route(self, target: Target, relay_id: str = "<relay id>", via: str | None = None) -> ReplyRoute:
        """How `target` would answer a message from here (its agent module decides, from its
        own configuration; `via` asks for one route: native, relay-reply, mcp, turn)."""
        from relay_repl.agents import reply_route
        from relay_repl.agents.replies import check_via

        check_via(via)

        inbox = self.inbox_server
        reg = self.registration
        ctx = ReplyContext(relay_id=relay_id, inbox=str(inbox.path) if inbox is not None else None,
                           listed_name=reg.name if reg is not None else None,
                           listed_socket=str(reg.socket_path) if reg is not None else None, via=via)
        return reply_route(target, ctx)

    async def _route(self, target: Target, want: str, via: str | None = None) -> ReplyRoute:
        """The route for an answer, offering to list the inbox when that is what is missing,
        and else the turn reply (the target's own final message, which needs nothing of it).
        Refuses (nothing sent) when there is none: never ask for an answer that cannot come."""
        route = self.reply_route(target, via=via)
        if not route.ok and route.offer_register and self.inbox_server is not None:
            (self.echo or print)(f"{route.missing}\nOffering to list the inbox now:")
            if await self.register_inbox():
                route = self.reply_route(target, via=via)
        if not route.ok and via is None:  # the routes that need nothing of the operator
            for other in ("mcp", "turn"):
                alt = self.reply_route(target, via=other)
                if alt.ok:
                    (self.echo or print)(f"{route.missing}\nreply route instead: {alt.how}")
                    route = alt
                    break
        if not route.ok:
            raise PolicyRefusal(f"want={want}: {route.missing}")
        return route

    async def preview(self, target: str | Target, body: str, *, want: Want = "none", transport: str | None = None,
                      to_role: str = "peer", hop: int = 0, heading: str | None = None, relay_id: str | None = None) -> Plan:
        """The plan `send` would show, with nothing sent, asked or written (a dry run):
        the relay id is the one the ledger would hand out next, unless given."""
        tgt = await self.target(target)
        choice = self.choose_transport(tgt, transport)
        rid = relay_id or self.ledger.peek_next_id(self.me.address)
        envelope = Envelope.make(sender=self.me.sender, to=to_role, id=rid, hop=hop, want=want, body=body)
        plan = choice.transport.plan(tgt, envelope, fallback=choice.fallback, notes=choice.notes)
        if want != "none":  # the route it would name; a missing route is shown, not offered (nothing is asked)
            route = self.reply_route(tgt, rid)
            for other in ("mcp", "turn"):
                if not route.ok and self.reply_route(tgt, rid, via=other).ok:
                    route = self.reply_route(tgt, rid, via=other)
            plan = plan.model_copy(update={"reply_route": route.how if route.ok else f"none: {route.missing}"})
        return plan.model_copy(update={"heading": heading}) if heading else plan

    async def forward(self, target: str | Target, line: str, *, transport: str | None = None,
                      durable: bool = False, native_reply: bool = False, want: Want | None = None,
                      timeout: float = 30.0, heading: str | None = None) -> Delivery:
        """Forward a pasted envelope: same id and sender, hop + 1; a duplicate id is dropped.

        The id is marked seen only once the operator said yes and the delivery starts:
        a forward declined at the gate, or aimed at a mistyped target, leaves it usable.
        `durable` and `native_reply` constrain the transport as for `send`; the envelope
        keeps its own want, so a contradicting `want` is refused rather than ignored."""
        why = control_refusal(line, "pasted envelope")
        if why:
            raise EnvelopeError(why)
        env = Envelope.parse(line)
        if env is None:
            raise UsageError("that is not a relay envelope line (it must start with '[relay/1 ')")
        self._check_halt()
        if env.is_halt:
            self.ledger.halt(f"relay-halt in a pasted envelope {env.id}", by=env.sender)
            raise LoopHalt(f"{env.id} carries relay-halt: stopping, not forwarding")
        if want is not None and want != env.want:
            raise UsageError(f"the pasted envelope asks want={env.want} and a forward keeps it: drop --want "
                             f"(or pass --want {env.want}); to ask for something else, send a new message")
        if env.id.startswith(self.me.address + "-"):
            self.ledger.event("duplicate", relay_id=env.id, data={"line": line, "via": "forward", "why": "our own id"})
            raise LoopHalt(f"relay id {env.id} is our own: it came back to us, so it is a duplicate; not forwarded")
        # Seeing an id on arrival is not a forward: an id that reached the inbox may be
        # forwarded once; forwarding the same id again is the duplicate (seed section 9).
        # Only looked at here: the id is recorded once the operator said yes (in _deliver).
        if self.ledger.was_forwarded(env.id):
            self.ledger.event("duplicate", relay_id=env.id, data={"line": line, "via": "forward"})
            raise LoopHalt(f"relay id {env.id} was already forwarded: duplicate dropped, not forwarded again")
        onward = env.next_hop()  # refuses at the hop cap before anything is recorded
        tgt = await self.target(target)
        choice = self.choose_transport(tgt, transport, durable=durable, native_reply=native_reply)
        return await self._deliver(tgt, onward, choice.transport, choice.fallback, timeout,
                                   tuple(choice.notes) + self._earlier(tgt, env.body)
                                   + forwarded_notes(env.sender, env.body), heading=heading, forwarded=env)

    def _earlier(self, tgt: Target, body: str) -> tuple[str, ...]:
        """Plan notes naming earlier sends of this body to this target that are interrupted or pending."""
        sweep_interrupted(self.ledger)
        return tuple(earlier_unfinished(self.ledger, tgt.spec, body))

    async def reply(self, message: InboundMessage | int, text: str, *, want: Want = "none",
                    target: str | Target | None = None, transport: str | None = None,
                    timeout: float = 30.0) -> Delivery:
        """Answer a message that reached the inbox: hop + 1 (never reset), `re=` its id.

        The answer goes to the session the message was verified to come from; a
        message whose origin is not verified is answered only to an explicit
        `target=` (relay will not route by a claim). Duplicates, halts and the hop
        cap are refused before anything is planned.
        """
        check_body(text)
        msg = self._find_message(message)
        try:
            env = Envelope.parse(msg.line)
        except ValueError:
            env = None
        if env is None:
            raise UsageError(f"inbox message #{msg.seq} is not a relay envelope, so it has no id or hop to answer; "
                             "use session.send() for a new exchange")
        self._check_halt()
        if contains_halt(msg.line):
            raise LoopHalt(f"{env.id} carries relay-halt: stopping, not answering")
        if self.ledger.sightings(env.id) > 1:
            raise LoopHalt(f"relay id {env.id} arrived more than once: a duplicate is neither acted on nor answered")
        hop = env.next_hop().hop  # LoopHalt at the cap: the cap holds across replies and forwards
        if target is None:
            v = msg.verdict
            if v is None or not v.ok or not v.session:
                raise PolicyRefusal(f"inbox message #{msg.seq} is {v.verdict if v else 'unjudged'}"
                                    f" ({v.detail if v else 'no verdict'}): relay will not answer a claim; "
                                    "pass target= explicitly")
            target = v.session
        tgt = await self.target(target)
        if self.ledger.events(kind="answered", relay_id=env.id):
            raise LoopHalt(f"{env.id} was already answered: a second answer would repeat the exchange")
        route = await self._route(tgt, want) if want != "none" else None
        native, extra = self._native_for_route(route, transport)
        choice = self.choose_transport(tgt, transport, native_reply=native)
        relay_id = self.ledger.next_id(self.me.address)
        answer = Envelope.make(sender=self.me.sender, to=env.role, id=relay_id, hop=hop, want=want, re=env.id, body=text)
        d = await self._deliver(tgt, answer, choice.transport, choice.fallback, timeout, tuple(choice.notes) + extra,
                                reply_route=self.reply_route(tgt, relay_id, via=route.via).how if route else None,
                                reply_via=route.via if route else None)
        if d.outcome != "refused":
            self.ledger.event("answered", relay_id=env.id, delivery=d.key, data={"by": relay_id, "hop": hop})
        return d

    def _find_message(self, ref: InboundMessage | int) -> InboundMessage:
        if isinstance(ref, InboundMessage):
            return ref
        hits = [m for m in self.ledger.inbox() if m.seq == ref]
        if not hits:
            raise UsageError(f"no inbox message #{ref}; `session.inbox` lists them")
        return hits[0]

    def _check_halt(self) -> None:
        halt = self.ledger.active_halt()
        if halt:
            raise LoopHalt(f"relay-halt is in force ({halt.reason}, by {halt.by}): nothing is sent and no wait "
                           "continues until `session.unhalt()`")

    async def _deliver(self, tgt: Target, envelope: Envelope, chosen: Transport, fallback: str, timeout: float,
                       notes: tuple[str, ...] = (), reply_route: str | None = None,
                       heading: str | None = None, forwarded: Envelope | None = None,
                       reply_via: str | None = None) -> Delivery:
        plan = chosen.plan(tgt, envelope, fallback=fallback, notes=notes)
        if reply_route:
            plan = plan.model_copy(update={"reply_route": reply_route})
        if heading:
            plan = plan.model_copy(update={"heading": heading})
        d = Delivery(relay_id=envelope.id, target=tgt.spec, transport=chosen.name, plan=plan, want=envelope.want)
        d._waiter = self._wait_reply
        if reply_via:
            d.extra.reply_via = reply_via
        self.deliveries.append(d)
        # what a later process needs to debug it: the target as resolved (no relay id, so `why` stays plan-first)
        self.ledger.event("delivery", delivery=d.key, data={"relay_id": envelope.id, "transport": chosen.name,
                                                            "spec": tgt.spec, "body": envelope.body, **owner(),
                                                            "target": tgt.model_dump(mode="json")})
        approval = await self._gated(plan, delivery=d.key, target=tgt)
        if approval is None:
            d.state, d.stage, d.reason = DeliveryState.WITHHELD, "gate", "the operator answered No"
            self.ledger.event("outcome", delivery=d.key, relay_id=d.relay_id, data={"state": d.state.value, "reason": d.reason})
            return d
        try:
            await self._approved(d, tgt, envelope, chosen, plan, timeout, forwarded, approval)
        finally:
            spend(approval)  # single use: the delivery is over, whatever its outcome
        self.record_outcome(d)
        return d

    async def _approved(self, d: Delivery, tgt: Target, envelope: Envelope, chosen: Transport, plan: Plan,
                        timeout: float, forwarded: Envelope | None, approval: Approval) -> None:
        """The delivery after the operator's yes, under the approval the gate minted for it."""
        log = StageLog(d, self.ledger, echo=self.echo)
        halt = self.ledger.active_halt()  # it may have arrived while the plan was on screen
        if halt is not None:
            self._halted(d, log, Halted(halt.reason, halt.by))
        elif forwarded is not None and not self._mark_forwarded(forwarded, tgt):
            # recorded only now that the delivery starts; another process forwarded it while the plan was open
            self.ledger.event("duplicate", relay_id=forwarded.id, data={"via": "forward", "delivery": d.key})
            d.reason = f"relay id {forwarded.id} was forwarded meanwhile (seen while the plan was open): duplicate dropped"
            log("gate", DeliveryState.REFUSED, d.reason)
        else:
            self.ledger.record_sent(envelope.id, envelope.hop, tgt.spec)
            await self._run(d, tgt, chosen, plan.payload, log, timeout, approval)

    def _mark_forwarded(self, env: Envelope, tgt: Target) -> bool:
        """Record a forward the operator approved; False if it was forwarded meanwhile."""
        if self.ledger.sightings(env.id) == 0:  # pasted from elsewhere: its later arrival is the duplicate
            self.ledger.mark_seen(env.id, env.hop, env.sender)
        return self.ledger.mark_forwarded(env.id, tgt.spec)

    async def _run(self, d: Delivery, tgt: Target, chosen: Transport, payload: str, log: StageLog,
                   timeout: float, approval: Approval) -> None:
        """The transport's stages, then its confirmation; a halt stops them at the next boundary."""
        log.armed = True  # from here each stage boundary stops on a halt
        try:
            await chosen.send(d, tgt, payload, log, approval=approval)
            log.armed = False  # all that is left is reading receiver evidence
            if d.state not in {DeliveryState.FAILED, DeliveryState.REFUSED, DeliveryState.TYPED}:
                await chosen.confirm(d, tgt, payload, log, timeout)
        except Halted as h:
            self._halted(d, log, h)
        except Exception as exc:  # translate at the seam; the ledger keeps the why
            log.armed = False
            log.fail(d.stage, describe(exc, f"stage {d.stage} of {chosen.name}"), error=repr(exc)[:500])
        except BaseException:  # Ctrl-C / cancelled wait: the delivery stays pending, recorded, debuggable
            log.armed = False
            d.reason = d.reason or f"the wait was interrupted at stage {d.stage}; `session.debugger({d.relay_id!r})` picks it up"
            self.record_outcome(d, interrupted=True)
            raise
        if d.reply is not None and d.state not in ANSWERED and d.state is not DeliveryState.HALTED:
            # the verified answer came while the transport was still confirming: it is
            # receiver evidence in itself, and the stage log must not overwrite it
            d.state = DeliveryState.ACKNOWLEDGED if d.want == "ack" else DeliveryState.REPLIED

    async def _run_armed(self, d: Delivery, log: StageLog, approval: Approval | None,
                         step: Callable[[Approval], Awaitable[None]]) -> None:
        """Run one side-effecting step approved at the gate (the debugger's) with the halt
        boundary armed: a halt already in force, or one at any stage, stops it as in a send.
        The step gets the approval its own plan got; it is spent when the step ends."""
        from relay_repl.core.approval import check

        check(approval, what="the debugger's step", relay_id=d.relay_id)
        assert approval is not None
        log.armed = True
        try:
            log.checkpoint("the approved step")
            await step(approval)
        except Halted as h:
            self._halted(d, log, h)
        finally:
            log.armed = False
            spend(approval)

    def _halted(self, d: Delivery, log: StageLog, h: Halted) -> None:
        """Record a send stopped by a relay-halt: what it had done, and that nothing more was."""
        log.armed = False
        if not d.evidence:
            done = "after the operator's yes, before anything was sent: nothing was typed, written or queued"
        else:
            last = d.evidence[-1]
            nxt = d.extra.halted_before or "the next stage"
            done = (f"after stage {last.stage} ({last.state.value}: {last.detail}); {nxt} was not done and "
                    "nothing more was typed, written or queued")
        d.reason = f"relay-halt ({h.reason}, by {h.by}) stopped the send {done}; `session.unhalt()` clears the halt"
        log("halt", DeliveryState.HALTED, d.reason)

    def record_outcome(self, d: Delivery, **more: Any) -> None:
        """The delivery's state and everything a later process needs to carry on (transport extras)."""
        self.ledger.event("outcome", delivery=d.key, relay_id=d.relay_id,
                          data={"state": d.state.value, "reason": d.reason, "stage": d.stage, "extra": d.extra.model_dump(mode="json", exclude_defaults=True), **more})

    # -- the operator's inbox ---------------------------------------------------------
    async def open_inbox(self, task_group: Any, echo: Callable[[str], None] | None = None) -> Any:
        """Clean what crashed inboxes left, then listen on this session's own inbox in
        `task_group` and attach it: replies and receipts now have somewhere to go."""
        import sys

        from relay_repl.session.inbox import Inbox, clean_stale

        clean_stale(echo=lambda line: print(f"relay: {line}", file=sys.stderr))  # stderr: `--json` stays JSON
        inbox = Inbox(self.ledger, address=self.me.address, sender=self.me.sender, echo=echo)
        await inbox.listen(task_group)
        self.attach_inbox(inbox)
        return inbox

    async def clean(self, echo: Callable[[str], None] | None = None) -> list[Any]:
        """Remove what crashed relay inboxes left (`relay clean`): relay's own files at once; files in
        other programs' directories (Claude's registry, its socket directories) only after the plan
        naming each one is shown and approved. Returns the inbox records cleaned."""
        from relay_repl.session.inbox import clean_plan, clean_stale

        plan = clean_plan()
        approval = await self._gated(plan) if plan is not None else None
        try:
            return clean_stale(echo=echo, approval=approval)
        finally:
            spend(approval)

    async def close_inbox(self) -> None:
        """Remove the inbox's sockets and any registry entry it wrote (even while cancelled)."""
        import anyio

        if self.inbox_server is not None:
            with anyio.CancelScope(shield=True):
                await self.inbox_server.close()

    def attach_inbox(self, inbox: Any) -> None:
        """Called by the REPL once its inbox listens: replies now have somewhere to go."""
        self.inbox_server = inbox
        self.me = self.me.model_copy(update={"inbox": str(inbox.path)})
        callbacks = getattr(inbox, "on_message", None)
        if callbacks is not None and self._on_inbound not in callbacks:
            callbacks.append(self._on_inbound)

    @property
    def echo(self) -> Callable[[str], None] | None:
        """Where progress and inbound lines go; None: nowhere. Whatever is assigned is wrapped in
        `safe_echo`, so a peer's escape sequence or bidi override never reaches the terminal raw."""
        return self._echo

    @echo.setter
    def echo(self, echo: Callable[[str], None] | None) -> None:
        self._echo = safe_echo(echo) if echo is not None else None

    # -- answers -------------------------------------------------------------------------
    def _on_inbound(self, msg: InboundMessage) -> None:
        """Link an inbox message to the delivery its `re=` names; wake every waiter.

        Only the asked session's answer becomes `d.reply`: its verdict must be ok AND name
        the delivery's target (for a forward, where the forward went). Anything else is kept
        in `d.replies`, whatever the route (issue 16 case 1)."""
        if msg.answers:
            hits = [d for d in self.deliveries if d.relay_id == msg.answers]
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
                    self.ledger.event("linked", delivery=d.key, relay_id=d.relay_id,
                                      data={"seq": msg.seq, "reply_id": msg.relay_id, "session": v.session,
                                            "pid": v.pid, "state": d.state.value})
                elif why_not is not None:
                    self.ledger.event("answer-rejected", delivery=d.key, relay_id=d.relay_id,
                                      data={"seq": msg.seq, "why": why_not,
                                            "detail": f"inbox #{msg.seq} not accepted as the answer: {why_not}",
                                            "verdict": v.model_dump(mode="json") if v else None})
                    if self.echo:
                        self.echo(f"warning: inbox #{msg.seq} answers {d.relay_id} but is {why_not}: kept in "
                                  "d.replies, NOT accepted as the answer")
        for ev in list(self._wakeups):
            ev.set()
        self._wakeups.clear()

    async def _wait_reply(self, d: Delivery, timeout: float) -> InboundMessage | None:
        """Wait for `d`'s verified answer; None (state no_reply) after `timeout` seconds."""
        if d.outcome == "refused" or d.state is DeliveryState.FAILED:
            raise UsageError(f"{d.relay_id} was not delivered ({d.summary()}): no answer can come")
        if d.want == "none":
            raise UsageError(f"{d.relay_id} asked for no answer (want=none): nothing will come; send with want='reply'")
        turn = d.extra.reply_via == "turn"  # read from the target's own record: no inbox needed
        if self.inbox_server is None and not turn:
            raise UsageError("no inbox is listening here, so no answer can arrive")
        say = self.echo or (lambda line: None)
        start = anyio.current_time()
        deadline = start + timeout
        last_note = start
        async with anyio.create_task_group() as tg:
            if turn:
                tg.start_soon(self._watch_turn, d, timeout)
            while d.reply is None and not d.extra.turn_ended:
                if self.ledger.active_halt():
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
        self._check_halt()  # a relay-halt (even in this very answer) stops every wait in progress
        if d.reply is not None:
            return d.reply
        why = d.extra.turn_ended if d.extra.turn_ended else f"no reply within {timeout:g} s"
        if d.replies:
            why += f" ({len(d.replies)} unverified answer(s) in d.replies)"
        if d.outcome == "delivered":
            d.state = DeliveryState.NO_REPLY
        d.reason = why if d.outcome == "delivered" else f"{why}; the delivery itself is still pending at stage {d.stage}"
        self.ledger.event("no-reply", delivery=d.key, relay_id=d.relay_id, data={"timeout": timeout, "state": d.state.value})
        say(f"{d.relay_id}: {d.reason}")
        return None

    async def _watch_turn(self, d: Delivery, timeout: float) -> None:
        """The turn route: read the target's own final message and link it as `d`'s answer."""
        from relay_repl.session.turn_replies import wait_turn_reply

        try:
            tgt = await self.target(d.target)
            found = await wait_turn_reply(d, tgt, self.ledger, timeout, stop=lambda: d.reply is not None)
        except LoopHalt:
            return  # the wait itself sees the halt and stops with it
        except RelayError as exc:
            d.extra.turn_ended = f"no turn reply can be read: {exc}"
            found = None
        if found is not None and d.reply is None:
            if found.status == "answered":
                self._link_turn_reply(d, tgt, found)
            else:  # the turn ended without an answer: say so now rather than wait out the timeout
                d.extra.turn_ended = f"{d.target}'s turn ended: {found.status} ({found.record} in {found.source})"
        for ev in list(self._wakeups):
            ev.set()

    def _link_turn_reply(self, d: Delivery, tgt: Target, found: Any) -> InboundMessage:
        """Keep a turn reply in the inbox (so `session.inbox` and `why` show it) and link it to `d`.

        Its verdict is "receiver's own record": no process connected, the harness of the
        target wrote it, tied to our message by an id the model never sees."""
        from relay_repl.core.inbound import Verdict

        verdict = Verdict(verdict="receiver's own record", session=tgt.spec, session_pid=tgt.pid, claim=None,
                          detail=f"{found.record} in {found.source}, matched by {found.anchor}")
        origin = {"kind": "turn-reply", "status": found.status, "source": found.source, "record": found.record,
                  "anchor": found.anchor, "turn_id": found.turn_id, "at": found.at}
        line = found.text if found.text is not None else f"({found.status}: the turn ended without a final message)"
        msg = self.ledger.add_inbox(line, origin=origin, relay_id=None, peer=tgt.spec, answers=d.relay_id,
                                    verdict=verdict)
        if self.echo:
            self.echo(f"turn reply ← {tgt.spec} ({found.status}): {line}")
        self._on_inbound(msg)
        return msg

    async def expect(self, delivery: Delivery | str, timeout: float = 60.0) -> InboundMessage | None:
        """Wait for the verified answer to a delivery (or relay id); see Delivery.wait_reply."""
        return await self._find_delivery(delivery).wait_reply(timeout)

    async def register_inbox(self, name: str = "relay-operator") -> bool:
        """List the inbox as a peer (gated) of the agent kind whose sessions answer only to a listed
        peer (`AgentKind.answers_listed_inbox`): its own listing names it, its native send reaches it."""
        import anyio

        from relay_repl.agents.registry import kinds

        inbox = self.inbox_server
        if inbox is None:
            raise UsageError("no inbox is listening here: only the `relay` REPL runs one")
        listing = [k for k in kinds() if k.answers_listed_inbox]
        if not listing:
            raise UsageError("no registered agent kind lists peers: answers come by `relay reply`, MCP or turn reply")
        reg = await anyio.to_thread.run_sync(listing[0].inbox_listing, name)  # refuses unverified versions
        if reg is None:
            raise UsageError(f"{listing[0].label} offers no peer listing for the inbox")
        approval = await self._gated(reg.plan())
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
        self.ledger.event("inbox-registered", data={"name": reg.name, "record": str(reg.files()[0])})
        return True

    # -- debugging a stuck delivery -------------------------------------------------------
    async def debug(self, delivery: Delivery | str, *, recheck: float = 5.0) -> Delivery:
        """Walk a delivery's stages with the evidence each one read, then, if it is
        still pending, read the receiver's evidence again (read-only: nothing is
        re-sent, so a duplicate cannot happen) for up to `recheck` seconds."""
        import time as _time

        d = self._find_delivery(delivery)
        say = self.echo or print
        say(f"{d!r}")
        if d.plan:
            say(f"  payload: {d.plan.payload}")
            say(f"  delivered means: {d.plan.delivered_when}")
        for i, ev in enumerate(d.evidence, 1):
            when = _time.strftime("%H:%M:%S", _time.localtime(ev.at))
            say(f"  {i}. {when} [{ev.stage}] {ev.state.value}: {ev.detail}")
            for key, value in list(ev.data.items())[:6]:
                text = str(value)
                say(f"       {key}: {text[:160]}{'…' if len(text) > 160 else ''}")
        self.ledger.event("debug", delivery=d.key, relay_id=d.relay_id, data={"state": d.state.value})
        if d.outcome != "pending":
            say(f"  final: {d.summary()}")
            return d
        if d.state is DeliveryState.TYPED:
            say("  the payload was typed but never shown in full, so Enter was never pressed; look at the pane "
                "(`relay lab attach NAME` or `tmux attach`) and submit or clear it yourself: relay will not")
            return d
        if d.plan is None or d.transport not in self._transports:
            say("  no transport to re-read evidence with")
            return d
        await self.refresh()
        target = await self.target(d.target)
        say(f"  re-reading receiver evidence for up to {recheck:g}s (nothing is sent) …")
        await self._transports[d.transport].confirm(d, target, d.plan.payload, StageLog(d, self.ledger, echo=say), recheck)
        say(f"  now: {d.summary()}")
        return d

    async def turn_reply(self, delivery: Delivery | str, timeout: float = 60.0) -> Any:
        """The receiver's own final message in the turn `delivery` started, read from its
        rollout (Codex) or transcript (Claude): a reply route that needs no tool and no
        permission. Returns a TurnReply (answered / no final message / aborted) or None
        after `timeout`; recorded as `turn-reply` in `why(id)`."""
        from relay_repl.session.turn_replies import wait_turn_reply

        d = self._find_delivery(delivery)
        tgt = await self.target(d.target)
        found = await wait_turn_reply(d, tgt, self.ledger, timeout, echo=self.echo)
        if found is not None and self.ledger.halt_if_carried(found.text, where=f"{tgt.spec}'s turn reply to "
                                                             f"{d.relay_id}", by=tgt.spec):
            self._check_halt()
        return found

    def _find_delivery(self, ref: Delivery | str) -> Delivery:
        if isinstance(ref, Delivery):
            return ref
        hits = [d for d in self.deliveries if ref in (d.relay_id, d.key)]
        if not hits:
            raise UsageError(f"no delivery {ref!r} in this session; `session.why({ref!r})` shows what the ledger has")
        return hits[-1]

    # -- recipes -------------------------------------------------------------------------
    async def run(self, recipe: str, *, dry_run: bool = False, **params: Any) -> Any:
        """Run a saved recipe (a name from `relay recipes`, or a .toml path): every send
        planned and gated, hop reset to 0 only at the start of each round. Returns a Run."""
        from relay_repl.session.recipes import run_recipe

        return await run_recipe(self, recipe, params, dry_run=dry_run)

    async def resume(self, run_id: str) -> Any:
        """Continue a stopped run from the ledger; confirmed steps are never sent again."""
        from relay_repl.session.recipes import resume_run

        return await resume_run(self, run_id)

    def save_recipe(self, name: str, *, description: str = "", overwrite: bool = False) -> Any:
        """Write this session's sends (and the replies they waited for) as $RELAY_HOME/recipes/NAME.toml."""
        from relay_repl.session.recipes import save_recipe

        path = save_recipe(self, name, description=description, overwrite=overwrite)
        (self.echo or print)(f"wrote {path}; run it with `await session.run({name!r})` or `relay run {name}`")
        return path

    # -- notebooks ---------------------------------------------------------------------
    async def notebook(self, path: str, *, dry_run: bool = False, **params: Any) -> Any:
        """Run a notebook (FILE.py of `# %%` cells) here, through this session's gate; returns its run."""
        from relay_repl.session.notebook import run_notebook

        return await run_notebook(self, path, {k: str(v) for k, v in params.items()}, dry_run=dry_run)

    def save_notebook(self, name: str, *, overwrite: bool = False) -> Any:
        """Write this REPL session's inputs that ran without error as ./NAME.py cells, with a first report."""
        from relay_repl.session.notebook import save_notebook

        path = save_notebook(self, name, overwrite=overwrite)
        (self.echo or print)(f"wrote {path}; run it with `relay notebook run {path}` (--dry-run shows every plan)")
        return path

    # -- halts and history -----------------------------------------------------------
    def halt(self, reason: str = "operator halt") -> None:
        self.ledger.halt(reason, by=self.me.sender)

    def unhalt(self) -> int:
        return self.ledger.clear_halts(by=self.me.sender)

    async def verify(self, relay_id: str, target: str | Target | None = None, *, transcript: str | None = None) -> Any:
        """Seed section 8 audit: who really sent `relay_id`, from the receiver's own origin records
        (a target's transcript, any transcript file, or every live Claude target's); read-only.
        Returns a `VerifyReport` (`.verdict`, `.records`, `.exit_code`); see session/verify.py."""
        import anyio

        from relay_repl.session import verify as v

        if target is not None and transcript is not None:
            raise UsageError("name a target or a transcript file, not both")
        if transcript is not None:
            return await anyio.to_thread.run_sync(v.verify_file, relay_id, transcript, self.ledger)
        if target is not None:
            t = await self.target(target)
            return await anyio.to_thread.run_sync(v.verify_target, relay_id, t, self.ledger)
        if not self._refreshed:
            await self.refresh()
        return await anyio.to_thread.run_sync(v.verify_everywhere, relay_id, list(self._targets), self.ledger)

    def why(self, relay_id: Any) -> Any:
        """Every event recorded for one relay id (or a Delivery), oldest first: a list that prints as a
        table, with the answers linked to it (by their `re=` header) and their verdicts beside the send."""
        from relay_repl.store.timeline import Timeline

        rid = relay_id.relay_id if isinstance(relay_id, Delivery) else str(relay_id)
        rid = rid or ""
        return Timeline(rid, self.ledger.events(relay_id=rid), answers=self.ledger.inbox(answers=rid),
                        received=[m for m in self.ledger.inbox() if m.relay_id == rid])

    @property
    def inbox(self) -> Any:
        """Every message that reached the operator's inbox (kept in the ledger), as a table with verdicts."""
        from relay_repl.store.timeline import InboxTable

        return InboxTable(self.ledger.inbox())

    def debugger(self, delivery: Delivery | str) -> Any:
        """A debugger for one delivery (this process's, or any in the ledger by key or relay id).

        `dbg = session.debugger(d)`; `await dbg.look()`, `await dbg.step()`, `await dbg.resume()`,
        `dbg.abandon("why")`. It prints as a table of the stages done and the one next."""
        from relay_repl.core.errors import RelayError
        from relay_repl.session.debugger import Debugger, Recorded, rebuild

        ref = delivery.key if isinstance(delivery, Delivery) else str(delivery).strip()
        mine = [d for d in self.deliveries if ref in (d.key, d.relay_id)]
        try:
            rec = rebuild(self.ledger, ref)
        except RelayError:
            if not mine:
                raise
            rec = Recorded(delivery=mine[-1])
        if mine:  # this process's own object, so the operator's `d` follows each step
            rec = rec.model_copy(update={"delivery": mine[-1]})
        return Debugger(self, rec)

    def __repr__(self) -> str:
        lines = [f"<Session me={self.me.sender} inbox={self.me.inbox or 'none'}"]
        if not self._refreshed:
            lines.append("  targets: not discovered yet (await session.refresh())")
        elif not self._targets:
            lines.append("  targets: none found")
        else:
            lines.append(f"  targets ({len(self._targets)}):")
            lines += ["    " + row for row in TargetTable(self._targets).__repr__().splitlines()]
        open_ = [d for d in self.deliveries if d.outcome == "pending"]
        lines.append(f"  deliveries: {len(self.deliveries)} ({len(open_)} open)")
        lines += [f"    {d!r}" for d in open_]
        halt = self.ledger.active_halt()
        if halt:
            lines.append(f"  HALTED: {halt.reason}")
        return "\n".join(lines) + ">"



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
