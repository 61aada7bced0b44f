"""The one-delivery debugger over the ledger (fast: fake receivers, replayed real screens).

What is proven here: a delivery is rebuilt by a LATER session from the ledger alone;
look is read-only; step runs one stage and asks before a key; No sends nothing; a
receiver that vanished is reported as gone, not raised. The same against the real
clients is in tests/frontends/test_cli_debug_live.py.
"""

from __future__ import annotations

import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target
from relay_repl.transports.tmux import TmuxTransport
from relay_repl.testing import ReplayIO
from tests.transports.test_tmux_live import fast, golden, replay_target

pytestmark = pytest.mark.anyio


class LateReceiver(InMemoryTransport):
    """Takes the payload, but the receiver shows it only once `arrived` is set."""

    name = "late"
    arrived = False

    async def confirm(self, d, target, payload, log, timeout):
        if self.arrived:
            log("confirm", DeliveryState.IN_TURN, "receiver shows it now")

    async def look(self, d, target, payload):
        look = await super().look(d, target, payload)
        return look.model_copy(update={"landed": self.arrived})


def session(path, transports, targets, answers=(), lines=None):
    return Session(ledger=Ledger(path), approve=ScriptedGate(answers), me=Me(address="me"),
                   providers=[StaticProvider("fake", targets)], transports=transports,
                   echo=(lines.append if lines is not None else None))


async def test_a_later_session_rebuilds_looks_and_confirms_without_resending(tmp_path):
    tgt = fake_target().model_copy(update={"transports": ("late",)})
    first = LateReceiver()
    s1 = session(tmp_path / "l.sqlite", [first], [tgt], [True])
    d = await s1.send("fake:inbox", "slow one", timeout=0.1)
    assert d.exit_code == 3

    later = LateReceiver()  # another process: nothing in memory but the ledger
    lines: list[str] = []
    s2 = session(tmp_path / "l.sqlite", [later], [tgt], lines=lines)
    dbg = s2.debugger(d.relay_id)
    assert dbg.delivery is not d and dbg.delivery.key == d.key and dbg.delivery.state is DeliveryState.QUEUED
    assert dbg.sent_to == tgt
    text = repr(dbg)
    assert "write" in text and "queued" in text and "next: confirm" in text and d.plan.payload in text

    look = await dbg.look()
    assert look.receiver == "present" and look.landed is False
    later.arrived = True
    await dbg.step()
    assert dbg.delivery.outcome == "delivered" and later.received == [], "a step must never re-send"
    assert s2.ledger.events(kind="outcome")[-1].data["state"] == "in_turn"
    assert "next: nothing" in repr(s2.debugger(d.key))


async def test_receiver_gone_is_reported_not_raised(tmp_path):
    tgt = fake_target().model_copy(update={"transports": ("late",)})
    s1 = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt], [True])
    d = await s1.send("fake:inbox", "to a receiver about to die", timeout=0.1)
    s2 = session(tmp_path / "l.sqlite", [LateReceiver()], [])
    dbg = s2.debugger(d.relay_id)
    look = await dbg.look()
    assert look.receiver == "gone" and look.verdict.startswith("receiver gone")
    await dbg.step()
    assert dbg.delivery.state is DeliveryState.QUEUED


async def test_unknown_id_is_one_line_error(tmp_path):
    from relay_repl.core.errors import RelayError

    s = session(tmp_path / "l.sqlite", [], [])
    with pytest.raises(RelayError, match="no delivery or relay id 'nope-1' in the ledger"):
        s.debugger("nope-1")


class FixedPayload(TmuxTransport):
    """The replayed captures show one fixed line in the composer: plan exactly that line."""

    def payload(self, envelope):
        return "[relay/1 test] typed while busy"


async def test_typed_delivery_step_asks_before_enter_and_no_sends_nothing(tmp_path):
    idle, staged = golden("claude-code", "after_turn"), golden("claude-code", "busy_staged")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("")
    tgt = replay_target("claude-code", idle, tmp_path).model_copy(update={"evidence_file": str(transcript)})
    frozen = ReplayIO(idle)  # the client never draws what was typed
    s1 = session(tmp_path / "l.sqlite", [], [tgt], [True])
    s1.transports["tmux"] = FixedPayload(frozen, stage_timeout=0.3, poll=0.02, settle=0.2)
    d = await s1.send("claude-code:alpha", "x", transport="tmux")
    assert d.state is DeliveryState.TYPED and frozen.keys == [("literal", "[relay/1 test] typed while busy")]

    # still not drawn: stepping is refused (Enter would not submit it; typing again could double it)
    io = ReplayIO(idle)
    gate = ScriptedGate([True])
    lines: list[str] = []
    s2 = session(tmp_path / "l.sqlite", [], [tgt], lines=lines)
    s2.approve = gate
    s2.transports["tmux"] = FixedPayload(io, poll=0.02, settle=0.2)
    dbg = s2.debugger(d.relay_id)
    assert "next: submit" in repr(dbg)
    await dbg.step()
    assert io.keys == [] and gate.shown == [] and "refused" in "\n".join(lines)

    # now drawn (the client thawed): step shows its own plan and asks; No sends nothing
    io.screen = staged
    gate = ScriptedGate([False])
    s2.approve = gate
    look = await dbg.look()
    assert look.staged is True and look.landed is False and look.capture and "classifier" in look.reasons[0]
    await dbg.step()
    assert io.keys == [] and len(gate.shown) == 1 and gate.shown[0].payload.startswith("<Enter>")
    assert dbg.delivery.state is DeliveryState.TYPED

    # yes: exactly one Enter, then it stops (the next stage is confirm)
    s2.approve = ScriptedGate([True])
    await dbg.step()
    assert io.keys == [("key", "Enter")] and dbg.delivery.state is DeliveryState.SUBMITTED
    answers = [e.data["approved"] for e in s2.ledger.events(kind="answer")]
    assert answers == [True, False, True]


