"""The object the operator holds: discovery, the gate, sends, the ledger.

Every side effect goes through `_gated()`: the plan is built, shown, logged,
and only a yes from the injected approver lets the transport act. A no leaves
nothing on the target and one `answer` event in the ledger.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope, Want
from relay_repl.core.errors import AmbiguousTarget, LoopHalt, StaleTarget, UnknownTarget, UsageError
from relay_repl.session.gate import ApproveFn, DenyGate
from relay_repl.store.ledger import Ledger
from relay_repl.core.plan import Plan
from relay_repl.core.target import Me, Target, TargetTable
from relay_repl.agents.discovery import Provider, discover_all
from relay_repl.transports.base import StageLog, Transport


def default_me() -> Me:
    """The operator's address until an inbox is registered: user@host-pid."""
    import socket

    user = os.environ.get("USER") or "operator"
    return Me(address=f"{user}.{socket.gethostname().split('.')[0]}.{os.getpid()}")


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
        self.transports: dict[str, Transport] = {t.name: t for t in transports}
        self.deliveries: list[Delivery] = []
        self.echo = echo
        self._targets: list[Target] = []
        self._refreshed = False
        self.inbox_server: Any = None
        self.registration: Any = None

    # -- discovery -------------------------------------------------------------
    async def refresh(self) -> list[Target]:
        found = await discover_all(self.providers)
        self._targets = found
        self._refreshed = True
        return found

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
            raise UsageError("empty target: name one like claude:alpha, codex:<name or uuid> or %<pane id>")
        if spec.startswith("%"):
            hits = [t for t in self._targets if t.pane == spec]
        else:
            prefix, sep, name = spec.partition(":")
            if not sep:
                raise UsageError(f"target {spec!r} needs a kind: claude:{spec} or codex:{spec} (see `relay targets`)")
            # prefixes come from the adapters via their targets: a new agent needs no change here
            of_kind = [t for t in self._targets if prefix in (t.prefix or t.kind, t.kind)]
            if not of_kind:
                known = sorted({t.prefix or t.kind for t in self._targets}) or ["claude", "codex"]
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
            why = hits[0].detail.get("stale_reason") or "its process is gone"
            raise StaleTarget(f"{spec} is stale ({hits[0].describe()}): {why}; nothing will be sent to it")
        raise UnknownTarget(f"no target {spec}: run `relay targets` (or `await session.refresh()`) to list live sessions")

    # -- the gate ------------------------------------------------------------------
    async def _gated(self, plan: Plan, *, delivery: str | None = None) -> bool:
        self.ledger.event("plan", delivery=delivery, relay_id=plan.relay_id, data=plan.model_dump())
        try:
            answer = bool(await self.approve(plan))
        except BaseException:
            self.ledger.event("answer", delivery=delivery, relay_id=plan.relay_id, data={"approved": False, "why": "prompt aborted"})
            raise
        self.ledger.event("answer", delivery=delivery, relay_id=plan.relay_id, data={"approved": answer})
        return answer

    def choose_transport(self, target: Target, requested: str | None = None, *, durable: bool = False,
                         native_reply: bool = False) -> Any:
        """Rank the transports by capability (see transports.ranking)."""
        from relay_repl.transports.ranking import Requirements, choose

        if requested is not None and requested not in self.transports:
            raise UsageError(f"unknown transport {requested!r}; known: {', '.join(self.transports) or 'none'}")
        return choose(target, list(self.transports.values()), Requirements(durable=durable, native_reply=native_reply),
                      requested)

    # -- sending -------------------------------------------------------------------
    async def send(
        self,
        target: str | Target,
        body: str,
        *,
        want: Want = "none",
        transport: str | None = None,
        to_role: str = "peer",
        durable: bool = False,
        native_reply: bool = False,
        timeout: float = 30.0,
        hop: int = 0,
        heading: str | None = None,
        relay_id: str | None = None,
    ) -> Delivery:
        """Plan, ask, send, confirm. Returns the Delivery with its explicit state.

        `durable=True` requires a durable path (never downgraded to a live-only
        one); `native_reply=True` requires one the receiver can answer natively.
        `hop` is for the initiator of a multi-round exchange (a recipe): 0 at the
        start of each round it declares, the chain's hop + 1 inside a round.
        `heading` is printed above the plan (where a recipe run stands);
        `relay_id` is one the caller took from `ledger.next_id` beforehand, so it
        could record the id before anything happened (a recipe, for resume).
        """
        tgt = await self.target(target)
        self._check_halt()
        choice = self.choose_transport(tgt, transport, durable=durable, native_reply=native_reply)
        relay_id = relay_id or self.ledger.next_id(self.me.address)
        envelope = Envelope.make(sender=self.me.sender, to=to_role, id=relay_id, hop=hop, want=want, body=body)
        return await self._deliver(tgt, envelope, choice.transport, choice.fallback, timeout, choice.notes,
                                   heading=heading)

    async def preview(self, target: str | Target, body: str, *, want: Want = "none", transport: str | None = None,
                      to_role: str = "peer", hop: int = 0, heading: str | None = None, relay_id: str | None = None) -> Plan:
        """The plan `send` would show, with nothing sent, asked or written (a dry run):
        the relay id is the one the ledger would hand out next, unless given."""
        tgt = await self.target(target)
        choice = self.choose_transport(tgt, transport)
        rid = relay_id or self.ledger.peek_next_id(self.me.address)
        envelope = Envelope.make(sender=self.me.sender, to=to_role, id=rid, hop=hop, want=want, body=body)
        plan = choice.transport.plan(tgt, envelope, fallback=choice.fallback, notes=choice.notes)
        return plan.model_copy(update={"heading": heading}) if heading else plan

    async def forward(self, target: str | Target, line: str, *, transport: str | None = None,
                      timeout: float = 30.0, heading: str | None = None) -> Delivery:
        """Forward a pasted envelope: same id and sender, hop + 1; a duplicate id is dropped."""
        env = Envelope.parse(line)
        if env is None:
            raise UsageError("that is not a relay envelope line (it must start with '[relay/1 ')")
        self._check_halt()
        if env.is_halt:
            self.ledger.halt(f"relay-halt in a pasted envelope {env.id}", by=env.sender)
            raise LoopHalt(f"{env.id} carries relay-halt: stopping, not forwarding")
        if not self.ledger.mark_seen(env.id, env.hop, env.sender):
            self.ledger.event("duplicate", relay_id=env.id, data={"line": line, "via": "forward"})
            raise LoopHalt(f"relay id {env.id} was seen before: duplicate dropped, not forwarded")
        onward = env.next_hop()
        tgt = await self.target(target)
        choice = self.choose_transport(tgt, transport)
        return await self._deliver(tgt, onward, choice.transport, choice.fallback, timeout, choice.notes,
                                   heading=heading)

    def _check_halt(self) -> None:
        halt = self.ledger.active_halt()
        if halt:
            raise LoopHalt(f"relay-halt is in force ({halt.reason}, by {halt.by}): nothing is sent until `session.unhalt()`")

    async def _deliver(self, tgt: Target, envelope: Envelope, chosen: Transport, fallback: str, timeout: float,
                       notes: tuple[str, ...] = (), heading: str | None = None) -> Delivery:
        plan = chosen.plan(tgt, envelope, fallback=fallback, notes=notes)
        if heading:
            plan = plan.model_copy(update={"heading": heading})
        d = Delivery(relay_id=envelope.id, target=tgt.spec, transport=chosen.name, plan=plan)
        self.deliveries.append(d)
        # what a later process needs to debug it: the target as resolved (no relay id, so `why` stays plan-first)
        self.ledger.event("delivery", delivery=d.key, data={"relay_id": envelope.id, "transport": chosen.name,
                                                            "target": tgt.model_dump(mode="json")})
        if not await self._gated(plan, delivery=d.key):
            d.state, d.stage, d.reason = DeliveryState.WITHHELD, "gate", "the operator answered No"
            self.ledger.event("outcome", delivery=d.key, relay_id=d.relay_id, data={"state": d.state.value, "reason": d.reason})
            return d
        log = StageLog(d, self.ledger, echo=self.echo)
        self.ledger.record_sent(envelope.id, envelope.hop, tgt.spec)
        try:
            await chosen.send(d, tgt, plan.payload, log)
            if d.state not in {DeliveryState.FAILED, DeliveryState.REFUSED, DeliveryState.TYPED}:
                await chosen.confirm(d, tgt, plan.payload, log, timeout)
        except Exception as exc:  # translate at the seam; the ledger keeps the why
            log.fail(d.stage, f"{type(exc).__name__}: {exc}")
        except BaseException:  # Ctrl-C / cancelled wait: the delivery stays pending, recorded, debuggable
            d.reason = d.reason or f"the wait was interrupted at stage {d.stage}; `session.debugger({d.relay_id!r})` picks it up"
            self.record_outcome(d, interrupted=True)
            raise
        self.record_outcome(d)
        return d

    def record_outcome(self, d: Delivery, **more: Any) -> None:
        """The delivery's state and everything a later process needs to carry on (transport extras)."""
        self.ledger.event("outcome", delivery=d.key, relay_id=d.relay_id,
                          data={"state": d.state.value, "reason": d.reason, "stage": d.stage, "extra": d.extra, **more})

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

    async def register_inbox(self, name: str = "relay-operator") -> bool:
        """List the inbox as a Claude peer (gated): ListAgents shows it, SendMessage reaches it."""
        import anyio

        from relay_repl.agents.claude_code.peer import ClaudePeerRegistration
        from relay_repl.agents.versions import require_verified

        inbox = self.inbox_server
        if inbox is None:
            raise UsageError("no inbox is listening here: only the `relay` REPL runs one")
        version = await anyio.to_thread.run_sync(require_verified, "claude-code")  # refuses unverified versions
        reg = ClaudePeerRegistration(name=name, claude_version=version)
        if not await self._gated(reg.plan()):
            return False
        await inbox.listen(path=reg.socket_path)  # listen first: a SendMessage never meets a dead socket
        reg.write()
        inbox.own_file(str(reg.record_path))
        inbox.own_file(str(reg.key_path))
        self.registration = reg
        self.ledger.event("inbox-registered", data={"name": reg.name, "record": str(reg.record_path)})
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
        if d.plan is None or d.transport not in self.transports:
            say("  no transport to re-read evidence with")
            return d
        await self.refresh()
        target = await self.target(d.target)
        say(f"  re-reading receiver evidence for up to {recheck:g}s (nothing is sent) …")
        await self.transports[d.transport].confirm(d, target, d.plan.payload, StageLog(d, self.ledger, echo=say), recheck)
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
        return await wait_turn_reply(d, tgt, self.ledger, timeout, echo=self.echo)

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

    # -- halts and history -----------------------------------------------------------
    def halt(self, reason: str = "operator halt") -> None:
        self.ledger.halt(reason, by=self.me.sender)

    def unhalt(self) -> int:
        return self.ledger.clear_halts(by=self.me.sender)

    def why(self, relay_id: Any) -> Any:
        """Every event recorded for one relay id (or a Delivery), oldest first: a list that prints as a table."""
        from relay_repl.store.timeline import Timeline

        rid = relay_id.relay_id if isinstance(relay_id, Delivery) else str(relay_id)
        return Timeline(rid or "", self.ledger.events(relay_id=rid))

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
