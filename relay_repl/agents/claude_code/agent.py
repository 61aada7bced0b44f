"""Claude Code as the transports see it: its `screen` and `evidence` capabilities (agents/capabilities.py)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from relay_repl.agents.agent import Processes, TypedEvidence
from relay_repl.agents.capabilities import EvidenceBase, ScreenBase
from relay_repl.agents.claude_code.evidence import claude_typed_records, record_status, transcript_for
from relay_repl.core.target import Target

if TYPE_CHECKING:  # annotations only: off the `relay targets` path
    from relay_repl.agents.screens.model import Snapshot
from relay_repl.system.proc import proc_start

KIND = "claude-code"
BINARY = "claude"
"""The client's executable (its pin, the lab's commands)."""


class ClaudeScreen(ScreenBase):
    """Claude Code 2.1.328: the pane's pid IS the session; Enter while busy queues the line
    for the next tool boundary (one Enter, never Tab)."""

    busy_submit = "Claude queues it for a tool boundary"
    busy_note = "target is busy: Enter queues the line for its next tool boundary (one Enter, no Tab)"
    tmux_lead = 0  # Claude Code inserts a burst of keys as typed

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        if snap.pane_pid != target.pid:
            return f"pane {snap.pane_id} runs pid {snap.pane_pid}, not the target's {target.pid}"
        want = target.proc_start
        if want:
            got = proc_start(target.pid) if target.pid else None
            if got != str(want):
                return f"pid {target.pid} start time {got} != recorded procStart {want} (pid reused?)"
        return None

    def waiting_refusal(self, target: Target) -> str | None:
        status, waiting = record_status(target)
        if status == "waiting":
            return f"registry says waiting ({waiting or 'dialog'}): a dialog would take the keys"
        return None


class ClaudeEvidence(EvidenceBase):
    """Its evidence is the session's transcript."""

    evidence_name = "transcript"

    def tmux_delivered_when(self) -> str:
        return ("the transcript gains a typed user record (origin kind human) carrying exactly this line — top level, "
                "or attachment queued_command when absorbed mid-turn; send-keys exit status proves nothing")

    def evidence_file(self, target: Target) -> Path | None:
        return transcript_for(target)

    def typed_evidence(self, path: Path, offset: int, payload: str) -> TypedEvidence:
        hits = claude_typed_records(path, offset, payload)
        turn_hits = [h for h in hits if h["where"] != "queue-operation enqueue"]
        if turn_hits:
            return TypedEvidence(state="confirmed",
                                 detail=f"transcript record ({turn_hits[0]['where']}, origin kind human) carries the "
                                        "exact payload",
                                 data={"transcript": str(path), "record": turn_hits[0], "matches": len(turn_hits)},
                                 records=hits)
        if hits:
            return TypedEvidence(state="enqueued",
                                 detail="Claude enqueued the typed line (queue-operation enqueue); waiting for the "
                                        "turn that takes it",
                                 data={"transcript": str(path), "record": hits[0]}, records=hits)
        return TypedEvidence(state="none")
