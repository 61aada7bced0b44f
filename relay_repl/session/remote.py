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
from pydantic import BaseModel, ValidationError

from relay_repl.core.approval import Scope, plan_digest, spend
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.errors import ChannelLost, HostError, RelayError, UsageError
from relay_repl.core.inbound import InboundMessage
from relay_repl.core.plan import Plan
from relay_repl.core.target import Target
from relay_repl.session.gate import ApproveFn, ask
from relay_repl.store.hosts import HostEntry, control_dir, find_host, load_hosts, ssh_config_file
from relay_repl.system.ssh import SshChannel

HOST_SPEC = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9._-]{0,62})/(?P<rest>.+)$")
_TARGET_FIELDS = set(Target.model_fields)


def split_spec(spec: str) -> tuple[str | None, str]:
    """`build-box/claude:alpha` -> ("build-box", "claude:alpha"); a local spec -> (None, spec).
    A pane id (`%3`) or a local spec never holds a '/' before its ':'."""
    m = HOST_SPEC.match(spec)
    if m and ":" not in m.group("host"):
        return m.group("host"), m.group("rest")
    return None, spec


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
        rows = await self.channel(name).request("targets")
        return [target_from_json(name, r) for r in rows]

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
            out.update(reachable=True, relay=hello.get("relay"), protocol=hello.get("protocol"),
                       pid=hello.get("pid"), hostname=hello.get("hostname"))
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
    """A reply to a delivery on a host, as that host's inbox judged it."""

    message: InboundMessage
    host: str
    judged_on: str
    serve_pid: int

    @property
    def verified_by(self) -> str:
        v = self.message.verdict
        return f"{v.verdict if v else 'no verdict'} on {self.host} by relay serve pid {self.serve_pid}"


class RemoteDelivery(BaseModel):
    """The host's Delivery, as its relay reported it, and where it was carried out."""

    delivery: Delivery
    host: str
    route: str
    answer: RemoteAnswer | None = None


async def send_remote(hosts: Hosts, spec: str, body: str, *, approve: ApproveFn, ledger: Any = None,
                      want: str = "none", transport: str | None = None, timeout: float = 30.0,
                      reply_via: str | None = None, echo: Callable[[str], None] | None = None,
                      extra: dict[str, Any] | None = None) -> RemoteDelivery:
    """Send through HOST's relay: it resolves the target, builds the plan and asks; the plan
    comes up the channel and is shown here with its route; only its digest, approved here
    by the operator's gate, goes back. The local approval is spent at once (nothing acts
    here); the host's relay mints its own from that digest, single-use, for that plan only."""
    host, rest = resolve_host(spec, hosts)
    ch = hosts.channel(host)
    got: dict[str, Any] = {}

    async def fingerprint() -> None:
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
    route = f"via ssh {host} ({ch.destination}), host key {fp or 'as ssh checked it'}; relay serve pid {hello.get('pid')}"
    asked: list[str] = []  # the relay id of the plan the host asked about (known even if the channel drops)

    async def on_ask(question: dict[str, Any]) -> dict[str, Any]:
        plan = Plan.model_validate(question.get("plan") or {})
        digest = str(question.get("digest") or "")
        if plan.relay_id:
            asked.append(plan.relay_id)
        if plan_digest(plan) != digest:  # what is shown must be exactly what is approved there
            (echo or print)(f"relay: host {host} sent a plan that does not match its digest: declined")
            return {"digest": None}
        shown = shown_here(plan, host, route)
        if ledger is not None:
            ledger.event("plan", relay_id=plan.relay_id, data={**shown.model_dump(mode="json"), "host": host,
                                                               "remote_digest": digest})
        approval = await ask(approve, shown, Scope.of(shown))
        if ledger is not None:
            ledger.event("answer", relay_id=plan.relay_id, data={"approved": approval is not None, "host": host,
                                                                 "remote_digest": digest})
        spend(approval)
        return {"digest": digest if approval is not None else None}

    args = {"target": rest, "body": body, "want": want, "transport": transport, "timeout": timeout,
            "reply_via": reply_via, **{k: v for k, v in (extra or {}).items() if v}}  # hop, relay_id, heading
    try:
        result = await ch.request("send", args, timeout=timeout + ASK_BOUND, on_ask=on_ask)
    except ChannelLost as exc:
        rid = (extra or {}).get("relay_id") or (asked[-1] if asked else None)
        d = Delivery(target=spec, relay_id=rid, transport=transport or "?", state=DeliveryState.INTERRUPTED,
                     stage="remote",
                     reason=f"{exc}; the delivery may have gone ahead on {host}: look at it there "
                            f"(`relay debug` on {host}) before any re-send")
        return RemoteDelivery(delivery=d, host=host, route=route)
    d = Delivery.model_validate(result)
    d = d.model_copy(update={"target": f"{host}/{d.target}"})
    return RemoteDelivery(delivery=d, host=host, route=route)


async def wait_reply_remote(hosts: Hosts, rd: RemoteDelivery, timeout: float) -> RemoteAnswer | None:
    if rd.delivery.relay_id is None:
        return None
    res = await hosts.channel(rd.host).request("wait_reply", {"relay_id": rd.delivery.relay_id, "timeout": timeout},
                                               timeout=timeout + 30)
    if not res or res.get("message") is None:
        return None
    ans = RemoteAnswer(message=InboundMessage.model_validate(res["message"]), host=rd.host,
                       judged_on=str(res.get("judged_on")), serve_pid=int(res.get("serve_pid") or 0))
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
