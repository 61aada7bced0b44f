"""Values the screen classifiers read and return, plus a tiny SGR reader. Standard library only.

Why values and not a live pane: a classifier that only sees a `Snapshot` is a pure
function, so every screen the real clients ever showed us can be replayed from a
recorded capture (tests/screens/captures/<client-version>/) and a new client
release that changes its screen becomes a failing test, not a mistyped message.

A snapshot keeps the pane's rows exactly as tmux shows them (row i is screen row
i, so `cursor_y` indexes `lines`); both TUIs word-wrap their own composer with a
two-space continuation indent, so `capture-pane -J` would join nothing there and
the classifiers join composer rows themselves. The `-e` capture (`esc_lines`) is
kept because some facts exist only as attributes: a placeholder is drawn dim
(SGR 2) and must never be read as an operator's draft.
"""

from __future__ import annotations

import re
import time
import unicodedata
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

if TYPE_CHECKING:  # pydantic: SubmitHint is stored with a delivery (hint.py), loaded on first use
    from relay_repl.agents.screens.hint import SubmitHint as SubmitHint

Kind = Literal["idle", "busy", "unknown"]
Composer = Literal["empty", "draft", "absent", "unknown"]
KINDS: tuple[str, ...] = ("idle", "busy", "unknown")  # Kind's values (a classifier's word is checked, as the model did)
COMPOSERS: tuple[str, ...] = ("empty", "draft", "absent", "unknown")  # Composer's

BLOCKERS = (
    "dead",          # the pane's process exited (remain-on-exit keeps the pane)
    "copy-mode",     # tmux copy/view mode: keys would drive tmux, not the client
    "dialog",        # a permission/approval prompt: keys would answer it
    "overlay",       # any other modal layer (shortcuts help, popups, transcript browser, warnings)
    "slash-menu",    # the command popup: Enter would run a command
    "shell-mode",    # `!` mode: Enter would run a shell command
    "draft",         # the composer holds text we did not type (never overwrite it)
    "reconnecting",  # Codex lost its app-server daemon
    "no-composer",   # no composer recognised where it must be
    "composer-unknown",  # a composer, but its content cannot be read safely
)


def __getattr__(name: str) -> Any:
    """`SubmitHint`, the one pydantic value here (a delivery stores it: TmuxProgress), from hint.py on first use."""
    if name == "SubmitHint":
        from relay_repl.agents.screens.hint import SubmitHint

        return SubmitHint
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Value:
    """A frozen value with keyword fields (`__slots__`), compared, copied and dumped by them.

    Why not pydantic (or dataclasses): a Snapshot and a ScreenReading cross no boundary (a reading
    enters a delivery's evidence as its `model_dump()` dict), and `relay targets` reads a Gemini pane's
    state through them on its standard-library path (agents/gemini_cli/plain_listing.py, issue 40),
    where pydantic alone was most of the budget and dataclasses imports inspect. The pydantic names
    `model_copy` and `model_dump` are kept: every caller of the models these were keeps working."""

    __slots__: tuple[str, ...] = ()

    def _set(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a {type(self).__name__} is frozen")

    def model_dump(self) -> dict[str, Any]:
        """Every field by name, lists copied (what the pydantic model's `model_dump()` gave)."""
        out: dict[str, Any] = {}
        for k in self.__slots__:
            v = getattr(self, k)
            out[k] = list(v) if isinstance(v, list) else v
        return out

    def model_copy(self, update: dict[str, Any] | None = None) -> Any:
        """A copy with the fields `update` names replaced (the pydantic model's `model_copy(update=...)`)."""
        fields = {k: getattr(self, k) for k in self.__slots__}
        unknown = set(update or {}) - set(fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field(s) {sorted(unknown)}")
        return type(self)(**{**fields, **(update or {})})

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # list fields: as unhashable as the models were

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__)})"


