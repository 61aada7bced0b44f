"""Targets and addresses: the values discovery produces and the session consumes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

TargetState = Literal["idle", "busy", "waiting", "unknown", "never-idle"]

class Target(BaseModel):
    """A discovered session: who it is, whether it lives, how it can be reached."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(description="'claude-code', 'codex', or another adapter's kind")
    prefix: str | None = Field(default=None, description="What an operator types before the name (the adapter's), "
                               "e.g. 'claude'; the kind when unset")
    name: str
    address: str = Field(description="How the transports reach it: socket path, thread id, pane id...")
    pid: int | None = None
    live: bool = True
    state: TargetState = "unknown"
    pane: str | None = Field(default=None, description="Rostered tmux pane id, e.g. '%3', or None")
    transports: tuple[str, ...] = ()
    identified_by: str = Field(description="The evidence that resolved it, for the plan")
    detail: dict[str, Any] = Field(default_factory=dict)
    client_version: str | None = Field(default=None, description="The version of the client running it, "
                                       "as its agent read it (registry record, process binary), or None")
    client_status: str | None = Field(default=None, description="The version policy's word on it: pinned | "
                                      "verified (on this machine, by `relay fidelity`) | unverified | unknown")
    host: str | None = Field(default=None, description="The relay host (`relay hosts`) it runs on, discovered by "
                             "that host's relay over ssh; None: this machine")

    @property
    def spec(self) -> str:
        """The string an operator types to name it: `claude:alpha`, `codex:<name>`; on a host
        `build-box/claude:alpha`."""
        local = f"{self.prefix or self.kind}:{self.name}"
        return f"{self.host}/{local}" if self.host else local

    def describe(self) -> str:
        bits = [self.spec]
        if self.pid is not None:
            bits.append(f"pid {self.pid}")
        if self.pane:
            bits.append(f"pane {self.pane}")
        bits.append(self.state if self.live else "STALE")
        if self.client_version or self.client_status:
            bits.append(f"{self.kind} {self.client_version or '?'} {self.client_status or ''}".rstrip())
        return " ".join(bits[:1]) + " (" + ", ".join(bits[1:]) + ")"

    def __repr__(self) -> str:
        return f"<Target {self.describe()}>"


class Me(BaseModel):
    """The operator's own address (seed section 1): needed to ask for a reply."""

    model_config = ConfigDict(frozen=True)

    role: str = "operator"
    agent: str = "relay"
    address: str
    inbox: str | None = Field(default=None, description="Where replies land, if an inbox is listening")

    @property
    def sender(self) -> str:
        return f"{self.role}:{self.agent}@{self.address}"

    def __repr__(self) -> str:
        return f"<Me {self.sender} inbox={self.inbox or 'none'}>"


class TargetTable(list):
    """A list of targets that prints as a table in the REPL (and `relay targets`)."""

    def __repr__(self) -> str:
        return format_targets(self)


def format_targets(targets: list[Target]) -> str:
    """Live first, then stale; one row each: spec, pid, state, pane, client version (and the
    version policy's word on it), transports."""
    if not targets:
        return "no Claude Code or Codex sessions found (start one, or try `relay --lab targets`)"
    hosts = any(t.host for t in targets)  # the HOST column once a host is in play; local output unchanged
    rows = [(*(("HOST",) if hosts else ()), "TARGET", "PID", "STATE", "PANE", "CLIENT", "TRANSPORTS")]
    for t in sorted(targets, key=lambda t: (t.host or "", not t.live, t.kind, t.name)):
        client = f"{t.client_version or '?'} {t.client_status or ''}".strip() if (t.client_version or t.client_status) else "-"
        rows.append((*((t.host or "local",) if hosts else ()), t.spec, str(t.pid or "-"), t.state if t.live else "STALE",
                     t.pane or "-", client, ", ".join(t.transports) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
