"""The one skeleton every kind's screen classifier fills with its marks.

Why: the three classifiers read a screen the same way and differed only in their marks. Each
starts from the pane (a dead pane is nothing to type into; copy mode means keys drive tmux), looks
for its composer (none: a dialog by its marks, else a screen it does not recognise), reads the
composer's state, adds what its own marks say (shell mode, menus, overlays, busy or idle), and ends
with the composer's own blockers (a draft, a composer it cannot read). `Reading` holds those common
steps; a classifier (claude_code/screen.py, codex/screen.py, gemini_cli/screen.py) calls them in
that order with its marks and its own words, so its captures and goldens read as before.
After Enter, each `submitted` weighs the same four signs in the same order (`submit_hint`): only
how a submitted message and a queued one look on its screen is its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from relay_repl.system.prefetch import sibling

if TYPE_CHECKING:
    from relay_repl.agents.screens.model import ScreenReading, Snapshot, SubmitHint
else:  # by name on the models' path, by file on `relay targets`' standard-library path (gemini_cli/plain_listing.py)
    ScreenReading = sibling(__name__, "relay_repl.agents.screens.model").ScreenReading


class Reading:
    """One screen being read: the blockers, hints and reasons found so far, in the order found."""

    def __init__(self, snap: Snapshot, client: str) -> None:
        self.snap, self.client = snap, client
        self.blockers: list[str] = []
        self.hints: list[str] = []
        self.reasons: list[str] = []

    def block(self, blocker: str, reason: str) -> None:
        self.blockers.append(blocker)
        self.reasons.append(reason)

    def hint(self, hint: str, reason: str) -> None:
        self.hints.append(hint)
        self.reasons.append(reason)

    def settle(self, status: str | None, idle: Mapping[str, tuple[str, str]], fresh: str | None,
               unknown: str) -> str:
        """The activity when no busy mark shows, by the latest status row's mark (`status`): idle only
        on positive evidence, a mark `idle` names (its hint and reason) or, with no status row at all,
        a fresh session (`fresh`: the reason, None when the screen does not show one); else unknown
        (`unknown`: why)."""
        if status is not None and status in idle:
            self.hint(*idle[status])
            return "idle"
        if status is None and fresh is not None:
            self.hint("fresh", fresh)
            return "idle"
        self.reasons.append(unknown)
        return "unknown"

    def pane(self) -> ScreenReading | None:
        """The pane's own state: dead (the whole reading), or in copy mode (a blocker), else None."""
        if self.snap.pane_dead:
            return ScreenReading(kind="unknown", composer="absent", blockers=["dead"],
                                 reasons=["pane_dead=1: the client exited"])
        if self.snap.pane_in_mode:
            self.block("copy-mode", f"pane_in_mode=1 ({self.snap.pane_mode or 'copy-mode'}): keys would drive tmux, "
                                    f"not {self.client}")
        return None

    def no_composer(self, tail: Sequence[str], dialog: Iterable[re.Pattern[str]], marks_are: str, missing: str,
                    other: tuple[Iterable[re.Pattern[str]], Sequence[str], str] | None = None) -> ScreenReading:
        """No composer found: a dialog when its marks (`dialog`) show in `tail` ("no composer;
        `marks_are` [...]"), or when `other` (marks, the rows to look in, the reason) does; else a
        screen not recognised ("no `missing`: screen not recognised")."""
        marks = sorted({m.pattern for m in dialog for ln in tail if m.search(ln)})
        if marks:
            self.block("dialog", f"no composer; {marks_are} {marks}")
        elif other is not None and any(m.search(ln) for m in other[0] for ln in other[1]):
            self.block("dialog", other[2])
        else:
            self.block("no-composer", f"no {missing}: screen not recognised")
        return ScreenReading(kind="unknown", composer="absent", blockers=self.blockers, reasons=self.reasons)

    def composer_blockers(self, composer: str) -> None:
        """A draft in the composer, or a composer it cannot read, blocks typing."""
        if composer == "draft":
            self.blockers.append("draft")
        elif composer == "unknown":
            self.blockers.append("composer-unknown")

    def done(self, kind: str, composer: str, text: str, rows: tuple[int, int]) -> ScreenReading:
        """The reading: the activity its marks found, the composer, and everything found on the way."""
        return ScreenReading(kind=kind, composer=composer, composer_text=text or None,
                             composer_rows=rows, blockers=self.blockers, hints=self.hints, reasons=self.reasons)


def latest(lines: Sequence[str], top: int, marks: Sequence[tuple[str, re.Pattern[str]]], lookback: int,
           skip: re.Pattern[str] | None = None) -> tuple[str | None, int | None]:
    """The latest status row at or above row `top` (at most `lookback` rows up): the name of the first
    of `marks` it shows and its row, passing over rows `skip` matches; (None, None) when none shows."""
    for i in range(top, max(-1, top - lookback), -1):
        row = lines[i]
        if skip is not None and skip.search(row):
            continue
        for name, mark in marks:
            if mark.search(row):
                return name, i
    return None, None


def submit_hint(after: ScreenReading, *, in_composer: bool, in_history: bool, queued: bool, history: str,
                queued_reason: str, staged: str = "", tab_to_queue: bool = False) -> SubmitHint:
    """The screen's hints after Enter, from the reading after it and what the classifier found:
    `history` is how its submitted message starts (`❯`, `›`, ` >`), `queued_reason` why its queued
    mark counts, `staged` what else the composer shows beside a payload still in it."""
    from relay_repl.agents.screens.hint import SubmitHint  # pydantic: a delivery stores it (never on a listing)

    reasons: list[str] = []
    if after.composer == "empty":
        reasons.append("composer is empty again")
    if in_composer:
        reasons.append("payload still in the composer" + staged)
    if in_history:
        reasons.append(f"payload shown as a submitted message (`{history} …`)")
    if queued:
        reasons.append(queued_reason)
    if after.kind == "busy":
        reasons.append("a turn is running")
    return SubmitHint(composer_emptied=after.composer == "empty", payload_in_composer=in_composer,
                      payload_in_history=in_history, turn_running=after.kind == "busy", queued=queued,
                      tab_to_queue=tab_to_queue, reasons=reasons)


def draft_rows(reading: ScreenReading) -> tuple[int, int] | None:
    """The composer's first and last rows when it holds a draft (what `payload_visible` compares),
    else None: an empty composer, or one the classifier could not place, shows no payload."""
    if reading.composer != "draft" or reading.composer_rows is None:
        return None
    return reading.composer_rows


def enter_took(before: Snapshot, after: Snapshot, payload: str, classify: Callable[[Snapshot], ScreenReading],
               count_history: Callable[[Snapshot, str, int | None], int],
               ) -> tuple[ScreenReading, int | None, bool]:
    """What a `submitted` reads first where a submitted message sits above the composer (Codex,
    Gemini CLI): the reading after Enter, the composer's top row then, and whether more copies of the
    payload stand above the composer than before (it went into history)."""
    a = classify(after)
    b = classify(before)
    top_a = a.composer_rows[0] if a.composer_rows else None
    top_b = b.composer_rows[0] if b.composer_rows else None
    return a, top_a, count_history(after, payload, top_a) > count_history(before, payload, top_b)
