"""Every way into a send carries the same options (issue 19, D6): `session.send`'s keywords,
a transport handle's `session.transports.X.send(...)` keywords and each member of a chain all
arrive as one `SendOptions`, so hop, heading, relay id and the chain's fallback line reach the
plan and the envelope on every path, and a mistyped keyword is refused before anything happens."""

from __future__ import annotations

import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target

pytestmark = pytest.mark.anyio


class Elsewhere(InMemoryTransport):
    """A transport the fake target does not list: it refuses before any side effect."""

    name = "elsewhere"


def mk(tmp_path, answers):
    gate = ScriptedGate(answers)
    mem, other = InMemoryTransport(), Elsewhere()
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=gate, me=Me(address="me"),
                providers=[StaticProvider("fake", [fake_target()])], transports=[other, mem])
    return s, mem, other, gate


async def test_a_handle_send_keeps_its_keywords(tmp_path):
    s, mem, _, gate = mk(tmp_path, [True])
    d = await s.transports.memory.send("fake:inbox", "by the handle", hop=2, heading="step 1", relay_id="me-41")
    assert d.state is not DeliveryState.WITHHELD and len(mem.received) == 1
    env = Envelope.parse(mem.received[0])
    assert (env.id, env.hop, env.body) == ("me-41", 2, "by the handle")
    assert gate.shown[0].heading == "step 1" and gate.shown[0].transport == "memory"


async def test_a_chain_member_gets_the_callers_options_and_the_chains_fallback(tmp_path):
    s, mem, other, gate = mk(tmp_path, [True])
    d = await s.send("fake:inbox", "through a chain", transport=s.transports.elsewhere | s.transports.memory,
                     hop=3, heading="round 2", relay_id="me-42")
    assert other.received == [] and len(mem.received) == 1, "the unlisted transport refused; the next one sent"
    env = Envelope.parse(mem.received[0])
    assert (env.id, env.hop) == ("me-42", 3) and d.relay_id == "me-42"
    plan = gate.shown[0]
    assert plan.heading == "round 2" and "none (last of chain" in plan.fallback and "elsewhere:" in plan.fallback


async def test_a_mistyped_handle_keyword_is_refused_before_anything(tmp_path):
    s, mem, _, gate = mk(tmp_path, [True])
    with pytest.raises(TypeError, match="wnat"):
        await s.transports.memory.send("fake:inbox", "typo", wnat="reply")
    assert gate.shown == [] and mem.received == []
