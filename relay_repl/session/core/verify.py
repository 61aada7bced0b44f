"""`relay verify`: who really sent a relay message, audited from the receiver's own transcript.

The seed's section 8, as a command. The rendered wrapper and the "Another Claude session sent
a message" label prove nothing; what counts is the harness-written origin record in the
receiver's transcript, and in it only the kernel-supplied `verifiedPeerPid` (+ start time).
That pid is then checked against what the registries say NOW:

- a genuine session is what its agent kind says it is (agents.origin; e.g. a live registry record,
  same start time, whose pid holds its listening socket),
  walked up the pid's parents so a `relay` run by a session's tool is that session relaying;
- the operator's relay: the pid is the one in the operator address the envelope claims, and
  this ledger recorded writing a frame with that very `msg_id` (a relay's pid is the relay,
  the process that connected, not necessarily the author);
- anything else is an `unknown process` (an injector's pid never owned a socket), or a
  `mismatch` when the envelope claims a live session that the pid is not.

`hopChain` is shown as corroboration only. A kind whose record keeps no provenance at all says
so and shows what is known (how the message arrived). Each agent kind reads its own file
(`AgentKind.checks.verify`); the report and the judging are agents/provenance.py; this module picks.

Exit codes: 0 verified, 1 none found, 4 ambiguous (non-unique id), mismatch or unverifiable,
2 usage.
"""

from __future__ import annotations

from pathlib import Path

from relay_repl.agents.provenance import CheckedRecord, TurnFinding, VerifyReport, conclude
from relay_repl.agents.registry import kind_for, kinds
from relay_repl.core.errors import UsageError
from relay_repl.core.target import Target
from relay_repl.store.ledger import Ledger

__all__ = ["CheckedRecord", "TurnFinding", "VerifyReport", "check_id", "verify_everywhere", "verify_file",
           "verify_target"]


def check_id(relay_id: str) -> str:
    relay_id = relay_id.strip()
    if not relay_id or any(c.isspace() for c in relay_id):
        raise UsageError(f"relay id {relay_id!r} is empty or has spaces: pass the id= value exactly, e.g. operator.host.42-3")
    return relay_id


def verify_file(relay_id: str, transcript: str | Path, ledger: Ledger | None = None) -> VerifyReport:
    """Audit any receiver file after the fact (a kind that audits loose files: one whose records
    carry provenance); pids are checked against the registries now."""
    relay_id = check_id(relay_id)
    path = Path(transcript).expanduser()
    if not path.exists():
        raise UsageError(f"no transcript at {path}: pass an existing file (--transcript FILE)")
    if path.is_dir():
        raise UsageError(f"{path} is a directory: pass one transcript .jsonl file")
    for k in kinds():
        report = k.checks.verify_file(relay_id, path, ledger)
        if report is not None:
            return report
    raise UsageError("no registered agent kind audits a loose file: name a target (--in KIND:NAME)")


def verify_target(relay_id: str, target: Target, ledger: Ledger | None = None) -> VerifyReport:
    """Audit one discovered target, as its agent kind reads its own record."""
    relay_id = check_id(relay_id)
    kind = kind_for(target.kind)
    if kind is None:
        return VerifyReport(relay_id=relay_id, source="no record", target=target.spec, kind=target.kind,
                            verdict="no provenance", summary=f"{target.spec}: no agent kind {target.kind!r} is registered")
    return kind.checks.verify(relay_id, target, ledger)


def verify_everywhere(relay_id: str, targets: list[Target], ledger: Ledger | None = None) -> VerifyReport:
    """No target named: every live target whose record carries provenance, as one audit."""
    relay_id = check_id(relay_id)
    records: list[CheckedRecord] = []
    sources: list[str] = []
    scanned = oversized = 0
    read: set[str] = set()
    for t in targets:
        kind = kind_for(t.kind)
        if not t.live or kind is None or kind.checks.provenance != "kernel":
            continue
        found = kind.checks.origin_records(relay_id, t, ledger)
        if found is None:
            continue
        recs, source, n, big = found
        read.add(t.kind)
        records += recs
        sources.append(source)
        scanned += n
        oversized += big
    kernel = [k for k in kinds() if k.checks.provenance == "kernel"]
    labels = " or ".join(k.facts.label for k in kernel) or "agent"
    source = "; ".join(sources) if sources else f"no live {labels} record to read"
    return conclude(relay_id, records, source=source, bytes_scanned=scanned, oversized_lines=oversized,
                    kind=",".join(sorted(read or {k.facts.kind for k in kernel})))
