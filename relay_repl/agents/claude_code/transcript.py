"""Reading a Claude Code 2.1.328 transcript: the turn our message joined and how it ended (turn
replies), and the origin records that carry a relay id (`relay verify`).

Facts (claude-code.md section 4, re-measured in the lab):
- our socket message is a `user` record whose `origin.msg_id` is our msg_id (idle
  receiver), or an `attachment` record (`queued_command`) whose `attachment.origin`
  carries it (absorbed mid-turn at a tool boundary): in both cases the turn that
  read it is the one whose final message answers it;
- the model's output follows as `assistant` records, one per content block, sharing
  `message.id` per API response; the response that ends the turn has
  `message.stop_reason == "end_turn"`, and a `system` record `turn_duration` follows;
- a tool result comes back as a `user` record whose content is a `tool_result` list
  (the same turn); an interruption as a user text `[Request interrupted by user...]`.
A typed message (tmux) has no msg_id: it is matched by its exact text instead.

Origin records by relay id (seed section 8), measured on 2.1.328:
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

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_repl.agents.turn_reply import TurnReply, TurnStatus
from relay_repl.agents.turn_watch import MatchedTail
from relay_repl.core.inbound import OriginRecord
from relay_repl.store.jsonl import LineScan, complete_lines, parse_object

KIND = "claude-code"
INTERRUPTED = "[Request interrupted"


def origin_of(record: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """(origin, path) of a transcript record, from either place the harness writes it."""
    if isinstance(record.get("origin"), dict):
        return record["origin"], "origin"
    att = record.get("attachment")
    if isinstance(att, dict) and isinstance(att.get("origin"), dict):
        return att["origin"], "attachment.origin"
    return None


def _origin(rec: dict[str, Any]) -> dict[str, Any] | None:
    found = origin_of(rec)
    return found[0] if found else None


def _message(rec: dict[str, Any]) -> dict[str, Any]:
    msg = rec.get("message")
    return msg if isinstance(msg, dict) else {}


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


class ClaudeTurnWatch(MatchedTail):
    """Watches one transcript for the turn that read our message, until it ends."""

    def __init__(self, transcript: Path | str, *, msg_id: str | None = None, text: str | None = None) -> None:
        super().__init__(transcript, "Claude", ("msg_id", msg_id), text, "the exact typed text")
        self.msg_id = msg_id
        self.found: str | None = None  # where our message was: "origin" / "attachment.origin" / "typed text"
        self._texts: dict[str, list[str]] = {}  # assistant message.id -> its text blocks
        self._last_id: str | None = None
        self._prompt_id: str | None = None

    def poll(self) -> TurnReply | None:
        for rec in self._tail:
            kind = rec.get("type")
            if self.found is None:
                self.found = self._ours(rec)
                self._prompt_id = rec.get("promptId") if self.found else None
                continue
            msg = _message(rec)
            if kind == "assistant":
                mid = str(msg.get("id") or rec.get("uuid"))
                self._texts.setdefault(mid, []).extend(t for t in _text_blocks(msg.get("content")) if t.strip())
                self._last_id = mid
                if msg.get("stop_reason") == "end_turn":
                    return self._final(rec, f"assistant message {mid} (stop_reason end_turn)")
            elif kind == "system" and rec.get("subtype") == "turn_duration":
                return self._final(rec, "the turn's last assistant message (turn_duration record)")
            elif kind == "user" and not rec.get("isMeta"):
                texts = _text_blocks(msg.get("content"))
                if any(t.startswith(INTERRUPTED) for t in texts):
                    return self._reply("aborted", None, "the turn was interrupted ([Request interrupted ...])", rec)
        return None

    def _ours(self, rec: dict[str, Any]) -> str | None:
        origin = _origin(rec)
        if self.msg_id:
            if origin is not None and origin.get("msg_id") == self.msg_id:
                return "origin" if isinstance(rec.get("origin"), dict) else "attachment.origin"
            return None
        if rec.get("type") == "user":
            msg = _message(rec)
            if self.text in _text_blocks(msg.get("content")):
                return "typed text"
        att = rec.get("attachment")
        if isinstance(att, dict) and att.get("prompt") == self.text:
            return "typed text (attachment)"
        return None

    def _final(self, rec: dict[str, Any], record: str) -> TurnReply:
        texts = self._texts.get(self._last_id or "", [])
        text = "\n".join(texts).strip() or None
        return self._reply("answered" if text else "no final message", text, record, rec)

    def _reply(self, status: TurnStatus, text: str | None, record: str, rec: dict[str, Any]) -> TurnReply:
        return TurnReply(kind=KIND, status=status, text=text, turn_id=self._prompt_id,
                         source=str(self.source), record=f"{record}; our message at .{self.found}",
                         at=rec.get("timestamp"), anchor=self.anchor)


# ---- origin records by relay id (relay verify) ----------------------------------------

ORIGIN_KEY = b'"origin"'


OriginHit = OriginRecord
"""One transcript record whose envelope header carries the relay id asked for (the shared shape)."""


class TranscriptScan(BaseModel):
    """What one scan of one transcript found, and how much it read."""

    model_config = ConfigDict(defer_build=True)  # built on first use, off the targets path

    transcript: str
    hits: list[OriginHit]
    bytes_scanned: int
    oversized_lines: int = 0


def content_of(record: dict[str, Any]) -> str:
    """The text a record carries: `.message.content` (string or text blocks), else `.attachment.prompt`."""
    c = _message(record).get("content")
    if isinstance(c, str | list):
        return "\n".join(str(t) for t in _text_blocks(c))
    att = record.get("attachment")
    if isinstance(att, dict) and isinstance(att.get("prompt"), str):
        return att["prompt"]
    return ""


def find_relay_id(transcript: Path | str, relay_id: str) -> TranscriptScan:
    """Every origin record (both paths) whose envelope header's id field is exactly `relay_id`.

    Streams the file in bounded memory (store.jsonl.LineScan); only lines holding both the id
    and an origin key are parsed."""
    from relay_repl.core.relay_ids import carries_id, id_needle  # only `relay verify` needs the envelope parser

    needle, follow = id_needle(relay_id)
    scan = LineScan(transcript, needle, (ORIGIN_KEY,), followed_by=follow)
    hits: list[OriginHit] = []
    for offset, raw in scan:
        rec = parse_object(raw)
        if rec is None:
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


# ---- when Claude has finished writing a turn (live tests that compare its files) -------

REAPPEND_BYTES = 32768
"""Claude Code 2.1.332 queues transcript records and writes them on a 100 ms timer
(`FLUSH_INTERVAL_MS`); after a write that brings the bytes appended since its last metadata
re-append to half of 64 KiB, the same write task appends its session metadata again (a
block starting with `last-prompt`: `custom-title`, `agent-name`, `mode`, ...). Read in its
bundle (`bytesSinceMetadataReAppend>=bS/2`, `bS=65536`) and measured in the lab: one block
every ~7 turns of ~5 KB, right after the write that crossed it (a turn's `turn_duration`, or mid-turn)."""

METADATA_TYPES = frozenset({
    "last-prompt", "custom-title", "ai-title", "tag", "relocated", "agent-name", "agent-color", "agent-setting",
    "mode", "permission-mode", "repl-mode", "session-owner", "hybrid-organization", "isolation-latch", "dev-mods",
    "memory-mode", "atis-latch", "tools-used", "data-flow-records", "derived-from", "worktree-state", "pr-link",
    "frame-link", "history-suppression", "bridge-session",
})
"""The record types of a metadata block (2.1.332's `planReAppendSessionMetadata`): none has a uuid."""


def turn_written(transcript: Path | str, msg_id: str | None = None) -> str | None:
    """What proves Claude has written everything it writes for the turn that read `msg_id` (its
    origin record), or with no msg_id for its latest turn (the one that read the last record
    carrying an origin: every prompt, typed or socket-delivered, carries one); None while it has not.

    The registry says `idle` as the turn ends, before the turn's last records reach the file:
    its final `assistant` record and the `system` `turn_duration` record come with the next
    timed write (in 6 of 61 lab turns, 0.03-0.11 s after the record read idle, load 3-15). Done means: a
    `turn_duration` record after that turn's origin record (or the interruption marker of an
    interrupted turn, which writes no `turn_duration`), and no metadata re-append due, i.e.
    fewer than REAPPEND_BYTES written since the end of the last metadata block (a run of two
    or more METADATA_TYPES records). A transcript with no origin record has no turn to wait for."""
    ours: int | None = None
    ended: str | None = None
    block_end = 0
    run = 0  # length of the current run of metadata records
    size = 0
    for at, raw in complete_lines(transcript):
        size = at + len(raw)
        rec = parse_object(raw)
        if rec is None:
            continue
        kind = rec.get("type")
        if kind in METADATA_TYPES:
            run += 1
            if run >= 2:
                block_end = size
            continue
        run = 0
        origin = _origin(rec)
        if origin is not None and (ours is None or msg_id is None) and (msg_id is None or origin.get("msg_id") == msg_id):
            ours, ended = at, None
        elif ours is not None and ended is None:
            if kind == "system" and rec.get("subtype") == "turn_duration":
                ended = f"turn_duration at byte {at}"
            elif kind == "user" and any(t.startswith(INTERRUPTED) for t in _text_blocks(_message(rec).get("content"))):
                ended = f"interrupted at byte {at}"
    if (msg_id is not None and ours is None) or (ours is not None and ended is None):
        return None
    since = size - block_end
    if since >= REAPPEND_BYTES:
        return None
    turn = "no turn (no origin record)" if ours is None else (
        f"{ended}, after the origin record at byte {ours}{f' (msg_id {msg_id})' if msg_id else ' (the last one)'}")
    return f"{turn}; {since} bytes since the last metadata block (< {REAPPEND_BYTES}: no re-append due)"
