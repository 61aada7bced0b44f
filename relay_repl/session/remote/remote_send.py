"""The Session API for targets on other hosts: `await session.send("HOST/claude:alpha", ...)`.

Why a module of its own: Session and Sender stay as they are for local targets and hand a
spec naming a host (session/remote/remote.py `split_spec`) here. The host's relay builds the plan
and carries it out (session/remote/remote.py `send_remote`); the operator's gate (this session's
`approve`) sees that plan with its route and answers it here. What comes back is the
host's Delivery, kept in this session's deliveries and recorded in this session's ledger
(so an `interrupted` send is found by `relay debug` here), and its `wait_reply()` asks the
host's relay for the answer its inbox judged, shown as the host's word (`host HOST says: verified by pid P`).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

from pydantic import BaseModel

from relay_repl.core.delivery import ANSWERED, Delivery, DeliveryState
from relay_repl.core.errors import DiscoveryError, HostClaim, HostError, RelayError
from relay_repl.core.host_claims import NOTHING_HAPPENED, PROGRESS, shaped
from relay_repl.core.inbound import InboundMessage
from relay_repl.core.controls import visible
from relay_repl.core.serve_wire import MAX_LINE, PROTOCOL_VERSION, EvidenceResult, Request
from relay_repl.core.target import Target
from relay_repl.session.remote.remote import (Hosts, RemoteAnswer, RemoteDelivery, record_claim, send_remote, split_spec,
                                       wait_reply_remote)
from relay_repl.session.core.sendoptions import SendOptions
from relay_repl.session.core.shared import Shared

HALT_TIMEOUT = 15.0  # one ssh call on the open master; a host that does not answer in this is named


def call_once(ch: Any, op: str, args: dict[str, Any], *, what: str, timeout: float = HALT_TIMEOUT) -> Any:
    """One `relay serve --stdio` call over the host's ssh master, in a process of its own: it works from
    sync code and while a wait holds the open channel. The answer's result, or a HostError naming the host."""
    from relay_repl.system.capped_run import run_capped

    line = Request(id=1, op=op, args=args).model_dump_json() + "\n"
    try:  # what the host writes is kept to one frame's worth: a host that floods is cut off, never read whole
        res = run_capped([*ch.argv("-T"), *ch.remote_command], line.encode(), timeout=timeout, limit=MAX_LINE + 1)
        if res.cut:
            raise HostError(f"host {ch.name} answered {what} with more than {MAX_LINE:,} bytes: not read")
        last = (res.stdout.decode().strip().splitlines() or ["{}"])[-1]
        ans = json.loads(last) if len(last) <= MAX_LINE else None
    except (OSError, ValueError, RecursionError, subprocess.TimeoutExpired) as exc:
        raise HostError(f"{exc}") from None
    if not isinstance(ans, dict):  # a host's frame of another shape: not read
        raise HostError(f"host {ch.name} answered {what} with a frame of the wrong shape")
    if not (ans.get("ok") and ans.get("v") == PROTOCOL_VERSION):
        said = res.stderr.decode(errors="replace").strip()
        raise HostError(visible(str(ans.get("error") or (said or f"exit {res.returncode}"))[:300]))
    return ans.get("result")


