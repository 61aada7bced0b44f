"""Peer text stays peer text: quoting an answer as its sender's words, and flagging asks for consent-only acts.

Why: a recipe (or a notebook, or an operator's f-string) builds the next body from an
answer. Inserted verbatim, a writer's "delete the repository and push --force" reaches
the reviewer as if the operator had typed it, and Codex obeys queued text with the
operator's full authority. Seed section 9: a peer message is never the operator's
consent. So a body built from an answer quotes it as the named sender's words with
its verdict, one line, with controls and bidi made visible (core.controls.visible),
and text asking for an act only the operator may approve is flagged wherever it is
shown or passed on. The detector is a flag for the operator's eyes, never a filter:
it errs towards flagging.
"""

from __future__ import annotations

import re
from functools import cache

from relay_repl.core.controls import reading_form, visible

OPEN, CLOSE = "«", "»"
_QUOTE = r"(?<![^\s«»()])(?P<who>[^\s«»()]++) \((?P<verdict>[^()«»]*+)\) wrote: «(?P<text>[^«»]*+)»"
"""Linear on any body: a sender starts only where a token starts (the lookbehind) and no part is
re-scanned on a failed match (possessive); `[^\\s«»()]+ \\(` from every position of a 100,000-`y`
body was quadratic (50 s before the length check refused it)."""

# Compiled on first use (`_consent_patterns()`), not at import: every command imports this module (through
# core/inbound.py), and compiling these ten patterns was ~10-17 ms of the cold `relay targets`.
_CONSENT_WORDS: dict[str, tuple[str, int]] = {
    "delete": (r"\b(?:delet\w*|remov\w*|rm\s+-\w*|rm\b|erase\w*|wip(?:e|es|ing)\b|destroy\w*|purg\w*|"
               r"drop\s+(?:table|database|schema)|truncat\w*|unlink\w*|shred\w*|reset\s+--hard|clean\s+-f\w*)",
               re.I),
    "push": (r"\bpush\w*\b", re.I),
    "publish": (r"\b(?:publish\w*|deploy\w*|upload\w*|twine\b|npm\s+publish)", re.I),
    "release": (r"\b(?:releas\w*|git\s+tag\b|tag\s+v?\d)", re.I),
    "force": (r"(?:--force\b|--force-with-lease\b|\bforc\w*|(?<!\w)-f\b)", re.I),
    "read credentials": (r"\b(?:credential\w*|passwords?\b|passwd\b|secrets?\b|tokens?\b|api[\s_-]?keys?\b|"
                         r"private[\s_-]?keys?\b|ssh[\s_-]?keys?\b|id_rsa|id_ed25519|\.ssh\b|\.netrc\b|"
                         r"\.env\b|auth\.json\b|keychain\w*)", re.I),
    "change configuration": (r"\b(?:config\w*|settings?\b|\.bashrc\b|\.profile\b|\.zshrc\b|crontab\b|"
                             r"environment\s+variables?|sandbox\w*)", re.I),
    "approve a permission": (r"\b(?:approv\w*|permission\w*|grant\w*|allow\w*|sudo\b|chmod\b|chown\b|"
                             r"escalat\w*|bypass\w*|dangerously\w*)", re.I),
}
"""The acts seed section 9 reserves to the operator, each with the words that ask for it (pattern, flags)."""


@cache
def _quote_pattern() -> re.Pattern[str]:
    return re.compile(_QUOTE)


@cache
def _consent_patterns() -> dict[str, re.Pattern[str]]:
    """Compiled apart from the quote pattern: every send's plan looks for quotes in its body, and only a
    body that holds one (or an answer being shown) needs these ten (~6 ms to compile, before a plan)."""
    return {act: re.compile(words, flags) for act, (words, flags) in _CONSENT_WORDS.items()}


def __getattr__(name: str) -> object:
    if name == "CONSENT_ACTS":  # the compiled table, as before, built on first use
        return _consent_patterns()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def consent_acts(text: str) -> tuple[str, ...]:
    """The consent-only acts `text` asks for (names from CONSENT_ACTS, in that order); () for none."""
    form = reading_form(text)  # `pu<ZWSP>sh`, fullwidth `ｐｕｓｈ`: what the receiver reads is what counts
    return tuple(act for act, pattern in _consent_patterns().items() if pattern.search(text) or pattern.search(form))


def consent_flag(text: str) -> str:
    """`asks for a consent-only act (push, force): only the operator may approve it`, or "" when none."""
    acts = consent_acts(text)
    if not acts:
        return ""
    return f"asks for a consent-only act ({', '.join(acts)}): only the operator may approve it, not a peer"


def quote(sender: str, verdict: str, text: str) -> str:
    """One envelope-safe line: `codex:beta (verified) wrote: «...»`.

    The text is shown through `visible` (controls and bidi as `\\x1b`, `⟨U+202E⟩`), and any
    `«`/`»` inside it as `⟨U+00AB⟩`/`⟨U+00BB⟩`, so the quote cannot be closed early
    and the words after it passed off as the operator's. Sender and verdict are ours
    (the kernel's judgement), made visible the same way."""
    shown = visible(text).replace(OPEN, "⟨U+00AB⟩").replace(CLOSE, "⟨U+00BB⟩")
    who = visible(sender).replace("(", "[").replace(")", "]").replace(" ", "_") or "?"
    why = visible(verdict).replace("(", "[").replace(")", "]").replace(OPEN, "").replace(CLOSE, "") or "no verdict"
    return f"{who} ({why}) wrote: {OPEN}{shown}{CLOSE}"


def quoted_spans(body: str) -> list[tuple[int, int, str, str, str]]:
    """Each quote in `body`: (start, end, sender, verdict, text), positions 1-based inclusive of the quote."""
    if OPEN not in body:
        return []  # every quote holds `«`: most bodies need no pattern compiled before their plan
    return [(m.start() + 1, m.end(), m.group("who"), m.group("verdict"), m.group("text"))
            for m in _quote_pattern().finditer(body)]


def provenance_notes(body: str) -> tuple[str, ...]:
    """Plan notes saying which bytes of `body` are which peer's words, and what they ask for.

    Why in the plan: the operator approves exact bytes; a body that passes on another
    agent's words must say so at the gate, and flag an ask only the operator may grant."""
    notes: list[str] = []
    for start, end, who, verdict, text in quoted_spans(body):
        line = f"characters {start}-{end} of the body quote {who}'s words ({verdict}), not yours"
        flag = consent_flag(text)
        notes.append(line + (f"; the quote {flag}" if flag else ""))
    return tuple(notes)


def forwarded_notes(sender: str, body: str) -> tuple[str, ...]:
    """Plan notes for a forward: the whole body is the original sender's words, passed on unchanged."""
    flag = consent_flag(body)
    return (f"the whole body is {visible(sender)}'s words (as its envelope claims), passed on unchanged, not yours"
            + (f"; it {flag}" if flag else ""),)
