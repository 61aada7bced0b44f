"""Classify a Codex 0.169.0 pane from a `Snapshot` (pure; no I/O).

Marks recorded from the real client in the lab (tests/screens/captures/codex-0.169.0/):

- Bottom of the screen: [status row] · composer (`› ` prompt, continuation rows indented
  two spaces) · one blank row · footer `  <model> <effort> · <cwd>[ · <thread name>]` ·
  hint row. The composer is found *from the footer upwards*, because history rows
  (`› <text>`), the slash popup's selected row (`› /model …`) and dialog options
  (`› 1. Yes, proceed (y)`) all start with `› ` too; a screen with no footer has no
  composer (an approval dialog or a selection view replaced it).
- Empty composer: the placeholder after `› ` is dim (SGR 2) and the cursor is at
  column 2 of the prompt row; text at normal intensity is a draft.
- Busy: a status row `• Working (12s • esc to interrupt)` (the word varies; `esc to
  interrupt` does not), `• Messages to be submitted after next tool call`, or a footer
  `Pursuing goal`. Idle needs positive evidence: the latest activity row above the
  composer is `Worked for 8s • 10:33`, the start banner with no turn, or
  `■ Conversation interrupted`.
- Staged while busy: hint row `tab to queue message`. Tab-queued inputs: `• Queued
  follow-up inputs` / `  ↳ <text>`.
- Shell mode: prompt `!` instead of `›`, hint `Shell mode`. Slash popup: composer `› /…`.
  `?` shortcuts: `Keyboard shortcuts` block and hint `? / esc close`.
- Approval: `Would you like to run the following command?` … `Press enter to confirm or
  esc to cancel`; selection views (e.g. /permissions) end with `enter select · esc back`.
- Copy mode is invisible in the capture: only `pane_in_mode` tells.

Anything not positively recognised is `unknown` (fail closed).
"""

from __future__ import annotations

import re

from relay_repl.agents.adapter import load_adapter
from relay_repl.agents.screens.skeleton import Reading, draft_rows, enter_took, latest, submit_hint
from relay_repl.agents.screens.model import Snapshot, ScreenReading, SubmitHint, composer_state, history_contains, wrapped_equals

# The footer pattern is the Codex adapter's (adapters/codex.md, [screen.marks] footer): one
# pattern, so discovery and the tmux preflight cannot disagree about the same pane.
FOOTER = load_adapter("codex").screen.compiled("footer")[0]
PROMPT = "›"
SHELL = "!"
BUSY = [re.compile(r"esc to interrupt\)"), re.compile(r"^• Messages to be submitted after next tool call")]
GOAL = re.compile(r"Pursuing goal")
WORKED = re.compile(r"^\s*(?:─\s*)?Worked for .+ • ")
BANNER = re.compile(r">_ OpenAI Codex \(v\d")
INTERRUPTED = re.compile(r"^■ Conversation interrupted")
HISTORY_PROMPT = re.compile(r"^› \S")
TAB_TO_QUEUE = re.compile(r"^\s+tab to queue message")
QUEUED = re.compile(r"^• Queued follow-up inputs")
PENDING_STEER = re.compile(r"^• Messages to be submitted after next tool call")
RECONNECTING = re.compile(r"Reconnecting to server")
DIALOG = [
    re.compile(r"Would you like to run the following command\?"),
    re.compile(r"Would you like to make the following edits\?"),
    re.compile(r"Press enter to confirm or esc to cancel"),
    re.compile(r"^› \d+\. Yes, proceed"),
]
SELECTION = re.compile(r"enter select · esc back|enter to select|esc to go back")
OVERLAYS = [
    (re.compile(r"^\s+\? / esc close"), "the `?` shortcuts panel"),
    (re.compile(r"^\s+Keyboard shortcuts\s*$"), "the `?` shortcuts panel"),
    (re.compile(r"enter/tab insert · esc close"), "the `@` file popup"),
    (re.compile(r"Browsing transcript"), "the transcript browser (Esc Esc)"),
    (re.compile(r"^\s+esc again to edit previous message"), "the Esc hint (one more Esc rewinds)"),
    (re.compile(r"^\s+Warnings · \d+ of \d+"), "the warnings overlay"),
]
SLASH_ROW = re.compile(r"^(?:› |  )/[\w:-]+\s{2,}\S")
PLACEHOLDERS = ("Ask Codex to do anything",)
MAX_COMPOSER_ROWS = 20
LOOKBACK = 1000  # the whole screen above the composer: tall fullscreen panes leave big gaps


def footer_row(lines: list[str]) -> int | None:
    for i in range(len(lines) - 1, -1, -1):
        if FOOTER.match(lines[i]):
            return i
    return None


def footer_name(snap: Snapshot) -> str | None:
    """The thread name the footer shows (`… · <cwd> · <name>`), if any."""
    i = footer_row(snap.lines)
    if i is None:
        return None
    m = FOOTER.match(snap.lines[i])
    return (m.group("thread_name") or "").strip() or None if m else None


def _find_composer(lines: list[str], f: int) -> tuple[int, int, str] | None:
    """(first row, last row, prompt) above footer row f, or None."""
    if f < 2 or lines[f - 1].strip():
        return None
    last = f - 2
    while last > 0 and not lines[last].strip():
        last -= 1  # a trailing empty row of a multi-line draft
    for p in range(last, max(-1, last - MAX_COMPOSER_ROWS), -1):
        row = lines[p]
        if row.startswith(PROMPT + " ") or row.rstrip() == PROMPT:
            return p, last, PROMPT
        if row.startswith(SHELL + " ") or row.rstrip() == SHELL:
            return p, last, SHELL
        if row.strip() and not row.startswith("  "):
            return None
    return None


