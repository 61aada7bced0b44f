"""Who really sent a relay message, judged from a receiver's own record (`relay verify`, seed §8).

The rendered wrapper and any "sent by" label prove nothing; what counts is a harness-written
origin record in the receiver's own file, and in it only a kernel-supplied peer pid (+ start
time). That pid is then checked against what the registries say NOW:

- a genuine session is what its agent kind says it is (agents.origin, each kind's
  `identify_process`), walked up the pid's parents so a `relay` run by a session's tool is that
  session relaying;
- the operator's relay: the pid is the one in the operator address the envelope claims, and
  this ledger recorded writing a frame with that very `msg_id` (a relay's pid is the relay,
  the process that connected, not necessarily the author);
- anything else is an `unknown process` (an injector's pid never owned a socket), or a
  `mismatch` when the envelope claims a live session that the pid is not.

`hopChain` is shown as corroboration only. A kind whose record keeps no provenance at all
(`AgentKind.checks.provenance == "none"`) reports `no provenance` with what it does know (`TurnFinding`).
Each kind reads its own file (`<kind>/verify.py`); this module holds the report and the judging.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from relay_repl.agents.origin import OriginJudge
from relay_repl.core.controls import visible
from relay_repl.core.inbound import OriginRecord
from relay_repl.store.ledger import Ledger
from relay_repl.system.proc import proc_start


RecordVerdict = Literal["verified", "mismatch", "unknown process"]
Overall = Literal["verified", "none found", "ambiguous", "mismatch", "unknown process", "no provenance"]
EXIT = {"verified": 0, "none found": 1}


class CheckedRecord(BaseModel):
    """One origin record with the content beside it and the verdict on its kernel pid."""

    path: str = Field(description="`origin` or `attachment.origin`")
    type: str | None
    offset: int
    timestamp: str | None
    content: str
    origin: dict[str, Any]
    header: dict[str, str]
    verdict: RecordVerdict
    sender: str = Field(description="what the kernel pid is, per the registries and the ledger")
    detail: str
    claim: str | None = Field(description="the envelope's from= (a claim)")
    hop_chain: list[Any] | None = Field(description="origin.hopChain: corroboration only, never proof")
    transcript: str | None = Field(default=None, description="set when several transcripts were read")


class TurnFinding(BaseModel):
    """What a record without provenance knows about a message: how it arrived, never who sent it."""

    turn_id: str | None
    turn_trigger: str | None
    client_id: str | None
    content: str
    timestamp: str | None
    queued_by_us: bool = Field(description="this ledger's queue write recorded the same client_id")


class VerifyReport(BaseModel):
    relay_id: str
    source: str = Field(description="the transcript (or rollout) read")
    target: str | None = None
    kind: str = Field(description="the agent kind whose record was read")
    verdict: Overall
    summary: str
    records: list[CheckedRecord] = Field(default_factory=list)
    turns: list[TurnFinding] = Field(default_factory=list, description="turns carrying the id in a record "
                                     "that keeps no provenance (how it arrived, never who sent it)")
    bytes_scanned: int = 0
    oversized_lines: int = 0

    @property
    def exit_code(self) -> int:
        return EXIT.get(self.verdict, 4)

    def __repr__(self) -> str:
        return self.render()

    def render(self) -> str:
        """The human report: the verdict, then each record's origin with its content beside it."""
        out = [f"{self.verdict.upper()}: {self.summary}", f"  read {self.source}"
               + (f" ({self.target})" if self.target else "")]
        for i, r in enumerate(self.records, 1):
            o = r.origin
            out.append(f"  record {i} at .{r.path} (line at byte {r.offset}, {r.type or '?'}, {r.timestamp or 'no time'})"
                       + (f" in {r.transcript}" if r.transcript else ""))
            out.append(f"    content:  {_one_line(r.content)}")
            out.append(f"    origin:   kind={o.get('kind')} verifiedPeerPid={o.get('verifiedPeerPid')} "
                       f"procStart={o.get('verifiedPeerProcStart')} from={o.get('from')} msg_id={o.get('msg_id')}"
                       + (f" name={o.get('name')}" if o.get("name") else ""))
            out.append(f"    claims:   from={r.claim} hop={r.header.get('hop')} (claims, not proof)")
            if r.hop_chain:
                out.append(f"    hopChain: {r.hop_chain} (corroboration only)")
            out.append(f"    verdict:  {r.verdict}: {r.sender}; {r.detail}")
        for c in self.turns:
            out.append(f"  turn {c.turn_id} trigger={c.turn_trigger} client_id={c.client_id}"
                       + (" (queued by this relay: same client_id in the ledger)" if c.queued_by_us else ""))
            out.append(f"    content:  {_one_line(c.content)}")
        if self.oversized_lines:
            out.append(f"  note: {self.oversized_lines} line(s) over 8 MiB were skipped unread")
        # a record's content, origin fields and header are whatever wrote to the session: each line inert
        return "\n".join(visible(line) for line in out)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ⏎ ".join(part for part in text.split("\n") if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# ---- who is a pid ----------------------------------------------------------------------------


