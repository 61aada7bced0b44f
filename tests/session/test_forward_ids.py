"""A forward marks its id seen only once the operator said yes and the delivery starts;
every requirement flag reaches the forward (issue 11 item 5).

Before: the id was marked seen before the gate and before the target was resolved, so a
forward declined at the gate, or aimed at a mistyped target, burned it; and the CLI
dropped --durable, --native-reply and --want on a forward.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import LoopHalt, PolicyRefusal, UnknownTarget, UsageError
from relay_repl.core.target import Me, Target
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.base import Capabilities
from relay_repl.transports.fake import InMemoryTransport, fake_target

pytestmark = pytest.mark.anyio

LINE = Envelope.make(sender="agent:codex@t9", to="peer", id="t9-4", hop=1, want="reply", body="pass it on").compose()


class LiveOnly(InMemoryTransport):
    name = "live-only"
    capabilities = Capabilities(live_only=True)


def mk(tmp_path, answers, transports=None, target=None):
    led = Ledger(tmp_path / "l.sqlite")
    gate = ScriptedGate(answers)
    ts = transports or [InMemoryTransport()]
    tgt = target or fake_target()
    s = Session(ledger=led, approve=gate, me=Me(address="me"), providers=[StaticProvider("fake", [tgt])],
                transports=ts)
    return s, ts, gate, led


async def test_a_declined_forward_leaves_the_id_usable(tmp_path):
    s, (mem,), gate, led = mk(tmp_path, [False, True])
    d = await s.forward("fake:inbox", LINE)
    assert d.state is DeliveryState.WITHHELD and mem.received == []
    assert led.sightings("t9-4") == 0 and not led.was_forwarded("t9-4")
    d = await s.forward("fake:inbox", LINE)  # the corrected, approved forward goes through
    assert d.outcome == "delivered" and Envelope.parse(mem.received[0]).id == "t9-4"
    assert led.sightings("t9-4") == 1 and led.was_forwarded("t9-4")
    with pytest.raises(LoopHalt, match="duplicate dropped"):
        await s.forward("fake:inbox", LINE)


async def test_a_forward_to_a_mistyped_target_leaves_the_id_usable(tmp_path):
    s, (mem,), gate, led = mk(tmp_path, [True])
    with pytest.raises(UnknownTarget):
        await s.forward("fake:inbx", LINE)
    with pytest.raises(UsageError):
        await s.forward("inbox", LINE)
    assert led.sightings("t9-4") == 0 and not led.was_forwarded("t9-4") and gate.shown == []
    assert (await s.forward("fake:inbox", LINE)).outcome == "delivered"


async def test_a_forward_seen_meanwhile_by_another_process_is_dropped_after_the_yes(tmp_path):
    s, (mem,), gate, led = mk(tmp_path, [True])

    async def racing_gate(plan):
        other = Ledger(tmp_path / "l.sqlite")
        other.mark_forwarded("t9-4", "fake:inbox")  # another relay forwarded it while our plan was open
        other.close()
        return True

    s.approve = racing_gate
    d = await s.forward("fake:inbox", LINE)
    assert d.state is DeliveryState.REFUSED and "forwarded meanwhile" in (d.reason or "") and mem.received == []


async def test_requirements_reach_the_forward(tmp_path):
    live_only = LiveOnly()
    tgt = fake_target().model_copy(update={"transports": ("live-only",)})
    s, _, gate, led = mk(tmp_path, [True], transports=[live_only], target=tgt)
    with pytest.raises(PolicyRefusal):
        await s.forward("fake:inbox", LINE, durable=True)  # never downgraded to a live-only path
    assert live_only.received == [] and led.sightings("t9-4") == 0 and not led.was_forwarded("t9-4")


async def test_a_contradicting_want_is_refused_and_a_matching_one_accepted(tmp_path):
    s, (mem,), gate, led = mk(tmp_path, [True])
    with pytest.raises(UsageError, match="asks want=reply and a forward keeps it"):
        await s.forward("fake:inbox", LINE, want="none")
    assert gate.shown == [] and led.sightings("t9-4") == 0
    d = await s.forward("fake:inbox", LINE, want="reply")
    assert d.outcome == "delivered" and Envelope.parse(mem.received[0]).want == "reply"


def _relay(*args, relay_home=None):
    return subprocess.run([sys.executable, "-m", "relay_repl", "--fake", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def test_cli_passes_want_to_a_forward(relay_home):
    res = _relay("send", "fake:inbox", LINE, "--want", "ack")
    assert res.returncode == 2 and "a forward keeps it" in res.stderr and res.stderr.count("\n") == 1


def test_cli_passes_every_requirement_to_a_forward(relay_home, monkeypatch):
    from relay_repl.frontends import cli

    seen = {}

    async def spy(self, target, line, **kw):
        seen.update(kw, target=target, line=line)
        raise UsageError("stopped by the test")

    monkeypatch.setattr(Session, "forward", spy)
    code = cli.main(["--fake", "send", "fake:inbox", LINE, "--durable", "--native-reply", "--want", "reply",
                     "--transport", "memory", "--timeout", "7"])
    assert code == 2
    assert seen == {"target": "fake:inbox", "line": LINE, "transport": "memory", "durable": True,
                    "native_reply": True, "want": "reply", "timeout": 7.0}


def test_cli_a_declined_forward_keeps_the_id(relay_home):
    res = _relay("send", "fake:inbox", LINE)
    assert "refused (withheld)" in res.stdout  # no terminal: the answer is No
    led = Ledger(relay_home / "ledger.sqlite")
    assert led.sightings("t9-4") == 0 and not led.was_forwarded("t9-4")
