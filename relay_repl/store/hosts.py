"""The operator's hosts: `$RELAY_HOME/hosts.toml` (in lab mode, the lab's own `<lab>/hosts.toml`).

Why a file of our own and not ~/.ssh/config: a host is a NAME relay addresses
(`NAME/claude:alpha`) bound to a DESTINATION exactly as `ssh` takes it (user@host, a
~/.ssh/config alias), so everything the operator's ssh already knows (ProxyJump, agent,
hardware keys) applies unchanged. relay never writes the user's ~/.ssh.

Format, one table per host:

    [hosts.build-box]
    destination = "me@build-box.example"
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from relay_repl.core.readable import Readable

from relay_repl.core.errors import UsageError

import relay_repl.store.paths as paths

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class HostEntry(Readable, BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    name: str
    destination: str

    def __repr__(self) -> str:
        """The name a target spec is prefixed with, then how ssh reaches it."""
        from relay_repl.core.controls import visible

        return visible(f"<Host {self.name}: ssh {self.destination} (targets {self.name}/kind:name)>")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"host name {v!r}: use letters, digits, '.', '_' or '-' (it prefixes a target spec)")
        return v

    @field_validator("destination")
    @classmethod
    def _dest(cls, v: str) -> str:
        if not v or v.startswith("-") or any(c.isspace() or ord(c) < 32 for c in v):
            raise ValueError(f"destination {v!r}: give it as ssh takes it (user@host or a ~/.ssh/config alias)")
        return v


def lab_dir() -> Path | None:
    """The lab this process is pointed at (`relay --lab`, `relay lab env`), or None."""
    d = os.environ.get("RELAY_LAB_DIR")
    return Path(d) if d else None


def hosts_file() -> Path:
    lab = lab_dir()
    return lab / "hosts.toml" if lab else paths.state_dir(create=False) / "hosts.toml"


def ssh_config_file() -> Path | None:
    """The ssh config relay passes with -F: the lab's own in lab mode, else None (the user's)."""
    lab = lab_dir()
    if lab is None:
        return None
    cfg = lab / "ssh" / "config"
    return cfg if cfg.exists() else None


def control_dir() -> Path:
    """relay's own ControlMaster directory (never the user's ControlPath)."""
    return paths.state_dir(create=False) / "ssh"


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load_hosts(path: Path | None = None) -> list[HostEntry]:
    path = path or hosts_file()
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    out = []
    for name, row in (data.get("hosts") or {}).items():
        try:
            out.append(HostEntry(name=name, destination=str((row or {}).get("destination", ""))))
        except ValueError as exc:
            raise UsageError(f"{path}: {exc}") from None
    return out


def save_hosts(path: Path, hosts: list[HostEntry]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = ["# relay hosts (`relay hosts add NAME DESTINATION`)", ""]
    for h in hosts:
        lines += [f"[hosts.{_toml_str(h.name)}]", f"destination = {_toml_str(h.destination)}", ""]
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text("\n".join(lines))
    os.replace(tmp, path)


def add_host(name: str, destination: str) -> HostEntry:
    try:
        entry = HostEntry(name=name, destination=destination)
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[-1].strip()) from None
    path = hosts_file()
    hosts = [h for h in load_hosts(path) if h.name != name]
    save_hosts(path, [*hosts, entry])
    return entry


def find_host(name: str) -> HostEntry:
    for h in load_hosts():
        if h.name == name:
            return h
    raise UsageError(f"no host named {name!r} in {hosts_file()} (add it with `relay hosts add {name} DESTINATION`)")
