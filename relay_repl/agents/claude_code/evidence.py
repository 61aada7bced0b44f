"""Claude Code's receiver evidence: what its transcript and registry say about a message.

Facts (claude-code.md sections 1.2, 2 and 4, verified on 2.1.328):
- The transcript is `$CFG/projects/<munged cwd>/<sessionId>.jsonl`, re-derived from the
  live registry record each time: `sessionId` changes on /clear or resume.
- A socket message lands as a record whose `origin` (top level, or `attachment.origin`
  when absorbed mid-turn by a busy receiver) carries our `msg_id` and the kernel-supplied
  `verifiedPeerPid`/`verifiedPeerProcStart`.
- A typed line lands as a `user` record with `origin.kind` human, or, absorbed at a tool
  boundary, an `attachment` of type `queued_command`; a `queue-operation` enqueue only
  says Claude holds it.
- The receiver's peerToken is in `sessions/<pid>.<sha256(socket path)>.key`.
All readers are blocking and tolerant (a file mid-write or gone reads as no evidence).
"""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import relay_repl.store.jsonl as jsonl
from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.provider import transcript_path as derive_transcript_path
from relay_repl.core.target import Target


def config_dir_of(target: Target) -> Path | None:
    """`$CFG` of the session, from the registry record discovery read (`<cfg>/sessions/<pid>.json`)."""
    rec = ClaudeDetail.of(target).record
    return Path(rec).parent.parent if rec else None


def transcript_for(target: Target) -> Path | None:
    """Re-derived each time from the live record: sessionId changes on /clear or resume."""
    rec_file = ClaudeDetail.of(target).record
    cfg = config_dir_of(target)
    if rec_file and cfg:
        try:
            rec = json.loads(Path(rec_file).read_text())
            if rec.get("pid") == target.pid:
                return derive_transcript_path(cfg, rec["cwd"], rec["sessionId"])
        except (OSError, ValueError, KeyError):
            pass
    t = target.evidence_file
    return Path(t) if t else None


def peer_token(target: Target) -> str | None:
    """The receiver's peerToken, if its key file is readable (not required on Linux)."""
    from relay_repl.agents.claude_code.plan_words import peer_token_at

    cfg = config_dir_of(target)
    return peer_token_at(str(cfg) if cfg else None, target.socket)


def record_status(target: Target) -> tuple[str | None, str | None]:
    """(status, waitingFor) of the target's live registry record, or (None, None)."""
    rec = ClaudeDetail.of(target).record
    if not rec:
        return None, None
    try:
        d = json.loads(Path(rec).read_text())
    except (OSError, ValueError):
        return None, None
    if d.get("pid") != target.pid:
        return None, None
    return d.get("status"), d.get("waitingFor")


SAFE_ID = re.compile(r"[A-Za-z0-9._:-]{1,200}")
"""An id JSON writes as it is (no escape can hide it from a byte search of the raw line)."""


@dataclass
class _Scan:
    """How far one question was answered in one transcript: (device, inode), the offset after the last
    complete line read, that line's last bytes (to see the file was not rewritten under us) and the hits."""

    file: tuple[int, int]
    offset: int = 0
    tail: bytes = b""
    hits: list[dict[str, Any]] = field(default_factory=list)


_scans: OrderedDict[tuple[str, str, str], _Scan] = OrderedDict()
SCANS = 64
"""Questions remembered (a delivery's confirm polls ask one again and again), oldest dropped first."""


