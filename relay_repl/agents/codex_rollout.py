"""Reading a Codex 0.169.0 rollout for the turn our message started and how it ended.

Facts (codex.md section 2.3, re-measured in the lab with a queued message):
- a turn opens with `event_msg` `task_started` (`turn_id`, `turn_attribution.turn_trigger`);
- the message that started it is an `event_msg` `item_completed` whose item is a
  `UserMessage` carrying the queue item's `client_id` (outside the model's view);
- the turn ends with `event_msg` `task_complete` whose `last_agent_message` is the
  agent's final message (null when it ended without one), or `turn_aborted`.
A tool call in between (e.g. an MCP `relay_reply`, recorded as an `McpToolCall` item)
does not end the turn; the final message after it does.
"""

from __future__ import annotations

from pathlib import Path

from relay_repl.agents.turn_reply import Tail, TurnReply, TurnStatus

KIND = "codex"


class CodexTurnWatch:
    """Watches one rollout for the turn whose user message is ours.

    Matched by the queue item's `client_id` when we have it (the strongest receipt),
    else by the exact payload text (our payload carries a unique relay id).
    """

    def __init__(self, rollout: Path | str, *, client_id: str | None = None, text: str | None = None) -> None:
        if not client_id and not text:
            raise ValueError("a Codex turn is matched by client_id or by the exact text")
        self.source = Path(rollout)
        self.client_id = client_id
        self.text = text
        self.turn_id: str | None = None
        self.trigger: str | None = None
        self._triggers: dict[str, str] = {}
        self._tail = Tail(self.source)

    @property
    def anchor(self) -> str:
        return f"client_id {self.client_id}" if self.client_id else "the exact payload text"

    def poll(self) -> TurnReply | None:
        for rec in self._tail:
            p = rec.get("payload")
            if not isinstance(p, dict):
                continue
            kind = p.get("type")
            if kind == "task_started":
                attribution = p.get("turn_attribution") or {}
                self._triggers[str(p.get("turn_id"))] = str(attribution.get("turn_trigger") or "?")
            elif self.turn_id is None and kind == "item_completed":
                item = p.get("item") or {}
                if item.get("type") == "UserMessage" and self._ours(item):
                    self.turn_id = str(p.get("turn_id"))
                    self.trigger = self._triggers.get(self.turn_id)
            elif self.turn_id is not None and p.get("turn_id") == self.turn_id:
                if kind == "task_complete":
                    final = p.get("last_agent_message")
                    text = final if isinstance(final, str) and final.strip() else None
                    return self._reply("answered" if text else "no final message", text,
                                       f"task_complete of turn {self.turn_id} (last_agent_message)", rec)
                if kind == "turn_aborted":
                    return self._reply("aborted", None,
                                       f"turn_aborted ({p.get('reason') or '?'}) of turn {self.turn_id}", rec)
        return None

    def _ours(self, item: dict) -> bool:
        if self.client_id:
            return item.get("client_id") == self.client_id
        body = "".join(c.get("text", "") for c in item.get("content", []) if isinstance(c, dict))
        return body == self.text

    def _reply(self, status: TurnStatus, text: str | None, record: str, rec: dict) -> TurnReply:
        return TurnReply(kind=KIND, status=status, text=text, turn_id=self.turn_id, source=str(self.source),
                         record=record + (f", trigger {self.trigger}" if self.trigger else ""),
                         at=rec.get("timestamp"), anchor=self.anchor)
