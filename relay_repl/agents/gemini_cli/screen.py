"""Classify a Gemini CLI 0.61.0 pane from a `Snapshot` (pure; no I/O).

Marks recorded from the real client in the lab (tests/agents/screens/captures/gemini-cli-0.61.0/,
adapters/gemini-cli.md "Screen marks"):

- Bottom of the screen: [status row] · a `─` rule · the mode row (`Shift+Tab to accept
  edits`, `YOLO Ctrl+Y`, ` shell mode enabled (esc to disable)`) · blank · the composer
  (` > ` prompt at column 1, ` * ` in YOLO mode, continuation rows indented three spaces) ·
  blank · [completion list] · footer (a labels row and a values row). With a true-colour
  terminal (`COLORTERM=truecolor`) the blank rows around the composer are half-block bars
  (`▄▄▄` above, `▀▀▀` below) that paint its background. The composer is searched just under the
  last rule: history rows (` > text`) are above it, so they never match.
- Empty composer: the row is ` >` + Gemini's own reverse-video cursor cell at column 3 +
  the placeholder `Type your message or @path/to/file` (grey, not dim), and the terminal
  cursor is at column 3. A draft is drawn from column 3 and the reverse cell follows it.
- Busy: the status row `<spinner> Thinking... (esc to cancel, 3s)` (the words vary with the
  model's thought; `(esc to cancel, ` does not). Idle needs positive evidence: no spinner
  and the status row is the bare `? for shortcuts` hint, which Gemini draws only while
  nothing runs (and hides while the composer holds text: then no spinner above the rule
  is the evidence).
- Enter while busy queues the line: `Queued (press ↑ to edit):` and the line indented four
  spaces, above the spinner. Enter while Gemini is still starting (its config or its MCP servers'
  discovery not done) queues it too, with no spinner: `ℹ Waiting for MCP servers to initialize...
  Slash commands are still available and prompts will be queued.` (or `Initializing... Prompts will
  be queued.`) in the history, then the same Queued block above the bare `? for shortcuts` hint;
  the queue is sent when discovery ends (adapters/gemini-cli.md GM §6). A Queued block with no turn
  running is the blocker `queue-held`: a line typed now would join that queue, not reach the model.
  Before the first queued line nothing on the screen tells that discovery still runs.
- Shell mode: prompt `!` and mode row `shell mode enabled (esc to disable)`. Slash and `@`
  completion: a list between the composer and the footer. `?` on an empty composer opens
  a `Shortcuts See /help for more` block above the rule.
- Approval: the composer and the rule disappear; a box with `Allow execution of [...]?` and
  numbered options `● 1. Allow once`.
- Copy mode is invisible in the capture: only `pane_in_mode` tells.

Anything not positively recognised is `unknown` (fail closed).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from relay_repl.system.prefetch import sibling

if TYPE_CHECKING:
    from relay_repl.agents.screens.skeleton import Reading, draft_rows, enter_took, submit_hint
    from relay_repl.agents.screens.model import (
        Snapshot,
        ScreenReading,
        SubmitHint,
        composer_join,
        history_contains,
        parse_styles,
        wrapped_equals,
    )
else:  # by name on the models' path; by file on `relay targets`' standard-library path (plain_listing.py),
    # where importing a sibling by name would first run the agents package (pydantic)
    _skeleton = sibling(__name__, "relay_repl.agents.screens.skeleton")
    _model = sibling(__name__, "relay_repl.agents.screens.model")
    Reading, draft_rows, enter_took, submit_hint = (_skeleton.Reading, _skeleton.draft_rows, _skeleton.enter_took,
                                                    _skeleton.submit_hint)
    composer_join, history_contains, parse_styles, wrapped_equals = (_model.composer_join, _model.history_contains,
                                                                     _model.parse_styles, _model.wrapped_equals)

RULE = re.compile(r"^─{20,}\s*$")
PROMPT_ROW = re.compile(r"^ ([>!*])(?: |$)")  # `*`: the composer in YOLO mode
TEXT_COL = 3  # where the composer's text (and the empty composer's cursor) starts
CONTINUATION = " " * TEXT_COL
PLACEHOLDERS = ("Type your message or @path/to/file", "Type your shell command")
BUSY = re.compile(r"\(esc to cancel, \d")
IDLE_HINT = re.compile(r"^\s+\? for shortcuts\s*$")
BANNER = re.compile(r"Gemini CLI v\d+\.\d+")
HISTORY = re.compile(r"^(?: > \S|✦ )")
QUEUED = re.compile(r"^\s+Queued \(press ↑ to edit\):")
STARTING = re.compile(r"^ℹ (Waiting for MCP servers to initialize|Initializing)\.\.\. .*[Pp]rompts will be queued")
SHELL_MODE = re.compile(r"shell mode enabled")
SHORTCUTS = re.compile(r"^ Shortcuts See /help for more")
DIALOG = [
    re.compile(r"Allow execution of \["),
    re.compile(r"^│\s+●?\s*\d\. Allow once"),
    re.compile(r"Apply this change\?"),
    re.compile(r"Do you want to proceed\?"),
]
COMPLETION_ROW = re.compile(r"^ ?(?:[\w./:-]+\s{2,}\S|\S.*\[(?:Agent|File|Folder|Skill)\]\s*$|▼|▲|\(\d+/\d+\))")
FOOTER_SESSION = re.compile(r"\bsession\s*$")
SESSION_ID = re.compile(r"\b([0-9a-f]{8})\s*$")
STATUS_ROWS = 8  # rows above the rule searched for the spinner (the Queued block sits there too)


def _rule(lines: list[str]) -> int | None:
    for i in range(len(lines) - 1, -1, -1):
        if RULE.match(lines[i]):
            return i
    return None


def _find_composer(lines: list[str], rule: int) -> tuple[int, int, str] | None:
    """(first row, last row, prompt) of the composer under the rule at `rule`, or None."""
    for first in range(rule + 1, min(len(lines), rule + 5)):
        m = PROMPT_ROW.match(lines[first])
        if m:
            last = first
            while last + 1 < len(lines) and lines[last + 1].startswith(CONTINUATION) and lines[last + 1].strip():
                last += 1
            return first, last, m.group(1)
    return None


def _rows(snap: Snapshot, first: int, last: int) -> list[str]:
    return [snap.lines[first][TEXT_COL:]] + [r[TEXT_COL:] for r in snap.lines[first + 1:last + 1]]


def _composer_state(snap: Snapshot, first: int, last: int, reasons: list[str]) -> tuple[str, str]:
    rows = _rows(snap, first, last)
    text = composer_join(rows).strip()
    cursor_home = snap.cursor_y == first and snap.cursor_x == TEXT_COL
    if first == last and (not text or text in PLACEHOLDERS):
        if not cursor_home:
            reasons.append(f"composer row {first} reads empty but the cursor is at ({snap.cursor_x},{snap.cursor_y})")
            return "unknown", text
        if snap.esc_lines is None or len(snap.esc_lines) != len(snap.lines):
            reasons.append(f"composer reads {text!r} with the cursor at column {TEXT_COL}, but there is no -e capture "
                           "to find Gemini's own cursor cell")
            return "unknown", text
        cells = parse_styles(snap.esc_lines)[first]
        rev = [c.col for c in cells if c.reverse]
        if rev and rev[0] == TEXT_COL:
            reasons.append(f"composer row {first}: Gemini's reverse cursor cell at column {TEXT_COL}, then "
                           f"{'the placeholder' if text else 'nothing'}: empty")
            return "empty", ""
        reasons.append(f"composer reads {text!r} but Gemini's cursor cell is at {rev[:1]}, not column {TEXT_COL}")
        return "unknown", text
    reasons.append(f"composer holds {text!r} (cursor at {snap.cursor_x},{snap.cursor_y})")
    return "draft", "\n".join(r.rstrip() for r in rows) if last > first and not text.startswith("/") else text


def footer_session(snap: Snapshot) -> str | None:
    """The 8-hex session id prefix the footer shows (`ui.footer.items` holding `session-id`), if any."""
    lines = snap.lines
    for i in range(len(lines) - 2, -1, -1):
        if FOOTER_SESSION.search(lines[i]):
            m = SESSION_ID.search(lines[i + 1])
            return m.group(1) if m else None
    return None


def classify(snap: Snapshot) -> ScreenReading:
    """Read one Gemini CLI screen; see the module doc for the marks."""
    r = Reading(snap, "Gemini")
    reasons, blockers, hints = r.reasons, r.blockers, r.hints
    lines = list(snap.lines)
    if (dead := r.pane()) is not None:
        return dead
    rule = _rule(lines)
    found = _find_composer(lines, rule) if rule is not None else None
    if rule is None or found is None:
        return r.no_composer(lines[-30:], DIALOG, "approval marks", "` > ` composer under a `─` rule")
    first, last, prompt = found
    composer, text = _composer_state(snap, first, last, reasons)
    mode_rows = lines[rule + 1:first]
    if prompt == "!" or any(SHELL_MODE.search(ln) for ln in mode_rows):
        blockers.append("shell-mode")
        reasons.append("shell mode: the prompt is `!` (Enter would run a shell command)")
    below = [ln for ln in lines[last + 1:] if ln.strip()]
    menu = [ln for ln in below[:-2] if COMPLETION_ROW.match(ln)]  # the footer's two rows are last
    if composer == "draft" and (text.startswith("/") or text.endswith("@") or menu):
        blockers.append("slash-menu")
        reasons.append(f"a completion list is open under the composer ({len(menu)} rows; text {text[:20]!r}): "
                       "Enter would pick an entry")
    above = lines[max(0, rule - STATUS_ROWS):rule]
    if any(SHORTCUTS.match(ln) for ln in lines[max(0, rule - 12):rule]):
        blockers.append("overlay")
        reasons.append("the `?` Shortcuts panel is open")
    r.composer_blockers(composer)

    busy_rows = [ln for ln in above if BUSY.search(ln)]
    status = next((ln for ln in reversed(above) if ln.strip()), "")
    if busy_rows:
        kind = "busy"
        reasons.append(f"status row: {busy_rows[-1].strip()[:60]!r}")
    elif IDLE_HINT.match(status):
        kind = "idle"
        reasons.append("status row is the bare `? for shortcuts` hint: nothing runs")
    elif composer == "draft" and not any(BUSY.search(ln) for ln in lines[:rule]):
        kind = "idle"
        reasons.append("no `(esc to cancel, …)` spinner anywhere above the rule (the hint row hides under a draft)")
    else:
        kind = "unknown"
        reasons.append(f"no spinner and no `? for shortcuts` hint above the rule (last status row {status.strip()[:50]!r})")
    if kind == "idle" and not any(HISTORY.match(ln) for ln in lines[:rule]) and any(BANNER.search(ln) for ln in lines[:12]):
        hints.append("fresh")
        reasons.append("fresh session: the start banner and no turn yet")
    if any(QUEUED.match(ln) for ln in lines[:rule]):
        hints.append("queued")
        if kind == "busy":
            reasons.append("`Queued (press ↑ to edit):` listed above the spinner")
        else:
            why = next((m.group(1) for ln in lines[:rule] if (m := STARTING.match(ln))), None)
            blockers.append("queue-held")
            reasons.append("`Queued (press ↑ to edit):` with no turn running: Gemini holds the queue until it has "
                           + ("started (`Initializing...`)" if why == "Initializing" else "its MCP servers ready")
                           + " (shown: " + (f"`{why}...`" if why else "no start message on screen") + "); a line "
                           "typed now would join it. Wait until the queued line is sent (the Queued block goes), "
                           "or look at `/mcp list` in that pane")
    return r.done(kind, composer, text, (first, last))


def payload_visible(snap: Snapshot, payload: str) -> bool:
    """Is exactly `payload` (and nothing else) in the composer?"""
    rows_at = draft_rows(classify(snap))
    return rows_at is not None and wrapped_equals(_rows(snap, *rows_at), payload)


def _count_history(snap: Snapshot, payload: str, until: int | None) -> int:
    lines = snap.lines[:until] if until is not None else snap.lines
    return sum(1 for i in range(len(lines))
               if lines[i].startswith(" > ") and history_contains([ln[1:] for ln in lines[i:i + 12]], payload, ">"))


def _queued(snap: Snapshot, payload: str, until: int | None) -> bool:
    lines = snap.lines[:until] if until is not None else snap.lines
    words = payload.split()
    for i, ln in enumerate(lines):
        if QUEUED.match(ln) and words:
            block = "\n".join(x.rstrip() for x in lines[i + 1:i + 12])
            if re.search(r"\s+".join(re.escape(w) for w in words), block):
                return True
    return False


def submitted(before: Snapshot, after: Snapshot, payload: str) -> SubmitHint:
    """Screen hints after Enter: emptied, shown as a submitted message, queued behind a busy turn."""
    a, top_a, in_history = enter_took(before, after, payload, classify, _count_history)
    in_composer = payload_visible(after, payload)
    queued = _queued(after, payload, top_a)
    held = "queue-held" in a.blockers
    return submit_hint(a, in_composer=in_composer, in_history=in_history, queued=queued, history=" >",
                       queued_reason="payload listed under `Queued (press ↑ to edit):`" + (
                           " with no turn running: Gemini holds it until it has started (its MCP servers "
                           "ready); not sent to the model yet (GM §6)" if held else ""))