ACTIVITY = (*(("busy", m) for m in BUSY), ("worked", WORKED), ("interrupted", INTERRUPTED), ("prompt", HISTORY_PROMPT))
"""The activity rows above the composer, by the mark each shows (skeleton.latest reads the latest,
passing over the command popup's rows: its selected row starts `› /`)."""


def classify(snap: Snapshot) -> ScreenReading:
    """Read one Codex screen; see the module doc for the marks."""
    r = Reading(snap, "Codex")
    reasons, blockers, hints = r.reasons, r.blockers, r.hints
    lines = list(snap.lines)
    if (dead := r.pane()) is not None:
        return dead
    if any(RECONNECTING.search(ln) for ln in lines[-12:]):
        r.block("reconnecting", "`Reconnecting to server…`: the daemon is gone; typed text would wait in a dead TUI")
    f = footer_row(lines)
    found = _find_composer(lines, f) if f is not None else None
    if found is None:
        tail = lines[-25:]
        return r.no_composer(tail, DIALOG, "approval marks", "`› ` composer above a `<model> · <cwd>` footer",
                             other=([SELECTION], tail[-4:], "no composer; a selection view (`enter select · esc back`) is open"))

    first, last, prompt = found
    assert f is not None
    below = lines[f + 1:]
    composer, text = composer_state(snap, first, last, reasons, PLACEHOLDERS)
    if prompt == SHELL or any("Shell mode" in ln for ln in lines[f:]):
        r.block("shell-mode", "shell mode: the prompt is `!` (Enter would run a shell command)")
        if prompt == SHELL and composer == "unknown" and not text:
            composer = "empty"
    if text.startswith("/") and composer == "draft":
        r.block("slash-menu", f"composer starts with '/' ({text[:30]!r}): the command popup is open")
    elif any(SLASH_ROW.match(lines[i]) for i in range(max(0, first - 12), first)) and text.startswith("/"):
        r.block("slash-menu", "command popup rows above the composer")
    for pat, what in OVERLAYS:
        if any(pat.search(ln) for ln in lines[max(0, first - 20):first] + below):
            if "overlay" not in blockers:
                blockers.append("overlay")
            reasons.append(f"{what} is open")
    r.composer_blockers(composer)

    status, at = latest(lines, first - 1, ACTIVITY, LOOKBACK, skip=SLASH_ROW)
    activity = lines[at].strip() if at is not None else ""  # the activity row, when there is one
    goal = any(GOAL.search(ln) for ln in lines[f:])
    if status == "busy" or goal:
        kind = "busy"
        reasons.append(f"status row {at}: {activity[:70]!r}" if status == "busy" else "footer: Pursuing goal")
        if goal:
            hints.append("goal")
    else:
        kind = r.settle(status, {
            "worked": ("done-line", f"latest activity row {at} is a finished turn: {activity[:50]!r}; no `esc to interrupt`"),
            "interrupted": ("interrupted", f"latest activity row {at} is `Conversation interrupted`")},
            "fresh session: the start banner and no turn yet; no `esc to interrupt`"
            if any(BANNER.search(ln) for ln in lines[:8]) else None,
            f"no `esc to interrupt` and no finished-turn row above the composer (latest: {status or 'none'}): "
            "a prompt alone is not idle")
    if any(TAB_TO_QUEUE.match(ln) for ln in below):
        r.hint("tab-to-queue", "hint row: `tab to queue message` (text staged while busy)")
    if any(QUEUED.match(ln) for ln in lines[max(0, first - LOOKBACK):first]):
        r.hint("queued", "`Queued follow-up inputs` listed above the composer")
    if any(PENDING_STEER.match(ln) for ln in lines[max(0, first - LOOKBACK):first]):
        r.hint("steer-pending", "`Messages to be submitted after next tool call` listed above the composer")
    return r.done(kind, composer, text, (first, last))


def payload_visible(snap: Snapshot, payload: str) -> bool:
    """Is exactly `payload` (and nothing else) in the composer, at normal intensity?"""
    rows_at = draft_rows(classify(snap))
    if rows_at is None:
        return False
    first, last = rows_at
    rows = [snap.lines[first][2:]] + list(snap.lines[first + 1:last + 1])
    return wrapped_equals(rows, payload)


def _count_history(snap: Snapshot, payload: str, until: int | None) -> int:
    lines = snap.lines[:until] if until is not None else snap.lines
    return sum(1 for i in range(len(lines))
               if lines[i].startswith("› ") and history_contains(lines[i:i + 12], payload, "›"))


def _queued_follow_up(snap: Snapshot, payload: str, until: int | None) -> bool:
    lines = snap.lines[:until] if until is not None else snap.lines
    for i, ln in enumerate(lines):
        if QUEUED.match(ln) or PENDING_STEER.match(ln):
            block = "\n".join(x.rstrip() for x in lines[i + 1:i + 12])
            words = payload.split()
            pat = r"↳\s+" + r"\s+".join(re.escape(w) for w in words)
            if words and re.search(pat, block):
                return True
    return False


def submitted(before: Snapshot, after: Snapshot, payload: str) -> SubmitHint:
    """Screen hints after Enter (or Tab): emptied, steered into history, parked, queued."""
    a, top_a, in_history = enter_took(before, after, payload, classify, _count_history)
    in_composer = payload_visible(after, payload)
    tab_to_queue = in_composer and "tab-to-queue" in a.hints
    queued = _queued_follow_up(after, payload, top_a)
    return submit_hint(a, in_composer=in_composer, in_history=in_history, queued=queued, history="›",
                       queued_reason="payload listed (`↳`) under `Queued follow-up inputs` or `Messages to be "
                                     "submitted after next tool call`",
                       staged=" beside `tab to queue message`" if tab_to_queue else "", tab_to_queue=tab_to_queue)
