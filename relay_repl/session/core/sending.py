"""Planning, gating and sending: the transports, the choice among them, the plan, the gate's
yes, the transport's stages and its confirmation, and the ledger's record of each.

Every side effect goes through the gate (session/core/gating.py): the plan is built, shown,
logged, and only a yes lets the transport act, under the `Approval` minted for exactly that
plan; it is spent when the delivery ends. A want=reply|ack send first asks the target's
agent how the answer will come back (the plan shows it) and refuses when there is no route.
A relay-halt stops a send at the next stage boundary.

One pipeline: `send`, `reply`, `forward`, a transport handle, a chain, a host's target, an
agent's request and its answer each build a `SendRequest` (session/core/send_request.py) and hand it
to `Sender.submit`; only what differs by the words' origin stays at the entry point (a reply's
duplicate and hop checks, a forward's pasted line). A run's hooks see each request, each plan
before the gate and each outcome (session/core/hooks.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from relay_repl.core.approval import Approval, spend
from relay_repl.core.controls import control_refusal
from relay_repl.core.delivery import ANSWERED, Delivery, DeliveryState
from relay_repl.core.envelope import Envelope, Want, check_body, contains_halt
from relay_repl.core.errors import (describe, EnvelopeError, Halted, LoopHalt, PolicyRefusal, UsageError)
from relay_repl.core.inbound import InboundMessage
from relay_repl.core.peertext import forwarded_notes, provenance_notes
from relay_repl.core.plan import Plan, ReplyRoute
from relay_repl.core.target import Target
from relay_repl.session.core.answers import Answers
from relay_repl.session.core.finder import Finder
from relay_repl.session.core.gating import Gatekeeper
from relay_repl.session.core.send_request import SendRequest
from relay_repl.session.core.sendoptions import SendOptions
from relay_repl.session.core.shared import Shared
from relay_repl.session.core.unfinished import earlier_unfinished, owner, sweep_interrupted
from relay_repl.system import startup_gc
from relay_repl.transports.base import StageLog, Transport
from relay_repl.transports.chain import Chain, TransportTable, chain_of, raw_of

if TYPE_CHECKING:
    from relay_repl.transports.ranking import Choice


class RemoteSender(Protocol):
    """What the pipeline asks of the sends to other hosts (session/remote/remote_send.py `RemoteSends`): the
    session hands a maker of them to `Sender`, so the core never imports the remote side."""

    async def send(self, target: str | Target, body: str, options: SendOptions) -> Delivery: ...


R = TypeVar("R", bound=RemoteSender)


def remote_spec(target: object) -> bool:
    """A spec (or Target) on another host: handed to session/remote/remote_send.py."""
    if isinstance(target, Target):
        return target.host is not None
    if not isinstance(target, str) or "/" not in target:
        return False
    from relay_repl.core.target import split_spec

    return split_spec(target.strip())[0] is not None


class Sender(Generic[R]):
    """The transports and every way a message leaves: send, chains, preview, forward, reply."""

    def __init__(self, shared: Shared, finder: Finder, gate: Gatekeeper, answers: Answers,
                 transports: Sequence[Transport] = (), *, remote: Callable[[Shared], R]) -> None:
        self.shared = shared
        self.finder = finder
        self.gate = gate
        self.answers = answers
        self.transports: dict[str, Transport] = {t.name: t for t in transports}
        self.table = TransportTable(self.transports, self._send_keywords)
        self._make_remote = remote
        self._remote: R | None = None

    @property
    def remote(self) -> R:
        """Sends to targets on other hosts (session/remote/remote_send.py), made on first use."""
        if self._remote is None:
            self._remote = self._make_remote(self.shared)
        return self._remote

    def choose_transport(self, target: Target, requested: str | None = None, *, durable: bool = False,
                         native_reply: bool = False) -> Choice:
        """Rank the transports by capability (see transports.ranking)."""
        from relay_repl.transports.ranking import Requirements, choose

        if requested is not None and requested not in self.transports:
            raise UsageError(f"unknown transport {requested!r}; known: {', '.join(self.transports) or 'none'}")
        return choose(target, list(self.transports.values()), Requirements(durable=durable, native_reply=native_reply),
                      requested)

    # -- sending: one pipeline for every request ----------------------------------------
    async def send(self, target: str | Target, body: str, options: SendOptions) -> Delivery:
        """The operator's own send (see Session.send, which builds `options` from its keywords)."""
        return await self.submit(SendRequest(target=target, body=body, options=options))

    async def submit(self, req: SendRequest) -> Delivery:
        """THE way into a send: every entry point (send, reply, forward, a transport handle, a host's
        target, an agent's request and its answer) builds a `SendRequest` and hands it here. The
        installed hooks are told of it, the operator's own sends pass a run's replay stage, then the
        pipeline: resolve → route → choose → plan → gate → run → confirm."""
        hooks = self.shared.hooks
        if not hooks:
            return await self._pipeline(req)
        hooks.on_request(req)
        d = await (hooks.send(req, self._pipeline) if req.replayable else self._pipeline(req))
        hooks.on_outcome(req, d)
        return d

    async def _pipeline(self, req: SendRequest) -> Delivery:
        """A host's target is planned and carried out there (gated here), a chain tries its members in
        order, anything else is planned and sent from here."""
        if req.forwarded is None and remote_spec(req.target):  # HOST/kind:name (session/remote/remote_send.py)
            return await self.remote.send(req.target, req.body, req.options)
        chain = chain_of(req.options.transport)
        if chain is not None:
            return await self._send_chain(chain, req)
        return await self._local(req)

    async def _local(self, req: SendRequest) -> Delivery:
        """resolve → halt check → route → choose → envelope → notes, then the plan, gate, run and
        confirmation (`_deliver`). The reply route is worked out once, for the id the message carries."""
        o = req.options
        transport = o.transport
        assert transport is None or isinstance(transport, str)
        if req.forwarded is None:  # a forwarded body was checked as the pasted line
            check_body(req.body)
        tgt = await self.finder.resolve(req.target)
        self.shared.check_halt()
        fwd = req.forwarded
        me = self.shared.me
        # a forward keeps its envelope (id, sender, want: its answer goes where its sender said), hop + 1
        relay_id = fwd.id if fwd is not None else (o.relay_id or self.shared.ledger.next_id(me.address))
        asks = req.want != "none" and fwd is None
        route = await self.route(tgt, req.want, o.reply_via, relay_id=relay_id) if asks else None
        native, extra = self._native_for_route(route, transport)
        choice = self.choose_transport(tgt, transport, durable=o.durable, native_reply=o.native_reply or native)
        if fwd is not None:
            envelope = fwd.next_hop()
        else:
            envelope = Envelope.make(sender=me.sender, to=o.to_role, id=relay_id, hop=o.hop, want=o.want,
                                     re=o.re, body=req.body)
        return await self._deliver(req, tgt, envelope, choice.transport, o.fallback or choice.fallback,
                                   tuple(choice.notes) + extra + self._origin_notes(req, tgt),
                                   reply_route=route.how if route else None,
                                   reply_via=route.via if route else None)

    def _origin_notes(self, req: SendRequest, tgt: Target) -> tuple[str, ...]:
        """The plan's notes on whose words these are: for a send, earlier unfinished sends of this body
        and the peers it quotes; for a forward, its sender's words; a reply answers one message."""
        if req.forwarded is not None:
            env = req.forwarded
            return self._earlier(tgt, env.body) + forwarded_notes(env.sender, env.body)
        if req.origin == "reply":
            return ()
        return self._earlier(tgt, req.body) + provenance_notes(req.body)

    async def _send_keywords(self, target: str | Target, body: str, **kw: object) -> Delivery:
        """`session.transports.X.send(target, body, transport=X, ...)`: the handle's keywords as options
        (a mistyped keyword is the TypeError a plain call would raise, before anything is planned)."""
        unknown = sorted(set(kw) - set(SendOptions.model_fields))
        if unknown:
            raise TypeError(f"send() got an unexpected keyword argument {unknown[0]!r}")
        return await self.send(target, body, SendOptions.model_validate(kw))

    async def _send_chain(self, chain: Chain, req: SendRequest) -> Delivery:
        """Each transport of the chain in order; the next only when the previous refused before any
        side effect (at choice time, or at a stage that sent nothing). One relay id throughout."""
        check_body(req.body)
        tgt = await self.finder.resolve(req.target)
        self.shared.check_halt()
        rid = req.options.relay_id or self.shared.ledger.next_id(self.shared.me.address)
        members = list(chain.members)
        skipped: list[str] = []
        for i, t in enumerate(members):
            if self.transports.get(t.name) is not raw_of(t):
                skipped.append(f"{t.name}: not a transport of this session")
                continue
            rest = [m.name for m in members[i + 1:]]
            fallback = (f"{' then '.join(rest)} (chain {chain}: tried only if {t.name} refuses before any side effect)"
                        if rest else f"none (last of chain {chain})")
            if skipped:
                fallback += f"; passed over: {'; '.join(skipped)}"
            try:
                d = await self._pipeline(req.to(tgt).with_options(transport=t.name, relay_id=rid, fallback=fallback))
            except LoopHalt:
                raise
            except (PolicyRefusal, UsageError) as exc:  # refused before any plan: nothing happened
                skipped.append(f"{t.name}: {exc}")
                continue
            if rest and d.state is DeliveryState.REFUSED and t.refused_before_side_effect(d):
                skipped.append(f"{t.name}: {d.reason}")
                self.shared.say(f"chain {chain}: {t.name} refused before any side effect; trying {rest[0]}")
                continue
            return d
        raise PolicyRefusal(f"no transport of chain {chain} can reach {tgt.spec}: {'; '.join(skipped)}")

    def _native_for_route(self, route: ReplyRoute | None, transport: str | None) -> tuple[bool, tuple[str, ...]]:
        """Whether the route needs a natively answerable transport. An explicitly requested
        transport is kept (never silently replaced), with a note that the route is weaker."""
        if route is None or not route.needs_native_reply:
            return False, ()
        chosen = self.transports.get(transport) if transport else None
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
        return reply_route(target, self.answers.reply_context(relay_id, via))

    async def route(self, target: Target, want: str, via: str | None = None, *,
                    relay_id: str = "<relay id>") -> ReplyRoute:
        """The route for an answer to message `relay_id` (the plan names it with that id), offering to
        list the inbox when that is what is missing, and else the turn reply (the target's own final
        message, which needs nothing of it). Refuses (nothing sent) when there is none: never ask for
        an answer that cannot come."""
        route = self.reply_route(target, relay_id, via=via)
        if not route.ok and route.offer_register and self.answers.inbox_server is not None:
            self.shared.say(f"{route.missing}\nOffering to list the inbox now:")
            if await self.answers.register_inbox():
                route = self.reply_route(target, relay_id, via=via)
        if not route.ok and via is None:  # the routes that need nothing of the operator
            for other in ("mcp", "turn"):
                alt = self.reply_route(target, relay_id, via=other)
                if alt.ok:
                    self.shared.say(f"{route.missing}\nreply route instead: {alt.how}")
                    route = alt
                    break
        if not route.ok:
            raise PolicyRefusal(f"want={want}: {route.missing}")
        return route

    async def preview(self, target: str | Target, body: str, *, want: Want = "none", transport: str | None = None,
                      to_role: str = "peer", hop: int = 0, heading: str | None = None, relay_id: str | None = None) -> Plan:
        """The plan `send` would show, with nothing sent, asked or written (see Session.preview)."""
        tgt = await self.finder.resolve(target)
        choice = self.choose_transport(tgt, transport)
        me = self.shared.me
        rid = relay_id or self.shared.ledger.peek_next_id(me.address)
        envelope = Envelope.make(sender=me.sender, to=to_role, id=rid, hop=hop, want=want, body=body)
        now, refusal = await choice.transport.before_asking(tgt)  # read-only, as before a send's question
        extra = ((now,) if now else ()) + ((f"a send now would be refused before asking: {refusal}",) if refusal else ())
        plan = choice.transport.plan(tgt, envelope, fallback=choice.fallback, notes=tuple(choice.notes) + extra)
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
        """Forward a pasted envelope: same id and sender, hop + 1 (see Session.forward)."""
        why = control_refusal(line, "pasted envelope")
        if why:
            raise EnvelopeError(why)
        env = Envelope.parse(line)
        if env is None:
            raise UsageError("that is not a relay envelope line (it must start with '[relay/1 ')")
        self.shared.check_halt()
        ledger = self.shared.ledger
        if env.is_halt:
            ledger.halt(f"relay-halt in a pasted envelope {env.id}", by=env.sender)
            raise LoopHalt(f"{env.id} carries relay-halt: stopping, not forwarding")
        if want is not None and want != env.want:
            raise UsageError(f"the pasted envelope asks want={env.want} and a forward keeps it: drop --want "
                             f"(or pass --want {env.want}); to ask for something else, send a new message")
        if env.id.startswith(self.shared.me.address + "-"):
            ledger.event("duplicate", relay_id=env.id, data={"line": line, "via": "forward", "why": "our own id"})
            raise LoopHalt(f"relay id {env.id} is our own: it came back to us, so it is a duplicate; not forwarded")
        # Seeing an id on arrival is not a forward: an id that reached the inbox may be
        # forwarded once; forwarding the same id again is the duplicate (seed section 9).
        # Only looked at here: the id is recorded once the operator said yes (in _deliver).
        if ledger.was_forwarded(env.id):
            ledger.event("duplicate", relay_id=env.id, data={"line": line, "via": "forward"})
            raise LoopHalt(f"relay id {env.id} was already forwarded: duplicate dropped, not forwarded again")
        env.next_hop()  # refuses at the hop cap before anything is recorded
        tgt = await self.finder.resolve(target)
        options = SendOptions(want=env.want, transport=transport, durable=durable, native_reply=native_reply,
                              timeout=timeout, heading=heading)
        return await self.submit(SendRequest(target=tgt, body=env.body, options=options, origin="forward",
                                             forwarded=env))

    def _earlier(self, tgt: Target, body: str) -> tuple[str, ...]:
        """Plan notes naming earlier sends of this body to this target that are interrupted or pending."""
        sweep_interrupted(self.shared.ledger)
        return tuple(earlier_unfinished(self.shared.ledger, tgt.spec, body))

    async def reply(self, message: InboundMessage | int, text: str, *, want: Want = "none",
                    target: str | Target | None = None, transport: str | None = None,
                    timeout: float = 30.0) -> Delivery:
        """Answer a message that reached the inbox: hop + 1 (never reset), `re=` its id (see Session.reply)."""
        check_body(text)
        msg = self.find_message(message)
        try:
            env = Envelope.parse(msg.line)
        except ValueError:
            env = None
        if env is None:
            raise UsageError(f"inbox message #{msg.seq} is not a relay envelope, so it has no id or hop to answer; "
                             "use session.send() for a new exchange")
        self.shared.check_halt()
        ledger = self.shared.ledger
        if contains_halt(msg.line):
            raise LoopHalt(f"{env.id} carries relay-halt: stopping, not answering")
        if ledger.sightings(env.id) > 1:
            raise LoopHalt(f"relay id {env.id} arrived more than once: a duplicate is neither acted on nor answered")
        hop = env.next_hop().hop  # LoopHalt at the cap: the cap holds across replies and forwards
        if target is None:
            v = msg.verdict
            if v is None or not v.ok or not v.session:
                raise PolicyRefusal(f"inbox message #{msg.seq} is {v.verdict if v else 'unjudged'}"
                                    f" ({v.detail if v else 'no verdict'}): relay will not answer a claim; "
                                    "pass target= explicitly")
            target = v.session
        tgt = await self.finder.resolve(target)
        if ledger.events(kind="answered", relay_id=env.id):
            raise LoopHalt(f"{env.id} was already answered: a second answer would repeat the exchange")
        options = SendOptions(want=want, transport=transport, timeout=timeout, hop=hop, to_role=env.role, re=env.id)
        d = await self.submit(SendRequest(target=tgt, body=text, options=options, origin="reply"))
        if d.outcome != "refused":
            ledger.event("answered", relay_id=env.id, delivery=d.key, data={"by": d.relay_id, "hop": hop})
        return d

    def find_message(self, ref: InboundMessage | int) -> InboundMessage:
        if isinstance(ref, InboundMessage):
            return ref
        hits = [m for m in self.shared.ledger.inbox() if m.seq == ref]
        if not hits:
            raise UsageError(f"no inbox message #{ref}; `session.inbox` lists them")
        return hits[0]

    # -- one delivery, from plan to outcome -------------------------------------------------
    async def _deliver(self, req: SendRequest, tgt: Target, envelope: Envelope, chosen: Transport, fallback: str,
                       notes: tuple[str, ...] = (), reply_route: str | None = None,
                       reply_via: str | None = None) -> Delivery:
        timeout, heading, forwarded = req.options.timeout, req.options.heading, req.forwarded
        now, refusal = await chosen.before_asking(tgt)  # read-only: the receiver as it is before the question
        plan = chosen.plan(tgt, envelope, fallback=fallback, notes=notes + ((now,) if now else ()))
        if reply_route:
            plan = plan.model_copy(update={"reply_route": reply_route})
        if heading:
            plan = plan.model_copy(update={"heading": heading})
        if self.shared.hooks:
            self.shared.hooks.on_plan(req, plan)
        d = Delivery(relay_id=envelope.id, target=tgt.spec, transport=chosen.name, plan=plan, want=envelope.want)
        d._waiter = self.answers.wait_reply
        if reply_via:
            d.extra.reply_via = reply_via
        self.shared.deliveries.append(d)
        ledger = self.shared.ledger

        # what a later process needs to debug it: the target as resolved (no relay id, so `why` stays plan-first);
        # built here (owner() reads /proc), written in the plan's commit when the gate is asked (issue 33)
        delivery_data = {"relay_id": envelope.id, "transport": chosen.name, "spec": tgt.spec, "body": envelope.body,
                         **owner(), "target": tgt.model_dump(mode="json")}

        def record_delivery() -> None:
            ledger.event("delivery", delivery=d.key, data=delivery_data)

        startup_gc.resume()  # the plan is shown now (asked, or refused with it): a one-liner's start is over
        if refusal is not None:  # preflight would refuse it: say so now, with the plan, not after a y (issue 39)
            record_delivery()
            d.reason = f"not asked: {refusal}; nothing was done (fix that and send again)"
            if self.shared.echo is not None:
                self.shared.echo(plan.render())
            StageLog(d, ledger, echo=self.shared.echo)("preflight", DeliveryState.REFUSED, d.reason, keys_sent=0)
            self.record_outcome(d)
            return d
        # a plain send's sent mark goes in the yes's commit (issue 33); a forward's is decided after the yes
        # (`_mark_forwarded`: it may have been forwarded meanwhile)
        marked = forwarded is None
        answer = await self.gate.answer(plan, delivery=d.key, target=tgt, with_plan=record_delivery,
                                        on_yes=partial(ledger.record_sent, envelope.id, envelope.hop, tgt.spec)
                                        if marked else None)
        approval = answer.approval
        if approval is None:
            d.state, d.stage = DeliveryState.WITHHELD, "gate"
            d.reason = answer.withheld or "the operator answered No"
            if answer.withheld is not None:
                self.shared.say(f"withheld: {d.reason}")
            ledger.event("outcome", delivery=d.key, relay_id=d.relay_id, data={"state": d.state.value, "reason": d.reason})
            return d
        try:
            await self._approved(d, tgt, envelope, chosen, plan, timeout, forwarded, approval, marked=marked)
        finally:
            spend(approval)  # single use: the delivery is over, whatever its outcome
        self.record_outcome(d)
        return d

    async def _approved(self, d: Delivery, tgt: Target, envelope: Envelope, chosen: Transport, plan: Plan,
                        timeout: float, forwarded: Envelope | None, approval: Approval, *, marked: bool = False) -> None:
        """The delivery after the operator's yes, under the approval the gate minted for it. `marked`: the
        sent mark was recorded with the yes (the gate's `on_yes`)."""
        ledger = self.shared.ledger
        log = StageLog(d, ledger, echo=self.shared.echo)
        halt = ledger.active_halt()  # it may have arrived while the plan was on screen
        if halt is not None:
            self.halted(d, log, Halted(halt.reason, halt.by))
        elif forwarded is not None and not self._mark_forwarded(forwarded, tgt):
            # recorded only now that the delivery starts; another process forwarded it while the plan was open
            ledger.event("duplicate", relay_id=forwarded.id, data={"via": "forward", "delivery": d.key})
            d.reason = f"relay id {forwarded.id} was forwarded meanwhile (seen while the plan was open): duplicate dropped"
            log("gate", DeliveryState.REFUSED, d.reason)
        else:
            if not marked:
                ledger.record_sent(envelope.id, envelope.hop, tgt.spec)
            await self._run(d, tgt, chosen, plan.payload, log, timeout, approval)

    def _mark_forwarded(self, env: Envelope, tgt: Target) -> bool:
        """Record a forward the operator approved; False if it was forwarded meanwhile."""
        ledger = self.shared.ledger
        if ledger.sightings(env.id) == 0:  # pasted from elsewhere: its later arrival is the duplicate
            ledger.mark_seen(env.id, env.hop, env.sender)
        return ledger.mark_forwarded(env.id, tgt.spec)

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
            self.halted(d, log, h)
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

    async def run_armed(self, d: Delivery, log: StageLog, approval: Approval | None,
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
            self.halted(d, log, h)
        finally:
            log.armed = False
            spend(approval)

    def halted(self, d: Delivery, log: StageLog, h: Halted) -> None:
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

    def record_outcome(self, d: Delivery, **more: object) -> None:
        """The delivery's state and everything a later process needs to carry on (transport extras)."""
        self.shared.ledger.event("outcome", delivery=d.key, relay_id=d.relay_id,
                                 data={"state": d.state.value, "reason": d.reason, "stage": d.stage,
                                       "extra": d.extra.model_dump(mode="json", exclude_defaults=True), **more})