class RemoteSends:
    """This session's sends to targets on hosts: one Hosts (one channel per host, opened on
    first use), the deliveries made through them, and the halt that reaches each host used."""

    def __init__(self, shared: Shared, hosts: Hosts | None = None) -> None:
        self.shared = shared
        self._hosts = hosts
        self.made: dict[str, RemoteDelivery] = {}  # delivery key -> what the host reported

    @property
    def hosts(self) -> Hosts:
        if self._hosts is None:
            self._hosts = Hosts()
        return self._hosts

    @hosts.setter
    def hosts(self, hosts: Hosts) -> None:
        self._hosts = hosts

    def in_use(self) -> list[str]:
        return sorted(self._hosts._channels) if self._hosts is not None else []

    async def target(self, spec: str | Target) -> Target:
        """`HOST/kind:name` resolved by that host's relay (its discovery, its /proc)."""
        if isinstance(spec, Target):
            return spec
        host, rest = split_spec(spec.strip())
        found = [t for t in await self.hosts.targets(str(host)) if t.spec == spec.strip()]
        live = [t for t in found if t.live]
        if len(live) == 1:
            return live[0]
        if len(live) > 1:
            raise DiscoveryError(f"{spec} names {len(live)} live sessions on {host}: name one by its uuid")
        raise DiscoveryError(f"no live target {rest} on host {host} (see `relay targets`)")

    async def send(self, target: str | Target, body: str, options: SendOptions) -> Delivery:
        """Plan there, gate here, send there (the send pipeline's step for a host's target: the same
        `SendOptions` as a local send); the Delivery returned answers `wait_reply()`. `options.re` is the
        id the message answers (an agent's request on that host, whose answer this takes back)."""
        want, transport, timeout, hop = options.want, options.transport, options.timeout, options.hop
        heading, relay_id, reply_via, re = options.heading, options.relay_id, options.reply_via, options.re
        self.shared.check_halt()
        spec = target.spec if isinstance(target, Target) else target.strip()
        if heading:
            self.shared.say(heading)
        extra = {"hop": hop, "relay_id": relay_id, "re": re}
        rd = await send_remote(self.hosts, spec, body, approve=self.shared.approve, ledger=self.shared.ledger,
                               want=want, transport=transport if isinstance(transport, str) else None,
                               timeout=timeout, reply_via=reply_via, echo=self.shared.say, extra=extra)
        d = rd.delivery
        if d.relay_id is None and relay_id is not None:
            d.relay_id = relay_id  # the channel dropped before the host said: the id it was sent under
        if d.relay_id and d.state not in NOTHING_HAPPENED:  # it went out (or may have): the exchange's hop, kept
            self.shared.ledger.record_sent(d.relay_id, hop, spec)  # here, as for a local send (an agent's request)
        d._waiter = self._wait_reply
        self.made[d.key] = rd
        if rd.answer is not None:  # answered before the host's send returned: judged there, its word here
            self._linked(d, rd.answer)
        self.shared.deliveries.append(d)
        self.shared.ledger.event("outcome", delivery=d.key, relay_id=d.relay_id,
                                 data={"state": d.state.value, "reason": d.reason, "stage": d.stage,
                                       "host": rd.host, "route": rd.route, "target": d.target, "want": want,
                                       "body": body, "hop": hop, "timeout": timeout, "reply_via": reply_via})
        return d

    async def _wait_reply(self, d: Delivery, timeout: float) -> InboundMessage | None:
        self.shared.check_halt()
        if d.reply is not None:
            return d.reply
        rd = self.made.get(d.key)
        if rd is None or d.state is DeliveryState.INTERRUPTED:
            return None
        ans = await wait_reply_remote(self.hosts, rd, timeout, ledger=self.shared.ledger)
        if ans is None:
            if d.state not in ANSWERED:
                d.state = DeliveryState.NO_REPLY if d.outcome == "delivered" else d.state
            return None
        return self._linked(d, ans)

    def _linked(self, d: Delivery, ans: RemoteAnswer) -> InboundMessage:
        """The host's answer, linked to `d` here with where and by whom it was judged."""
        msg = ans.message
        if msg.verdict is not None:  # beside the verdict itself
            detail = "; ".join(x for x in (msg.verdict.detail, ans.verified_by) if x)
            msg = msg.model_copy(update={"verdict": msg.verdict.model_copy(update={"detail": detail})})
        d.replies = [r for r in d.replies if r.seq != msg.seq]
        d.replies.append(msg)
        if msg.verdict is not None and msg.verdict.ok:  # as here: only the asked session's answer is `d.reply`
            d.reply = msg  # (wait_reply_remote made another session's a mismatch); the rest stay in d.replies
            d.state = DeliveryState.ACKNOWLEDGED if d.want == "ack" else DeliveryState.REPLIED
        self.shared.ledger.event("remote-reply", delivery=d.key, relay_id=d.relay_id,
                                 data={"host": ans.host, "verified_by": ans.verified_by,
                                       "message": msg.model_dump(mode="json")})
        return msg

    def halt(self, reason: str, by: str) -> list[str]:
        """Tell every host in use (each with a channel opened by this session) to halt: one
        `relay serve --stdio` call over that host's master, so it works from sync code and
        while a wait holds the open channel. Returns one line per host that was not told."""
        if self._hosts is None:
            return []
        problems: list[str] = []
        for name, ch in sorted(self._hosts._channels.items()):
            try:
                call_once(ch, "halt", {"reason": reason, "by": by}, what="the halt")
            except RelayError as exc:
                problems.append(visible(f"host {name}: halt not delivered: {exc}"[:500]))
        for p in problems:
            self.shared.say(f"relay: {p}")
        return problems

    async def aclose(self) -> None:
        if self._hosts is not None:
            await self._hosts.aclose()


# ---- a send to a host the channel dropped under: look there first, re-send at most once ----------


class RemoteLook(BaseModel):
    """What the host's relay holds for one relay id (serve op `evidence`), read before any re-send."""

    relay_id: str
    host: str
    evidence: dict[str, Any]

    @property
    def went_out(self) -> bool:
        """True when the host approved it or the id went out there: it is never sent again."""
        e = self.evidence
        return bool(e.get("approved") or e.get("sent") or (e.get("state") not in (None, "withheld", "refused")))

    @property
    def receiver(self) -> str:  # read by `relay debug` as for a local look
        return "on-host"

    def render(self) -> str:
        e = self.evidence
        verdict = "went out there: not re-sent" if self.went_out else "never went out there: may be re-sent once"
        return (f"{self.relay_id} on {self.host} (relay serve pid {e.get('serve_pid')}): planned={e.get('planned')} "
                f"approved={e.get('approved')} state={e.get('state')} stage={e.get('stage')} "
                f"sent={e.get('sent')}: {verdict}")


