"""Gemini CLI as the transports see it: its `screen` and `evidence` capabilities (agents/capabilities.py)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from relay_repl.agents.agent import Processes, TypedEvidence
from relay_repl.agents.gemini_cli.chats import find_chat, typed_records
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

    busy_submit = "Gemini CLI queues it (`Queued (press ↑ to edit)`) and sends it as the next turn"
    busy_note = "target is busy: Enter queues the line; it starts the next turn when this one ends (Gemini CLI 0.61.0)"
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
        if target.pid not in {pid for pid, _ in under[1]}:
            return f"gemini.js process {target.pid} no longer runs under pane {snap.pane_id} (pane pid {snap.pane_pid})"
        shown = screen.footer_session(snap)
        sid = GeminiDetail.of(target).session_id or ""
        if shown and sid and not sid.startswith(shown):
            return (f"the footer of pane {snap.pane_id} shows session {shown}, not {sid[:8]}: "
                    "the session changed (/clear or /resume); rediscover")
        return None

    def is_client(self, argv: list[str]) -> bool:
        return is_gemini(argv)


class GeminiEvidence(EvidenceBase):
    """Its evidence is the session's chat file."""

    evidence_name = "chat file"

    def tmux_delivered_when(self) -> str:
        return ("the session's chat file gains a `user` record whose text is exactly this line (written when its turn "
                "starts; a line queued behind a busy turn appears when that turn ends, one queued while Gemini still "
                "discovers its MCP servers when that discovery ends); send-keys exit status proves nothing")

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
