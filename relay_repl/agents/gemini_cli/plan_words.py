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
