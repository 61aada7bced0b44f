"""Targets and addresses: the values discovery produces and the session consumes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from relay_repl.core.errors import UsageError
from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, model_validator

from relay_repl.core.readable import Readable
from relay_repl.core.target_row import describe_target

TargetState = Literal["idle", "busy", "waiting", "unknown", "never-idle"]
HOST_SPEC = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9._-]{0,62})/(?P<rest>.+)$")


def split_spec(spec: str) -> tuple[str | None, str]:
    """`build-box/claude:alpha` -> ("build-box", "claude:alpha"); a local spec -> (None, spec).
    A pane id (`%3`) or a local spec never holds a '/' before its ':'.

    Here, beside `Target.host`, and not with the channels to hosts (session/remote/remote.py): the send
    pipeline and agents' requests ask it of every spec, and the session's core never imports the
    remote side."""
    m = HOST_SPEC.match(spec)
    if m and ":" not in m.group("host"):
        return m.group("host"), m.group("rest")
    return None, spec


class AgentDetail(BaseModel):
    """What one agent kind keeps about a target beyond the fields every kind has: each kind's
    package subclasses it (`AgentKind.facts.detail_model`), frozen like the target itself."""

    # Inherited by every kind's detail: each is built on first use, so a listing builds only
    # the kinds it lists (bench.targets: no Gemini session, no GeminiDetail schema).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class PaneDetail(AgentDetail):
    """Detail fields of a kind whose sessions run in tmux panes (the roster's own facts)."""

    tmux_session: str | None = None
    pane_current_command: str | None = None
    pane_note: str | None = Field(default=None, description="why no pane is rostered, when one could be")


DetailModels = Callable[[str], "type[AgentDetail] | None"]
_detail_models: list[DetailModels] = []


def detail_models(resolve: DetailModels) -> None:
    """Register how a kind names its detail model (the agent registry does, when it loads): a
    Target built from plain data (a dict `detail`) is validated into its kind's own model."""
    if resolve not in _detail_models:
        _detail_models.append(resolve)


def _detail_model(kind: str) -> type[AgentDetail]:
    for resolve in _detail_models:
        found = resolve(kind)
        if found is not None:
            return found
    return AgentDetail

class Target(Readable, BaseModel):
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
    socket: str | None = Field(default=None, description="Its own listening socket (where a socket transport "
                               "writes), as its registry names it, or None")
    evidence_file: str | None = Field(default=None, description="The file where it records what it took "
                                      "(transcript, rollout, chat file), as discovery found it, or None")
    proc_start: str | None = Field(default=None, description="/proc/<pid>/stat start time recorded for `pid` "
                                   "(a reused pid has another), or None")
    stale_reason: str | None = Field(default=None, description="Why it is not live (live=False), in words")
    tmux_socket: str | None = Field(default=None, description="The tmux server socket its pane is on, or None")
    tmux_server: str | None = Field(default=None, description="That server's label (default, -L name, lab)")
    detail: SerializeAsAny[AgentDetail] = Field(default_factory=AgentDetail,
                                                description="The kind's own detail (its package's model)")
    client_version: str | None = Field(default=None, description="The version of the client running it, "
                                       "as its agent read it (registry record, process binary), or None")
    client_status: str | None = Field(default=None, description="The version policy's word on it: pinned | "
                                      "verified (on this machine, by `relay fidelity`) | unverified | unknown")
    host: str | None = Field(default=None, description="The relay host (`relay hosts`) it runs on, discovered by "
                             "that host's relay over ssh; None: this machine")

    @model_validator(mode="before")
    @classmethod
    def _typed_detail(cls, data: Any) -> Any:
        """A dict `detail` (plain data: JSON, tests) becomes the kind's own model."""
        if isinstance(data, dict) and isinstance(data.get("detail"), dict):
            data = {**data, "detail": _detail_model(str(data.get("kind") or "")).model_validate(data["detail"])}
        return data

    @property
    def spec(self) -> str:
        """The string an operator types to name it: `claude:alpha`, `codex:<name>`; on a host
        `build-box/claude:alpha`."""
        local = f"{self.prefix or self.kind}:{self.name}"
        return f"{self.host}/{local}" if self.host else local

    def describe(self) -> str:
        """The plan's target line (core/target_row.py holds it, for the plain pre-plan too)."""
        return describe_target(self)

    def __repr__(self) -> str:
        return f"<Target {self.describe()}>"


class Me(Readable, BaseModel):
    """The operator's own address (seed section 1): needed to ask for a reply."""

    model_config = ConfigDict(frozen=True, defer_build=True)  # built on first use, off the targets path

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

    def __call__(self, *args: object, **kwargs: object) -> None:
        """`session.targets()`: it is the table itself, so say so rather than "not callable"."""
        raise UsageError("session.targets is the table itself, not a method: type `session.targets` to see it "
                         "(`await session.refresh()` discovers again)")


def format_targets(targets: list[Target]) -> str:
    """Live first, then stale: the table `relay targets` prints (core/target_row.py, shared with its plain rows)."""
    from relay_repl.core.target_row import format_targets as table

    return table(targets)
