"""Bounded work on any input (issue 38): the size check comes before any scan of the text, and
every scan of peer or operator text is linear. Times are in bench/bounded.py; these tests only
guard against the hang (a 100,000-character body took 50 s to refuse, 1 MB did not return)."""

from __future__ import annotations

import anyio
import pytest

from relay_repl.core.controls import control_refusal, first_forbidden, visible
from relay_repl.core.envelope import MAX_BODY, check_body
from relay_repl.core.errors import EnvelopeError
from relay_repl.core.peertext import provenance_notes, quote, quoted_spans
from relay_repl.session.app import make_session
from relay_repl.session.core.gate import ScriptedGate


def test_a_long_body_is_refused_by_its_length_before_any_scan():
    with pytest.raises(EnvelopeError, match="over the 4,000") as err:
        check_body("y" * 1_000_000)
    assert "\n" not in str(err.value) and "1,000,000 characters" in str(err.value)
    assert check_body("y" * MAX_BODY) == "y" * MAX_BODY
    with pytest.raises(EnvelopeError, match="over the"):  # length wins over the control scan
        check_body("\x1b" * (MAX_BODY + 1))


@pytest.mark.timeout(60)
def test_session_send_refuses_a_1mb_body_without_planning(relay_home):
    gate = ScriptedGate([True])

    async def main() -> None:
        s = make_session(fake=True, discover=False, approve=gate, echo=None)
        with pytest.raises(EnvelopeError, match="over the 4,000"):
            await s.send("fake:inbox", "y" * 1_000_000)

    anyio.run(main)
    assert gate.shown == []  # nothing planned, nothing asked


@pytest.mark.timeout(60)
@pytest.mark.parametrize("body", ["y" * 1_000_000, "a (b " * 200_000, "x (v) wrote: «" * 70_000,
                                  ("w " * 10) + "(" * 500_000])
def test_the_provenance_scan_is_linear_on_hostile_bodies(body):
    assert provenance_notes(body) == () or all("characters" in n for n in provenance_notes(body))


def test_the_quote_pattern_keeps_its_meaning():
    body = "see " + quote("codex:beta", "verified", "push it") + " and a«" + quote("claude:a", "mismatch", "x") + " end"
    spans = quoted_spans(body)
    assert [(s[2], s[3], s[4]) for s in spans] == [("codex:beta", "verified", "push it"), ("claude:a", "mismatch", "x")]
    assert quoted_spans("prefixcodex:beta (v) wrote: «t»") == [(1, 31, "prefixcodex:beta", "v", "t")]
    assert "push" in provenance_notes(body)[0]


def test_visible_and_the_refusal_keep_their_meaning_on_long_text():
    line = ("hello \x1b[31m \u202e \ud800 \x85 \n") * 50_000
    shown = visible(line)
    assert "\x1b" not in shown and "\u202e" not in shown and "\n" not in shown and "\ud800" not in shown
    assert shown.startswith("hello \\x1b[31m ⟨U+202E⟩ ⟨U+D800⟩ \\x85 \\x0a")
    assert visible(line, keep_newlines=True).count("\n") == 50_000
    assert visible("plain text é 日本") == "plain text é 日本"
    assert first_forbidden("ab\tc") == (3, "\t")
    assert "position 7 of 950000 (and 199999 more)" in (control_refusal(line) or "")  # 4 per repeat


def test_visible_shows_each_character_the_same_way_however_many_kinds_a_text_holds():
    from relay_repl.core.controls import BIDI, is_forbidden

    def one_by_one(text: str) -> str:  # the rule, character by character (the old loop)
        return "".join(f"\\x{ord(c):02x}" if is_forbidden(c) and not 0xD800 <= ord(c) <= 0xDFFF
                       else f"⟨U+{ord(c):04X}⟩" if c in BIDI or c in "\u2028\u2029" or 0xD800 <= ord(c) <= 0xDFFF
                       else c for c in text)

    every = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0), *map(ord, sorted(BIDI)), 0x2028, 0x2029, 0xD800,
                              0xDFFF])) + "plain é ⟨ ⟩ \\x1b"
    for text in (every, every * 3, "a\x1bb\u202ec" * 5, "x" * 10 + "\x00", "\ud800\udc00"):
        assert visible(text) == one_by_one(text)
        assert visible(text, keep_newlines=True) == one_by_one(text).replace("\\x0a", "\n")
