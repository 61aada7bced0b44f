"""Classify a Claude Code 2.1.328 pane from a `Snapshot` (pure; no I/O).

Marks recorded from the real client in the lab (tests/screens/captures/claude-code-2.1.328/):

- The composer is a row starting `❯` + NO-BREAK SPACE directly under a `─` rule (the
  upper rule ends ` <session name> ─`), continued by rows indented two spaces, closed by
  another `─` rule. History rows use `❯` + an ordinary space, so they never match.
  Bash mode replaces the prompt by `!` + NO-BREAK SPACE (footer `! for shell mode`).
- Empty composer: the terminal cursor sits at column 2 of the prompt row and nothing
  after the prompt is drawn at normal intensity. Placeholders (`Press up to edit queued
  messages`) are dim (SGR 2), except their first cell, which carries Claude's fake
  reverse-video cursor. An operator draft with the cursor moved home also has the cursor
  at column 2 — it is told apart by its normal-intensity text.
- Busy: a spinner row `<glyph> <Gerund>…` above the composer (glyphs `· ✢ ✳ * ✶ ✻ ✽`), and
  the footer's ` · esc to interrupt`, which is only drawn while the composer is empty.
- Idle needs positive evidence: the latest status row above the composer is the
  finished-turn row `✻ <Verb> for 3s · done 11:58 AM` (no spinner after it), the fresh
  session banner with no turn yet, or `⎿  Interrupted`. A prompt alone is not idle.
- A permission dialog removes the composer: `Do you want to …?`, `❯ 1. Yes`,
  `3. No, and tell Claude what to do differently (esc)`.
- The slash menu: composer `❯ /…` with rows `  ❯ /add-dir   Add a working directory`.
- `?` on an empty composer swaps the footer for a shortcuts block (`/ for commands`).
- Copy mode is invisible in the capture: only `pane_in_mode` tells.

Anything not positively recognised is `unknown` (fail closed): the transport never types then.
"""

from __future__ import annotations

import re

from relay_repl.agents.screens.skeleton import Reading, latest, submit_hint
from relay_repl.agents.screens.model import Snapshot, ScreenReading, SubmitHint, composer_state, history_contains, wrapped_equals

PROMPT = "❯\u00a0"
SHELL_PROMPT = "!\u00a0"
RULE = re.compile(r"^─{10,}")
SPINNER = re.compile(r"^[·✢✳*✶✻✽] \S[^…]{0,60}…")
DONE = re.compile(r"^✻ \S.* for \S+.* · done ")
INTERRUPTED = re.compile(r"^\s+⎿\s+Interrupted")
BANNER = re.compile(r"Claude Code v\d+\.\d+")
HISTORY_PROMPT = re.compile(r"^❯ \S")
QUEUED = re.compile(r"^\s+⎿\s+Queued · ")
BUSY_FOOTER = "esc to interrupt"
DIALOG = [
    re.compile(r"^\s*Do you want to .+\?\s*$"),
    re.compile(r"^\s*❯ 1\. Yes"),
    re.compile(r"No, and tell Claude what to do differently"),
    re.compile(r"Esc to cancel · Tab to amend"),
    re.compile(r"Auto mode can't check actions in this session"),
    re.compile(r"Held message from another session"),
]
SLASH_ROW = re.compile(r"^\s+(?:❯\s+)?/[\w:-]+\s{2,}\S")
SHORTCUTS = [re.compile(r"/ for commands"), re.compile(r"@ for file paths"), re.compile(r"esc esc to clear input")]
SHELL_FOOTER = re.compile(r"^\s*! for shell mode\s*$")
PLACEHOLDERS = ("Press up to edit queued messages",)
MAX_COMPOSER_ROWS = 30
LOOKBACK = 1000  # rows above the composer searched for status rows: all of them (tall panes leave big gaps)


def _find_composer(lines: list[str]) -> tuple[int, int, str] | None:
    """(first row, last row, prompt) of the bottom-most composer between two rules."""
    for p in range(len(lines) - 1, 0, -1):
        row = lines[p]
        prompt = PROMPT if row.startswith(PROMPT) else SHELL_PROMPT if row.startswith(SHELL_PROMPT) else None
        if prompt is None or not RULE.match(lines[p - 1]):
            continue
        for b in range(p + 1, min(len(lines), p + 1 + MAX_COMPOSER_ROWS)):
            if RULE.match(lines[b]):
                rows = lines[p + 1:b]
                if all(r.startswith("  ") or not r.strip() for r in rows):
                    return p, b - 1, prompt
                return None
        return None
    return None


STATUS = (("spinner", SPINNER), ("done", DONE), ("interrupted", INTERRUPTED),
          ("prompt", HISTORY_PROMPT))  # a user message with nothing after it yet
"""The status rows above the composer, by the mark each shows (skeleton.latest reads the latest)."""


