"""Gemini CLI as the transports see it: its `screen` and `evidence` capabilities (agents/capabilities.py)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from relay_repl.agents.agent import Processes, TypedEvidence
from relay_repl.agents.gemini_cli.chats import find_chat, typed_records
from relay_repl.agents.gemini_cli import plan_words
from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.provider import is_gemini
from relay_repl.agents.capabilities import EvidenceBase, ScreenBase
from relay_repl.core.target import Target

if TYPE_CHECKING:  # annotations only: off the `relay targets` path
    from relay_repl.agents.screens.model import Snapshot


class GeminiScreen(ScreenBase):
    """Gemini CLI 0.61.0: the pane runs the gemini.js wrapper (or a shell above it); Enter while
    busy queues the line, sent as the next turn; an approval box shows on the screen, which the
    classifier reads (no waiting refusal of its own)."""

    busy_submit = plan_words.BUSY_SUBMIT
    busy_note = plan_words.BUSY_NOTE
    # keys of one burst are all read by the keypress handler of an earlier render: from an empty composer
    # every `?` in the payload opened the Shortcuts panel (and was dropped), every `!` would toggle shell
    # mode. Its handler is re-subscribed in a passive effect, after the paint, so the first character seen
    # drawn does not prove the handler knows it: seen live, the burst after a drawn lead still met the
    # empty-composer handler (the final `?` dropped, Shortcuts open). React flushes the passive effects
    # of one render before the next render, so once the second character (typed alone) is drawn, the
    # handler is at least the one that saw the first: two characters, one at a time (adapters/gemini-cli.md)
    tmux_lead = 2

    def roster_mismatch(self, target: Target, snap: Snapshot, processes: Processes, screen: ModuleType) -> str | None:
        under = self.pane_processes(snap, processes)
        if isinstance(under, str):
            return under
        return plan_words.roster_mismatch(target.pid, GeminiDetail.of(target).session_id, snap,
                                          {pid for pid, _ in under[1]}, screen.footer_session(snap))

    def is_client(self, argv: list[str]) -> bool:
        return is_gemini(argv)


class GeminiEvidence(EvidenceBase):
    """Its evidence is the session's chat file."""

    evidence_name = "chat file"

    def tmux_delivered_when(self) -> str:
        return plan_words.DELIVERED_WHEN

    def find_evidence_file(self, target: Target) -> Path | None:
        d = GeminiDetail.of(target)
        found = find_chat(Path(d.gemini_dir), d.session_id) if d.gemini_dir and d.session_id else None
        return found.path if found else None

    def typed_evidence(self, path: Path, offset: int, payload: str) -> TypedEvidence:
        hits = typed_records(path, offset, payload)
        if hits:
            h = hits[0]
            return TypedEvidence(state="confirmed", detail=f"chat file user record {h['id']} with exactly the payload "
                                 f"(at {h['timestamp']})", data={"chat": str(path), "record": h, "matches": len(hits)},
                                 records=hits)
        return TypedEvidence(state="none")
