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
import unicodedata
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from relay_repl.core.controls import BIDI, is_forbidden, name_of, visible
from relay_repl.core.errors import FileProblem, UsageError
from relay_repl.core.readable import Readable

import relay_repl.store.paths as paths
from relay_repl.store.hosts_path import hosts_file as hosts_file, lab_dir as lab_dir

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
FIX = "correct it, or remove the host's table and add it again with `relay hosts add NAME DESTINATION`"
_REFUSED_CATEGORIES = {"Cc": "a control character", "Cf": "an invisible format character",
                       "Cs": "a lone surrogate (was the text valid UTF-8?)", "Co": "a private-use character",
                       "Cn": "an unassigned code point", "Zl": "a line separator", "Zp": "a paragraph separator"}


def refused_character(text: str) -> str | None:
    """Why `text` may not name a host or a destination, for the first character it may not hold:
    a control (C0, DEL, C1), a bidi or other format character (Unicode category Cf: it reorders or
    hides what the operator reads), a surrogate, private-use or unassigned code point, a line
    separator, or white space. None when every character is fine."""
    for i, ch in enumerate(text, 1):
        cat = unicodedata.category(ch)
        if ch in BIDI:
            why = "a bidirectional control (it reorders what a terminal shows)"
        elif cat in _REFUSED_CATEGORIES:
            why = _REFUSED_CATEGORIES[cat]
        elif ch.isspace():
            why = "white space"
        else:
            continue
        uname = unicodedata.name(ch, "")
        named = name_of(ch) if is_forbidden(ch) else f"U+{ord(ch):04X}" + (f" {uname}" if uname else "")
        return f"holds {named}, {why}, at position {i} of {len(text)}"
    return None


def _name_fault(v: str) -> str:
    """What keeps `v` from being a host name, in words."""
    if not v:
        return "is empty"
    bad = refused_character(v)
    if bad:
        return bad
    for i, ch in enumerate(v, 1):
        if not (ch.isascii() and (ch.isalnum() or ch in "._-")):
            return f"holds {ch!r} at position {i} of {len(v)}"
    if not v[0].isalnum():
        return f"starts with {v[0]!r}"
    return f"is {len(v)} characters long"


class HostEntry(Readable, BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

    name: str
    destination: str

    def __repr__(self) -> str:
        """The name a target spec is prefixed with, then how ssh reaches it."""
        return visible(f"<Host {self.name}: ssh {self.destination} (targets {self.name}/kind:name)>")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.fullmatch(v):
            raise ValueError(f'host name "{visible(v)}" {_name_fault(v)}: use 1-63 letters, digits, '
                             "'.', '_' or '-', starting with a letter or digit (it prefixes a target spec: NAME/kind:name)")
        return v

    @field_validator("destination")
    @classmethod
    def _dest(cls, v: str) -> str:
        if not v:
            raise ValueError("the destination is empty: give it as ssh takes it (user@host or a ~/.ssh/config alias)")
        if v.startswith("-"):
            raise ValueError(f'destination "{visible(v)}" starts with "-", which ssh would take as an option: give '
                             "it as ssh takes it (user@host or a ~/.ssh/config alias)")
        bad = refused_character(v)
        if bad:
            raise ValueError(f'destination "{visible(v)}" {bad}: type it again without that character, as ssh '
                             "takes it (user@host or a ~/.ssh/config alias)")
        return v


class _HostRow(BaseModel):
    """One `[hosts.NAME]` table as the file holds it (the name is its key)."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)

    destination: str


class HostsFile(BaseModel):
    """The shape of hosts.toml: `[hosts.NAME]` tables, each with `destination = "..."`."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)

    hosts: dict[str, _HostRow] = Field(default_factory=dict)


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


def load_hosts(path: Path | None = None) -> list[HostEntry]:
    """The hosts of hosts.toml (none when it does not exist). Every fault, of bytes, TOML or shape,
    and a stored name or destination relay would refuse to add, is one FileProblem naming the file
    and the line (exit 2): never a traceback, never a host silently dropped."""
    from pydantic import ValidationError

    from relay_repl.core.file_shape import line_of
    from relay_repl.store.loader import load_toml

    path = path or hosts_file()
    shape, text = load_toml(path, HostsFile, FIX, missing_ok=True)
    if shape is None:
        return []
    out = []
    for name, row in shape.hosts.items():
        try:
            out.append(HostEntry(name=name, destination=row.destination))
        except ValidationError as exc:  # a value `relay hosts add` would refuse: the line of its table or key
            problem, loc = _refusal(exc)
            raise FileProblem(path, problem, FIX, line_of(text, ("hosts", name, *loc[:1]))) from None
    return out


def _refusal(exc: object) -> tuple[str, tuple[object, ...]]:
    """A HostEntry's refusal as the sentence its validator wrote (without pydantic's field prefix)."""
    from relay_repl.core.file_shape import shape_problem

    problem, loc = shape_problem(exc)
    return problem.removeprefix("`name`: ").removeprefix("`destination`: "), loc


def save_hosts(path: Path, hosts: list[HostEntry]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write(path, _render(hosts))


def _render(hosts: list[HostEntry]) -> str:
    """hosts.toml as relay writes it."""
    from relay_repl.core.file_shape import toml_string as q  # the writer's escaping: the second wall behind the refusals

    lines = ["# relay hosts (`relay hosts add NAME DESTINATION`)", ""]
    for h in hosts:
        lines += [f"[hosts.{q(h.name)}]", f"destination = {q(h.destination)}", ""]
    return "\n".join(lines)


def _write(path: Path, text: str) -> None:
    """Replace the file's content at once; a symbolic link (a dotfiles checkout) stays a link, and
    the file it points at gets the text."""
    path = Path(os.path.realpath(path))
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def add_host(name: str, destination: str) -> HostEntry:
    """Add (or replace) a host. A value relay could not store and read back is refused with the
    reason, before the file is read or written."""
    from pydantic import ValidationError

    try:
        entry = HostEntry(name=name, destination=destination)
    except ValidationError as exc:
        raise UsageError(_refusal(exc)[0]) from None
    path = hosts_file()
    hosts = load_hosts(path)
    from relay_repl.store.loader import read_bytes

    text = (read_bytes(path, FIX, missing_ok=True) or b"").decode("utf-8")
    if any(h.name == name for h in hosts):
        if text.strip() != _render(hosts).strip():  # rewriting it would drop the operator's comments or layout
            raise UsageError(f"host {name!r} is already in {path}, which holds more than relay writes (comments, "
                             f"layout): change its destination there by hand; nothing was changed")
        save_hosts(path, [*(h for h in hosts if h.name != name), entry])
    else:  # the operator's file as it is (comments, order), the new table after it
        from relay_repl.core.file_shape import toml_string

        if not text.strip():
            save_hosts(path, [entry])
        else:
            _write(path, f"{text.rstrip()}\n\n[hosts.{toml_string(name)}]\ndestination = {toml_string(destination)}\n")
    return entry


def find_host(name: str) -> HostEntry:
    for h in load_hosts():
        if h.name == name:
            return h
    raise UsageError(f"no host named {name!r} in {hosts_file()} (add it with `relay hosts add {name} DESTINATION`)")
