"""Fidelity checks: the tmux transport against the real clients, in a lab of its own with one session
of each kind (each kind's `LAB_COUNTS["tmux"]`, its session `TMUX_NAME`; a kind's dialog staging may
change its session's approval policy, so not a shared lab). A live test's lab may hold fewer.

The checks every kind shares (idle delivery, refusals) are here; what only one client does (what Enter
does while it is busy, how a permission dialog opens) is the kind's own (`TMUX_CHECKS`, `open_dialog`
in agents/<kind>/fidelity.py), handed the lab as a `TmuxLab`; this module never names a kind.

Every send goes through a recording `PaneIO`, so "zero keystrokes" is checked on the seam
itself, and the screen is compared before and after. Package code, so `relay fidelity` runs
them from an installed wheel; the live tests (tests/transports/test_tmux_live.py) call these
same functions and use the helpers here. A check raises AssertionError when its fact does not hold.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from libtmux.test.retry import retry_until

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
from relay_repl.lab.fidelity.kinds import kind_checks
import relay_repl.store.paths as paths
from relay_repl.agents import registry
from relay_repl.agents.fidelity import TmuxLab, calm_rows
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target
from relay_repl.lab.approvals import approved_send
from relay_repl.lab.stubs.client import SyncStubClient
from relay_repl.store.ledger import Ledger
from relay_repl.system.polling import poll_until
from relay_repl.transports.base import StageLog
from relay_repl.transports.tmux import PaneIO, PaneRef, TmuxTransport


def _tmux_modules() -> list[Any]:
    """The fidelity modules of the kinds the tmux checks' lab runs (`LAB_COUNTS["tmux"]`), in lab order."""
    out = []
    for k in registry.kinds():
        mod = k.checks.fidelity()
        if mod is not None and k.lab_driver() is not None and getattr(mod, "LAB_COUNTS", {}).get("tmux", 0):
            out.append(mod)
    return out


_MODS = _tmux_modules()
NAMES = tuple(mod.TMUX_NAME for mod in _MODS)  # each kind's one session in this lab
# a kind with no dialog to stage has no `open_dialog` (e.g. one whose lab sessions never ask for approval)
DIALOG_NAMES = tuple(mod.TMUX_NAME for mod in _MODS if hasattr(mod, "open_dialog"))
REFUSALS = ("draft", "copy-mode", "slash-menu")  # how the composer is staged = the blocker expected