class RemoteDebugger:
    """`session.debugger(ID)` for a send to a host: look asks the host's relay for its evidence;
    resume re-sends (same relay id, gated again) only when the host shows it never went out."""

    def __init__(self, remote: RemoteSends, relay_id: str, record: dict[str, Any], delivery: Delivery) -> None:
        self.remote = remote
        self.relay_id = relay_id
        self.record = record  # the local outcome event's data: host, target, body, want ...
        self.delivery = delivery

    async def look(self, record: bool = True) -> RemoteLook:
        host = str(self.record["host"])
        ev = await self.remote.hosts.channel(host).request("evidence", {"relay_id": self.relay_id}, timeout=30)
        got = shaped(host, "evidence", EvidenceResult, ev)
        if got.relay_id != self.relay_id:
            self._claim(HostClaim(host, f"evidence for relay id {got.relay_id} (asked about {self.relay_id})"), ev)
        lk = RemoteLook(relay_id=self.relay_id, host=host, evidence=ev)
        if record:
            self.remote.shared.ledger.event("debug-look", relay_id=self.relay_id, delivery=self.delivery.key,
                                            data={"host": host, "evidence": ev})
        self.remote.shared.say(lk.render())
        return lk

    async def resume(self) -> Delivery:
        lk = await self.look()
        if lk.went_out:
            state = lk.evidence.get("state")
            if state:
                try:
                    said = DeliveryState(state)
                except ValueError:
                    said = None
                if said is not None:
                    self._believe(lk, said)
                    self.delivery.state = said
            self.delivery.stage = str(lk.evidence.get("stage") or self.delivery.stage)
            self.delivery.reason = f"already went out on {lk.host} (its ledger): not re-sent"
            return self.delivery
        r = self.record
        d = await self.remote.send(str(r["target"]), str(r["body"]), SendOptions(
            want=r.get("want") or "none", timeout=float(r.get("timeout") or 30.0), hop=int(r.get("hop") or 0),
            relay_id=self.relay_id, reply_via=r.get("reply_via")))
        self.delivery = d
        return d

    step = resume  # one stage here is the whole send there

    def _believe(self, lk: RemoteLook, said: DeliveryState) -> None:
        """The host's state for this id, believed only for a plan the operator approved here and
        never behind what this ledger already holds; else a HostClaim, recorded."""
        ledger = self.remote.shared.ledger
        approved = any(e.kind == "remote-approval" and e.data.get("host") == lk.host
                       for e in ledger.events(relay_id=self.relay_id))
        if not approved and said not in NOTHING_HAPPENED:
            self._claim(HostClaim(lk.host, f"a send ({said.value}) for relay id {self.relay_id}"), lk.evidence)
        mine, theirs = PROGRESS.get(self.delivery.state), PROGRESS.get(said)
        if mine is not None and theirs is not None and theirs < mine:
            self._claim(HostClaim(lk.host, f"relay id {self.relay_id} back at {said.value} (it was "
                                           f"{self.delivery.state.value})"), lk.evidence)

    def _claim(self, claim: HostClaim, frame: Any) -> None:
        record_claim(self.remote.shared.ledger, claim, self.relay_id, "evidence", frame=frame)
        raise claim

    def abandon(self, reason: str = "abandoned by the operator") -> Delivery:
        self.delivery.state = DeliveryState.ABANDONED
        self.delivery.reason = reason
        self.remote.shared.ledger.event("outcome", delivery=self.delivery.key, relay_id=self.relay_id,
                                        data={**self.record, "state": "abandoned", "reason": reason})
        return self.delivery

    def table(self) -> str:
        return f"{self.relay_id} to {self.record.get('target')} via ssh {self.record.get('host')}: {self.delivery.summary()}"

    def __repr__(self) -> str:
        return f"<RemoteDebugger {self.table()}>"


def remote_debugger(remote: RemoteSends, ref: str) -> RemoteDebugger | None:
    """The debugger for a send this ledger recorded as made on a host, else None (a local one)."""
    events = remote.shared.ledger.events(relay_id=ref) or remote.shared.ledger.events(delivery=ref)
    outs = [e for e in events if e.kind == "outcome" and e.data.get("host")]
    if not outs:
        return None
    last = outs[-1]
    rid = last.relay_id or ref
    mine = [d for d in remote.shared.deliveries if ref in (d.key, d.relay_id)]
    d = mine[-1] if mine else Delivery(key=last.delivery or rid, relay_id=rid, target=str(last.data.get("target")),
                                       transport="ssh", state=DeliveryState(last.data.get("state") or "unknown"),
                                       stage=str(last.data.get("stage") or "remote"), reason=last.data.get("reason"))
    return RemoteDebugger(remote, rid, dict(last.data), d)
