"""`plain_line` (core/envelope_line.py), the pydantic-free composer `relay reply` uses, against
`Envelope.make(...).compose()`, THE validator: whatever it composes, the Envelope composes the
very same line; whatever the Envelope refuses, it does not compose (it returns None and the caller
builds the Envelope, whose refusal is the one the operator always read)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay_repl.core.envelope import HOP_CAP, MAX_BODY, Envelope
from relay_repl.core.envelope_line import plain_line
from relay_repl.core.errors import RelayError

SETTINGS = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=0x7F), max_size=12)
ANY = st.text(max_size=12)
WORDS = st.sampled_from(["operator", "agent", "a", "", "to=x", "x to=y", "]", "%", "%41", "é", "a b", "-1", "5", ":",
                         "@", "\u2028", "\u00a0", "\u200e", "\t", "\x85", "\ud800", "٣", "²"])
BASE = {"sender": "agent:codex@019a1b2c-3d4e", "to": "operator", "id": "019a1b2c-3d4e-7", "hop": 1, "want": "none",
        "re": "operator.vm.4242-3", "body": "tests pass on main"}


def _spliced(base: str) -> st.SearchStrategy[str]:
    """`base` with words or random text put in at a point: mostly near-valid values."""
    piece = st.one_of(WORDS, ASCII, ANY)
    return st.one_of(st.builds(lambda at, w: base[:at] + w + base[at:], st.integers(0, len(base)), piece),
                     st.lists(st.one_of(WORDS, ASCII, ANY), min_size=0, max_size=4).map("".join))


FIELDS = st.one_of(
    st.builds(lambda k, v: {**BASE, k: v}, st.sampled_from(["sender", "to", "id", "re", "body"]),
              st.one_of(*(_spliced(BASE[k]) for k in ("sender", "to", "id", "re", "body")))),
    st.builds(lambda h: {**BASE, "hop": h}, st.one_of(st.integers(-2, HOP_CAP + 2), st.just(True), st.just(1.0))),
    st.builds(lambda w: {**BASE, "want": w}, st.sampled_from(["reply", "ack", "none", "yes", ""])),
    st.builds(lambda b: {**BASE, "body": b}, st.sampled_from(["", "a" * MAX_BODY, "a" * (MAX_BODY + 1), "é ok — done"])),
    st.just({**BASE, "re": None}),
)


@SETTINGS
@given(FIELDS)
def test_plain_line_composes_only_what_the_envelope_composes_alike(fields):
    line = plain_line(**fields)
    try:
        want = Envelope.make(**fields).compose()
    except RelayError:
        assert line is None, (fields, line)
        return
    assert line in (None, want), (fields, line, want)


def test_a_reply_of_relay_ids_and_plain_text_is_composed_without_the_model():
    fields = dict(sender="agent:codex@019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b", to="operator",
                  id="019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b-7", hop=1, want="none", re="operator.vm.4242-3",
                  body="tests pass on main — 412 passed, 0 failed")
    assert plain_line(**fields) == Envelope.make(**fields).compose()
    assert plain_line(**{**fields, "hop": HOP_CAP}) is not None  # the cap itself is a valid hop
    assert plain_line(**{**fields, "body": "a\tb"}) is None  # the Envelope's refusal names the tab
    assert plain_line(**{**fields, "sender": "agent:codex@my thread"}) is None  # needs an escape: the model's job


def _encoded_char_by_char(value: str) -> str:
    """encode_value's rule spelled out one character at a time (what it did for every value before)."""
    from relay_repl.core.envelope_line import _needs_escape

    return "".join("".join(f"%{b:02X}" for b in ch.encode("utf-8")) if _needs_escape(ch) else ch
                   for ch in value).replace("to=", "to%3D")


@SETTINGS
@given(st.one_of(WORDS, ASCII, ANY, _spliced("agent:codex@019a1b2c-3d4e")))
def test_encode_value_is_the_character_rule_whatever_the_value(value):
    from relay_repl.core.envelope_line import encode_value

    assert encode_value(value) == _encoded_char_by_char(value)


def test_a_plain_value_is_encoded_without_a_look_at_each_character(monkeypatch):
    """Issue 33: every header value of every composed line was escaped one character at a time, each
    asked its Unicode category (~0.4 ms profiled per line, 24 lines per 4+4 ask-all); a value with
    nothing to escape is now returned whole (old code fails it: one look per character)."""
    from relay_repl.core import envelope_line

    looked: list[str] = []
    real = envelope_line._needs_escape
    monkeypatch.setattr(envelope_line, "_needs_escape", lambda ch: looked.append(ch) or real(ch))
    assert envelope_line.encode_value("operator.vm.4242-3") == "operator.vm.4242-3"
    assert envelope_line.encode_value("xto=ops") == "xto%3Dops"
    assert looked == []
    assert envelope_line.encode_value("a b") == "a%20b" and looked
