"""The operator's side of agents' requests: hold each one as it arrives, decide it at the one gate,
and carry the answer back to the agent that asked.

Why through the ordinary send path: an approved request is a send like any other. Its plan is
the four-part plan session/core/sending.py builds for the resolved target, asked y/N by the same
gate; the asker's words go in as a quote (`codex:beta (verified) wrote: «...»`, core.peertext),
so the plan's notes name the asking agent as their origin and flag any consent-only act, and
the heading above the plan names the request and the hop it carries (never reset by an agent).
Nothing is sent without that y; a request decided elsewhere (denied, expired, halted) while its
plan was on screen is not sent either: the y is checked against its state when it is given.

With want=reply|ack the answer comes back the ordinary way (judged by kernel pid, linked by
`re=`, only from the session asked), is shown, and is taken to the asker only after a y on its
own plan, as a relay message carrying `re=<request id>`, one hop further. relay-halt anywhere
(a request, any inbox message, the operator) halts every held request.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import HOP_CAP, MAX_BODY, Envelope, contains_halt
from relay_repl.core.errors import EnvelopeError, HostClaim, LoopHalt, UsageError
from relay_repl.core.inbound import InboundMessage, ToolCall
from relay_repl.core.peertext import quote
from relay_repl.core.controls import visible
from relay_repl.core.plan import Plan
from relay_repl.core.request import ANSWER_TYPE, DEFAULT_EXPIRY, Request, delivery_step, request_hop
from relay_repl.session.core.answers import answer_refusal
from relay_repl.session.core.gate import ApproveFn
from relay_repl.session.core.hooks import RunHooks
from relay_repl.session.core.send_request import SendRequest
from relay_repl.session.core.sendoptions import SendOptions
from relay_repl.session.core.shared import Shared
from relay_repl.store.requests import RequestStore

if TYPE_CHECKING:
    from relay_repl.session.core.inbox import Inbox
    from relay_repl.session.core.sending import Sender

SWEEP_EVERY = 2.0
"""Seconds between the REPL's checks for held requests that expired (each one is said when it does)."""


def default_expiry() -> float:
    """`RELAY_REQUEST_EXPIRY` seconds when set to a number above 0, else 10 minutes."""
    raw = os.environ.get("RELAY_REQUEST_EXPIRY", "")
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_EXPIRY
    return value if value > 0 else DEFAULT_EXPIRY


class RequestTable(list[Request]):
    """The held requests, printed as a table (`session.requests`)."""

    def __repr__(self) -> str:
        if not self:
            return "no held requests (an agent asks with relay_send on `relay mcp`, or `relay ask` in its shell)"
        now = time.time()
        rows = [f"{'REQUEST':<16} {'FROM':<16} {'TO':<16} {'WANT':<6} {'HOP':<4} {'LEFT':>5}  BODY"]
        for r in self:
            flag = " FLAG: " + ", ".join(r.flags) if r.flags else ""
            body = r.body if len(r.body) <= 60 else r.body[:59] + "…"
            # each row neutralised on its own: a peer's words never reach the terminal raw
            rows.append(visible(f"{r.id:<16} {r.asker:<16} {r.to:<16} {r.want:<6} {r.hop:<4} "
                                f"{max(0, r.expires - now):>4.0f}s  {body}{flag}"))
        return "\n".join(rows)


def _refused(why: str, request_id: str | None = None) -> dict[str, Any]:
    return {"type": ANSWER_TYPE, "state": "refused", "request": request_id, "why": why}


