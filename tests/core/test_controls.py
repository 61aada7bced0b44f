"""Control characters and lone surrogates are refused before any plan, naming the character."""

from __future__ import annotations

import pytest

from relay_repl.core.controls import control_refusal, first_forbidden, is_forbidden, name_of
from relay_repl.core.envelope import Envelope, check_body, check_typed_line
from relay_repl.core.errors import EnvelopeError

EVERY_FORBIDDEN = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0), 0xD800, 0xDBFF, 0xDC80, 0xDFFF]]


@pytest.mark.parametrize("ch", EVERY_FORBIDDEN)
def test_every_forbidden_character_is_refused_with_its_name_and_position(ch):
    body = "abc" + ch + "def"
    with pytest.raises(EnvelopeError) as err:
        check_body(body)
    msg = str(err.value)
    assert f"U+{ord(ch):04X}" in msg and "at position 4 of 7" in msg and "\n" not in msg
    with pytest.raises(EnvelopeError, match=f"U\\+{ord(ch):04X}"):
        Envelope.make(sender="a:b@c", to="peer", id="c-1", body=body)
    with pytest.raises(EnvelopeError, match=f"U\\+{ord(ch):04X}"):
        check_typed_line("[relay/1 x] " + body)


def test_names():
    assert name_of("\x1b") == "U+001B ESC (escape)"
    assert name_of("\t") == "U+0009 HT (tab)"
    assert name_of("\x7f") == "U+007F DEL (delete)"
    assert name_of("\x9b") == "U+009B CSI"
    assert name_of("\x85") == "U+0085 NEL"
    assert name_of("\udcff").startswith("U+DCFF lone surrogate")


def test_ordinary_text_passes():
    for text in ["hello", "é ü ß 日本 😀", "tabs as    spaces", "\u00a0nbsp", "[brackets] and % and to=x"]:
        assert control_refusal(text) is None and first_forbidden(text) is None
        assert check_body(text) == text
    assert not any(is_forbidden(c) for c in " ~\u00a0\u00ff\ue000\U0001f600")


def test_first_one_is_named_and_the_rest_counted():
    msg = control_refusal("a\tb\x1bc\x7f")
    assert "U+0009 HT (tab) at position 2 of 6 (and 2 more)" in msg


def test_gist_is_one_line_cut_to_n_with_an_ellipsis():
    from relay_repl.core.controls import gist

    assert gist("  two\n\twords  ", 20) == "two words"
    assert gist("abcdef", 6) == "abcdef" and gist("abcdefg", 6) == "abcde…" and len(gist("x " * 100, 50)) == 50


def test_visible_shows_a_few_controls_without_building_the_whole_table_and_many_through_it():
    """issue 40: a plan with a few (or no) controls is shown without the ~2,200-entry translate
    table (both were built before every send's plan, ~2.5 ms); past 16 different ones the table is
    used, and the two paths show every character alike."""
    import subprocess
    import sys

    probe = (
        "from relay_repl.core import controls as c\n"
        "few = c.visible('plan\\x1b[2J \\u202e kept\\nline', keep_newlines=True) + c.visible('a\\x07b')\n"
        "print(repr(few), c._table.cache_info().currsize)\n"
        "text = ''.join(chr(x) + 'x' for x in c._codes())\n"
        "many = c.visible(text)\n"
        "one_by_one = ''.join(c.visible(chr(x)) + 'x' for x in c._codes())\n"
        "print(many == one_by_one, c._table.cache_info().currsize, c.visible('\\n', keep_newlines=True) == '\\n')\n")
    cp = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert cp.returncode == 0, cp.stderr
    few, many = cp.stdout.splitlines()
    assert few == repr("plan\\x1b[2J ⟨U+202E⟩ kept\nline" + "a\\x07b") + " 0"
    assert many == "True 1 True"