class RecordingIO(PaneIO):
    """The real PaneIO, with every key that leaves written down."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        super().__init__(env)
        self.keys: list[tuple[str, str]] = []

    def send_literal(self, pane: PaneRef, text: str, approval: Any = None, part: tuple[int, int] | None = None) -> None:
        self.keys.append(("literal", text if part is None else text[part[0]:part[1]]))
        super().send_literal(pane, text, approval, part)

    def send_key(self, pane: PaneRef, key: str, approval: Any = None) -> None:
        self.keys.append(("key", key))
        super().send_key(pane, key, approval)


def _run(fn: Any, *a: Any, **kw: Any) -> Any:
    return anyio.to_thread.run_sync(lambda: fn(*a, **kw))


def _stub() -> SyncStubClient:
    st = launcher.status()
    assert st is not None, "no lab"
    return SyncStubClient(st.stub.control)


async def discover(name: str) -> Target:
    from relay_repl.agents import default_providers

    for p in default_providers():
        for t in await p.discover():
            if t.name == name and t.live and "tmux" in t.transports:
                return t
    raise AssertionError(f"{name}: not discovered with a rostered pane")


async def live_send(name: str, payload: str, timeout: float = 30.0, target: Target | None = None, **kw: Any
                    ) -> tuple[Delivery, RecordingIO, Target]:
    target = target or await discover(name)
    io = RecordingIO()
    tr = TmuxTransport(io, **kw)
    d = Delivery(target=target.spec, transport="tmux")
    log = StageLog(d, Ledger(paths.state_dir() / "tmux-live-ledger.sqlite"))
    await approved_send(tr, d, target, payload, log)
    if d.state is DeliveryState.SUBMITTED:
        await tr.confirm(d, target, payload, log, timeout)
    return d, io, target


def screen(name: str) -> list[str]:
    return helpers.pane(name).capture_pane()


async def wait_screen(name: str, pred: Any, what: str, timeout: float = 20) -> None:
    async def seen() -> bool | None:
        return True if pred(screen(name)) else None

    assert await poll_until(seen, timeout=timeout, interval=0.1), f"{name}: never saw {what}:\n" + "\n".join(screen(name))


def calm(name: str, rows: list[str]) -> list[str]:
    """`rows` less what `name`'s client redraws on its own timer (its kind's `MARKS.own_redraws`) and blank rows."""
    st = launcher.status()
    assert st is not None, "no lab"
    return calm_rows(rows, _fidelity(st.session(name).kind).MARKS)


def changed_rows(before: list[str], after: list[str]) -> str:
    """The rows that differ between two looks, with control bytes made visible: a failed "the screen changed"
    says what was drawn (the client's own late redraw, or a key that reached the pane)."""
    rows = [f"  row {i}: {b!r} -> {a!r}" for i, (b, a) in
            enumerate(zip(before + [""] * len(after), after + [""] * len(before), strict=False))
            if b != a and i < max(len(before), len(after))]
    return "\n".join(rows[:12])


async def settled(name: str, timeout: float = 10) -> list[str]:
    """The screen once two looks 0.2 s apart agree (the staging keys are drawn, the client is still)."""
    last: list[str] | None = None

    async def still() -> list[str] | None:
        nonlocal last
        now = screen(name)
        if now == last:
            return now
        last = now
        return None

    got = await poll_until(still, timeout=timeout, interval=0.2)
    assert got is not None, f"{name}: the screen never settled:\n" + "\n".join(last or [])
    return got


async def idle(name: str, timeout: float = 60) -> None:
    await _run(helpers.wait_idle, name, timeout)


def typed_once(keys: list[tuple[str, str]], payload: str, target: Target) -> bool:
    """The keys are the payload, typed once (its first `tmux_lead` characters one at a time, then the rest), then
    one Enter."""
    k = registry.kind_for(target.kind)
    lead = min(k.screen.tmux_lead if k is not None else 0, len(payload) - 1)
    want = [*(("literal", c) for c in payload[:lead]), ("literal", payload[lead:])]
    return keys == [*want, ("key", "Enter")]


def _fidelity(kind: str) -> Any:
    """The kind's fidelity module (agents/<kind>/fidelity.py): what these checks expect of its client."""
    k = registry.kind_for(kind)
    mod = k.checks.fidelity() if k is not None else None
    assert mod is not None, f"agent kind {kind!r} declares no fidelity facts"
    return mod


def clear_composer(name: str) -> None:
    """Lab cleanup without Escape: End + C-u until the composer is empty (Claude deletes a row per C-u)."""
    import relay_repl.agents.screens as screens

    st = launcher.status()
    assert st is not None, "no lab"
    s = st.session(name)
    cls = screens.for_kind(s.kind)
    assert cls is not None, f"no screen classifier for {s.kind}"
    io = PaneIO()
    ref = PaneRef(socket_path=st.tmux_socket_path, pane_id=s.pane_id or "")
    p = helpers.pane(name)
    for _ in range(15):
        r = cls.classify(io.snapshot(ref))
        if r.composer == "empty" and not r.blockers:
            return
        if "slash-menu" in r.blockers or "shell-mode" in r.blockers:
            p.send_keys("BSpace", enter=False)
        else:
            p.send_keys(_fidelity(s.kind).COMPOSER_END_KEY, enter=False)
            p.send_keys("C-u", enter=False)
        time.sleep(0.25)  # a key round per look, slower than the client redraws (too fast would over-delete)
    raise AssertionError(f"{name}: composer not cleared:\n{helpers.capture(name)}")


class LabTmux:
    """The running lab as a kind's own tmux checks see it (`agents.fidelity.TmuxLab`)."""

    async def idle(self, name: str, timeout: float = 60.0) -> None:
        await idle(name, timeout)

    async def make_busy(self, name: str, seconds: float) -> None:
        await _run(helpers.make_busy, name, seconds)

    async def live_send(self, name: str, payload: str, timeout: float = 30.0
                        ) -> tuple[Delivery, list[tuple[str, str]], Target]:
        d, io, target = await live_send(name, payload, timeout=timeout)
        return d, io.keys, target

    def typed_once(self, keys: list[tuple[str, str]], payload: str, target: Target) -> bool:
        return typed_once(keys, payload, target)

    async def clear_composer(self, name: str) -> None:
        await _run(clear_composer, name)

    async def type_text(self, name: str, text: str) -> None:
        await _run(helpers.type_text, name, text)

    async def submit(self, name: str, text: str) -> None:
        await _run(helpers.submit, name, text)

    async def press_enter(self, name: str) -> None:
        await _run(helpers.press_enter, name)

    def keys(self, name: str, text: str) -> None:
        helpers.pane(name).send_keys(text, enter=False, literal=True)

    async def wait_screen(self, name: str, pred: Callable[[list[str]], bool], what: str, timeout: float = 20) -> None:
        await wait_screen(name, pred, what, timeout)

    async def stub_tool_call(self, name: str, tool: str, args: dict[str, Any], then_text: str, match: str) -> None:
        await _run(_stub().tool_call, name, tool, args, then_text=then_text, match=match)


# -- the checks ---------------------------------------------------------------------------------------


async def idle_delivery_with_receiver_evidence(name: str, rounds: int = 3) -> list[float]:
    """`rounds` deliveries to an idle client; returns the approval-to-confirmed latencies."""
    latency: list[float] = []
    for i in range(rounds):
        await idle(name)
        # `?` and `!` inside the line: a client reading a burst against its composer as last drawn
        # (Gemini) takes them as commands unless its first characters go alone (`tmux_lead`)
        payload = Envelope.make(sender="operator:relay@t", to="peer", id=f"t-{name}-{i}",
                                body=f"idle tmux {name} {i}: are you there? !yes").compose()
        d, io, target = await live_send(name, payload)
        assert d.state is DeliveryState.IN_TURN, d.summary() + "\n" + "\n".join(e.detail for e in d.evidence)
        assert typed_once(io.keys, payload, target), io.keys
        stages = [e.stage for e in d.evidence]
        assert stages[:3] == ["preflight", "stage", "submit"] and stages[-1] == "confirm", stages
        pre = d.evidence[0].data
        assert pre["reading"]["kind"] == "idle" and pre["reading"]["composer"] == "empty" and pre["capture"], pre["reading"]
        conf = d.evidence[-1].data
        why = _fidelity(target.kind).tmux_unconfirmed(conf, payload)
        assert why is None, why
        assert (d.extra.tmux or {})["entered_at"] - (d.extra.tmux or {})["typed_at"] >= 0.05, d.extra.tmux
        latency.append((d.extra.tmux or {})["latency"])
    await idle(name)
    return latency


def _stage(name: str, how: str) -> None:
    if how == "draft":
        helpers.put_draft(name, "an operator's own unsent words")
    elif how == "copy-mode":
        helpers.copy_mode(name)
    else:
        st = launcher.status()
        assert st is not None, "no lab"
        shown = _fidelity(st.session(name).kind).MARKS.slash  # what its `/` menu shows
        p = helpers.pane(name)
        p.send_keys("/", enter=False, literal=True)
        retry_until(lambda: any(shown in ln for ln in p.capture_pane()), 10)


def _undo(name: str, how: str) -> None:
    if how == "copy-mode":
        p = helpers.pane(name)
        p.cmd("send-keys", "-X", "cancel")
        retry_until(lambda: p.cmd("display-message", "-p", "#{pane_in_mode}").stdout == ["0"], 10)
    clear_composer(name)


async def refusal_sends_zero_keys(name: str, how: str) -> None:
    """A draft, copy-mode or the slash menu in the composer: refused at preflight, not one key sent."""
    await idle(name)
    await _run(_stage, name, how)
    before = calm(name, await settled(name))
    try:
        d, io, _ = await live_send(name, f"[relay/1 t] must not be typed over a {how}")
        after = calm(name, screen(name))
    finally:
        await _run(_undo, name, how)
    assert d.state is DeliveryState.REFUSED and d.stage == "preflight", d.summary()
    assert io.keys == [], "not one keystroke may reach the pane"
    assert after == before, "the screen changed:\n" + changed_rows(before, after)
    assert how in d.evidence[-1].data["reading"]["blockers"], d.evidence[-1].data["reading"]
    await idle(name)


async def dialog_refusal_sends_zero_keys(name: str) -> None:
    await idle(name)
    # discovered before the dialog opens: it hides the Codex footer that ties the pane to the thread
    target = await discover(name)
    mod = _fidelity(target.kind)  # how its client opens a permission dialog, and how it is answered
    await mod.open_dialog(LabTmux(), name)
    before = calm(name, await settled(name))
    try:
        d, io, _ = await live_send(name, "[relay/1 t] must not answer a dialog", target=target)
        after = calm(name, screen(name))
    finally:
        # answer the dialog as an operator would, without Escape (the kind's `DIALOG.answer`)
        helpers.pane(name).send_keys(mod.DIALOG.answer, enter=False, literal=True)
        await wait_screen(name, lambda rows: not any(mod.DIALOG.asked in ln for ln in rows), "the dialog answered")
        await _run(_stub().set_script, name, {"rules": []})
    assert d.state is DeliveryState.REFUSED and d.stage == "preflight", d.summary()
    assert io.keys == [], io.keys
    assert after == before, "the screen changed:\n" + changed_rows(before, after)
    assert "dialog" in d.evidence[-1].data["reading"]["blockers"], d.evidence[-1].data["reading"]
    await idle(name)


async def _idle_delivery(name: str) -> None:
    await idle_delivery_with_receiver_evidence(name)


def _bound(check: Callable[[TmuxLab], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    return lambda: check(LabTmux())


CHECKS: dict[str, Any] = {
    **{f"idle_delivery_with_receiver_evidence[{n}]": (lambda n=n: _idle_delivery(n)) for n in NAMES},
    **kind_checks("TMUX_CHECKS", _bound, _MODS),
    **{f"refusal_sends_zero_keys[{how}-{n}]": (lambda n=n, how=how: refusal_sends_zero_keys(n, how))
       for how in REFUSALS for n in NAMES},
    **{f"dialog_refusal_sends_zero_keys[{n}]": (lambda n=n: dialog_refusal_sends_zero_keys(n)) for n in DIALOG_NAMES},
}