def classify(snap: Snapshot) -> ScreenReading:
    """Read one Claude Code screen; see the module doc for the marks."""
    r = Reading(snap, "Claude")
    reasons, blockers = r.reasons, r.blockers
    lines = [ln.rstrip("\n") for ln in snap.lines]
    if (dead := r.pane()) is not None:
        return dead
    found = _find_composer(lines)
    if found is None:
        return r.no_composer(lines[-25:], DIALOG, "dialog marks", "`❯\u00a0` composer row between two `─` rules")

    first, last, prompt = found
    top = first - 1
    footer = lines[last + 2:]
    composer, text = composer_state(snap, first, last, reasons, PLACEHOLDERS, fake_cursor=True)
    if prompt == SHELL_PROMPT or any(SHELL_FOOTER.search(f) for f in footer):
        r.block("shell-mode", "bash mode: the prompt is `!` (Enter would run a shell command)")
    if composer == "draft" and text.startswith("/"):
        r.block("slash-menu", f"composer starts with '/' ({text[:30]!r}): the command menu is open")
    menu_rows = [i for i in range(max(0, top - 12), top) if SLASH_ROW.match(lines[i])]
    menu_rows += [i for i in range(last + 2, len(lines)) if SLASH_ROW.match(lines[i])]
    if menu_rows and "slash-menu" not in blockers:
        r.block("slash-menu", f"command menu rows at {menu_rows[:3]}")
    if any(m.search(f) for m in SHORTCUTS for f in footer):
        r.block("overlay", "the `?` shortcuts panel replaces the footer")
    near = lines[max(0, top - 12):top]
    dialog_marks = sorted({m.pattern for m in DIALOG for ln in near if m.search(ln)})
    if dialog_marks:
        r.block("dialog", f"dialog marks just above the composer: {dialog_marks}")
    r.composer_blockers(composer)

    # activity
    status, at = latest(lines, top - 1, STATUS, LOOKBACK)
    activity = lines[at].strip() if at is not None else ""  # the activity row, when there is one
    busy_footer = any(BUSY_FOOTER in f for f in footer)
    if status == "spinner" or busy_footer:
        kind = "busy"
        if status == "spinner":
            reasons.append(f"spinner row {at}: {activity[:60]!r}")
        if busy_footer:
            reasons.append("footer shows `esc to interrupt`")
    else:
        fresh = any(BANNER.search(ln) for ln in lines[:12]) and not any(HISTORY_PROMPT.match(ln) for ln in lines[:top])
        kind = r.settle(status, {
            "done": ("done-line", f"latest status row {at} is a finished turn: {activity[:60]!r}; no spinner"),
            "interrupted": ("interrupted", f"latest status row {at} is `Interrupted`; no spinner")},
            "fresh session: the banner and no turn yet; no spinner" if fresh else None,
            f"no spinner and no finished-turn row above the composer (latest status: {status or 'none'}): "
            "a prompt alone is not idle")
    if any(QUEUED.match(ln) for ln in lines[max(0, top - LOOKBACK):top]):
        r.hint("queued", "a typed message waits as `⎿  Queued`")
    return r.done(kind, composer, text, (first, last))


def composer_rows_text(snap: Snapshot, reading: ScreenReading) -> list[str] | None:
    if reading.composer_rows is None:
        return None
    first, last = reading.composer_rows
    row0 = snap.lines[first]
    prompt = PROMPT if row0.startswith(PROMPT) else SHELL_PROMPT
    return [row0[len(prompt):]] + list(snap.lines[first + 1:last + 1])


def payload_visible(snap: Snapshot, payload: str) -> bool:
    """Is exactly `payload` (and nothing else) in the composer, at normal intensity?"""
    reading = classify(snap)
    if reading.composer != "draft" or reading.composer_rows is None:
        return False
    rows = composer_rows_text(snap, reading)
    if not rows:
        return False
    return wrapped_equals([r.replace("\u00a0", " ") for r in rows], payload)


def _count_history(snap: Snapshot, payload: str, until: int | None) -> int:
    lines = snap.lines[:until] if until is not None else snap.lines
    n = 0
    for i in range(len(lines)):
        if lines[i].startswith("❯ ") and history_contains(lines[i:i + 12], payload, "❯"):
            n += 1
    return n


def submitted(before: Snapshot, after: Snapshot, payload: str) -> SubmitHint:
    """Screen hints that Enter took: the composer emptied, the payload moved into history."""
    a = classify(after)
    top_after = a.composer_rows[0] - 1 if a.composer_rows else None
    top_before = classify(before).composer_rows
    n_before = _count_history(before, payload, top_before[0] - 1 if top_before else None)
    n_after = _count_history(after, payload, top_after)
    in_history = n_after > n_before
    in_composer = payload_visible(after, payload)
    queued = False
    if in_history and top_after is not None:
        tail = after.lines[max(0, top_after - LOOKBACK):top_after]
        queued = any(QUEUED.match(ln) for ln in tail)
    return submit_hint(a, in_composer=in_composer, in_history=in_history, queued=queued, history="❯",
                       queued_reason="`⎿  Queued`: Claude holds it for the next tool boundary or turn")