class Snapshot(_Value):
    """One consistent reading of a pane: rows, rows with SGR escapes, and tmux formats.

    `lines`: capture-pane -p, one string per screen row (no -J), row i = screen row i; `esc_lines`:
    capture-pane -p -e, the same rows, None if not captured."""

    __slots__ = ("lines", "esc_lines", "cursor_x", "cursor_y", "pane_in_mode", "pane_mode", "alternate_on",
                 "pane_current_command", "pane_pid", "pane_dead", "pane_width", "pane_height", "pane_id", "taken_at")

    lines: list[str]
    esc_lines: list[str] | None
    cursor_x: int
    cursor_y: int
    pane_in_mode: bool
    pane_mode: str
    alternate_on: bool
    pane_current_command: str
    pane_pid: int | None
    pane_dead: bool
    pane_width: int | None
    pane_height: int | None
    pane_id: str | None
    taken_at: float

    def __init__(self, *, lines: list[str], esc_lines: list[str] | None = None, cursor_x: int = 0, cursor_y: int = 0,
                 pane_in_mode: bool = False, pane_mode: str = "", alternate_on: bool = False,
                 pane_current_command: str = "", pane_pid: int | None = None, pane_dead: bool = False,
                 pane_width: int | None = None, pane_height: int | None = None, pane_id: str | None = None,
                 taken_at: float | None = None) -> None:
        self._set(lines=list(lines), esc_lines=None if esc_lines is None else list(esc_lines), cursor_x=cursor_x,
                  cursor_y=cursor_y, pane_in_mode=pane_in_mode, pane_mode=pane_mode, alternate_on=alternate_on,
                  pane_current_command=pane_current_command, pane_pid=pane_pid, pane_dead=pane_dead,
                  pane_width=pane_width, pane_height=pane_height, pane_id=pane_id,
                  taken_at=time.time() if taken_at is None else taken_at)

    @property
    def text(self) -> str:
        return "\n".join(ln.rstrip() for ln in self.lines)

    def excerpt(self, n: int = 14) -> str:
        """The bottom `n` non-blank rows (what a human would look at), for evidence."""
        rows = [ln.rstrip() for ln in self.lines if ln.strip()]
        return "\n".join(rows[-n:])

    def meta(self) -> dict[str, object]:
        """The tmux format values, for evidence and for capture sidecars."""
        return {
            "cursor_x": self.cursor_x, "cursor_y": self.cursor_y, "pane_in_mode": self.pane_in_mode,
            "pane_mode": self.pane_mode, "alternate_on": self.alternate_on,
            "pane_current_command": self.pane_current_command, "pane_pid": self.pane_pid,
            "pane_dead": self.pane_dead, "pane_width": self.pane_width, "pane_height": self.pane_height,
        }


class ScreenReading(_Value):
    """What a classifier concluded, and why (every conclusion carries its evidence).

    `composer_rows`: the first and last screen row of the composer; `hints`: machine tokens (fresh,
    done-line, queued, tab-to-queue, steer-pending...)."""

    __slots__ = ("kind", "composer", "composer_text", "composer_rows", "blockers", "hints", "reasons")

    kind: Kind
    composer: Composer
    composer_text: str | None
    composer_rows: tuple[int, int] | None
    blockers: list[str]
    hints: list[str]
    reasons: list[str]

    def __init__(self, *, kind: str, composer: str, composer_text: str | None = None,
                 composer_rows: tuple[int, int] | None = None, blockers: list[str] | None = None,
                 hints: list[str] | None = None, reasons: list[str] | None = None) -> None:
        if kind not in KINDS or composer not in COMPOSERS:
            raise ValueError(f"a screen reading is {KINDS} and {COMPOSERS}, not {kind!r} and {composer!r}")
        self._set(kind=kind, composer=composer, composer_text=composer_text,
                  composer_rows=None if composer_rows is None else tuple(composer_rows),
                  blockers=list(blockers or ()), hints=list(hints or ()), reasons=list(reasons or ()))

    @property
    def typable(self) -> bool:
        """Safe to type into: a recognised state, an empty composer, nothing in the way."""
        return self.kind != "unknown" and self.composer == "empty" and not self.blockers

    def summary(self) -> str:
        bl = f" blockers={','.join(self.blockers)}" if self.blockers else ""
        txt = f" text={self.composer_text!r}" if self.composer_text else ""
        return f"{self.kind}/{self.composer}{bl}{txt}"


# -- SGR reading ---------------------------------------------------------------------------

class Cell(NamedTuple):
    """One character with the attributes a classifier cares about and its screen column."""

    ch: str
    col: int
    dim: bool
    reverse: bool
    bold: bool


