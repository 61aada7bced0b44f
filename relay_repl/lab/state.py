"""LabState: what `relay lab up` started, persisted as `<lab>/lab.json`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from relay_repl.agents.kind import LabDriver, LabReady, describe_default

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

    The fields every kind shares; what only its kind knows of it (a messaging socket, the shared
    daemon hosting its conversation) is in `facts`, written and read by that kind's lab driver
    (agents/<kind>/lab.py) alone: the lab names no kind's fact.

    pid: the client process relay addresses (its kind's lab driver says which: the pane's own, or
    one below the wrapper the pane runs).
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
    session_id: str | None = Field(default=None, description="the session as its kind addresses it (`LabReady.address`, "
                                   "`Target.address`): a conversation's id, a thread's")
    facts: dict[str, str | int | None] = Field(default_factory=dict, description="what its kind's lab driver "
                                               "records beyond these fields (`LabReady.facts`)")

    @model_validator(mode="before")
    @classmethod
    def _adopt(cls, data: Any) -> Any:
        """A session lab.json recorded before `facts` (a lab started by the previous relay): its kind's
        driver reads the flat fields it wrote then (`LabDriver.adopt`), so `relay lab status` and
        `down` still work on a lab that runs across the upgrade."""
        if not isinstance(data, dict) or "facts" in data:
            return data
        older = {k: v for k, v in data.items() if k not in cls.model_fields and k != "pane"}
        if not older:
            return data
        driver = lab_driver_of(str(data.get("kind")))
        adopted = driver.adopt(older) if driver is not None else {}
        return {**{k: v for k, v in data.items() if k not in older}, **adopted}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pane(self) -> str | None:
        """The tmux pane id, under the name `relay targets --json` uses too."""
        return self.pane_id

    def as_ready(self) -> LabReady:
        """What the lab recorded of it, as its kind's lab driver reads it."""
        return LabReady(pid=self.pid, address=self.session_id, evidence_file=self.transcript, proc_start=self.proc_start,
                        facts=dict(self.facts), name=self.name, alive=self.alive)


def lab_driver_of(kind: str) -> LabDriver | None:
    """The lab driver of the registered kind `kind`, or None (a kind no longer registered)."""
    from relay_repl.agents.registry import kind_for

    k = kind_for(kind)
    return k.lab_driver() if k is not None else None


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
            driver = lab_driver_of(s.kind)
            addr = driver.describe(s.as_ready()) if driver is not None else describe_default(s.as_ready())
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
