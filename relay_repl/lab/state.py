"""LabState: what `relay lab up` started, persisted as `<lab>/lab.json`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import computed_field, BaseModel, ConfigDict, Field

Kind = str
"""A registered agent kind's name (relay_repl.agents.registry): the lab names none itself."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StubSession(_Model):
    name: str
    api: str = Field(description="the stub model API the session's client talks (its kind's LabSpec.stub_api)")
    port: int
    base_url: str


class StubInfo(_Model):
    pid: int | None = None
    control: str
    ready_file: str
    log: str
    sessions: dict[str, StubSession] = Field(default_factory=dict)
    alive: bool = False


class LabSession(_Model):
    """One agent session of the lab.

    pid: Claude -> the claude process (= tmux pane_pid); Codex -> the native TUI process
    (child of the node wrapper that is the pane's pid). Codex threads are hosted by the
    shared daemon (`daemon_pid`), which also holds the thread lock.
    """

    kind: Kind
    name: str
    tmux_session: str
    pane_id: str | None = None
    pane_pid: int | None = None
    pid: int | None = None
    proc_start: str | None = None
    cwd: str
    transcript: str | None = None
    alive: bool = False
    ready: bool = False
    # Claude
    session_id: str | None = None
    messaging_socket: str | None = None
    # Codex
    thread_id: str | None = None
    daemon_pid: int | None = None
    provider: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pane(self) -> str | None:
        """The tmux pane id, under the name `relay targets --json` uses too."""
        return self.pane_id


class LabState(_Model):
    lab_dir: str
    tmux_socket: str
    tmux_socket_path: str
    tmux_server_pid: int | None = None
    netns: bool = False
    netns_id: str | None = None
    phase: Literal["starting", "ready", "failed"] = "starting"
    started_at: float = 0.0
    ready_at: float | None = None
    versions: dict[str, str | None] = Field(default_factory=dict)
    clients: str | None = None  # npm prefix of a non-pinned client set (`relay lab up --clients`), else None
    env: dict[str, str] = Field(default_factory=dict)
    stub: StubInfo
    sessions: list[LabSession] = Field(default_factory=list)

    def session(self, name: str) -> LabSession:
        for s in self.sessions:
            if s.name == name or s.tmux_session == name:
                return s
        raise KeyError(name)

    def of_kind(self, kind: str) -> list[LabSession]:
        return [s for s in self.sessions if s.kind == kind]

    @property
    def all_alive(self) -> bool:
        return self.stub.alive and bool(self.sessions) and all(s.alive for s in self.sessions)

    def targets(self) -> list[str]:
        """One human line per session, for `up`'s final print and `relay lab status`."""
        out = []
        for s in self.sessions:
            if s.messaging_socket:
                addr = f"pid {s.pid} sock {s.messaging_socket}"
            elif s.thread_id:
                addr = f"thread {s.thread_id} (tui pid {s.pid}, daemon {s.daemon_pid})"
            else:
                addr = f"pid {s.pid} session {s.session_id or '-'}"
            state = "alive" if s.alive else "DEAD"
            out.append(f"{s.name:<8} {s.kind:<11} pane {s.pane_id or '-':<4} {addr} [{state}]")
        return out


def save(state: LabState, path: Path) -> None:
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_text(state.model_dump_json(indent=1))
    os.replace(tmp, path)


def load(path: Path) -> LabState | None:
    """The saved state, or None if absent/unreadable (a torn or foreign lab.json)."""
    from relay_repl.core.errors import FileProblem
    from relay_repl.store.loader import load_json

    try:  # the one loader: a FIFO or a directory in its place is "no state", never a hang
        return load_json(path, LabState, "run `relay lab down` and `relay lab up`", missing_ok=True)
    except FileProblem:
        return None
