"""Gemini CLI's reply routes and its turn reply (the final `gemini` record of our turn).

Routes, read from its settings (read-only): `relay reply` through `run_shell_command` unless a
sandbox is configured (`tools.sandbox` / `$GEMINI_SANDBOX`: the command would run in a container
that cannot reach the inbox socket); the relay MCP server when `mcpServers` runs `relay mcp`
(Gemini CLI offers its tools as `mcp_<server>_relay_reply`; without `trust: true` it asks the
operator in the pane first); and always the turn reply from the chat file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from relay_repl.agents.gemini_cli.chats import model_text, user_text
from relay_repl.agents.gemini_cli.detail import GeminiDetail
from relay_repl.agents.gemini_cli.provider import KIND
from relay_repl.agents.capabilities import RepliesBase
from relay_repl.agents.replies import ReplyOptions, configured_route, delivery_evidence, relay_server
from relay_repl.agents.turn_reply import Tail, TurnReply, TurnStatus, TurnWatch
from relay_repl.core.delivery import Delivery
from relay_repl.core.plan import ReplyContext, ReplyRoute
from relay_repl.core.target import Target


def settings(target: Target) -> tuple[dict[str, Any], Path]:
    """`<gemini dir>/settings.json` of the session's home (user settings; project settings are not read)."""
    path = Path(GeminiDetail.of(target).gemini_dir or "~/.gemini").expanduser() / "settings.json"
    from relay_repl.core.errors import FileProblem
    from relay_repl.store.loader import read_text

    try:  # the one loader: a FIFO or a directory there never hangs a plan
        data = json.loads(read_text(path, "fix it (Gemini CLI reads it too)", missing_ok=True) or "{}")
    except (FileProblem, ValueError, RecursionError):
        return {}, path
    return (data if isinstance(data, dict) else {}), path


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
        cfg, path = settings(target)
        tools = cfg.get("tools") if isinstance(cfg.get("tools"), dict) else {}
        sandbox = tools.get("sandbox") if isinstance(tools, dict) else None
        boxed = bool(sandbox) and sandbox != "false"
        why = (f"tools.sandbox = {sandbox!r} in {path}: its commands run in a sandbox that cannot reach the inbox socket"
               if boxed else f"no sandbox in {path}: run_shell_command runs `relay reply` as the operator's user")
        found = relay_server(cfg.get("mcpServers"))
        mcp = note = None
        if found:
            name, entry = found
            mcp = f"mcpServers.{name} in {path}"
            if not entry.get("trust"):
                note = "the server is not `trust: true`: Gemini CLI asks the operator to allow the call in the agent's pane"
        chat = target.evidence_file
        return ReplyOptions(relay_reply=not boxed, relay_reply_why=why, mcp=mcp, mcp_note=note,
                            turn=str(chat) if chat else "the session's chat file",
                            turn_why="the last `gemini` record without tool calls after the `user` record carrying our line")

    def turn_watch(self, target: Target, delivery: Delivery) -> TurnWatch | None:
        chat = delivery_evidence(delivery, "chat") or target.evidence_file
        payload = delivery.plan.payload if delivery.plan else None
        if not chat or not payload:
            return None
        return GeminiTurnWatch(str(chat), payload)
