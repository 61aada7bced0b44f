"""A relay-halt that arrives after the plan is shown, or between stages, stops the send.

Fast half, with the in-memory transport: the halt reaches the ledger while the gate is
open (from this session, or from another process's connection to the same ledger), or
at a stage boundary. Before this, the halt was only checked before the plan was built.
"""

from __future__ import annotations

import pytest

from relay_repl.core.delivery import DeliveryState
from relay_repl.core.target import Me
from relay_repl.agents.discovery import StaticProvider
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.base import StageLog
from relay_repl.transports.fake import InMemoryTransport, fake_target

pytestmark = pytest.mark.anyio


class HaltingGate:
    """Says yes, but a relay-halt lands (through `halt`) while its prompt is open."""

    def __init__(self, halt):
        self.halt = halt
        self.shown = []

    async def __call__(self, plan):
        self.shown.append(plan)
        self.halt()
        return True


def mk(tmp_path, approve, transport=None):
    led = Ledger(tmp_path / "l.sqlite")
    mem = transport or InMemoryTransport()
    s = Session(ledger=led, approve=approve, me=Me(address="me"),
                providers=[StaticProvider("fake", [fake_target()])], transports=[mem])
    return s, mem, led


async def test_halt_from_this_session_while_the_prompt_is_open(tmp_path):
    holder = {}
    s, mem, led = mk(tmp_path, HaltingGate(lambda: holder["s"].halt("operator pressed halt")))
    holder["s"] = s
    d = await s.send("fake:inbox", "hello")
    assert mem.received == []
    # issue 38: a halt that arrives while the plan is shown wins over the yes: nothing sent, withheld
    assert d.state is DeliveryState.WITHHELD and d.outcome == "refused" and d.exit_code != 0
    assert d.reason == f"relay-halt from {s.me.sender} arrived while the plan was shown"
    assert not led.was_sent(d.relay_id)
    kinds = [e.kind for e in led.events(relay_id=d.relay_id)]
    assert kinds == ["plan", "answer", "outcome"]
    answer = led.events(relay_id=d.relay_id)[1].data
    assert answer["approved"] is False and answer["withheld"] == d.reason
    assert led.events(kind="outcome")[-1].data["state"] == "withheld"


async def test_halt_from_another_process_while_the_prompt_is_open(tmp_path):
    def other_process_halts():
        other = Ledger(tmp_path / "l.sqlite")  # a second connection, as `relay` in another shell has
        other.halt("relay-halt received from codex:beta", by="agent:codex@beta")
        other.close()

    s, mem, led = mk(tmp_path, HaltingGate(other_process_halts))
    d = await s.send("fake:inbox", "hello")
    assert mem.received == [] and d.state is DeliveryState.WITHHELD
    assert d.reason == "relay-halt from agent:codex@beta arrived while the plan was shown"


class TwoStage(InMemoryTransport):
    """Writes in two stages; `between` runs at the boundary, after the first."""

    name = "memory"

    def __init__(self, between):
        super().__init__()
        self.between = between

    async def send(self, delivery, target, payload, log: StageLog, approval=None):
        self.require(approval, target, payload, "test write")
        log.checkpoint("first half")
        self.received.append(payload[:10])
        self.between()
        log("first", DeliveryState.TYPED, "first half written")
        log.checkpoint("second half")
        self.received.append(payload[10:])
        log("second", DeliveryState.QUEUED, "second half written")


async def test_halt_between_stages_stops_at_the_next_boundary(tmp_path):
    holder = {}
    mem = TwoStage(lambda: holder["s"].halt("mid-send halt"))
    from relay_repl.session.core.gate import ScriptedGate

    s, mem, led = mk(tmp_path, ScriptedGate([True]), transport=mem)
    holder["s"] = s
    d = await s.send("fake:inbox", "hello there, peer")
    assert len(mem.received) == 1  # the second half was never written
    assert d.state is DeliveryState.HALTED
    assert "after stage first (typed: first half written)" in d.reason and "mid-send halt" in d.reason
    assert [e.stage for e in d.evidence] == ["first", "halt"]
    # a cleared halt lets the next send through
    s.unhalt()
    mem.between = lambda: None
    s.approve = ScriptedGate([True])
    d2 = await s.send("fake:inbox", "hello again, peer")
    assert len(mem.received) == 3 and [e.stage for e in d2.evidence][:2] == ["first", "second"]


async def test_no_halt_means_the_checkpoints_are_silent(tmp_path):
    from relay_repl.session.core.gate import ScriptedGate

    s, mem, led = mk(tmp_path, ScriptedGate([True]))
    d = await s.send("fake:inbox", "hello")
    assert d.outcome == "delivered" and mem.received == [d.plan.payload]


async def test_a_debugger_step_approved_while_a_halt_arrives_presses_nothing(tmp_path):
    """The debugger's own gated step (Enter for a staged payload) honours a halt that
    arrives while its plan is open, like a send does."""
    from tests.session.test_debugger import FixedPayload, session
    from relay_repl.testing import ReplayIO
    from tests.transports.test_tmux_live import golden, replay_target

    idle, staged = golden("claude-code", "after_turn"), golden("claude-code", "busy_staged")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    tgt = replay_target("claude-code", idle, tmp_path).model_copy(update={"evidence_file": str(transcript)})
    s1 = session(tmp_path / "l.sqlite", [], [tgt], [True])
    s1.transports["tmux"] = FixedPayload(ReplayIO(idle), stage_timeout=0.3, poll=0.02, settle=0.2)
    d = await s1.send("claude-code:alpha", "x", transport="tmux")
    assert d.state is DeliveryState.TYPED

    io = ReplayIO(staged)
    s2 = session(tmp_path / "l.sqlite", [], [tgt])
    s2.approve = HaltingGate(lambda: s2.halt("halt during the debugger's plan"))
    s2.transports["tmux"] = FixedPayload(io, poll=0.02, settle=0.2)
    dbg = s2.debugger(d.relay_id)
    await dbg.step()
    assert len(s2.approve.shown) == 1 and s2.approve.shown[0].payload.startswith("<Enter>")
    assert io.keys == [] and dbg.delivery.state is DeliveryState.HALTED
    assert "arrived while the plan was shown: no key was sent" in (dbg.delivery.reason or "")


class HaltingNo(HaltingGate):
    """Says No, and a relay-halt lands while its prompt is open."""

    async def __call__(self, plan):
        await super().__call__(plan)
        return False


async def test_a_no_answered_while_a_halt_arrives_is_the_operators_no(tmp_path):
    """The gate says why it withheld: a halt withholds only a yes. A No stays a No, whatever arrived
    meanwhile (callers used to ask the ledger again and called the operator's No a halt)."""
    holder = {}
    s, mem, led = mk(tmp_path, HaltingNo(lambda: holder["s"].halt("operator pressed halt")))
    holder["s"] = s
    d = await s.send("fake:inbox", "hello")
    assert mem.received == [] and d.state is DeliveryState.WITHHELD
    assert d.reason == "the operator answered No"
    answer = led.events(relay_id=d.relay_id)[1].data
    assert answer == {"approved": False}
    assert led.active_halt() is not None  # the halt is still in force for what comes next
