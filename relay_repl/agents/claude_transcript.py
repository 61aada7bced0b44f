"""Reading a Claude Code 2.1.328 transcript for the turn our message joined and how it ended.

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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay_repl.agents.turn_reply import Tail, TurnReply, TurnStatus

KIND = "claude-code"
INTERRUPTED = "[Request interrupted"


def _origin(rec: dict[str, Any]) -> dict[str, Any] | None:
    o = rec.get("origin")
    if isinstance(o, dict):
        return o
    att = rec.get("attachment")
    if isinstance(att, dict) and isinstance(att.get("origin"), dict):
        return att["origin"]
    return None


def _message(rec: dict[str, Any]) -> dict[str, Any]:
    msg = rec.get("message")
    return msg if isinstance(msg, dict) else {}


def _text_blocks(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


class ClaudeTurnWatch:
    """Watches one transcript for the turn that read our message, until it ends."""

    def __init__(self, transcript: Path | str, *, msg_id: str | None = None, text: str | None = None) -> None:
        if not msg_id and not text:
            raise ValueError("a Claude turn is matched by msg_id or by the exact text")
        self.source = Path(transcript)
        self.msg_id = msg_id
        self.text = text
        self.found: str | None = None  # where our message was: "origin" / "attachment.origin" / "typed text"
        self._texts: dict[str, list[str]] = {}  # assistant message.id -> its text blocks
        self._last_id: str | None = None
        self._prompt_id: str | None = None
        self._tail = Tail(self.source)

    @property
    def anchor(self) -> str:
        return f"msg_id {self.msg_id}" if self.msg_id else "the exact typed text"

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
