"""Characters a relay message may never carry: C0 controls, DEL, C1 controls, lone surrogates.

Why: a message body is typed into a TUI as keys (tmux) or handed verbatim to a
model (Codex's queue, Claude's socket). Typed, ESC+b becomes Alt-b, DEL erases
the character before it, TAB becomes a space or a completion, ^C interrupts:
the receiver gets a garbled partial line, or an action nobody approved. Queued,
the same bytes arrive invisible in the plan the operator approved. A lone
surrogate (what Python makes of an argument that was not valid UTF-8) cannot be
encoded at all. So such a body is refused before any plan, on every transport,
with one line naming the character and its position.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

_C0 = ("NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI "
       "DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US").split()
_C1 = ("PAD HOP BPH NBH IND NEL SSA ESA HTS HTJ VTS PLD PLU RI SS2 SS3 "
       "DCS PU1 PU2 STS CCH MW SPA EPA SOS SGCI SCI CSI ST OSC PM APC").split()
_SPOKEN = {"\t": "tab", "\n": "line feed", "\r": "carriage return", "\x1b": "escape", "\x7f": "delete",
           "\x03": "Ctrl-C", "\x04": "Ctrl-D", "\x08": "backspace", "\x00": "null"}


_FORBIDDEN = re.compile("[\\x00-\\x1f\\x7f-\\x9f\\ud800-\\udfff]")
"""`is_forbidden` as one character class (compiled at import: tiny, and every send checks a body)."""


def is_forbidden(ch: str) -> bool:
    """True for every C0 control, DEL, every C1 control and every lone surrogate."""
    o = ord(ch)
    return o < 0x20 or 0x7F <= o <= 0x9F or 0xD800 <= o <= 0xDFFF


def name_of(ch: str) -> str:
    """`U+001B ESC (escape)`, `U+0085 NEL`, `U+DCFF lone surrogate`: how the refusal names it."""
    o = ord(ch)
    if o < 0x20:
        short = _C0[o]
    elif o == 0x7F:
        short = "DEL"
    elif 0x80 <= o <= 0x9F:
        short = _C1[o - 0x80]
    elif 0xD800 <= o <= 0xDFFF:
        short = "lone surrogate (not valid Unicode: was the text valid UTF-8?)"
    else:
        short = ""
    spoken = _SPOKEN.get(ch)
    return f"U+{o:04X} {short}" + (f" ({spoken})" if spoken else "")


def first_forbidden(text: str) -> tuple[int, str] | None:
    """(1-based position, character) of the first forbidden character, or None."""
    m = _FORBIDDEN.search(text)  # one C scan: linear, fast on a long text
    return None if m is None else (m.start() + 1, m.group())


def control_refusal(text: str, what: str = "message") -> str | None:
    """The one-line refusal for `text`, or None when it holds no forbidden character."""
    hit = first_forbidden(text)
    if hit is None:
        return None
    pos, ch = hit
    more = sum(1 for _ in _FORBIDDEN.finditer(text)) - 1
    others = f" (and {more} more)" if more > 0 else ""
    return (f"refusing to send: the {what} holds the control character {name_of(ch)} at position {pos} of "
            f"{len(text)}{others}; a terminal would take it as a key and a model would get bytes the plan does "
            "not show — remove it (write tabs as spaces, keep the message on one line) and send again")


# -- showing text that came from a peer --------------------------------------------------
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
"""Bidirectional embeddings, overrides, isolates and marks: invisible, yet they reorder
what the terminal shows (a U+202E makes `txt.exe` read as `exe.txt`)."""
_INVISIBLE_BREAKS = frozenset("\u2028\u2029")


def gist(text: str, n: int) -> str:
    """`text` on one line (each run of whitespace one space), cut to `n` characters ending in `…`:
    the first words of a message where one line shows it (a repr, a table cell, a plan note, a
    diagram's label). Not a neutraliser: the line it goes into still passes `visible`."""
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


def visible(text: str, *, keep_newlines: bool = False) -> str:
    """`text` as a terminal may show it: nothing in it acts on the terminal or reorders it.

    Why one function: a line a peer wrote is printed by many echoes (the REPL's, `relay
    send --wait`, `relay inbox`/`why`/`log`, tables, reprs); an escape sequence in it could
    clear the screen or draw a forged `delivered ... verified` line, a bidi override could
    reverse what the operator reads. So every echo of inbound text passes this: each C0/C1
    control and DEL is shown as `\\x1b`, each bidi control, line/paragraph separator and
    lone surrogate as `⟨U+202E⟩`. A backslash stays itself (a peer's literal `\\x1b` is
    harmless text). `keep_newlines` leaves `\\n` for our own multi-line tables; JSON output
    does not use this (JSON escaping keeps the exact text safely).
    """
    pattern = _pattern(keep_newlines)
    m = pattern.search(text)
    for _ in range(_DISTINCT):  # each character present, replaced everywhere at once (str.replace, in C)
        if m is None:
            return text
        ch = m.group()
        text = text.replace(ch, _shown(ord(ch)))  # the pattern matches only what is shown differently
        m = pattern.search(text, m.start())  # what comes before is shown already; replacements are inert
    return text if m is None else text.translate(_table(keep_newlines))  # many different ones: one pass, one lookup each


_DISTINCT = 16
"""How many different characters `visible` replaces one by one (a pass each) before it translates
the whole text instead: linear either way, at most 16 passes."""


def _shown(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x20 or 0x7F <= code <= 0x9F else f"⟨U+{code:04X}⟩"


def _codes() -> list[int]:
    return [*range(0x20), *range(0x7F, 0xA0), *map(ord, BIDI | _INVISIBLE_BREAKS), *range(0xD800, 0xE000)]


@cache
def _pattern(keep_newlines: bool) -> re.Pattern[str]:
    """What `visible` shows differently, as one character class: a 1 MB peer line is searched in C
    and what it holds replaced in C (bench/bounded.py; a per-character Python loop took 0.4 s on
    1 MB). Built on first use: every command imports this module."""
    marks = "".join(f"\\U{code:08x}" for code in sorted(map(ord, BIDI | _INVISIBLE_BREAKS)))
    c0 = "\\x00-\\x09\\x0b-\\x1f" if keep_newlines else "\\x00-\\x1f"
    return re.compile(f"[{c0}\\x7f-\\x9f{marks}\\ud800-\\udfff]")


@cache
def _table(keep_newlines: bool) -> dict[int, str]:
    """`_pattern`'s characters as a translate table (~2,200 entries, ~1 ms each way to build): only
    for a text holding more than `_DISTINCT` different ones; a plan or a line with a few is shown
    without it (issue 40: both tables were built before every send's plan, ~2.5 ms)."""
    return {code: _shown(code) for code in _codes() if not (keep_newlines and code == 0x0A)}


def safe_echo(echo: Callable[[str], None]) -> Callable[[str], None]:
    """`echo` that shows every line through `visible` (newlines kept: our own messages span lines)."""
    if getattr(echo, "_relay_visible", False):
        return echo

    def shown(line: str) -> None:
        echo(visible(str(line), keep_newlines=True))

    shown._relay_visible = True  # type: ignore[attr-defined]
    return shown


# What a reader takes a text for, whatever a peer slipped in to keep a check from seeing it: the
# `relay-halt` check (core/envelope.contains_halt) and the consent-only flag (core/peertext) read this.
_LOOKALIKE = str.maketrans({"\u0430": "a", "\u0435": "e", "\u0443": "y", "\u04bb": "h", "\u04cf": "l",
                            "\u0442": "t", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0455": "s",
                            "\u0456": "i", "\u0445": "x"})


@cache
def _between_letters() -> re.Pattern[str]:
    """Format characters (Unicode category Cf, as of Python 3.11) and combining marks a peer can slip
    between letters; written out (scanning the code space costs 0.6 s), compiled on first use."""
    return re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
                      "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                      "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                      "\U000e0020-\U000e007f\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe00-\ufe0f"
                      "\ufe20-\ufe2f]")


def reading_form(text: str) -> str:
    """`text` as a reader takes it, for checks only (never shown, never sent): compatibility forms
    folded (fullwidth letters, ligatures), invisible format characters and combining marks dropped,
    case folded, the Cyrillic letters that look Latin read as Latin. Linear (1 MB: ~0.03 s)."""
    import unicodedata

    if text.isascii():
        return text.casefold()
    return _between_letters().sub("", unicodedata.normalize("NFKD", text).casefold()).translate(_LOOKALIKE)
