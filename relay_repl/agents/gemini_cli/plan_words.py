"""Gemini CLI's words in a tmux plan and its roster rule over one screen. Standard library only.

Why apart from agent.py: a send's plan is printed before pydantic is imported (issue 40: the plain
pre-plan path, agents/gemini_cli/plain_plan.py), and it must say exactly what `GeminiScreen` and
`GeminiEvidence` say, and refuse where they refuse. One home: those classes take their texts and
their roster rule from here. Loaded by name on the models' path and by file on the plain one.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

BUSY_SUBMIT = "Gemini CLI queues it (`Queued (press ↑ to edit)`) and sends it as the next turn"
"""What Enter does while a turn runs (GeminiScreen.busy_submit: the submit step's log)."""

BUSY_NOTE = "target is busy: Enter queues the line; it starts the next turn when this one ends (Gemini CLI 0.61.0)"
"""The plan's note for a busy target (GeminiScreen.busy_note). Gemini has no waiting note and no
waiting refusal: an approval box is on the screen, where the classifier reads it as a `dialog` blocker."""

DELIVERED_WHEN = ("the session's chat file gains a `user` record whose text is exactly this line (written when its "
                  "turn starts; a line queued behind a busy turn appears when that turn ends, one queued while Gemini "
                  "still discovers its MCP servers when that discovery ends); send-keys exit status proves nothing")
"""What counts as delivered for a typed line (GeminiEvidence.tmux_delivered_when)."""


def busy_note(state: str | None) -> str | None:
    """The plan's note on typing into a target in `state` (ScreenBase.tmux_busy_note's rule, Gemini's words)."""
    return BUSY_NOTE if state == "busy" else None


def roster_mismatch(pid: int | None, session_id: str | None, snap: Any, clients: Collection[int],
                    shown: str | None) -> str | None:
    """Why the pane no longer shows the target session, or None: its gemini.js process `pid` must be
    among the Gemini processes under the pane (`clients`), and a footer that shows a session id
    (`shown`, screen.footer_session) must show the target's (a /clear or /resume changes it)."""
    if pid not in clients:
        return f"gemini.js process {pid} no longer runs under pane {snap.pane_id} (pane pid {snap.pane_pid})"
    sid = session_id or ""
    if shown and sid and not sid.startswith(shown):
        return (f"the footer of pane {snap.pane_id} shows session {shown}, not {sid[:8]}: "
                "the session changed (/clear or /resume); rediscover")
    return None


# -- the reply route: what the session's settings.json allows (replies.GeminiReplies calls these) --

SETTINGS_FIX = "fix it (Gemini CLI reads it too)"


def settings_at(gemini_dir: str | None) -> tuple[dict[str, Any], str]:
    """`<gemini dir>/settings.json` of the session's home (user settings; project settings are not read),
    parsed, and its path; {} when missing, unreadable or not an object."""
    import json
    from pathlib import Path

    from relay_repl.core.errors import FileProblem
    from relay_repl.store.loader import read_text

    path = Path(gemini_dir or "~/.gemini").expanduser() / "settings.json"
    try:  # the one loader: a FIFO or a directory there never hangs a plan
        data = json.loads(read_text(path, SETTINGS_FIX, missing_ok=True) or "{}")
    except (FileProblem, ValueError, RecursionError):
        return {}, str(path)
    return (data if isinstance(data, dict) else {}), str(path)


def reply_options(cfg: dict[str, Any], path: str, chat: str | None) -> dict[str, Any]:
    """`ReplyOptions`' fields from the parsed settings: `relay reply` unless `tools.sandbox` boxes its
    commands, the relay MCP server when `mcpServers` runs `relay mcp`, and always the turn reply."""
    from relay_repl.core.reply_words import relay_server

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
    return {"relay_reply": not boxed, "relay_reply_why": why, "mcp": mcp, "mcp_note": note,
            "turn": chat if chat else "the session's chat file",
            "turn_why": "the last `gemini` record without tool calls after the `user` record carrying our line"}
