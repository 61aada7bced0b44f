"""`CodexDetail`: what discovery keeps about a Codex thread beyond the common Target fields
(rollout as evidence_file, pane), from the session index, state and goals databases, the lock
holder and the daemon's status API."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from relay_repl.core.target import PaneDetail, Target


class CodexDetail(PaneDetail):
    """Fields of one thread (codex.md §2) a transport, reply route or `relay verify` reads, and
    what discovery noted."""

    thread_id: str | None = None
    codex_home: str | None = Field(default=None, description="the CODEX_HOME the thread lives in")
    sqlite_home: str | None = Field(default=None, description="where its SQLite databases are (sqlite_home.py)")
    lock: str | None = Field(default=None, description="its thread-writer lock file, if any")
    cwd: str | None = None
    title: str | None = None
    source: str | None = None
    thread_source: str | None = None
    cli_version: str | None = Field(default=None, description="the version the thread was recorded with")
    archived: bool | None = None
    goal_status: str | None = None
    goal_objective: str | None = None
    queue_note: str | None = Field(default=None, description="why `codex queue` would fail now")
    holder_pid: int | None = None
    holder_kind: str | None = Field(default=None, description="daemon, tui or exec: what holds the lock")
    holder_version: str | None = Field(default=None, description="the lock holder's version: the daemon's own word (its initialize answer) when the daemon that "
                                          "answered holds the lock, else what the holder's binary answers to --version")
    status_raw: dict[str, Any] | None = Field(default=None, description="the daemon's thread status, as it said it")
    daemon_note: str | None = None
    state_source: str | None = Field(default=None, description="where `state` came from")
    collaboration_mode: str | None = None
    plan_mode: bool = Field(default=False, description="in Plan mode (rollout thread settings): typing is refused")

    @classmethod
    def of(cls, target: Target) -> CodexDetail:
        """`target`'s detail as Codex's (empty when the target is not a Codex thread)."""
        d = target.detail
        return d if isinstance(d, cls) else cls()
