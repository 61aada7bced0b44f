"""A tmux send looks at the pane before it asks (issue 39): the plan shows the composer as it is
now, and a send preflight would refuse (the operator's draft in the composer, a dialog) is refused
before the question, with the reason: no plan asked, no key sent. Replayed captures of the real
clients' screens (tests/agents/screens/captures) through the replay PaneIO; preflight itself still
runs after a yes (tests/transports/test_tmux_live.py's replay tests)."""

from __future__ import annotations

import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.testing import ReplayIO
from tests.transports.test_tmux_live import fast, golden, replay_target

pytestmark = pytest.mark.anyio


def mk(tmp_path, scenario: str, client: str = "claude-code"):
    snap = golden(client, scenario)
    io = ReplayIO(snap, argv=["/x/codex"] if client == "codex" else ["claude"])
    target = replay_target(client, snap, tmp_path)
    gate = ScriptedGate([False])
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=gate, me=Me(address="me"),
                providers=[StaticProvider(client, [target])], transports=[fast(io)])
    return s, gate, io, target


@pytest.mark.parametrize("client", ["claude-code", "codex"])
async def test_a_draft_in_the_composer_is_refused_before_the_question(tmp_path, client):
    s, gate, io, target = mk(tmp_path, "idle_draft_fresh", client)
    lines: list[str] = []
    s.echo = lines.append
    d = await s.send(target, "hello", transport="tmux")
    assert gate.shown == []  # never asked
    assert d.state is DeliveryState.REFUSED and d.stage == "preflight" and io.keys == []
    assert d.reason is not None and d.reason.startswith("not asked: screen shows draft: composer holds 'an operator draft")
    shown = "\n".join(lines)  # the plan, with the pane as it is now, then why it was not asked
    assert shown.startswith("Plan: send to ") and "pane %0 now: " in shown and "holding 'an operator draft" in shown
    assert lines[-1].startswith("  [preflight] refused: not asked: screen shows draft"), lines
    assert [e.kind for e in s.ledger.events(delivery=d.key)] == ["delivery", "stage:preflight", "outcome"]
    # the dry run says the same, and shows the composer's text
    plan = await s.preview(target, "hello", transport="tmux")
    note = next(n for n in plan.notes if n.startswith("pane %0 now:"))
    assert "holding 'an operator draft, not sent'" in note and "draft" in note
    assert any(n.startswith("a send now would be refused before asking: screen shows draft") for n in plan.notes)


async def test_an_idle_pane_is_asked_about_with_its_state_in_the_plan(tmp_path):
    s, gate, io, target = mk(tmp_path, "after_turn")
    d = await s.send(target, "hello", transport="tmux")
    (plan,) = gate.shown
    assert d.state is DeliveryState.WITHHELD and io.keys == []
    assert "pane %0 now: idle, composer empty (preflight runs again after your y)" in plan.notes
    assert "! note        pane %0 now: idle, composer empty" in plan.render()


class TornFirst(ReplayIO):
    """The pane captured mid-redraw `torn` times (its composer not drawn yet), then as it is."""

    def __init__(self, whole, torn_snap, torn: int, **kw) -> None:
        super().__init__(whole, **kw)
        self.torn_snap, self.torn = torn_snap, torn
        self.captures = 0

    def snapshot(self, pane):
        self.captures += 1
        return self.torn_snap if self.captures <= self.torn else self.screen


def torn_pair(client: str):
    """A real idle capture and the same screen cut above its composer (as a capture mid-redraw shows it)."""
    from relay_repl.agents.claude_code import screen as claude_screen
    from relay_repl.agents.codex import screen as codex_screen

    cls = {"claude-code": claude_screen, "codex": codex_screen}[client]
    whole = golden(client, "after_turn")
    cut = next(whole.model_copy(update={"lines": whole.lines[:k]}) for k in range(len(whole.lines), 0, -1)
               if "no-composer" in cls.classify(whole.model_copy(update={"lines": whole.lines[:k]})).blockers)
    return whole, cut


@pytest.mark.parametrize("client", ["claude-code", "codex"])
async def test_a_screen_captured_mid_redraw_is_looked_at_again_before_it_is_refused(tmp_path, client):
    """The lab's Gemini test met it (1 run in 7): a spinner redraw captured with no composer drawn. Old
    code: refused "not asked: screen shows no-composer" at once."""
    from relay_repl.transports.tmux import TORN_REREADS

    whole, cut = torn_pair(client)
    io = TornFirst(whole, cut, torn=1, argv=["/x/codex"] if client == "codex" else ["claude"])
    target = replay_target(client, whole, tmp_path)
    gate = ScriptedGate([False])
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=gate, me=Me(address="me"),
                providers=[StaticProvider(client, [target])], transports=[fast(io)])
    d = await s.send(target, "hello", transport="tmux")
    (plan,) = gate.shown  # asked: the second look found the composer
    assert d.state is DeliveryState.WITHHELD and io.keys == [] and io.captures >= 2
    assert "pane %0 now: idle, composer empty" in " ".join(plan.notes)

    # a screen that stays unrecognised is still refused, after TORN_REREADS more looks, nothing typed
    io2 = TornFirst(whole, cut, torn=1 + TORN_REREADS, argv=["/x/codex"] if client == "codex" else ["claude"])
    gate2 = ScriptedGate([True])
    s2 = Session(ledger=Ledger(tmp_path / "l2.sqlite"), approve=gate2, me=Me(address="me"),
                 providers=[StaticProvider(client, [target])], transports=[fast(io2)])
    d2 = await s2.send(target, "hello", transport="tmux")
    assert gate2.shown == [] and io2.keys == [] and io2.captures == 1 + TORN_REREADS
    assert d2.state is DeliveryState.REFUSED and "no-composer" in (d2.reason or "")
