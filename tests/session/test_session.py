from __future__ import annotations

import re
from pathlib import Path

import pytest

from relay_repl.core.delivery import DeliveryState
from relay_repl.core.errors import AmbiguousTarget, LoopHalt, PolicyRefusal, StaleTarget, UnknownTarget, UsageError
from relay_repl.core.envelope import Envelope
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.store.ledger import Ledger
from relay_repl.agents.discovery import StaticProvider
from relay_repl.session.session import Session
from relay_repl.core.target import Me, Target
from relay_repl.transports.fake import InMemoryTransport, fake_target

pytestmark = pytest.mark.anyio


class ListeningInbox:
    """Stands in for a running inbox where only its address matters (an answer has somewhere to go)."""

    path = Path("/run/relay-test/inbox.sock")

    def __init__(self):
        self.on_message = []


def mk(answers=(), targets=None, tmp_path=None, inbox=True):
    led = Ledger(tmp_path / "l.sqlite")
    mem = InMemoryTransport()
    gate = ScriptedGate(answers)
    s = Session(
        ledger=led,
        approve=gate,
        me=Me(address="me"),
        providers=[StaticProvider("fake", targets or [fake_target()])],
        transports=[mem],
    )
    if inbox:
        s.attach_inbox(ListeningInbox())
    return s, mem, gate, led


async def test_no_means_nothing_happens(tmp_path):
    s, mem, gate, led = mk([False], tmp_path=tmp_path)
    d = await s.send("fake:inbox", "hello", want="ack")
    assert d.state is DeliveryState.WITHHELD and d.exit_code == 1
    assert mem.received == []
    assert [e.kind for e in led.events(relay_id=d.relay_id)] == ["plan", "answer", "outcome"]
    assert led.events(kind="answer")[0].data == {"approved": False}
    assert not led.was_sent(d.relay_id)


async def test_yes_delivers_exactly_the_planned_payload(tmp_path):
    s, mem, gate, led = mk([True], tmp_path=tmp_path)
    d = await s.send("fake:inbox", "hello", want="ack")
    assert d.outcome == "delivered" and d.exit_code == 0
    assert mem.received == [gate.shown[0].payload]
    env = Envelope.parse(mem.received[0])
    assert (env.sender, env.id, env.hop, env.want, env.body) == ("operator:relay@me", "me-1", 0, "ack", "hello")
    kinds = [e.kind for e in led.events(relay_id="me-1")]
    assert kinds == ["plan", "answer", "stage:write", "stage:confirm", "outcome"]
    assert led.was_sent("me-1")


async def test_each_send_gets_a_new_id(tmp_path):
    s, mem, gate, led = mk([True, True], tmp_path=tmp_path)
    await s.send("fake:inbox", "a")
    await s.send("fake:inbox", "b")
    assert [Envelope.parse(p).id for p in mem.received] == ["me-1", "me-2"]


async def test_asking_for_an_answer_without_an_inbox_is_refused_before_the_gate(tmp_path):
    s, mem, gate, led = mk([True], tmp_path=tmp_path, inbox=False)
    for want in ("reply", "ack"):
        with pytest.raises(PolicyRefusal, match="no inbox is listening here"):
            await s.send("fake:inbox", "answer me", want=want)
    assert gate.shown == [] and mem.received == []
    assert (await s.send("fake:inbox", "no answer needed")).outcome == "delivered"


async def test_the_plan_names_the_reply_route(tmp_path):
    s, mem, gate, led = mk([True], tmp_path=tmp_path)
    d = await s.send("fake:inbox", "answer me", want="reply")
    assert gate.shown[0].reply_route is not None
    assert f"relay reply {d.relay_id} <text>" in gate.shown[0].reply_route
    assert "reply via" in gate.shown[0].render()


async def test_halt_blocks_before_the_gate(tmp_path):
    s, mem, gate, led = mk([True], tmp_path=tmp_path)
    s.halt("testing")
    with pytest.raises(LoopHalt, match="relay-halt is in force"):
        await s.send("fake:inbox", "x")
    assert gate.shown == [] and mem.received == []
    s.unhalt()
    assert (await s.send("fake:inbox", "x")).outcome == "delivered"


def _t(name, live=True, pid=1, transports=None):
    # as discovery reports them: a stale record offers no transport
    return Target(kind="claude-code", prefix="claude", name=name, address=f"/s/{pid}.sock", pid=pid, live=live, state="idle",
                  transports=transports if transports is not None else (("memory",) if live else ()),
                  identified_by="test")


async def test_resolution_errors_are_one_line_and_say_what_to_do(tmp_path):
    s, *_ = mk(targets=[_t("alpha", pid=1), _t("alpha", pid=2), _t("dead", live=False, pid=3)], tmp_path=tmp_path)
    cases = [
        ("claude:alpha", AmbiguousTarget, "ambiguous"),
        ("claude:dead", StaleTarget, "stale"),
        ("claude:zeta", UnknownTarget, "relay targets"),
        ("alpha", UsageError, "needs a kind"),
        ("cursor:x", UsageError, "unknown kind 'cursor'"),
        ("codex:beta", UnknownTarget, "no codex: session is running here; run `relay targets`"),
        ("", UsageError, "empty target"),
    ]
    for spec, exc, text in cases:
        with pytest.raises(exc, match=text) as err:
            await s.target(spec)
        assert "\n" not in str(err.value)