_CSI = re.compile(r"\x1b\[([0-9;:]*)([A-Za-z])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def parse_styles(esc_lines: list[str]) -> list[list[Cell]]:
    """Cells per row of a `capture-pane -e` capture.

    tmux emits attribute *changes*, and they carry over from one row to the next
    (a row often starts with the reset that closes the previous row's dim or
    reverse run), so the rows are read in order with one running state.
    """
    dim = reverse = bold = False
    out: list[list[Cell]] = []
    for line in esc_lines:
        cells: list[Cell] = []
        col = 0
        i = 0
        line = _OSC.sub("", line)
        while i < len(line):
            ch = line[i]
            if ch == "\x1b":
                m = _CSI.match(line, i)
                if m is None:
                    i += 1
                    continue
                if m.group(2) == "m":
                    params = [p for p in re.split(r"[;:]", m.group(1))] or ["0"]
                    j = 0
                    while j < len(params):
                        p = params[j]
                        n = int(p) if p.isdigit() else 0
                        if n == 0:
                            dim = reverse = bold = False
                        elif n == 1:
                            bold = True
                        elif n == 2:
                            dim = True
                        elif n == 22:
                            dim = bold = False
                        elif n == 7:
                            reverse = True
                        elif n == 27:
                            reverse = False
                        elif n in (38, 48, 58):
                            # extended colour: 5;n or 2;r;g;b follow
                            if j + 1 < len(params) and params[j + 1] == "5":
                                j += 2
                            elif j + 1 < len(params) and params[j + 1] == "2":
                                j += 4
                        j += 1
                i = m.end()
                continue
            cells.append(Cell(ch, col, dim, reverse, bold))
            col += char_width(ch)
            i += 1
        out.append(cells)
    return out


def plain(cells: list[Cell]) -> str:
    return "".join(c.ch for c in cells)


# -- payload matching ----------------------------------------------------------------------

def wrapped_equals(rows: list[str], payload: str) -> bool:
    """Do these composer rows (prompt already removed) show exactly `payload`?

    Both TUIs word-wrap the composer themselves, indenting continuation rows by two
    spaces; a wrap eats the whitespace at the break, and a word longer than a row
    is broken without any. So: each row's text must appear in order, and between
    rows the payload may have any whitespace run (or none). Everything else —
    characters, case, inner spacing — must match exactly.
    """
    if not rows:
        return payload == ""
    parts = [rows[0].rstrip()] + [r[2:].rstrip() if r.startswith("  ") else r.rstrip() for r in rows[1:]]
    pattern = r"\s*".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern + r"\s*", payload) is not None


def composer_join(rows: list[str]) -> str:
    """A readable one-line rendering of composer rows (wrap breaks become one space)."""
    parts = [rows[0].rstrip()] + [r[2:].rstrip() if r.startswith("  ") else r.rstrip() for r in rows[1:]]
    return " ".join(p for p in parts if p) if len(parts) > 1 else parts[0]


def composer_state(snap: Snapshot, first: int, last: int, reasons: list[str], placeholders: tuple[str, ...], *,
                   fake_cursor: bool = False) -> tuple[str, str]:
    """('empty'|'draft'|'unknown', text) of composer rows `first`..`last` whose text starts at
    column 2 (a one-cell prompt and a space), for every client that draws its placeholder dim.

    Empty only when the cursor sits at column 2 of the first row and nothing there is at normal
    intensity: a placeholder's words can be typed too, so without a `-e` capture a text that
    reads like one of `placeholders` is unknown (fail closed). `fake_cursor`: the client draws
    its own reverse-video cursor over the placeholder's first letter (Claude Code)."""
    lines = snap.lines
    rows = [lines[first][2:]] + lines[first + 1:last + 1]
    text = composer_join(rows).strip()
    cursor_home = snap.cursor_y == first and snap.cursor_x == 2
    if not text:
        if cursor_home:
            reasons.append(f"composer row {first} is empty and the cursor is at column 2")
            return "empty", ""
        reasons.append(f"composer row {first} looks empty but the cursor is at ({snap.cursor_x},{snap.cursor_y})")
        return "unknown", ""
    if snap.esc_lines is None or len(snap.esc_lines) != len(lines):
        if text in placeholders:
            reasons.append(f"composer reads like the placeholder {text!r}, but there is no -e capture to check dimness")
            return "unknown", text
        reasons.append(f"composer holds {text!r} (no -e capture to tell a dim placeholder from a draft)")
        return "draft", text
    normal = [c.ch for r, cells in enumerate(parse_styles(snap.esc_lines[first:last + 1])) for c in cells
              if not (r == 0 and c.col < 2) and c.ch.strip() and not c.dim
              and not (fake_cursor and cursor_home and r == 0 and c.col == 2 and c.reverse)]
    if not normal and cursor_home:
        reasons.append(f"composer shows a dim placeholder {text!r} with the cursor at column 2: empty")
        return "empty", ""
    if not normal:
        reasons.append(f"composer text {text!r} is dim but the cursor is at ({snap.cursor_x},{snap.cursor_y}), "
                       "not column 2")
        return "unknown", text
    reasons.append(f"composer holds {text!r} at normal intensity (cursor at {snap.cursor_x},{snap.cursor_y})")
    return "draft", text


def history_contains(lines: list[str], payload: str, prompt: str) -> bool:
    """Is `payload` shown as a submitted message (`<prompt> payload`, possibly wrapped)?"""
    words = payload.split()
    if not words:
        return False
    body = r"\s+".join(re.escape(w) for w in words)
    text = "\n".join(ln.rstrip() for ln in lines)
    return re.search(r"(?m)^" + re.escape(prompt) + r"[ \u00a0]" + body + r"\s*$", text) is not None
