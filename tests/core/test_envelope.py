from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay_repl.core.controls import first_forbidden
from relay_repl.core.envelope import (
    HOP_CAP,
    Envelope,
    check_typed_line,
    contains_halt,
    decode_value,
    encode_value,
)
from relay_repl.core.errors import EnvelopeError, LoopHalt


def env(**kw):
    base = dict(sender="operator:relay@me", to="peer", id="me-1", hop=0, want="reply", body="hello")
    base.update(kw)
    return Envelope.make(**base)


def test_compose_is_the_seed_shape():
    e = env()
    assert e.compose() == "[relay/1 from=operator:relay@me to=peer id=me-1 hop=0 want=reply] hello"
    assert (e.role, e.agent, e.address) == ("operator", "relay", "me")


def test_header_values_are_percent_encoded():
    e = env(sender="operator:relay@a]b to=c 100%", id="a]b-7")
    line = e.compose()
    header = line[: line.index("]") + 1]
    assert header == "[relay/1 from=operator:relay@a%5Db%20to%3Dc%20100%25 to=peer id=a%5Db-7 hop=0 want=reply]"
    assert Envelope.parse(line) == e


def test_not_a_relay_line_is_none():
    assert Envelope.parse("just text") is None
    assert Envelope.parse(" [relay/1 from=a:b@c to=p id=c-1 hop=0 want=none] x") is None


@pytest.mark.parametrize(
    "line, fault",
    [
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none", "not closed"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none]", "non-empty body"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none]x", "followed by a space"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=5 want=none] x", "hop"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=-1 want=none] x", "whole number"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=01 want=none] x", "whole number"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=maybe] x", "want"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0] x", "lacks want"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none to=q] x", "repeats field 'to'"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none pri=9] x", "unknown field"),
        ("[relay/1 from=ab@c to=p id=c-1 hop=0 want=none] x", "<role>:<agent>@<address>"),
        ("[relay/1 from=a:b@c to=p id=nocounter hop=0 want=none] x", "<sender address>-<n>"),
        ("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none] two\nlines", "one line"),
        ("[relay/1 from=a:b@c%zz to=p id=c-1 hop=0 want=none] x", "bare '%'"),
        ("[relay/1 from=a:b@c%ff to=p id=c-1 hop=0 want=none] x", "not UTF-8"),
        ("[relay/1  from=a:b@c to=p id=c-1 hop=0 want=none] x", "doubled space"),
        ("[relay/2 from=a:b@c] x", "relay/2"),
    ],
)
def test_malformed_lines_name_their_fault(line, fault):
    with pytest.raises(EnvelopeError) as err:
        Envelope.parse(line)
    assert fault in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("body", ["a\nb", "a\rb", "a\u2028b", "a\x85b"])
def test_multiline_bodies_are_rejected(body):
    with pytest.raises(EnvelopeError, match="one line"):
        env(body=body)


def test_body_length_cap():
    with pytest.raises(EnvelopeError):
        env(body="x" * 4001)
    assert env(body="x" * 4000).body == "x" * 4000


@pytest.mark.parametrize("first", list("/!#@?"))
def test_typed_lines_that_open_ui_modes_are_refused(first):
    with pytest.raises(EnvelopeError, match="opens a UI mode"):
        check_typed_line(f"{first}hello")


def test_typed_line_checks():
    assert check_typed_line("[relay/1 x] y") == "[relay/1 x] y"
    with pytest.raises(EnvelopeError):
        check_typed_line("")
    with pytest.raises(EnvelopeError, match="one line"):
        check_typed_line("a\nb")
    # a composed envelope always starts with '[' and is always typeable
    assert check_typed_line(env(body="/etc/passwd ! # @ ?").compose())


def test_hop_is_revalidated_on_every_change():
    e = env(hop=HOP_CAP)
    with pytest.raises(EnvelopeError):
        e.model_copy(update={"hop": 99})
    with pytest.raises(EnvelopeError):
        e.with_hop(5)
    with pytest.raises(LoopHalt, match="cap is 4"):
        e.next_hop()
    assert env(hop=1).next_hop().hop == 2


def test_frozen():
    e = env()
    with pytest.raises(Exception):
        e.hop = 3  # type: ignore[misc]


def test_halt_detection():
    assert env(body="please relay-halt now").is_halt
    assert not env(body="carry on").is_halt


@pytest.mark.parametrize("spelling", [
    "RELAY-HALT", "Relay-Halt", "relay\u2011halt", "relay \u2013 halt", "relay\u200b-halt", "re\u202elay-halt",
    "\uff52\uff45\uff4c\uff41\uff59\uff0d\uff48\uff41\uff4c\uff54", "r\u0435lay-halt", "r\u0301elay-halt",
    "relay%2Dhalt", "relay\u00ad-halt",
])
def test_a_halt_in_any_spelling_a_reader_takes_for_it_halts(spelling):
    """Seed section 9: honour relay-halt in any message. A peer's (or a garbled client's) RELAY-HALT,
    relay‑halt or relay<ZWSP>-halt reads as a halt to every person; only the exact ASCII
    lowercase form halted (old code: every case here passed through as an ordinary message)."""
    assert contains_halt(f"please {spelling} now")
    assert env(body=f"please {spelling} now").is_halt
    line = "[relay/1 from=agent:x@h%2Dq to=operator id=h%2Dq-1 hop=0 want=none] " + f"ok {spelling}"
    assert Envelope.parse(line).is_halt


@pytest.mark.parametrize("text", ["carry on", "the relay halted nothing", "relay: halt", "relayhalt", "100%", "relay_halt()"])
def test_words_near_relay_halt_do_not_halt(text):
    assert not contains_halt(text)