async def test_a_dormant_target_with_a_durable_path_resolves(tmp_path):
    dormant = _t("sleepy", live=False, pid=7, transports=("memory",))
    s, *_ = mk(targets=[dormant, _t("dead", live=False, pid=3)], tmp_path=tmp_path)
    assert (await s.target("claude:sleepy")) == dormant
    with pytest.raises(StaleTarget):
        await s.target("claude:dead")


async def test_requested_transport_is_never_silently_replaced(tmp_path):
    s, mem, gate, led = mk([True], tmp_path=tmp_path)
    with pytest.raises(UsageError, match="unknown transport"):
        await s.send("fake:inbox", "x", transport="codex-queue")
    dead = _t("gone", live=False, transports=("memory",))
    with pytest.raises(PolicyRefusal, match="not live"):
        s.choose_transport(dead, "memory")
    with pytest.raises(PolicyRefusal, match="cannot reach"):
        s.choose_transport(_t("x").model_copy(update={"transports": ()}), "memory")
    assert gate.shown == []


async def test_repr_shows_address_targets_and_open_deliveries(tmp_path):
    s, *_ = mk(tmp_path=tmp_path)
    assert "not discovered yet" in repr(s)
    await s.refresh()
    r = repr(s)
    assert "operator:relay@me" in r and "deliveries: 0" in r
    assert "TARGET" in r and re.search(r"fake:inbox +- +idle +- +- +memory", r)
    assert re.search(r"fake:inbox +- +idle +- +- +memory", repr(s.targets))


async def test_forwarding_a_pasted_envelope(tmp_path):
    s, mem, gate, led = mk([True, True], tmp_path=tmp_path)
    line = Envelope.make(sender="agent:codex@t9", to="peer", id="t9-4", hop=1, want="reply", body="pass it on").compose()
    d = await s.forward("fake:inbox", line)
    assert d.outcome == "delivered"
    fwd = Envelope.parse(mem.received[0])
    assert (fwd.id, fwd.sender, fwd.hop, fwd.body) == ("t9-4", "agent:codex@t9", 2, "pass it on")
    # the same id again is a duplicate: logged, not forwarded, and the gate is never asked
    with pytest.raises(LoopHalt, match="duplicate dropped"):
        await s.forward("fake:inbox", line)
    assert len(gate.shown) == 1 and len(mem.received) == 1
    assert led.events(kind="duplicate")[0].relay_id == "t9-4"


async def test_forwarding_stops_at_the_hop_cap_and_on_relay_halt(tmp_path):
    s, mem, gate, led = mk([True], tmp_path=tmp_path)
    capped = Envelope.make(sender="agent:codex@t9", to="peer", id="t9-5", hop=4, body="again").compose()
    with pytest.raises(LoopHalt, match="cap is 4"):
        await s.forward("fake:inbox", capped)
    halt = Envelope.make(sender="agent:codex@t9", to="peer", id="t9-6", hop=0, body="relay-halt now").compose()
    with pytest.raises(LoopHalt, match="relay-halt"):
        await s.forward("fake:inbox", halt)
    assert led.active_halt() is not None
    assert gate.shown == [] and mem.received == []
    with pytest.raises(UsageError, match="not a relay envelope"):
        await s.forward("fake:inbox", "plain text")


class LateReceiver(InMemoryTransport):
    """Accepts at once; the receiver's evidence appears only when `arrived` is set."""

    name = "late"

    def __init__(self):
        super().__init__()
        self.arrived = False
        self.sends = 0

    async def send(self, d, target, payload, log, approval=None):
        self.sends += 1
        await super().send(d, target, payload, log, approval=approval)

    async def confirm(self, d, target, payload, log, timeout):
        if self.arrived:
            log("confirm", DeliveryState.IN_TURN, "receiver shows it now")


async def test_debug_walks_the_stages_and_rechecks_without_resending(tmp_path):
    late = LateReceiver()
    tgt = fake_target().model_copy(update={"transports": ("late",)})
    lines: list[str] = []
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=ScriptedGate([True]), me=Me(address="me"),
                providers=[StaticProvider("fake", [tgt])], transports=[late], echo=lines.append)
    d = await s.send("fake:inbox", "slow one", timeout=0.1)
    assert d.outcome == "pending" and d.exit_code == 3
    late.arrived = True
    again = await s.debugger(d.relay_id).walk(recheck=1)
    assert again is d and d.outcome == "delivered"
    assert late.sends == 1, "debug must never re-send"
    text = "\n".join(lines)
    assert "1. " in text and "[write] queued" in text and "re-reading receiver evidence" in text
    assert "now: delivered" in text
    assert s.ledger.events(kind="debug")[0].relay_id == d.relay_id
    with pytest.raises(UsageError, match="no delivery"), pytest.warns(DeprecationWarning, match="debugger"):
        await s.debug("nope-1")  # the deprecated alias: this process's deliveries only, as before
    with pytest.warns(DeprecationWarning, match="debugger"):
        assert await s.debug(d, recheck=0) is d


async def test_debug_of_a_typed_payload_gives_advice_and_touches_nothing(tmp_path):
    s, mem, gate, led = mk(tmp_path=tmp_path)
    from relay_repl.core.delivery import Delivery

    d = Delivery(relay_id="me-9", target="fake:inbox", transport="memory", state=DeliveryState.TYPED, stage="stage")
    s.deliveries.append(d)
    lines: list[str] = []
    s.echo = lines.append
    await s.debugger(d).walk()
    assert "Enter was never pressed" in "\n".join(lines)
    assert mem.received == [] and d.state is DeliveryState.TYPED
