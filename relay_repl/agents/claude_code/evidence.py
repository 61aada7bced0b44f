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

import hashlib
import json
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
    cfg = config_dir_of(target)
    sock = target.socket
    if not (cfg and sock):
        return None
    h = hashlib.sha256(str(sock).encode()).hexdigest()
    for f in (cfg / "sessions").glob(f"*.{h}.key"):
        try:
            return str(json.loads(f.read_text())["peerToken"])
        except (OSError, ValueError, KeyError):
            continue
    return None


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


def find_origin_records(transcript: Path, msg_id: str) -> list[dict[str, Any]]:
    """Every transcript record whose origin (either path, `transcript.origin_of`) carries msg_id,
    with the text it holds (`transcript.content_of`: the one reading of a record's text)."""
    from relay_repl.agents.claude_code.transcript import content_of, origin_of  # not on the `relay targets` path

    hits = []
    for _, d in jsonl.records(transcript):
        found = origin_of(d)
        if found is not None and found[0].get("msg_id") == msg_id:
            hits.append({"type": d.get("type"), "where": found[1], "origin": found[0], "content": content_of(d)})
    return hits


def queued_records(transcript: Path, payload: str, offset: int = 0) -> list[dict[str, Any]]:
    """Every `queue-operation` `enqueue` record at or after `offset` whose `content` is exactly
    `payload` (the one reading of "Claude holds this message", for the socket and the tmux paths)."""
    return [{"where": "queue-operation enqueue", "offset": at, "content": payload[:500]}
            for at, d in jsonl.records(transcript, offset)
            if d.get("type") == "queue-operation" and d.get("operation") == "enqueue" and d.get("content") == payload]


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
