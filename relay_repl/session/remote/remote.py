"""The operator's side of hosts: one ssh channel per host (system/ssh.py), each running
`relay serve --stdio` there, and what the session asks of them (targets, checks).

Why here: discovery on a host is done by that host's relay, from its own registries
and /proc; this side only names the results (`HOST/claude:alpha`) and keeps one down
host from stopping the others (each host's problem is one line naming it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anyio
from pydantic import BaseModel, Field, ValidationError

from relay_repl.core.approval import Scope, plan_digest, spend
from relay_repl.core.delivery import ANSWERED, Delivery, DeliveryState
from relay_repl.core.envelope import check_body
from relay_repl.core.errors import ChannelLost, HostClaim, HostError, RelayError, UsageError
from relay_repl.core.host_claims import (AskedSend, RemoteApproval, is_send_plan, one_line_shape, outcome_claim,
                                          plan_problem, shaped)
from relay_repl.core.inbound import InboundMessage, Verdict
from relay_repl.core.serve_wire import WaitReplyResult
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target, split_spec  # split_spec: re-exported, its old home
from relay_repl.session.core.gate import ApproveFn, ask
from relay_repl.session.core.gating import withheld_by
from relay_repl.store.hosts import HostEntry, control_dir, find_host, load_hosts, ssh_config_file
from relay_repl.system.ssh import SshChannel

_TARGET_FIELDS = set(Target.model_fields)


def target_from_json(host: str, row: dict[str, Any]) -> Target:
    """A host's target row as a local Target. Its `detail` is typed by the kind's own model (the
    registry must be loaded for that); a detail this relay cannot read (a kind not installed here,
    a newer relay there) is left out rather than failing the whole host's listing: the host's relay,
    not this one, acts on it."""
    from relay_repl.agents import registry  # noqa: F401 - registers the kinds' detail models

    data = {k: v for k, v in row.items() if k in _TARGET_FIELDS}
    data["host"] = host
    data["transports"] = tuple(data.get("transports") or ())
    try:
        return Target.model_validate(data)
    except ValidationError:
        if "detail" not in data:
            raise
        return Target.model_validate({k: v for k, v in data.items() if k != "detail"})


async def host_key_fingerprint(ch: SshChannel) -> str | None:
    """The SHA256 fingerprint of the key ssh has recorded for the host (from its own
    known_hosts files, as `ssh -G` names them), or None when none is recorded."""
    code, out, _ = await ch._run(["ssh", *ch.options(), "-G", ch.destination], 5.0)
    conf: dict[str, str] = {}
    for line in out.splitlines():
        k, _, v = line.partition(" ")
        conf.setdefault(k, v)
    host, port = conf.get("hostname", ch.destination), conf.get("port", "22")
    name = host if port == "22" else f"[{host}]:{port}"
    for f in (conf.get("userknownhostsfile", "") + " " + conf.get("globalknownhostsfile", "")).split():
        code, out, _ = await ch._run(["ssh-keygen", "-l", "-E", "sha256", "-F", name, "-f", _expand(f)], 5.0)
        m = re.search(r"SHA256:[A-Za-z0-9+/=]+", out)
        if code == 0 and m:
            return m.group(0)
    return None


def _expand(path: str) -> str:
    import os

    return os.path.expanduser(path)


class Hosts:
    """The hosts of `hosts.toml`, each with at most one open channel, opened on first use."""

    def __init__(self, entries: list[HostEntry] | None = None, remote_command: tuple[str, ...] | None = None) -> None:
        self.entries = load_hosts() if entries is None else entries
        self.remote_command = remote_command  # what runs there; default `relay serve --stdio`
        self._channels: dict[str, SshChannel] = {}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def channel(self, name: str) -> SshChannel:
        ch = self._channels.get(name)
        if ch is None:
            entry = next((h for h in self.entries if h.name == name), None) or find_host(name)
            ch = SshChannel(entry.name, entry.destination, control_dir(), ssh_config_file(),
                            **({"remote_command": self.remote_command} if self.remote_command else {}))
            self._channels[name] = ch
        return ch

    async def targets(self, name: str) -> list[Target]:
        """The host's targets; a listing of the wrong shape is one line naming the host (each
        string in it already made inert by the channel)."""
        rows = await self.channel(name).request("targets")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise HostError(f"host {name} answered targets with a value of the wrong shape (not a list of targets): "
                            f"not read; check {name}")
        try:
            return [target_from_json(name, r) for r in rows]
        except ValidationError as exc:
            raise HostError(f"host {name} answered targets with a target of the wrong shape "
                            f"({one_line_shape(exc)}): not read; check {name}") from None

    async def all_targets(self) -> tuple[list[Target], list[str]]:
        """Every host's targets, asked at once; a host that fails is one line, the rest stand."""
        found: list[Target] = []
        problems: list[str] = []

        async def one(entry: HostEntry) -> None:
            try:
                found.extend(await self.targets(entry.name))
            except RelayError as exc:
                problems.append(str(exc) if entry.name in str(exc) else f"host {entry.name}: {exc}")

        async with anyio.create_task_group() as tg:
            for e in self.entries:
                tg.start_soon(one, e)
        return found, sorted(problems)

    async def check(self, name: str) -> dict[str, Any]:
        """What `relay hosts check` reports for one host; never raises for the host's fault."""
        ch = self.channel(name)
        out: dict[str, Any] = {"name": name, "destination": ch.destination, "reachable": False,
                               "host_key": None, "relay": None, "protocol": None, "pid": None,
                               "targets": [], "problem": None}
        try:
            out["host_key"] = await host_key_fingerprint(ch)
            hello = await ch.open()
            out.update(reachable=True, relay=hello.get("relay"), protocol=hello.get("protocol"),  # inert: the channel
                       pid=hello.get("pid"), hostname=hello.get("hostname"))                # passed each through visible
            out["targets"] = [t.spec for t in await self.targets(name)]
        except RelayError as exc:
            out["problem"] = str(exc)
        return out

    async def aclose(self) -> None:
        for ch in self._channels.values():
            await ch.close()


