"""The operator's side of hosts: one ssh channel per host (system/ssh.py), each running
`relay serve --stdio` there, and what the session asks of them (targets, checks).

Why here: discovery on a host is done by that host's relay, from its own registries
and /proc; this side only names the results (`HOST/claude:alpha`) and keeps one down
host from stopping the others (each host's problem is one line naming it).
"""

from __future__ import annotations

import re
from typing import Any

import anyio

from relay_repl.core.errors import HostError, RelayError, UsageError
from relay_repl.core.target import Target
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
    data = {k: v for k, v in row.items() if k in _TARGET_FIELDS}
    data["host"] = host
    data["transports"] = tuple(data.get("transports") or ())
    return Target.model_validate(data)


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

    def __init__(self, entries: list[HostEntry] | None = None) -> None:
        self.entries = load_hosts() if entries is None else entries
        self._channels: dict[str, SshChannel] = {}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def channel(self, name: str) -> SshChannel:
        ch = self._channels.get(name)
        if ch is None:
            entry = next((h for h in self.entries if h.name == name), None) or find_host(name)
            ch = SshChannel(entry.name, entry.destination, control_dir(), ssh_config_file())
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
