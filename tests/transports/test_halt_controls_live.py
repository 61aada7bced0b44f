"""Live, against the real clients in the lab: a relay-halt between the stages of the tmux
transport, and control characters that must never reach a pane or the Codex queue.

Issue 11 items 1 and 2. Before the fix, a halt that arrived after the gate was never looked
at again (the payload was typed and submitted), and ESC, DEL, TAB, ^C ... were typed as keys.
"""

from __future__ import annotations

import time
import uuid

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.fidelity.tmux import calm
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.errors import EnvelopeError
from relay_repl.session.app import make_session
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.store.ledger import Ledger
from relay_repl.store.paths import ledger_path
from relay_repl.transports.base import StageLog
from relay_repl.transports.tmux import PaneIO, TmuxTransport
from tests.support.approvals import approved_send

pytestmark = [pytest.mark.live, pytest.mark.anyio]

TARGETS = [("claude:alpha", "alpha"), ("codex:beta", "beta")]
# one of each class: C0 (TAB, ESC, ^C, NUL), DEL, C1 (CSI, NEL), a lone surrogate
CONTROLS = ["\t", "\x1b", "\x03", "\x00", "\x7f", "\x9b", "\x85", "\udcff"]


class CountingIO(PaneIO):
    """The real PaneIO; every key that leaves is written down."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[tuple[str, str]] = []

    def send_literal(self, pane, text, approval=None):  # type: ignore[no-untyped-def]
        self.keys.append(("literal", text))
        super().send_literal(pane, text, approval)

    def send_key(self, pane, key, approval=None):  # type: ignore[no-untyped-def]
        self.keys.append(("key", key))
        super().send_key(pane, key, approval)


def composer(name: str) -> str | None:
    state, s = helpers._resolve(name)
    return helpers._composer_text(s)


def stable(name: str) -> str:
    """`name`'s screen less what its client redraws on its own timer (Claude: its effort hint, the alternating
    footer hint; its kind's `MARKS.own_redraws`) and blank rows. A key that reached the pane shows as text."""
    return "\n".join(calm(name, helpers.capture(name).splitlines()))


async def quiet_screen(name: str) -> str:
    """The pane once it stops changing (Claude's idle screen can still be settling)."""
    await anyio.to_thread.run_sync(helpers.wait_idle, name, 60)
    prev = stable(name)
    for _ in range(20):
        await anyio.sleep(0.3)
        cur = stable(name)
        if cur == prev:
            return cur
        prev = cur
    return prev


def rollouts_hold(text: str) -> bool:
    import os
    from pathlib import Path

    home = Path(os.environ["CODEX_HOME"])
    return any(text in p.read_text(errors="replace") for p in home.rglob("*.jsonl"))


@pytest.mark.parametrize("spec, name", TARGETS)
async def test_control_characters_never_reach_the_pane(lab, spec, name):
    before = await quiet_screen(name)
    draft_before = composer(name)
    gate = ScriptedGate([True] * 20)
    s = make_session(approve=gate, echo=lambda line: None)
    await s.refresh()
    tmux = s._transports["tmux"]
    io = CountingIO()
    tmux.io = io
    for ch in CONTROLS:
        with pytest.raises(EnvelopeError) as err:
            await s.send(spec, f"ctrl{ch}byte", transport="tmux")
        assert f"U+{ord(ch):04X}" in str(err.value) and "position 5 of 9" in str(err.value)
        # the transport refuses on its own too, should a payload ever get past the session
        target = await s.target(spec)
        d = Delivery(target=spec, transport="tmux")
        await approved_send(TmuxTransport(io), d, target, f"[relay/1 x] ctrl{ch}byte", StageLog(d, s.ledger))
        assert d.state is DeliveryState.REFUSED and f"U+{ord(ch):04X}" in (d.reason or "")
    assert gate.shown == [], "no plan may be shown for such a body"
    assert io.keys == [], "not one key may leave"
    await anyio.sleep(1.0)  # no key may have left: absence has no event to wait for
    assert composer(name) == draft_before
    assert stable(name) == before


async def test_control_characters_never_reach_the_codex_queue(lab):
    gate = ScriptedGate([True] * 20)
    s = make_session(approve=gate, echo=lambda line: None)
    await s.refresh()
    for ch in CONTROLS:
        tag = f"q{uuid.uuid4().hex[:8]}"
        with pytest.raises(EnvelopeError, match=f"U\\+{ord(ch):04X}"):
            await s.send("codex:beta", f"{tag}{ch}byte", transport="codex-queue")
        assert not rollouts_hold(tag)
    assert gate.shown == []


async def test_halt_after_preflight_types_nothing(lab):
    """The halt lands in the ledger from another connection right after preflight; not a key is typed."""
    name, spec = "alpha", "claude:alpha"
    before = await quiet_screen(name)

    def echo(line: str) -> None:
        if line.startswith("  [preflight]"):
            other = Ledger(ledger_path())
            other.halt("relay-halt from another relay process", by="operator:relay@other")
            other.close()

    s = make_session(approve=ScriptedGate([True]), echo=echo)
    io = CountingIO()
    s._transports["tmux"].io = io
    try:
        await s.refresh()
        d = await s.send(spec, f"halted after preflight {uuid.uuid4().hex[:6]}", transport="tmux")
        assert d.state is DeliveryState.HALTED, d.summary()
        assert "after stage preflight" in (d.reason or "") and "the step after preflight was not done" in d.reason
        assert io.keys == []
        await anyio.sleep(1.0)  # no key may have left: absence has no event to wait for
        assert stable(name) == before
        assert s.ledger.events(relay_id=d.relay_id)[-1].data["state"] == "halted"
    finally:
        s.unhalt()


async def test_halt_after_typing_never_presses_enter(lab):
    """Halted between stage (typed, visible) and submit: Enter is never pressed, no turn starts."""
    from tests.transports.test_tmux_live import clear_composer

    name, spec = "beta", "codex:beta"
    await quiet_screen(name)
    body = f"halted before enter {uuid.uuid4().hex[:6]}"

    def echo(line: str) -> None:
        if line.startswith("  [stage] typed"):
            other = Ledger(ledger_path())
            other.halt("relay-halt between stages", by="operator:relay@other")
            other.close()

    s = make_session(approve=ScriptedGate([True]), echo=echo)
    io = CountingIO()
    s._transports["tmux"].io = io
    try:
        await s.refresh()
        d = await s.send(spec, body, transport="tmux")
        assert d.state is DeliveryState.HALTED, d.summary()
        assert [k for k, _ in io.keys] == ["literal"], io.keys
        assert "after stage stage (typed" in (d.reason or "") and "was not done" in d.reason
        end = time.monotonic() + 3
        while time.monotonic() < end:
            assert not rollouts_hold(body), "no turn may carry the halted payload"
            await anyio.sleep(0.5)
        assert body in (composer(name) or "")  # left staged, for the operator to look at
    finally:
        s.unhalt()
        await anyio.to_thread.run_sync(clear_composer, name)