def _address(sender: str | None) -> str | None:
    return sender.partition("@")[2] or None if sender and "@" in sender else None


def _relay_wrote(ledger: Ledger | None, relay_id: str, msg_id: Any) -> bool:
    """Did this ledger's relay write a frame with this msg_id for this relay id?"""
    if ledger is None or not msg_id:
        return False
    return any(e.data.get("msg_id") == msg_id for e in ledger.events(relay_id=relay_id, kind="stage:write"))


def judges_for(env: Mapping[str, str] | None = None) -> OriginJudge:
    """The agents' own rules for "which session is this pid" (agents.origin), from `env`
    (a kind points it at the registry its file belongs to)."""
    return OriginJudge.default(dict(os.environ if env is None else env))


def judge(hit: OriginRecord, relay_id: str, ledger: Ledger | None, agents: OriginJudge) -> CheckedRecord:
    """The verdict on one origin record's kernel pid (see the module docstring).

    Which session a pid is, is each agent's own rule (`identify_process`: a Claude session is a
    live record whose pid holds its listening socket), walked up the pid's parents so a
    `relay` run by a session's tool is attributed to that session as the relay it is."""
    o = hit.origin
    pid = o.get("verifiedPeerPid")
    start = o.get("verifiedPeerProcStart")
    claim = hit.header.get("from")
    addr = _address(claim)
    hop = hit.header.get("hop", "0")
    base = dict(path=hit.path, type=hit.type, offset=hit.offset, timestamp=hit.timestamp, content=hit.content,
                origin=o, header=hit.header, claim=claim,
                hop_chain=o.get("hopChain") if isinstance(o.get("hopChain"), list) else None)
    if o.get("kind") != "peer" or not isinstance(pid, int) or pid <= 0:
        return CheckedRecord(**base, verdict="unknown process", sender="no kernel pid",
                             detail=f"origin kind {o.get('kind')!r} carries no verifiedPeerPid (typed, or not a peer message)")
    alive = proc_start(pid) is not None and (start is None or proc_start(pid) == str(start))
    # 1. the operator's relay: the pid in the claimed operator address, and this ledger wrote that msg_id
    if addr and addr.rsplit(".", 1)[-1] == str(pid) and _relay_wrote(ledger, relay_id, o.get("msg_id")):
        state = "still running" if alive else "since exited"
        return CheckedRecord(**base, verdict="verified", sender=f"the operator's relay (pid {pid}, {state})",
                             detail=f"this ledger recorded writing msg_id {o.get('msg_id')} for {relay_id}; a relay's "
                                    "pid is the relay that connected, the operator who approved it is the author")
    # 2. a genuine session (each agent's rule), possibly as the parent of the process that connected
    ident, chain = agents.identify(pid) if alive else (None, ())
    if ident is not None:
        via = f" via pid {pid}" if ident.pid != pid else ""
        who = f"{ident.spec} (pid {ident.pid}{via}): {ident.evidence}"
        if addr is None or addr in ident.claimable:
            return CheckedRecord(**base, verdict="verified", sender=who, detail="the claimed sender is this session")
        if hop != "0":
            return CheckedRecord(**base, verdict="verified", sender=who,
                                 detail=f"relayed by {ident.spec} at hop {hop}: it connected; the author {claim} is a claim")
        return CheckedRecord(**base, verdict="mismatch", sender=who,
                             detail=f"claims {claim} at hop 0, but connected as {ident.spec}")
    # 3. a claim naming a live session the pid is not: mismatch
    named = agents.named(addr) if addr else None
    if named:
        return CheckedRecord(**base, verdict="mismatch", sender=f"pid {pid}" + ("" if alive else " (exited)"),
                             detail=f"claims {claim}, which names the live session {named}, but pid {pid} is not that "
                                    "session (it holds no session's listening socket, nor does a parent)")
    if not alive:
        return CheckedRecord(**base, verdict="unknown process", sender=f"pid {pid} (exited)",
                             detail="it is no session now and this ledger did not write it: it cannot be checked "
                                    "after the fact")
    return CheckedRecord(**base, verdict="unknown process", sender=f"pid {pid} ({_exe(pid)})",
                         detail="a live process that holds no session's listening socket (nor does any parent) and "
                                "that this ledger did not write for: an injector, not a session")


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return "exe unreadable"


def conclude(relay_id: str, records: list[CheckedRecord], **common: Any) -> VerifyReport:
    """One verdict over every record found: none, one (its verdict), or several (not unique)."""
    if not records:
        return VerifyReport(relay_id=relay_id, records=records, **common, verdict="none found",
                            summary=f"no origin record (.origin or .attachment.origin) has an envelope with id={relay_id}")
    if len(records) > 1:
        return VerifyReport(relay_id=relay_id, records=records, **common, verdict="ambiguous",
                            summary=f"{len(records)} records carry id={relay_id}: the id is not unique, so neither is "
                                    "trusted (resolve that first; nothing here guesses which is real)")
    r = records[0]
    return VerifyReport(relay_id=relay_id, records=records, **common, verdict=r.verdict,
                        summary=f"id={relay_id} at .{r.path}: {r.sender}")