def resolve_host(spec: str, hosts: Hosts) -> tuple[str, str]:
    host, rest = split_spec(spec)
    if host is None:
        raise UsageError(f"{spec} names no host")
    if not any(h.name == host for h in hosts.entries):
        raise HostError(f"no host named {host!r} (see `relay hosts`; add one with `relay hosts add {host} DESTINATION`)")
    return host, rest


# ---- sends to a host: the plan is built and carried out there, approved here --------------


class RemoteAnswer(BaseModel):
    """A reply to a delivery on a host, as that host's inbox judged it: the host's word, shown as its own."""

    message: InboundMessage
    host: str
    judged_on: str
    serve_pid: int
    host_says: str = Field(default="", description="the host's verdict as it gave it: `host H says: verified by pid P`")

    @property
    def verified_by(self) -> str:
        v = self.message.verdict
        if v is not None and v.verdict == "mismatch" and v.said_by is None:  # judged here: the host said otherwise
            return f"mismatch: {v.detail}; {self.host_says}"
        return self.host_says or f"host {self.host} says: no verdict"


class RemoteDelivery(BaseModel):
    """The host's Delivery, as its relay reported it, and where it was carried out."""

    delivery: Delivery
    host: str
    route: str
    answer: RemoteAnswer | None = None
    asked: AskedSend | None = None


def host_says(host: str, v: Verdict | None) -> str:
    """`host H says: verified by pid P`: a remote verdict, never shown as this relay's own."""
    if v is None:
        return f"host {host} says: no verdict"
    return f"host {host} says: {v.verdict}" + (f" by pid {v.pid}" if v.pid is not None else "") + (
        f" ({v.session})" if v.session else "")


