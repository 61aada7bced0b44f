"""Origin records in a Claude Code transcript, found by relay id (seed section 8; claude-code.md §4).

Facts this module holds (measured on 2.1.328):
- A message that reached a session over its socket (raw or native SendMessage) is a transcript
  record with a harness-written origin: at `.origin` when it started or waited for a turn, at
  `.attachment.origin` when it was absorbed mid-turn at a tool boundary (then the text is
  `.attachment.prompt`). A query reading only `.origin` misses the second kind.
- Its text is `.message.content` (a string, or a list of text blocks), possibly wrapped by the
  harness ("Another Claude session sent a message:\\n<content>\\n\\n...") or by a native
  `<cross-session-message ...>` wrapper, whose parsed body is also kept as `origin.body`.
- Only `verifiedPeerPid`/`verifiedPeerProcStart` are kernel facts; `from`, `name`, `hopChain`
  are claims (hopChain is corroboration only).

Matching is on the envelope header's whole `id=` field (core.relay_ids): `id=1` never matches
`id=10`, nor a body quoting `id=1`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relay_repl.core.relay_ids import carries_id, id_needle
from relay_repl.store.jsonl import LineScan

ORIGIN_KEY = b'"origin"'


class OriginHit(BaseModel):
    """One transcript record whose envelope header carries the relay id asked for."""

    model_config = ConfigDict(frozen=True)

    offset: int = Field(description="byte offset of the record's line in the transcript")
    type: str | None = Field(description="the record's type (user, attachment, ...)")
    path: str = Field(description="where the origin sits: `origin` or `attachment.origin`")
    origin: dict[str, Any]
    content: str = Field(description="the message text the record holds, as the model saw it")
    header: dict[str, str] = Field(description="the decoded envelope header fields (from, to, id, hop, want, ...)")
    timestamp: str | None = None


class TranscriptScan(BaseModel):
    """What one scan of one transcript found, and how much it read."""

    transcript: str
    hits: list[OriginHit]
    bytes_scanned: int
    oversized_lines: int = 0


def origin_of(record: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """(origin, path) of a transcript record, from either place the harness writes it."""
    if isinstance(record.get("origin"), dict):
        return record["origin"], "origin"
    att = record.get("attachment")
    if isinstance(att, dict) and isinstance(att.get("origin"), dict):
        return att["origin"], "attachment.origin"
    return None


def content_of(record: dict[str, Any]) -> str:
    """The text a record carries: `.message.content` (string or text blocks), else `.attachment.prompt`."""
    msg = record.get("message")
    if isinstance(msg, dict):
        c = msg.get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            return "\n".join(str(b.get("text", "")) for b in c if isinstance(b, dict) and b.get("type") == "text")
    att = record.get("attachment")
    if isinstance(att, dict) and isinstance(att.get("prompt"), str):
        return att["prompt"]
    return ""


def find_relay_id(transcript: Path | str, relay_id: str) -> TranscriptScan:
    """Every origin record (both paths) whose envelope header's id field is exactly `relay_id`.

    Streams the file in bounded memory (store.jsonl.LineScan); only lines holding both the id
    and an origin key are parsed."""
    scan = LineScan(transcript, id_needle(relay_id), (ORIGIN_KEY,))
    hits: list[OriginHit] = []
    for offset, raw in scan:
        try:
            rec = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        found = origin_of(rec)
        if found is None:
            continue
        origin, path = found
        content = content_of(rec)
        texts = [content]
        if isinstance(origin.get("body"), str):
            texts.append(origin["body"])  # a native wrapper's parsed body
        header = next((h for t in texts if (h := carries_id(t, relay_id))), None)
        if header is None:
            continue
        hits.append(OriginHit(offset=offset, type=rec.get("type"), path=path, origin=origin, content=content,
                              header=header, timestamp=rec.get("timestamp")))
    return TranscriptScan(transcript=str(transcript), hits=hits, bytes_scanned=scan.scanned,
                          oversized_lines=scan.oversized)
