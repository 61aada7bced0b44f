"""`relay verify` on a Gemini CLI session: its chat file keeps no provenance.

A typed line is plain user input to the model, indistinguishable from the operator's own typing;
the chat file records the text and when its turn started, never who typed it. So the report is
`no provenance`, with the typed records carrying the id (adapters/gemini-cli.md, Transports).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from relay_repl.agents.capabilities import ChecksBase
from relay_repl.agents.gemini_cli.chats import records, user_text
from relay_repl.agents.gemini_cli.provider import KIND
from relay_repl.agents.provenance import Overall, TurnFinding, VerifyReport
from relay_repl.core.relay_ids import carries_id
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger

if TYPE_CHECKING:
    from relay_repl.core.check import Check

NOTE = ("Gemini CLI keeps no provenance: a typed line is plain user input to the model, indistinguishable from "
        "the operator typing it; the envelope's from= is a convention, not evidence")


class GeminiChecks(ChecksBase):
    """Its `checks` capability (agents/capabilities.py): `relay verify` finds the typed records carrying
    the id (no provenance), `relay doctor` reads its home and settings (agents/gemini_cli/doctor.py)."""

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        chat = Path(target.evidence_file) if target.evidence_file else None
        if chat is None or not chat.is_file():
            return VerifyReport(relay_id=relay_id, source=str(chat or "no chat file"), target=target.spec, kind=KIND,
                                verdict="none found", summary=f"{NOTE}; {target.spec} has no chat file to search")
        found: list[TurnFinding] = []
        size = 0
        for at, rec in records(chat):
            size = at
            text = user_text(rec)
            if text is not None and carries_id(text, relay_id) is not None:
                found.append(TurnFinding(turn_id=str(rec.get("id")), turn_trigger="typed", client_id=None, content=text,
                                         timestamp=rec.get("timestamp"), queued_by_us=False))
        verdict: Overall = "no provenance" if found else "none found"
        where = (f"{len(found)} typed record(s) of {target.spec} carry id={relay_id}" if found
                 else f"no typed record of {target.spec} carries id={relay_id}")
        return VerifyReport(relay_id=relay_id, source=str(chat), target=target.spec, kind=KIND, verdict=verdict,
                            summary=f"{NOTE}; {where}", turns=found, bytes_scanned=size)

    async def doctor(self, env: Mapping[str, str]) -> list[Check]:
        from relay_repl.agents.gemini_cli.doctor import check_gemini

        return await check_gemini(env)
