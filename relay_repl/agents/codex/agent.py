"""Codex as the transports see it: its `screen` and `evidence` capabilities (agents/capabilities.py)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from relay_repl.agents.agent import Processes, TypedEvidence
from relay_repl.agents.capabilities import EvidenceBase, ScreenBase
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.codex.evidence import codex_home, codex_typed_items
from relay_repl.agents.codex.plan_words import TMUX_DELIVERED_WHEN, tmux_busy_note
from relay_repl.agents.codex.rollout import scan_rollouts
from relay_repl.agents.codex.provider import is_codex_tui
from relay_repl.core.target import Target

if TYPE_CHECKING:  # annotations only: off the `relay targets` path
    from relay_repl.agents.screens.model import Snapshot

KIND = "codex"
BINARY = "codex"
"""The client's executable on PATH (its pin, kind.py; `codex queue`, queue_ops.py; the lab's commands, lab.py)."""


class CodexScreen(ScreenBase):
    """Codex 0.169.0: the TUI runs under the pane and is tied to the thread by the lock
    holder, `resume <uuid>` argv or the footer's thread name; Enter while busy steers the
    line into the running turn, and one Tab may queue a line left beside `tab to queue
    message`; an approval dialog shows on the screen, which the classifier reads."""

    busy_submit = "Codex steers it into the running turn"
    tab_queues_when_busy = True

    def tmux_busy_note(self, target: Target) -> str | None:
        return tmux_busy_note(target.state, CodexDetail.of(target).plan_mode)  # plan_words.py: its one home

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        under = self.pane_processes(snap, processes)
        if isinstance(under, str):
            return under
        pids, tuis = under
        if not tuis:
            return f"no Codex TUI runs under pane {snap.pane_id} (pane pid {snap.pane_pid})"
        thread = CodexDetail.of(target).thread_id or target.address
        if target.pid in pids:
            return None
        if any(argv[i] == "resume" and argv[i + 1] == thread for _, argv in tuis for i in range(len(argv) - 1)):
            return None
        name = screen.footer_name(snap)
        if name is not None and name == target.name:
            return None
        return (f"the Codex TUI in pane {snap.pane_id} cannot be tied to thread {thread}: lock holder {target.pid} is "
                f"not under the pane and the footer names {name!r}, not {target.name!r}")

    def is_client(self, argv: list[str]) -> bool:
        return is_codex_tui(argv)


class CodexEvidence(EvidenceBase):
    """Its evidence is the thread's rollout."""

    evidence_name = "rollout"

    def tmux_delivered_when(self) -> str:
        return TMUX_DELIVERED_WHEN

    def find_evidence_file(self, target: Target) -> Path | None:
        thread = CodexDetail.of(target).thread_id or target.address
        return scan_rollouts(codex_home(target) / "sessions", {thread}).get(thread)

    def typed_evidence(self, path: Path, offset: int, payload: str) -> TypedEvidence:
        hits = codex_typed_items(path, offset, payload)
        good = [h for h in hits if h["steered"] or h["turn_trigger"] == "user"]
        if good:
            h = good[0]
            how = "steered into the running turn" if h["steered"] else "in a new turn (trigger user)"
            return TypedEvidence(state="confirmed", detail=f"rollout UserMessage with the exact payload, {how} {h['turn_id']}",
                                 data={"rollout": str(path), "item": h, "matches": len(good)}, records=hits)
        if hits:
            return TypedEvidence(state="mismatch",
                                 detail=f"the payload is in turn {hits[0]['turn_id']} but its trigger is "
                                        f"{hits[0]['turn_trigger']!r}, not a typed turn",
                                 data={"rollout": str(path), "item": hits[0]}, records=hits)
        return TypedEvidence(state="none")