def remote_answer(host: str, res: Any, relay_id: str, asked: str, serve_pid: int = 0) -> RemoteAnswer | None:
    """The host's answer to `relay_id`, shown as the host's word; an answer naming another id is a
    claim, and one the host says came from a session other than `asked` is a mismatch here as there."""
    got = shaped(host, "wait_reply", WaitReplyResult, res)
    if got.message is None:
        return None
    msg = shaped(host, "wait_reply", InboundMessage, got.message)
    if msg.answers != relay_id:
        raise HostClaim(host, f"an answer to {msg.answers or 'nothing'} as the answer to {relay_id}")
    said = host_says(host, msg.verdict)
    v = msg.verdict
    if v is not None:
        v = v.model_copy(update={"said_by": f"host {host}"})
        if v.session and v.session != asked and v.verdict in ("verified", "host verified", "mismatch"):
            v = v.model_copy(update={"verdict": "mismatch", "said_by": None,
                                     "detail": f"answered by {v.session}, asked {asked} ({said})"})
        msg = msg.model_copy(update={"verdict": v})
    return RemoteAnswer(message=msg, host=host, judged_on=str(got.judged_on or host),
                        serve_pid=int(got.serve_pid or serve_pid), host_says=said)


def record_claim(ledger: Any, claim: HostClaim, relay_id: str | None, op: str, frame: Any = None) -> None:
    """A host claim in the ledger (kind `host-claim`): what it said, that it was not believed."""
    if ledger is not None:
        ledger.event("host-claim", relay_id=relay_id, data={"host": claim.host, "claim": claim.what, "op": op,
                                                            "line": str(claim), "frame": frame})


