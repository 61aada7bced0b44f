"""`GeminiDetail`: what discovery keeps about a Gemini CLI session beyond the common Target fields
(the chat file as evidence_file, pane, proc_start): its project, home and session id."""

from __future__ import annotations

from pydantic import Field

from relay_repl.core.target import PaneDetail, Target


class GeminiDetail(PaneDetail):
    """One live session (adapters/gemini-cli.md "Registry and listing")."""

    cwd: str | None = Field(default=None, description="the project root: the process's working directory")
    project: str | None = Field(default=None, description="its short id in projects.json (the chat directory's name)")
    gemini_dir: str | None = Field(default=None, description="$GEMINI_CLI_HOME/.gemini (or ~/.gemini) it writes to")
    session_id: str | None = Field(default=None, description="the chat header's sessionId")
    worker_pid: int | None = Field(default=None, description="the relaunched child that does the work")
    tied_by: str | None = Field(default=None, description="how its chat file was found (footer or start time)")
    notes: tuple[str, ...] = ()

    @classmethod
    def of(cls, target: Target) -> GeminiDetail:
        """`target`'s detail as Gemini CLI's (empty when the target is not a Gemini session)."""
        d = target.detail
        return d if isinstance(d, cls) else cls()
