"""`relay verify` on a Claude Code transcript: its origin records carry kernel-supplied provenance.

A message that reached a session over its socket is a transcript record with a harness-written
origin (`.origin`, or `.attachment.origin` when absorbed mid-turn): `verifiedPeerPid` and
`verifiedPeerProcStart` are kernel facts, judged against the registries now (agents/provenance.py),
with the Claude registry the transcript belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from relay_repl.agents.capabilities import ChecksBase
from relay_repl.agents.claude_code.agent import KIND
from relay_repl.agents.claude_code.evidence import config_dir_of, transcript_for
from relay_repl.agents.claude_code.peer import claude_config_dir
from relay_repl.agents.claude_code.transcript import find_relay_id
from relay_repl.agents.provenance import CheckedRecord, VerifyReport, conclude, judge, judges_for
from relay_repl.core.errors import UsageError
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger

if TYPE_CHECKING:
    from relay_repl.core.check import Check


def judge_env(cfg: Path) -> dict[str, str]:
    """This environment pointed at the Claude registry `cfg` (whose sessions the pids may be)."""
    env = dict(os.environ)
    env["CLAUDE_CONFIG_DIR"] = str(cfg)
    return env


def claude_report(relay_id: str, transcript: Path, *, cfg: Path, ledger: Ledger | None,
                  target: str | None = None) -> VerifyReport:
    """Every origin record in `transcript` carrying `relay_id`, each judged on its kernel pid."""
    if not transcript.exists():
        raise UsageError(f"no transcript at {transcript}: pass an existing file (--transcript FILE)")
    if transcript.is_dir():
        raise UsageError(f"{transcript} is a directory: pass one transcript .jsonl file")
    try:
        scan = find_relay_id(transcript, relay_id)
    except OSError as exc:
        raise UsageError(f"cannot read {transcript}: {exc.strerror or exc}") from None
    agents = judges_for(judge_env(cfg)) if scan.hits else None
    records = [judge(h, relay_id, ledger, agents) for h in scan.hits if agents]
    return conclude(relay_id, records, source=str(transcript), target=target, bytes_scanned=scan.bytes_scanned,
                    oversized_lines=scan.oversized_lines, kind=KIND)


def verify_target(relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
    """The target's current transcript (re-derived from its live record), audited."""
    path = transcript_for(target)
    if path is None or not path.exists():
        return VerifyReport(relay_id=relay_id, source=str(path or "no transcript yet"), target=target.spec, kind=KIND,
                            verdict="none found", summary=f"{target.spec} has no transcript yet (no turn has run)")
    return claude_report(relay_id, path, cfg=config_dir_of(target) or claude_config_dir(), ledger=ledger,
                         target=target.spec)


def verify_file(relay_id: str, path: Path, ledger: Ledger | None) -> VerifyReport:
    """Any transcript file, after the fact: pids are checked against the registry now."""
    return claude_report(relay_id, path, cfg=claude_config_dir(), ledger=ledger)


def records_of(relay_id: str, target: Target, ledger: Ledger | None) -> tuple[list[CheckedRecord], str, int, int] | None:
    """(records, source, bytes scanned, oversized lines) of a live target's transcript, or None (none yet)."""
    path = transcript_for(target)
    if path is None or not path.exists():
        return None
    scan = find_relay_id(path, relay_id)
    cfg = config_dir_of(target) or claude_config_dir()
    agents = judges_for(judge_env(cfg)) if scan.hits else None
    records = [judge(h, relay_id, ledger, agents).model_copy(update={"transcript": str(path)})
               for h in scan.hits if agents]
    return records, f"{target.spec}: {path}", scan.bytes_scanned, scan.oversized_lines


class ClaudeChecks(ChecksBase):
    """Its `checks` capability (agents/capabilities.py): its records carry kernel-supplied provenance
    (verifiedPeerPid), so `relay verify` can prove who sent a message; `relay doctor` (doctor.py)."""

    provenance: Literal["kernel", "none"] = "kernel"

    def verify(self, relay_id: str, target: Target, ledger: Ledger | None) -> VerifyReport:
        return verify_target(relay_id, target, ledger)

    def verify_file(self, relay_id: str, path: Path, ledger: Ledger | None) -> VerifyReport:
        return verify_file(relay_id, path, ledger)

    def origin_records(self, relay_id: str, target: Target,
                       ledger: Ledger | None) -> tuple[list[CheckedRecord], str, int, int] | None:
        return records_of(relay_id, target, ledger)

    async def doctor(self, env: Mapping[str, str]) -> list[Check]:
        from relay_repl.agents.claude_code.doctor import check_claude

        return await check_claude(env)
