"""The values an operator meets read well (issue 39): Tab/`dir()` offers relay's members, not
pydantic's deprecated ones; a message's repr is who, verdict, what it answers, then its words
(neutralised, cut at the end); `.text` is a message's words."""

from __future__ import annotations

import pytest

from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.inbound import InboundMessage, Verdict
from relay_repl.core.plan import Plan
from relay_repl.core.target import Me, Target
from relay_repl.core.turn_reply import TurnReply
from relay_repl.store.hosts import HostEntry

PYDANTIC_OLD = {"construct", "dict", "json", "parse_obj", "parse_raw", "parse_file", "schema", "schema_json",
                "update_forward_refs", "from_orm", "validate", "copy"}

LINE = ("[relay/1 from=agent:codex@codex.thread.0123456789abcdef to=operator:relay@operator.vm.1 id=beta-1 hop=1 "
        "want=none re=operator.vm.1-1] reply to operator.vm.1-1: the suite passes, 412 tests")


def message(line: str = LINE, verdict: str = "verified") -> InboundMessage:
    return InboundMessage(seq=1, at=0, relay_id="beta-1", peer="agent:codex@beta", line=line,
                          origin={"verifiedPeerPid": 5}, answers="operator.vm.1-1",
                          verdict=Verdict(verdict=verdict, session="codex:beta" if verdict == "verified" else None,
                                          session_pid=5, pid=5))


def target() -> Target:
    return Target(kind="codex", name="beta", address="t", pid=5, state="idle", pane="%1", identified_by="index")


def values() -> list[object]:
    m = message()
    plan = Plan(action="send to codex:beta", target="codex:beta", identified_by="x", transport="codex-queue",
                payload="p", delivered_when="w")
    return [target(), Me(address="me"), Delivery(target="codex:beta", transport="codex-queue", plan=plan, reply=m),
            plan, m, m.verdict, HostEntry(name="h2", destination="root@10.0.0.2"),
            TurnReply(kind="codex", status="answered", text="done", source="f", record="r", anchor="a")]


@pytest.mark.parametrize("value", values(), ids=lambda v: type(v).__name__)
def test_dir_offers_relays_members_not_pydantics(value):
    public = [n for n in dir(value) if not n.startswith("_")]
    assert not PYDANTIC_OLD & set(public), public
    assert not [n for n in public if n.startswith("model_")]
    assert set(type(value).model_fields) <= set(public)  # type: ignore[attr-defined]
    assert all(hasattr(value, n) for n in public)
    assert value.model_dump() is not None  # pydantic's own methods still work, just not offered


def test_a_messages_words_come_after_who_verdict_and_what_it_answers():
    r = repr(message())
    assert r.startswith("<InboxMessage #1 ")
    assert r.index("from codex:beta") < r.index("[verified, pid 5]") < r.index("re operator.vm.1-1") < r.index(
        '"reply to operator.vm.1-1: the suite passes, 412 tests"')
    assert "[relay/1" not in r  # the header no longer fills the line
    assert message().text == "reply to operator.vm.1-1: the suite passes, 412 tests" == message().body


def test_an_unverified_sender_is_a_claim_and_long_words_are_cut_at_the_end():
    long = LINE + " and more" * 40 + " \x1b[2J\u202e"
    r = repr(message(long, verdict="unknown process"))
    assert "from agent:codex@beta (claimed) [unknown process" in r
    assert r.endswith('…">') and "\x1b" not in r and "\u202e" not in r
    assert len(r) < 300


def test_a_delivery_says_its_outcome_and_target_first_then_its_answer():
    d = values()[2]
    assert isinstance(d, Delivery)
    d.state = DeliveryState.REPLIED
    r = repr(d)
    assert r.startswith("<Delivery delivered (replied) via codex-queue to codex:beta; answer beta-1 from codex:beta "
                        '(verified): "reply to operator.vm.1-1: the suite passes')
    assert r.endswith(f"; id -, key {d.key}>")


def test_a_plan_prints_as_the_gate_shows_it_and_a_host_names_its_prefix():
    plan = values()[3]
    assert repr(plan) == plan.render() and repr(plan).startswith("Plan: send to codex:beta")  # type: ignore[attr-defined]
    assert repr(HostEntry(name="h2", destination="root@10.0.0.2")) == "<Host h2: ssh root@10.0.0.2 (targets h2/kind:name)>"


def test_the_sessions_deliveries_print_as_a_table(tmp_path):
    from relay_repl.core.target import Me
    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger

    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), me=Me(address="me"))
    assert repr(s.deliveries) == "no deliveries yet (`await session.send(...)` makes one)"
    d = values()[2]
    assert isinstance(d, Delivery)
    d.relay_id, d.state = "me-1", DeliveryState.REPLIED
    s.deliveries.append(d)
    head, row = repr(s.deliveries).splitlines()
    assert head.split() == ["RELAY", "ID", "TARGET", "TRANSPORT", "OUTCOME", "STATE", "STAGE", "ANSWER"]
    assert row.split()[:5] == ["me-1", "codex:beta", "codex-queue", "delivered", "replied"]
    assert row.endswith("verified: reply to operator.vm.1-1: the suite passes, 412 t…")  # cut at 50


def test_a_hosts_verdict_reads_as_the_hosts_word_everywhere_it_is_shown(tmp_path):
    """A verdict a host's relay gave (said_by) is its claim: the message's repr, its str, the deliveries
    table and a diagram's arrow said a bare `verified`, as if this relay had judged it."""
    from relay_repl.core.delivery import DeliveryTable
    from relay_repl.store.exchange import _answer

    m = message()
    m = m.model_copy(update={"verdict": m.verdict.model_copy(update={"said_by": "host h2"})})  # type: ignore[union-attr]
    assert "[host h2 says: verified by pid 5]" in repr(m)
    assert str(m.verdict).startswith("host h2 says: verified by pid 5: claimed")
    d = values()[2]
    assert isinstance(d, Delivery)
    d.relay_id, d.state, d.reply = "me-1", DeliveryState.REPLIED, m
    (row,) = repr(DeliveryTable([d])).splitlines()[1:]
    assert "host h2 says: verified by pid 5: reply to" in row
    assert _answer(m).verdict == "host h2 says: verified by pid 5"