async def test_abandon_is_recorded(tmp_path):
    tgt = fake_target().model_copy(update={"transports": ("late",)})
    s1 = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt], [True])
    d = await s1.send("fake:inbox", "never mind", timeout=0.1)
    dbg = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt]).debugger(d.relay_id)
    dbg.abandon("operator gave up")
    again = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt]).debugger(d.relay_id)
    assert again.delivery.outcome == "abandoned" and again.delivery.exit_code == 1
    assert "next: nothing" in repr(again)


# -- transports as values: the table and `a | b` chains -------------------------------------------

class Refuses(InMemoryTransport):
    """Refuses every target at preflight, before any side effect."""

    name = "refuses"

    def refusal(self, target):
        return "never reaches anyone"


async def test_transports_print_and_chain_falls_through_only_on_refusal(tmp_path):
    mem, no = InMemoryTransport(), Refuses()
    tgt = fake_target().model_copy(update={"transports": ("memory", "refuses")})
    gate = ScriptedGate([True])
    s = session(tmp_path / "l.sqlite", [no, mem], [tgt], [True])
    s.approve = gate
    text = repr(s.transports)
    assert "memory" in text and "durable, receipts" in text and "transports.refuses" in text
    assert s.transports.memory.name == "memory" and not hasattr(s.transports.memory, "received")  # a handle
    chain = s.transports.refuses | s.transports.memory
    assert str(chain) == "refuses | memory"
    d = await s.send("fake:inbox", "via the chain", transport=chain)
    assert d.transport == "memory" and d.outcome == "delivered" and len(mem.received) == 1
    assert len(gate.shown) == 1 and "passed over: refuses: " in gate.shown[0].fallback

    # the first usable one wins; the plan names the chain and what comes next
    gate2 = ScriptedGate([True])
    s.approve = gate2
    d = await s.send("fake:inbox", "again", transport=s.transports.memory | s.transports.refuses)
    assert d.transport == "memory" and "chain memory | refuses" in gate2.shown[0].fallback

    from relay_repl.core.errors import PolicyRefusal

    with pytest.raises(PolicyRefusal, match=r"no transport of chain refuses \| refuses can reach fake:inbox"):
        await s.send("fake:inbox", "nowhere", transport=s.transports.refuses | s.transports.refuses)


def test_relay_debug_without_a_ledger_creates_nothing(relay_home, capsys):
    from relay_repl.frontends.cli import main

    assert main(["debug", "someone-1", "--look"]) == 1
    assert "no ledger at" in capsys.readouterr().err and not relay_home.exists()


async def test_the_debuggers_table_shows_a_forwarded_peers_bidi_and_escapes_visibly(tmp_path):
    """Issue 16 case 4: the debugger printed the payload (a forwarded peer's words) and the evidence raw."""
    tgt = fake_target().model_copy(update={"transports": ("late",)})
    s1 = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt], [True])
    d = await s1.send("fake:inbox", "see \u202egnp.exe", timeout=0.1)
    dbg = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt]).debugger(d.relay_id)
    dbg.abandon("the peer said \x1b[2Jdone")
    table = repr(dbg)
    assert "\u202e" not in table and "\x1b" not in table, table
    assert "see ⟨U+202E⟩gnp.exe" in table and "\\x1b[2Jdone" in table


def test_a_send_killed_before_its_outcome_keeps_the_ids_its_stages_recorded(tmp_path):
    """The queue item id lives in the outcome's extra; a send killed after its enqueue stage has no
    outcome, so the rebuild takes it from the stage (else a look says nothing was ever queued)."""
    from relay_repl.session.runs.debugger import rebuild

    led = Ledger(tmp_path / "l.sqlite")
    led.event("delivery", delivery="k1", data={"relay_id": "me-1", "transport": "codex-queue", "spec": "codex:beta"})
    led.event("stage:enqueue", delivery="k1", relay_id="me-1",
              data={"state": "queued", "detail": "queued as item it-7", "item_id": "it-7",
                    "row": {"client_id": "cl-7", "state": "pending"}})
    d = rebuild(led, "me-1").delivery
    assert (d.extra.item_id, d.extra.client_id) == ("it-7", "cl-7")
    led.event("outcome", delivery="k1", relay_id="me-1", data={"state": "queued", "extra": {"item_id": "it-8"}})
    assert rebuild(led, "me-1").delivery.extra.item_id == "it-8"  # the outcome's own record wins


async def test_a_line_break_in_a_stages_evidence_cannot_draw_a_row_of_its_own(tmp_path):
    """The table was neutralised as a whole with newlines kept, so a stage's detail holding a line
    break (evidence quotes what the receiver shows: a reply, a pane's line) drew a row of its own,
    such as a forged `  now: delivered (in_turn)`, under the real ones (old code fails)."""
    from relay_repl.core.delivery import DeliveryState, Evidence

    tgt = fake_target().model_copy(update={"transports": ("late",)})
    s1 = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt], [True])
    d = await s1.send("fake:inbox", "hello", timeout=0.1)
    dbg = session(tmp_path / "l.sqlite", [LateReceiver()], [tgt]).debugger(d.relay_id)
    dbg.delivery.evidence.append(Evidence(stage="confirm", state=DeliveryState.UNKNOWN,
                                          detail="pane shows: ok\n  now: delivered (in_turn) via late"))
    table = repr(dbg)
    assert not any(line.startswith("  now: delivered") for line in table.splitlines()), table
    assert "pane shows: ok\\x0a  now: delivered" in table, table