async def send_remote(hosts: Hosts, spec: str, body: str, *, approve: ApproveFn, ledger: Any = None,
                      want: str = "none", transport: str | None = None, timeout: float = 30.0,
                      reply_via: str | None = None, echo: Callable[[str], None] | None = None,
                      extra: dict[str, Any] | None = None) -> RemoteDelivery:
    """Send through HOST's relay: it resolves the target, builds the plan and asks; the plan
    comes up the channel and is shown here with its route; only its digest, approved here
    by the operator's gate, goes back. The local approval is spent at once (nothing acts
    here); the host's relay mints its own from that digest, single-use, for that plan only.

    The host's word is a claim (core/host_claims.py): a plan that is not the send asked for is
    declined unseen; the operator's yes is recorded here (`remote-approval`: relay id, target,
    digest, payload) before the digest goes back; and the outcome is believed only for that
    approval. Anything else raises HostClaim (one line naming the host), recorded as `host-claim`."""
    check_body(body)  # the size and control checks here, before anything goes to the host
    host, rest = resolve_host(spec, hosts)
    ch = hosts.channel(host)
    ext = extra or {}
    asked = AskedSend(host=host, target=rest, body=body, want=want, hop=int(ext.get("hop") or 0),
                      relay_id=ext.get("relay_id"), re=ext.get("re"))
    got: dict[str, Any] = {}

    async def fingerprint() -> None:
        kept = ch.host_key
        if kept is not None and ch.is_open() and kept[0] == ch.master_pid:  # the master it was read for
            got["fp"] = kept[1]
            return
        try:
            got["fp"] = await host_key_fingerprint(ch)
        except RelayError:
            got["fp"] = None  # the route then says ssh checked the key, as it did

    failed: RelayError | None = None
    hello: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:  # read locally while the channel opens
        tg.start_soon(fingerprint)
        try:
            hello = await ch.open()
        except RelayError as exc:  # raised as itself, not inside a task group's exception group
            failed = exc
            tg.cancel_scope.cancel()
    if failed is not None:
        raise failed
    fp = got.get("fp")
    ch.host_key = (ch.master_pid, fp)  # read once per master: the key its connection was checked against
    route = f"via ssh {host} ({ch.destination}), host key {fp or 'as ssh checked it'}; relay serve pid {hello.get('pid')}"
    asked_ids: list[str] = []  # the relay id of the plan the host asked about (known even if the channel drops)
    approvals: list[RemoteApproval] = []  # the operator's yes, each recorded before its digest went back
    say = echo or print

    async def on_ask(question: dict[str, Any]) -> dict[str, Any]:
        plan = shaped(host, "send (its plan)", Plan, question.get("plan") or {})
        digest = str(question.get("digest") or "")
        if not is_send_plan(plan):  # a step on the host before the send (listing its inbox as a peer): shown
            return await side_step(plan, digest)  # and asked like any plan; never an approval of a send
        problem = plan_problem(asked, plan, digest)
        if problem is not None:  # never shown: no yes can be given to a plan that is not the send asked
            claim = HostClaim(host, problem)
            record_claim(ledger, claim, plan.relay_id, "send (its plan)")
            say(f"relay: {claim}; declined, nothing was approved")
            return {"digest": None}
        assert plan.relay_id is not None  # plan_problem checked it names its envelope's id
        asked_ids.append(plan.relay_id)
        shown = shown_here(plan, host, route)
        if ledger is not None:
            ledger.event("plan", relay_id=plan.relay_id, data={**shown.model_dump(mode="json"), "host": host,
                                                               "remote_digest": digest})
        approval = await ask(approve, shown, Scope.of(shown))
        halt = ledger.active_halt() if ledger is not None and approval is not None else None
        if halt is not None:  # it arrived while the plan was on screen: it wins over the answer
            spend(approval)
            approval = None
            got["halt"] = withheld_by(halt)
            say(f"withheld: {got['halt']}")
        mine = RemoteApproval(host=host, relay_id=plan.relay_id, target=rest, digest=digest, payload=plan.payload,
                              transport=plan.transport) if approval is not None else None
        if ledger is not None:  # before the digest goes back: the host acts only after this is written
            ledger.event("answer", relay_id=plan.relay_id,
                         data={"approved": approval is not None, "host": host, "remote_digest": digest,
                               **({"withheld": withheld_by(halt)} if halt is not None else {})})
            if mine is not None:
                ledger.event("remote-approval", relay_id=plan.relay_id, data=mine.model_dump(mode="json"))
        if mine is not None:
            approvals.append(mine)
        spend(approval)
        return {"digest": digest if mine is not None else None}

    async def side_step(plan: Plan, digest: str) -> dict[str, Any]:
        if plan_digest(plan) != digest:
            claim = HostClaim(host, "a plan that does not match its own digest")
            record_claim(ledger, claim, None, "send (a step before it)")
            say(f"relay: {claim}; declined, nothing was approved")
            return {"digest": None}
        shown = plan.model_copy(update={"action": f"on host {host}: {plan.action}",
                                        "notes": (*plan.notes, f"route: {route}")})
        if ledger is not None:
            ledger.event("plan", data={**shown.model_dump(mode="json"), "host": host, "remote_digest": digest})
        approval = await ask(approve, shown, Scope.of(shown))
        halt = ledger.active_halt() if ledger is not None and approval is not None else None
        if halt is not None:
            spend(approval)
            approval = None
            say(f"withheld: {withheld_by(halt)}")
        if ledger is not None:
            ledger.event("answer", data={"approved": approval is not None, "host": host, "remote_digest": digest})
        spend(approval)
        return {"digest": digest if approval is not None else None}

    args = {"target": rest, "body": body, "want": want, "transport": transport, "timeout": timeout,
            "reply_via": reply_via, **{k: v for k, v in ext.items() if v}}  # hop, relay_id, heading, re
    try:
        result = await ch.request("send", args, timeout=timeout + ASK_BOUND, on_ask=on_ask)
    except ChannelLost as exc:
        rid = ext.get("relay_id") or (asked_ids[-1] if asked_ids else None)
        d = Delivery(target=spec, relay_id=rid, transport=transport or "?", state=DeliveryState.INTERRUPTED,
                     stage="remote",
                     reason=f"{exc}; the delivery may have gone ahead on {host}: look at it there "
                            f"(`relay debug` on {host}) before any re-send")
        return RemoteDelivery(delivery=d, host=host, route=route, asked=asked)
    d = shaped(host, "send", Delivery, result)
    approved = next((a for a in reversed(approvals) if a.relay_id == d.relay_id), approvals[-1] if approvals else None)
    what = outcome_claim(d, approved, asked)
    if what is not None:
        claim = HostClaim(host, what)
        record_claim(ledger, claim, d.relay_id or (approved.relay_id if approved else None), "send",
                     frame=d.model_dump(mode="json"))
        raise claim
    answer = None
    if d.reply is not None:  # answered before the host's send returned: judged there, shown as its word
        try:
            answer = remote_answer(host, {"message": d.reply.model_dump(mode="json"), "judged_on": host},
                                   str(d.relay_id), rest, serve_pid=int(hello.get("pid") or 0))
        except HostClaim as claim:
            record_claim(ledger, claim, d.relay_id, "send (its answer)")
            raise
    reason = f"host {host} says: {d.reason}" if d.reason else d.reason
    if got.get("halt") and d.state is DeliveryState.WITHHELD:
        reason = got["halt"]  # this relay's own reason: the yes was withheld here
    # only the asked session's answer is the delivery's reply (remote_answer made another's a mismatch): it
    # stays in replies, and the host's "replied" is not believed on it
    taken = answer.message if answer and answer.message.verdict and answer.message.verdict.ok else None
    state = DeliveryState.IN_TURN if taken is None and d.state in ANSWERED else d.state
    d = d.model_copy(update={"target": f"{host}/{d.target}", "replies": [answer.message] if answer else [],
                             "reply": taken, "state": state, "reason": reason})
    return RemoteDelivery(delivery=d, host=host, route=route, asked=asked, answer=answer)


