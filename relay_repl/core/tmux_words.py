"""The tmux transport's words in a plan and its preflight verdict over one screen reading. Standard library only.

Why here and not in transports/: a send's plan is waited for from the command's start (issue 40), and
a kind's plain pre-plan (agents/<kind>/plain_plan.py) prints it before pydantic, anyio or libtmux are
imported; it must say exactly what `TmuxTransport.plan_notes` / `before_asking` say, and refuse exactly
where preflight refuses, and an agent module never imports a transport. One home for both:
`transports/tmux.py` calls these, the plain plans call them too. Nothing here reads a pane: the reading
(a classifier's `ScreenReading`) and the roster rule's answer are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relay_repl.core.controls import gist

NAME = "tmux"

PREFLIGHT_NOTE = ("types into the pane: refused at preflight if the composer holds any text, a dialog, menu or copy "
                  "mode is up, or the screen is not recognised")
"""The note every tmux plan carries (TmuxTransport.plan_notes)."""


def plan_notes(busy_note: str | None) -> tuple[str, ...]:
    """TmuxTransport.plan_notes: the preflight note, then the agent's note on typing into a busy target."""
    return (PREFLIGHT_NOTE, busy_note) if busy_note else (PREFLIGHT_NOTE,)


def no_classifier(kind: str) -> str:
    """Why tmux never serves a kind without a screen classifier (TmuxTransport.refusal)."""
    return f"no screen classifier for {kind!r}: typing blind is never done"


def pane_gone(pane: str | None) -> str:
    """The refusal when the rostered pane is not on its server any more (PaneIO.locate found nothing)."""
    return f"rostered pane {pane} no longer exists on its tmux server"


def screen_refusal(reading: Any, roster_why: str | None) -> str | None:
    """Preflight's verdict on one reading (TmuxTransport._check), before the agent's own waiting rule:
    the roster mismatch (with the screen's blockers beside it), any blocker, an unrecognised screen, a
    composer that is not empty; None when the screen lets the send through."""
    blockers: Sequence[str] = reading.blockers
    screen_why = f"screen shows {', '.join(blockers)}: " + "; ".join(reading.reasons) if blockers else None
    if roster_why:
        # a dialog can hide what ties a pane to its process (the Codex footer): say both
        return f"roster mismatch: {roster_why}" + (f"; and the {screen_why}" if screen_why else "")
    if screen_why:
        return screen_why
    if reading.kind == "unknown":
        return "screen not recognised as idle or busy (fail closed): " + "; ".join(reading.reasons)
    if reading.composer != "empty":
        return f"composer is {reading.composer}: " + "; ".join(reading.reasons)
    return None


def now_note(pane_id: str | None, reading: Any) -> str:
    """The plan's note on the pane as preflight just read it (TmuxTransport.before_asking)."""
    held = f", holding {gist(reading.composer_text, 60)!r}" if reading.composer_text else ""
    blockers = f"; on screen: {', '.join(reading.blockers)}" if reading.blockers else ""
    return (f"pane {pane_id} now: {reading.kind}, composer {reading.composer}{held}{blockers} (preflight runs "
            "again after your y)")