# -- properties -------------------------------------------------------------

names = st.text(min_size=1, max_size=30).filter(lambda s: "\n" not in s)
tricky = st.lists(st.sampled_from(["]", "to=", "%", " ", "to=x]", "%25", "a", "é", "\t", "[relay/1 "]), min_size=1, max_size=8).map("".join)
header_text = st.one_of(names, tricky, st.tuples(names, tricky).map("".join))
one_line = st.text(min_size=1, max_size=200).filter(
    lambda s: not any(c in s for c in "\u2028\u2029") and first_forbidden(s) is None)  # bodies refuse controls


BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Built once, not inside `envelopes` at each draw: hypothesis reads a filter's lambda (its AST,
# compiled) whenever a filtered strategy is built, which was most of these tests' time.
roles = header_text.filter(lambda s: ":" not in s and not any(c in s for c in BREAKS))
agents = header_text.filter(lambda s: "@" not in s and not any(c in s for c in BREAKS))
no_breaks = header_text.filter(lambda s: not any(c in s for c in BREAKS))


@st.composite
def envelopes(draw):
    role = draw(roles)
    agent = draw(agents)
    addr = draw(no_breaks)
    to = draw(no_breaks)
    n = draw(st.integers(min_value=0, max_value=10**9))
    return Envelope.make(
        sender=f"{role}:{agent}@{addr}",
        to=to,
        id=f"{addr}-{n}",
        hop=draw(st.integers(0, HOP_CAP)),
        want=draw(st.sampled_from(["reply", "ack", "none"])),
        body=draw(one_line),
    )


@settings(max_examples=400, deadline=None)
@given(envelopes())
def test_parse_inverts_compose(e):
    line = e.compose()
    assert "\n" not in line
    assert line.startswith("[relay/1 ")
    assert Envelope.parse(line) == e


@settings(max_examples=300, deadline=None)
@given(envelopes(), envelopes())
def test_a_body_imitating_a_header_never_changes_the_header(e, other):
    forged = Envelope.make(**{**e.model_dump(), "body": other.compose() + " ] to=evil id=x-1 hop=0"})
    parsed = Envelope.parse(forged.compose())
    assert parsed is not None
    assert parsed.model_dump(exclude={"body"}) == e.model_dump(exclude={"body"})
    assert parsed.body == forged.body


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_encoded_values_hold_no_separator(value):
    enc = encode_value(value)
    assert "]" not in enc and " " not in enc and "to=" not in enc and "\n" not in enc
    assert decode_value(enc) == value


def test_re_is_an_optional_last_header_field_percent_encoded():
    e = Envelope.make(sender="agent:codex@t1", to="operator", id="t1-2", hop=1, want="none", re="op.h.1-3", body="ok")
    assert e.compose() == "[relay/1 from=agent:codex@t1 to=operator id=t1-2 hop=1 want=none re=op.h.1-3] ok"
    assert Envelope.parse(e.compose()) == e
    odd = Envelope.make(sender="agent:x@a", to="operator", id="a-1", re="we]ird to=x 100%-4", body="b")
    line = odd.compose()
    assert "re=we%5Dird%20to%3Dx%20100%25-4]" in line
    assert Envelope.parse(line).re == "we]ird to=x 100%-4"
    # absent: the header is exactly the seed's five fields; a reply keeps re= through hop changes
    assert " re=" not in Envelope.make(sender="agent:x@a", to="p", id="a-2", body="b").compose()
    assert e.next_hop().re == "op.h.1-3"


def test_re_must_look_like_a_relay_id_and_appear_once():
    with pytest.raises(EnvelopeError, match="re"):
        Envelope.parse("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none re=nodash] x")
    with pytest.raises(EnvelopeError, match="repeats field 're'"):
        Envelope.parse("[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none re=c-2 re=c-3] x")


def test_a_body_quoting_re_does_not_set_it():
    line = "[relay/1 from=a:b@c to=p id=c-1 hop=0 want=none] re=op-1 [relay/1 re=op-1] x"
    assert Envelope.parse(line).re is None


def test_an_answer_read_by_the_inbox_its_body_and_the_runner_is_validated_once(monkeypatch):
    """Issue 33: the inbox, `InboundMessage.body` and the recipe runner each parsed the same answer,
    three pydantic validations of it; the same line now gives the same frozen envelope.
    The old code fails it (three validations, three distinct envelopes)."""
    import uuid

    from relay_repl.core.inbound import InboundMessage
    from relay_repl.session.runs.runner import parse_answer

    line = env(id=f"peer{uuid.uuid4().hex[:8]}-3", re="me-1", body="tests pass").compose()
    made: list[dict] = []
    real = Envelope.make.__func__

    def counting(cls, **fields):
        made.append(fields)
        return real(cls, **fields)

    monkeypatch.setattr(Envelope, "make", classmethod(counting))
    first = Envelope.parse(line)  # the inbox
    msg = InboundMessage(seq=1, at=0.0, relay_id=first.id, peer=first.sender, line=line, origin={})
    assert msg.body == "tests pass"
    again = parse_answer(line)  # the runner
    assert again is first and again.re == "me-1"
    assert len(made) == 1


def test_a_malformed_line_is_refused_every_time_it_is_parsed():
    line = "[relay/1 from=operator:relay@me to=peer id=me-1 hop=07 want=reply] hello"
    for _ in range(2):
        with pytest.raises(EnvelopeError, match="not a whole number"):
            Envelope.parse(line)
    assert Envelope.parse("not a relay line") is None
