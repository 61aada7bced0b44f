"""A discovered session as plain data, and the `relay targets` table both forms print.

Why a second form beside `core.target.Target`: `relay targets` is a cold start measured against a
peer that lists in ~0.1 s, and importing pydantic alone took ~0.08 s of it. Each kind's plain
listing (`agents/<kind>/plain_listing.py`, frontends/targets_plain.py) builds these rows
from what it read; anything it does not accept exactly goes through the models instead, so both
print the same bytes (tests/frontends/test_targets_plain.py). Standard library only, no
dataclasses (its import of inspect is a tenth of the budget).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from relay_repl.core.controls import visible

FIELDS = ("kind", "prefix", "name", "address", "pid", "live", "state", "pane", "transports", "identified_by", "socket",
          "evidence_file", "proc_start", "stale_reason", "tmux_socket", "tmux_server", "detail", "client_version",
          "client_status", "host")
"""Target's fields, in its order (a test holds the two equal)."""

_DEFAULTS: dict[str, Any] = {"prefix": None, "pid": None, "live": True, "state": "unknown", "pane": None,
                             "transports": (), "socket": None, "evidence_file": None, "proc_start": None,
                             "stale_reason": None, "tmux_socket": None, "tmux_server": None, "detail": None,
                             "client_version": None, "client_status": None, "host": None}


class TargetRow:
    """One listed session: Target's fields, `detail` already as its JSON dict (the kind's model dumped)."""

    __slots__ = FIELDS

    kind: str
    prefix: str | None
    name: str
    address: str
    pid: int | None
    live: bool
    state: str
    pane: str | None
    transports: tuple[str, ...]
    identified_by: str
    socket: str | None
    evidence_file: str | None
    proc_start: str | None
    stale_reason: str | None
    tmux_socket: str | None
    tmux_server: str | None
    detail: dict[str, Any]
    client_version: str | None
    client_status: str | None
    host: str | None

    def __init__(self, **fields: Any) -> None:
        unknown = set(fields) - set(FIELDS)
        if unknown:
            raise TypeError(f"TargetRow has no field(s) {sorted(unknown)}")
        for name in FIELDS:
            value = fields[name] if name in fields else _DEFAULTS[name]
            if name == "transports":
                value = tuple(value)
            elif name == "detail" and value is None:
                value = {}
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a TargetRow is frozen")

    @property
    def spec(self) -> str:
        """As `Target.spec`: `claude:alpha`, or `host/claude:alpha` on a relay host."""
        local = f"{self.prefix or self.kind}:{self.name}"
        return f"{self.host}/{local}" if self.host else local

    def __repr__(self) -> str:
        return f"<TargetRow {self.spec}>"


def describe_target(t: Any) -> str:
    """The plan's words for a target (a Target or a TargetRow): spec, pid, pane, state, client."""
    bits = [t.spec]
    if t.pid is not None:
        bits.append(f"pid {t.pid}")
    if t.pane:
        bits.append(f"pane {t.pane}")
    bits.append(t.state if t.live else "STALE")
    if t.client_version or t.client_status:
        bits.append(f"{t.kind} {t.client_version or '?'} {t.client_status or ''}".rstrip())
    # a session's name is chosen by its agent (or whoever writes its registry): shown, never applied
    return visible(" ".join(bits[:1]) + " (" + ", ".join(bits[1:]) + ")")


def target_json(t: Any, detail: Mapping[str, Any]) -> dict[str, Any]:
    """What `relay targets --json` prints for one target (a Target or a TargetRow), its detail given as JSON."""
    return {
        "kind": t.kind, "name": t.name, "spec": t.spec, "address": t.address, "pid": t.pid, "live": t.live,
        "state": t.state, "pane": t.pane, "transports": list(t.transports), "identified_by": t.identified_by,
        "client_version": t.client_version, "client_status": t.client_status,
        "socket": t.socket, "evidence_file": t.evidence_file, "proc_start": t.proc_start,
        "stale_reason": t.stale_reason, "tmux_socket": t.tmux_socket, "tmux_server": t.tmux_server,
        "detail": dict(detail), "host": t.host,
    }


def rows_json(rows: Iterable[TargetRow]) -> str:
    """`relay targets --json` of plain rows: the bytes the models' output gives."""
    import json

    return json.dumps([target_json(r, r.detail) for r in rows], indent=1)


def format_targets(targets: Sequence[Any]) -> str:
    """Live first, then stale; one row each: spec, pid, state, pane, client version (and the
    version policy's word on it), transports. Targets or TargetRows alike (the same attributes)."""
    if not targets:
        return "no agent sessions found (start one, or try `relay --lab targets`)"
    hosts = any(t.host for t in targets)  # the HOST column once a host is in play; local output unchanged
    rows = [(*(("HOST",) if hosts else ()), "TARGET", "PID", "STATE", "PANE", "CLIENT", "TRANSPORTS")]
    for t in sorted(targets, key=lambda t: (t.host or "", not t.live, t.kind, t.name)):
        client = f"{t.client_version or '?'} {t.client_status or ''}".strip() if (t.client_version or t.client_status) else "-"
        rows.append(tuple(visible(c) for c in (*((t.host or "local",) if hosts else ()), t.spec, str(t.pid or "-"),
                                               t.state if t.live else "STALE", t.pane or "-", client,
                                               ", ".join(t.transports) or "-")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