async def wait_reply_remote(hosts: Hosts, rd: RemoteDelivery, timeout: float, ledger: Any = None) -> RemoteAnswer | None:
    if rd.delivery.relay_id is None:
        return None
    res = await hosts.channel(rd.host).request("wait_reply", {"relay_id": rd.delivery.relay_id, "timeout": timeout},
                                               timeout=timeout + 30)
    asked = rd.asked.target if rd.asked is not None else split_spec(rd.delivery.target)[1]
    try:
        ans = remote_answer(rd.host, res, rd.delivery.relay_id, asked)
    except HostClaim as claim:
        record_claim(ledger, claim, rd.delivery.relay_id, "wait_reply", frame=res)
        raise
    if ans is not None:
        rd.answer = ans
    return ans


async def halt_all(hosts: Hosts, reason: str, by: str) -> list[str]:
    """A halt reaches every host in use (each channel open now); one line per host that could not be told."""
    problems: list[str] = []
    for name, ch in list(hosts._channels.items()):
        try:
            await ch.request("halt", {"reason": reason, "by": by}, timeout=15)
        except RelayError as exc:
            problems.append(f"host {name}: halt not delivered: {exc}")
    return problems


def shown_here(plan: Plan, host: str, route: str) -> Plan:
    """A host's plan as the operator sees it here: its header and line 1 name the host (issue 39: the
    header said `send to claude:alpha` while line 1 said `h2/claude:alpha`), the route is a note. The
    digest the host approves is of its own plan, checked before this is built."""
    action = plan.action
    if action.startswith("send to ") and not action.startswith(f"send to {host}/"):
        action = f"send to {host}/{action.removeprefix('send to ')}"
    elif f" on {host}" not in action and not action.startswith("send to "):
        action = f"{action} on {host}"
    return plan.model_copy(update={"action": action, "target": f"{host}/{plan.target}",
                                   "notes": (*plan.notes, f"route: {route}")})


ASK_BOUND = 900.0  # the operator's time to answer the plan, on top of the send's own timeout