class Requests:
    """Held requests: arrival (from the inbox), listing, approval, denial, expiry, halts, answers."""

    def __init__(self, shared: Shared, sender: Sender) -> None:
        self.shared = shared
        self.sender = sender
        self.store = RequestStore(shared.ledger)
        self.expiry = default_expiry()
        self._handed: set[str] = set()
        self._arrival = anyio.Event()
        self._inbox: Inbox | None = None
        self.pulls: dict[str, Callable[[], Any]] = {}  # host -> take its agents' requests (session.host_requests)
        self._pull_said: set[str] = set()
        self.forwarding = False  # `relay serve`: this host's requests are held for an operator's relay elsewhere,
        # which decides them (and writes their states here); this relay never sweeps, approves or denies them

    # -- the inbox's side ------------------------------------------------------------------
    def attach(self, inbox: Inbox) -> None:
        """Take requests arriving at `inbox`; a relay-halt in any of its messages halts the held ones."""
        self._inbox = inbox
        inbox.on_request = self.receive
        if self.on_inbound not in inbox.on_message:
            inbox.on_message.append(self.on_inbound)

    def on_inbound(self, msg: InboundMessage) -> None:
        if contains_halt(msg.line):
            self.sweep()

    async def sweeper(self, timeout: float = float("inf")) -> None:
        """Say each held request that expires, when it does (runs in the REPL's task group until it ends,
        or for `timeout` seconds)."""
        from relay_repl.system.polling import poll_until

        async def check() -> None:
            try:
                self.sweep()
            except Exception:  # a busy ledger now: the next round (or any listing) catches up
                pass
            for host, pull in list(self.pulls.items()):  # hosts whose agents' requests this session takes
                try:
                    await pull()
                except Exception as exc:  # a host down or lying: one line, once; the next round tries again
                    from relay_repl.core.errors import describe

                    why = describe(exc, f"taking host {host}'s requests")
                    if why not in self._pull_said:
                        self._pull_said.add(why)
                        self._say(f"relay: {why}")
            return None

        await poll_until(check, timeout=timeout, interval=SWEEP_EVERY)

    def _say(self, line: str) -> None:
        self.shared.say(line)

    def receive(self, frame: dict[str, Any], origin: dict[str, Any]) -> dict[str, Any]:
        """One request frame from the inbox: held (and said), or refused with why. Never raises:
        the asker gets its one line whatever went wrong."""
        try:
            return self._receive(frame, origin)
        except Exception as exc:
            from relay_repl.core.errors import describe

            return _refused(f"the operator's relay could not hold it ({describe(exc, 'holding the request')}): "
                            "nothing is held")

    def _refused_halting(self, why: str, text: str, pid: Any, rid: str | None = None) -> dict[str, Any]:
        """A refusal before the request is read as one; a relay-halt it carries still halts everything
        (seed section 9: any message), held requests included, as the inbox does for lines it drops."""
        if self.shared.ledger.halt_if_carried(text, where="a request frame relay refused", by=f"pid {pid}"):
            self.sweep()
        return _refused(why, rid)

    def _receive(self, frame: dict[str, Any], origin: dict[str, Any]) -> dict[str, Any]:
        ledger = self.shared.ledger
        pid = origin.get("verifiedPeerPid")
        line = frame.get("line")
        if not isinstance(line, str):
            return self._refused_halting("a request frame carries its envelope as `line` (a string): nothing is held",
                                         str(frame), pid)
        try:
            env = Envelope.parse(line)
        except EnvelopeError as exc:
            return self._refused_halting(f"malformed request: {exc}: nothing is held", line, pid)
        if env is None:
            return self._refused_halting("a request is a relay/1 envelope line: nothing is held", line, pid)
        if env.id.startswith(self.shared.me.address + "-"):
            ledger.event("duplicate", relay_id=env.id, data={"origin": origin, "line": line, "via": "request",
                                                             "why": "our own id came back"})
            return self._refused_halting(f"request id {env.id} is the operator's own: dropped (logged)", line, pid,
                                         env.id)
        if env.is_halt:  # relay-halt from any agent halts every held request; this one is not held
            ledger.mark_seen(env.id, env.hop, env.sender)
            ledger.halt(f"relay-halt in request {env.id}", by=env.sender)
            halted = self.sweep()
            self._say(f"request {env.id} (pid {pid}) carries relay-halt: every send and wait is stopped; "
                      f"{len(halted)} held request(s) halted")
            return _refused(f"relay-halt: every held request is halted ({len(halted)}); this one is not held", env.id)
        if ledger.sightings(env.id) or self.store.get(env.id) is not None:
            return self._replayed(env, origin, line)
        verdict = self._judge(origin, env)
        if verdict.verdict != "verified" or not verdict.session:
            ledger.event("request-refused", relay_id=env.id, data={"origin": origin, "line": line,
                                                                   "verdict": verdict.model_dump(mode="json")})
            self._say(f"inbox: request {env.id} refused: the asking session is not established ({verdict})")
            return _refused(f"not held: relay cannot establish which session is asking ({verdict})", env.id)
        if not env.id.startswith(env.address + "-"):  # ids are the asker's own: nobody burns another's ids
            ledger.event("request-refused", relay_id=env.id, data={"why": "id not the asker's", "line": line})
            return _refused(f"not held: request id {env.id!r} is not {env.address}-<n> (the asker's own address)",
                            env.id)
        if not ledger.mark_seen(env.id, env.hop, env.sender):  # the same id twice at once: one is the replay
            return self._replayed(env, origin, line)
        asker = verdict.session
        halt = ledger.active_halt()
        if halt is not None:
            ledger.event("request-refused", relay_id=env.id, data={"why": "halted", "asker": asker})
            return _refused(f"not held: relay-halt is in force ({halt.reason}); the operator clears it", env.id)
        hop = request_hop(env.hop, self.shared.ledger.last_hop_to(asker))
        if hop > HOP_CAP:
            ledger.event("request-refused", relay_id=env.id, data={"why": "hop cap", "asker": asker, "hop": hop})
            self._say(f"inbox: request {env.id} from {asker} refused: it would carry hop {hop}, past the cap "
                      f"{HOP_CAP}")
            return _refused(f"not held: {asker}'s exchange is at hop {hop - 1}; a request would carry hop {hop}, "
                            f"past the cap {HOP_CAP} (an agent's request never resets hop)", env.id)
        quoted = len(quote(asker, verdict.verdict, env.body))
        if quoted > MAX_BODY:  # it travels quoted as the asker's words: refuse now what could never be sent
            return _refused(f"not held: the body, quoted as {asker}'s words, is {quoted} characters; the cap is "
                            f"{MAX_BODY}: shorten it", env.id)
        to = env.to.strip()
        if to in ("operator", "peer") or ":" not in to:
            return _refused(f"not held: `to` must name a target (kind:name, or HOST/kind:name), not {to!r}", env.id)
        req = Request.held(id=env.id, asker=asker, verdict=verdict.verdict, evidence=verdict.detail,
                           asker_pid=pid if isinstance(pid, int) else None, to=to, body=env.body, want=env.want,
                           hop=hop, line=line, expiry=self.expiry)
        if not self.keep(req):
            return _refused(f"request id {env.id} is already kept: a replayed request is dropped (logged)", env.id)
        return {"type": ANSWER_TYPE, "state": "held", "request": req.id, "hop": req.hop, "expires": req.expires,
                "flags": list(req.flags), "text": f"held for the operator's approval (request {req.id})"}

    def keep(self, req: Request) -> bool:
        """Hold `req` (said, and handed to `next_request`); False, logged, when its id is kept already."""
        if not self.store.add(req):
            self.shared.ledger.event("duplicate", relay_id=req.id, data={"via": "request",
                                                                         "why": "request id already kept"})
            return False
        self._say(req.line_for_operator())
        self._say(f"  await session.approve_request({req.id!r}) shows the plan; "
                  f"session.deny_request({req.id!r}, why=...) refuses it (expires in {self.expiry:.0f} s)")
        self._arrival.set()
        self._arrival = anyio.Event()
        return True

    def _replayed(self, env: Envelope, origin: dict[str, Any], line: str) -> dict[str, Any]:
        """A request id seen before: dropped, logged, said (whoever sent the copy)."""
        self.shared.ledger.event("duplicate", relay_id=env.id, data={"origin": origin, "line": line, "via": "request",
                                                                     "why": "replayed request id"})
        self._say(f"inbox: replayed request id {env.id} from pid {origin.get('verifiedPeerPid')}: dropped, logged")
        return _refused(f"request id {env.id} was seen before: a replayed request is dropped (logged)", env.id)

    def _judge(self, origin: dict[str, Any], env: Envelope) -> Any:
        """The inbox's own verdict on the asker: a request arrives only through the inbox `attach` gave."""
        if self._inbox is None:
            raise RuntimeError("a request was received with no inbox attached (Requests.attach first)")
        return self._inbox.judge(origin, env.sender, ToolCall(tool="relay_send", text=env.body))

    # -- listing -------------------------------------------------------------------------
    def sweep(self, now: float | None = None) -> list[Request]:
        """Record what happened to held requests without a decision: halted while a relay-halt is in
        force, expired past their expiry. Each is said; returns those changed."""
        changed: list[Request] = []
        if self.forwarding:  # decided by the operator's relay, which writes the states here
            return changed
        halt = self.shared.ledger.active_halt()
        for req in self.store.held():
            if halt is not None:
                moved = req.moved("halted", f"relay-halt ({halt.reason}, by {halt.by}): nothing was sent")
            elif req.due(now):
                moved = req.moved("expired", req.expiry_why())
            else:
                continue
            if self.store.save(moved, expect="held"):
                changed.append(moved)
                self._say(f"request {req.id} from {req.asker} {moved.state}: {moved.why}")
        return changed

    def held(self) -> RequestTable:
        self.sweep()
        return RequestTable(self.store.held())

    def get(self, request_id: str) -> Request:
        req = self.store.get(str(request_id).strip())
        if req is None:
            raise UsageError(f"no request {request_id!r}; `session.requests` lists the held ones")
        return req

    def _held(self, request_id: str) -> Request:
        if self.forwarding:
            raise UsageError(f"request {request_id} is held here for the operator's relay over ssh: it decides it")
        self.sweep()
        req = self.get(request_id)
        if req.state != "held":
            why = f" ({req.why})" if req.why else ""
            raise UsageError(f"request {req.id} is {req.state}{why}: only a held request can be approved or denied")
        return req

    async def next_request(self, timeout: float | None = None) -> Request | None:
        """The oldest held request not handed out yet, waiting up to `timeout` s (None: until one
        comes) for one to arrive; None after the timeout."""
        deadline = None if timeout is None else anyio.current_time() + timeout
        while True:
            for req in self.held():
                if req.id not in self._handed:
                    self._handed.add(req.id)
                    return req
            left = None if deadline is None else deadline - anyio.current_time()
            if left is not None and left <= 0:
                return None
            with anyio.move_on_after(min(left if left is not None else SWEEP_EVERY, SWEEP_EVERY)):
                await self._arrival.wait()  # arrival in this process; the bound sees another process's

    # -- deciding ------------------------------------------------------------------------
    def deny(self, request_id: str, why: str | None = None) -> Request:
        req = self._held(request_id)
        reason = " ".join(str(why).split()) if why else "denied by the operator"
        moved = req.moved("denied", reason)
        if not self.store.save(moved, expect="held"):
            raise UsageError(f"request {req.id} was decided meanwhile: {self.get(req.id).summary()}")
        self._say(f"request {req.id} denied: {reason}; nothing was sent")
        return moved

    async def approve(self, request_id: str, *, wait: float = 60.0, transport: str | None = None,
                      timeout: float = 30.0) -> Delivery:
        """The plan for the request's target, y/N; on y the send, then (want=reply|ack) the answer,
        shown, and its own plan to the asker (see the module doc)."""
        req = self._held(request_id)
        self.shared.check_halt()
        me = self.shared.me
        rid = self.shared.ledger.next_id(me.address)
        flag = f"; {req.flag()}" if req.flags else ""
        heading = (f"request {req.id} from {req.asker} [{req.verdict}]: {req.asker}'s words for {req.to}, "
                   f"hop {req.hop} (the asker's exchange: an agent's request never resets hop){flag}")
        body = quote(req.asker, req.verdict, req.body)
        try:
            d = await self._decided_send(req, rid, lambda: self.sender.submit(SendRequest(
                target=req.to, body=body, origin="request", options=SendOptions(
                    want=req.want, hop=req.hop, heading=heading, relay_id=rid, transport=transport, timeout=timeout))))
        except HostClaim as claim:  # the host's outcome is not believed: the request reads failed, saying so
            now = self.get(req.id)
            if now.state == "approved":
                self.store.save(now.moved("failed", str(claim)))
            raise
        req = self.get(req.id)
        if d.state is DeliveryState.WITHHELD and req.state == "approved":  # the yes was withheld after it was
            # given (a relay-halt arrived while the plan was on screen: the gate's halt wins): nothing was sent
            self.store.save(req.moved("halted", d.reason or "withheld at the gate: nothing was sent"))
            return d
        if d.state is DeliveryState.WITHHELD or req.state in ("denied", "expired", "halted"):
            return d
        state = "halted" if d.state is DeliveryState.HALTED else delivery_step(d.state.value, d.outcome)
        req = req.moved(state, d.reason if state in ("failed", "halted") else None, delivery_state=d.state.value)
        self.store.save(req)
        if req.want == "none" or d.outcome not in ("delivered", "pending") or wait <= 0:
            return d
        answer = d.reply or await d.wait_reply(wait)
        if answer is None:
            self._say(f"request {req.id}: no answer from {req.to} within {wait:g} s; once it comes, "
                      f"`await session.relay_answer({req.id!r})` takes it to {req.asker} (its own plan, y/N)")
            return d
        try:
            await self.relay_answer(req.id, delivery=d)
        except UsageError as exc:  # an answer that is not the asked session's own: shown, not taken back
            self._say(f"relay: {exc}")
        return d

    async def _decided_send(self, req: Request, rid: str, send: Callable[[], Any]) -> Delivery:
        """Run `send` with the gate's yes for plan `rid` recorded as the request's approval, at the
        moment it is given, and only while the request is still held (else the yes becomes a no)."""
        with self.shared.hooks.installed(_Decided(self, req, rid)):
            return await send()

    async def _decide(self, req: Request, rid: str, plan: Plan, inner: ApproveFn) -> bool:
        """The operator's answer to `plan` (asked of `inner`), and for the request's own plan `rid`, that
        answer recorded as the request's decision while it is still held (else a yes becomes a no)."""
        ok = bool(await inner(plan))
        if plan.relay_id != rid:
            return ok
        now = self.get(req.id)
        if now.state != "held" or now.due():
            self.sweep()
            self._say(f"request {req.id} is {self.get(req.id).state} now: not sent")
            return False
        if not ok:
            moved = now.moved("denied", "the operator answered No at the plan")
        else:
            moved = now.moved("approved", delivery_id=rid)
        if not self.store.save(moved, expect="held"):
            self._say(f"request {req.id} was decided meanwhile: not sent")
            return False
        return ok

    # -- the answer, to the asker -------------------------------------------------------------
    def _answer_of(self, req: Request, delivery: Delivery | None) -> InboundMessage | None:
        """The verified answer to the request's delivery from the session asked, else None."""
        if delivery is not None and delivery.reply is not None:
            return delivery.reply
        if not req.delivery_id:
            return None
        asked = self.shared.ledger.sent_to(req.delivery_id) or req.to
        for msg in self.shared.ledger.inbox(answers=req.delivery_id):
            if answer_refusal(msg.verdict, asked) is None:
                return msg
        return None

    async def relay_answer(self, request_id: str, *, delivery: Delivery | None = None,
                           transport: str | None = None, timeout: float = 30.0) -> Delivery:
        """Take the verified answer to an approved request to its asker: its own plan, y/N; the message
        carries `re=<request id>` and the answer's hop + 1."""
        req = self.get(request_id)
        if req.answer_id is not None and req.answer_state not in ("withheld", "refused"):
            raise LoopHalt(f"the answer to request {req.id} was already taken to {req.asker} as {req.answer_id}")
        msg = self._answer_of(req, delivery)
        if msg is None and req.delivery_id and "/" in req.to:  # sent to a host: its inbox judged the answer there
            hits = [delivery] if delivery is not None else [
                d for d in self.shared.deliveries if d.relay_id == req.delivery_id]
            if hits:
                # the asked session's answer, else the latest the host sent (a delivery's reply is only the
                # asked session's): checked below, so a mismatch is said and refused, never taken back
                last = hits[-1]
                msg = last.reply or (last.replies[-1] if last.replies else None) or await last.wait_reply(5.0)
        if msg is None:
            raise UsageError(f"request {req.id} has no verified answer from {req.to} yet"
                             f"{' (it was never sent)' if not req.delivery_id else ''}")
        self.shared.check_halt()
        v = msg.verdict
        try:
            env = Envelope.parse(msg.line)
        except EnvelopeError:
            env = None
        from relay_repl.core.target import split_spec

        # one past the answer's hop, and never below the request's own exchange (an answer's hop is its sender's word)
        hop = max(env.hop if env is not None else 0, req.hop + 1) + 1
        who = (v.session if v is not None and v.session else req.to)
        said: str = v.verdict if v else "no verdict"
        host, there = split_spec(req.to)
        if host is not None:  # judged on that host: its word, and its names are that host's
            why = answer_refusal(v, there)
            if why is not None:
                self.store.save(self.get(req.id).model_copy(update={"answer_state": f"not relayed: {why}"}))
                raise UsageError(visible(f"the answer to request {req.id} is not {req.to}'s own as host {host} "
                                         f"judged it ({why}): not taken to {req.asker}"))
            who = who if split_spec(who)[0] is not None else f"{host}/{who}"
            said = f"host {host} says: {said}"
        asker_host, local_id = split_spec(req.id)
        re = local_id if asker_host is not None else req.id  # the asker's own id, as it knows its request
        self._say(visible(f"answer to request {req.id} from {who} [{said}]: {msg.body}"))
        if hop > HOP_CAP:
            self.store.save(req.model_copy(update={"answer_from": who, "answer_state": "not relayed: hop cap"}))
            raise LoopHalt(f"the answer to request {req.id} would reach {req.asker} at hop {hop}, past the cap "
                           f"{HOP_CAP}: not relayed")
        body = quote(who, said, msg.body)
        heading = (f"answer to request {req.id}: {who}'s words for {req.asker} (re={re}, hop {hop}, one past "
                   f"the answer's)")
        d = await self.sender.submit(SendRequest(target=req.asker, body=body, origin="answer", options=SendOptions(
            want="none", hop=hop, re=re, heading=heading, transport=transport, timeout=timeout)))
        self.store.save(self.get(req.id).model_copy(update={"answer_from": who, "answer_id": d.relay_id,
                                                           "answer_state": d.state.value}))
        return d


class _Decided(RunHooks):
    """While an agent's request is sent: the session's approver, with the yes to the request's own
    plan recorded as the request's approval (Requests._decide)."""

    def __init__(self, requests: Requests, req: Request, rid: str) -> None:
        self.requests, self.req, self.rid = requests, req, rid

    def approver(self, approve: ApproveFn) -> ApproveFn:
        async def decided(plan: Plan) -> bool:
            return await self.requests._decide(self.req, self.rid, plan, approve)

        return decided
