"""`relay verify` on a Codex thread: its rollout keeps no provenance.

A queued or typed message is plain user input to the model, indistinguishable from the
operator's; the rollout records how it arrived (the UserMessage's `client_id`, the turn's
`turn_trigger`), never who sent it. So the report is `no provenance`, with those turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from relay_repl.agents.capabilities import ChecksBase
from relay_repl.agents.codex.agent import KIND
from relay_repl.agents.codex.evidence import codex_home
from relay_repl.agents.codex.rollout import rollout_path, turns_carrying
from relay_repl.agents.provenance import Overall, TurnFinding, VerifyReport
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger

if TYPE_CHECKING:
    from relay_repl.core.check import Check


def verify_target(relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
    """Codex keeps no provenance: show the turn(s) whose user message carries the id, nothing more."""
    rollout = rollout_path(codex_home(target), target.address, target.evidence_file)
    note = ("Codex keeps no provenance: a queued or typed message is plain user input to the model, "
            "indistinguishable from the operator; the envelope's from= is a convention, not evidence")
    if not rollout or not Path(str(rollout)).exists():
        return VerifyReport(relay_id=relay_id, source=str(rollout or "no rollout yet"), target=target.spec, kind=KIND,
                            verdict="none found", summary=f"{note}; {target.spec} has no rollout to search")
    ours: set[str] = set()
    if ledger is not None:
        for e in ledger.events(relay_id=relay_id):
            for cid in (e.data.get("client_id"), (e.data.get("row") or {}).get("client_id")):
                if cid:
                    ours.add(str(cid))
    turns, scanned = turns_carrying(rollout, relay_id)
    found = [TurnFinding(**t.model_dump(), queued_by_us=bool(t.client_id) and t.client_id in ours) for t in turns]
    verdict: Overall = "no provenance" if found else "none found"
    where = f"{len(found)} turn(s) of {target.spec} carry id={relay_id}" if found else f"no turn of {target.spec} carries id={relay_id}"
    return VerifyReport(relay_id=relay_id, source=str(rollout), target=target.spec, kind=KIND, verdict=verdict,
                        summary=f"{note}; {where}", turns=found, bytes_scanned=scanned)


class CodexChecks(ChecksBase):
    """Its `checks` capability (agents/capabilities.py): no provenance in its rollout (`relay verify`
    finds the records carrying the id), `relay doctor` rows (doctor.py)."""

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        return verify_target(relay_id, target, ledger)

    async def doctor(self, env: Mapping[str, str]) -> list[Check]:
        from relay_repl.agents.codex.doctor import check_codex

        return await check_codex(env)
