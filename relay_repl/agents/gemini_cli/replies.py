"""Gemini CLI's reply routes and its turn reply (the final `gemini` record of our turn).

Routes, read from its settings (read-only): `relay reply` through `run_shell_command` unless a
sandbox is configured (`tools.sandbox` / `$GEMINI_SANDBOX`: the command would run in a container
that cannot reach the inbox socket); the relay MCP server when `mcpServers` runs `relay mcp`
(Gemini CLI offers its tools as `mcp_<server>_relay_reply`; without `trust: true` it asks the
operator in the pane first); and always the turn reply from the chat file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from relay_repl.agents.gemini_cli.chats import model_text, user_text
from relay_repl.agents.gemini_cli import plan_words
from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.provider import KIND
from relay_repl.agents.capabilities import RepliesBase
from relay_repl.agents.replies import ReplyOptions, configured_route, delivery_evidence
from relay_repl.agents.turn_reply import Tail, TurnReply, TurnStatus, TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.core.target import Target


def settings(target: Target) -> tuple[dict[str, Any], Path]:
    """`<gemini dir>/settings.json` of the session's home (plan_words.settings_at: one home for the rule)."""
    cfg, path = plan_words.settings_at(GeminiDetail.of(target).gemini_dir)
    return cfg, Path(path)


class GeminiTurnWatch:
    """Watches one chat file for the turn our typed line started and its final answer.

    Matched by the exact payload text (it carries a unique relay id). The turn's answer is the
    latest `gemini` record with text and no tool calls (a record may be rewritten with the same
    id, the last line wins); a later typed `user` record ends the turn whatever it said.
    """

    def __init__(self, chat: Path | str, text: str) -> None:
        self.source = Path(chat)
        self.text = text
        self.turn_id: str | None = None
        self._last: dict[str, Any] | None = None
        self._tail = Tail(self.source)

    def poll(self) -> TurnReply | None:
        for rec in self._tail:
            typed = user_text(rec)
            if self.turn_id is None:
                if typed == self.text:
                    self.turn_id = str(rec.get("id"))
                continue
            if typed is not None:
                last = self._last
                text = model_text(last) if last else None
                return self._reply("answered" if text else "no final message", text or None,
                                   "the last `gemini` record before the next typed line", rec)
            if rec.get("type") == "gemini":
                self._last = rec
                text = model_text(rec)
                if text and text.strip() and not rec.get("toolCalls"):
                    return self._reply("answered", text, f"`gemini` record {rec.get('id')} (text, no tool calls)", rec)
        return None

    def _reply(self, status: TurnStatus, text: str | None, record: str, rec: dict[str, Any]) -> TurnReply:
        return TurnReply(kind=KIND, status=status, text=text, turn_id=self.turn_id, source=str(self.source),
                         record=record, at=rec.get("timestamp"), anchor="the exact payload text")


class GeminiReplies(RepliesBase):
    """Its `replies` capability (agents/capabilities.py): the routes its settings allow, and its turn reply."""

    def route(self, target: Target, ctx: ReplyContext) -> ReplyRoute:
        """`relay reply` where no sandbox is in the way; else relay_reply on the relay MCP server; else the turn reply."""
        return configured_route(target, ctx, self.options(target), super().route)

    def options(self, target: Target) -> ReplyOptions:
        """From its settings.json (plan_words.reply_options: the rules a plan printed early reads too)."""
        cfg, path = settings(target)
        chat = target.evidence_file
        return ReplyOptions(**plan_words.reply_options(cfg, str(path), str(chat) if chat else None))

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        chat = delivery_evidence(delivery, "chat") or target.evidence_file
        payload = delivery.plan.payload if delivery.plan else None
        if not chat or not payload:
            return None
        return GeminiTurnWatch(str(chat), payload)