def _scan(path: Path, question: tuple[str, str], offset: int, needle: bytes | None,
          match: Callable[[int, dict[str, Any]], dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Every `match` hit among the complete records at or after `offset`, reading only what was appended
    since the same question was last asked of this file. Why: a send's confirm polls its receiver's
    transcript every few tens of ms, and parsed the whole file each time (issue 33: ~2,000 JSON records
    per ask-all in a fresh lab, growing with every turn). A transcript is only appended to; a file with
    another inode, shorter than what was read, or whose last read line changed is read again from
    `offset`. Not seen: a rewrite in place that neither shrinks the file nor moves its last read line;
    Claude only appends, and a process that can rewrite the file can as well append any record.
    `needle`: bytes every hit's raw line contains, so other lines are never parsed."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    key = (str(path), *question)
    scan = _scans.get(key)
    if scan is None or scan.file != (st.st_dev, st.st_ino) or st.st_size < scan.offset or not _tail_holds(path, scan):
        scan = _Scan(file=(st.st_dev, st.st_ino), offset=offset)
    lines, end, tail = jsonl.appended_lines(path, scan.offset, needle)  # lines without the needle: never split
    for at, raw in lines:
        rec = jsonl.parse_object(raw)
        hit = match(at, rec) if rec is not None else None
        if hit is not None:
            scan.hits.append(hit)
    if tail:
        scan.offset, scan.tail = end, tail
    _scans[key] = scan
    _scans.move_to_end(key)
    while len(_scans) > SCANS:
        _scans.popitem(last=False)
    return [dict(h) for h in scan.hits]


def _tail_holds(path: Path, scan: _Scan) -> bool:
    """The bytes before `scan.offset` are still the last line read there."""
    if not scan.tail:
        return True
    try:
        with open(path, "rb") as f:
            f.seek(scan.offset - len(scan.tail))
            return f.read(len(scan.tail)) == scan.tail
    except OSError:
        return False


def find_origin_records(transcript: Path, msg_id: str) -> list[dict[str, Any]]:
    """Every transcript record whose origin (either path, `transcript.origin_of`) carries msg_id,
    with the text it holds (`transcript.content_of`: the one reading of a record's text)."""
    from relay_repl.agents.claude_code.transcript import content_of, origin_of  # not on the `relay targets` path

    def match(_at: int, d: dict[str, Any]) -> dict[str, Any] | None:
        found = origin_of(d)
        if found is not None and found[0].get("msg_id") == msg_id:
            return {"type": d.get("type"), "where": found[1], "origin": found[0], "content": content_of(d)}
        return None

    needle = msg_id.encode() if SAFE_ID.fullmatch(msg_id) else None
    return _scan(transcript, ("origin", msg_id), 0, needle, match)


def queued_records(transcript: Path, payload: str, offset: int = 0) -> list[dict[str, Any]]:
    """Every `queue-operation` `enqueue` record at or after `offset` whose `content` is exactly
    `payload` (the one reading of "Claude holds this message", for the socket and the tmux paths)."""

    def match(at: int, d: dict[str, Any]) -> dict[str, Any] | None:
        if d.get("type") == "queue-operation" and d.get("operation") == "enqueue" and d.get("content") == payload:
            return {"where": "queue-operation enqueue", "offset": at, "content": payload[:500]}
        return None

    return _scan(transcript, (f"queued@{offset}", payload), offset, b"queue-operation", match)


def claude_typed_records(transcript: Path, offset: int, payload: str) -> list[dict[str, Any]]:
    """Typed-input records at or after byte `offset` carrying `payload` (origin kind human).

    A prompt typed while idle (or run as the next turn) is a top-level `user` record;
    one absorbed at a tool boundary is an `attachment` of type `queued_command`
    (claude-code.md §4.3). A `queue-operation` enqueue only says Claude holds it.
    """
    from relay_repl.agents.claude_code.transcript import content_of  # not on the `relay targets` path

    hits: list[dict[str, Any]] = []
    payload = payload.strip()  # a TUI may trim edge whitespace on submit; the inside must match exactly
    for at, d in jsonl.records(transcript, offset):
        att = d.get("attachment") if isinstance(d.get("attachment"), dict) else None
        if d.get("type") == "user" and isinstance(d.get("origin"), dict):
            text = content_of(d)
            if d["origin"].get("kind") == "human" and payload in text:
                hits.append({"where": "top-level user", "offset": at, "uuid": d.get("uuid"),
                             "promptSource": d.get("promptSource"), "origin": d["origin"], "content": text[:500]})
        elif att and att.get("type") == "queued_command" and isinstance(att.get("origin"), dict):
            text = content_of({"attachment": att})
            if att["origin"].get("kind") == "human" and payload in text:
                hits.append({"where": "attachment.queued_command", "offset": at, "uuid": d.get("uuid"),
                             "origin": att["origin"], "content": text[:500]})
        elif d.get("type") == "queue-operation" and d.get("operation") == "enqueue" and \
                str(d.get("content") or "").strip() == payload:
            hits.append({"where": "queue-operation enqueue", "offset": at, "content": payload[:500]})
    return hits
