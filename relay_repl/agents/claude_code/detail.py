"""`ClaudeDetail`: what discovery keeps about a Claude Code session beyond the common Target
fields (socket, transcript as evidence_file, procStart, pane), from its registry record."""

from __future__ import annotations

from pydantic import Field

from relay_repl.core.target import PaneDetail, Target


class ClaudeDetail(PaneDetail):
    """Fields of `$CFG/sessions/<pid>.json` (claude-code.md §1.2) a transport, reply route or
    `relay verify` reads, and what discovery noted."""

    session_id: str | None = Field(default=None, description="sessionId: changes on /clear or resume")
    cwd: str | None = None
    record: str | None = Field(default=None, description="the registry record file this came from")
    transcript_exists: bool = False
    name_source: str | None = None
    status_raw: str | None = Field(default=None, description="the record's own status word")
    waiting_for: str | None = Field(default=None, description="waitingFor: the dialog it waits on")
    record_kind: str | None = None
    entrypoint: str | None = None
    record_tmux: str | None = Field(default=None, description="the record's tmux field (inherited: not trusted)")
    socket_note: str | None = Field(default=None, description="why its socket is not used")
    unreadable: bool = Field(default=False, description="its record could not be read")

    @classmethod
    def of(cls, target: Target) -> ClaudeDetail:
        """`target`'s detail as Claude's (empty when the target is not a Claude session)."""
        d = target.detail
        return d if isinstance(d, cls) else cls()
