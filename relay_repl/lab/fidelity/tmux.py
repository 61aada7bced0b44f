"""Fidelity checks: the tmux transport against the real clients, in a lab of its own with one session
of each kind (Claude alpha, Codex beta, Gemini gamma: each kind's `LAB_COUNTS["tmux"]`; the checks
change a Codex thread's approval policy, so not a shared lab). A live test's lab may hold fewer.

Every send goes through a recording `PaneIO`, so "zero keystrokes" is checked on the seam
itself, and the screen is compared before and after. Package code, so `relay fidelity` runs
them from an installed wheel; the live tests (tests/transports/test_tmux_live.py) call these
same functions and use the helpers here. A check raises AssertionError when its fact does not hold.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from libtmux.test.retry import retry_until

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
import relay_repl.store.paths as paths
from relay_repl.agents import registry
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.core.target import Target
from relay_repl.lab.approvals import approved_send
from relay_repl.lab.stubs.client import SyncStubClient
from relay_repl.store.ledger import Ledger
from relay_repl.system.polling import poll_until
from relay_repl.transports.base import StageLog
from relay_repl.transports.tmux import PaneIO, PaneRef, TmuxTransport

NAMES = ("alpha", "beta", "gamma")
DIALOG_NAMES = ("alpha", "beta")  # Gemini runs in YOLO mode in the lab: no approval box to stage
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
    """The keys are the payload, typed once (its first `tmux_lead` characters alone, then the rest), then one Enter."""
    k = registry.kind_for(target.kind)
    lead = min(getattr(k, "tmux_lead", 0), len(payload) - 1)
    want = [("literal", payload[:lead]), ("literal", payload[lead:])] if lead else [("literal", payload)]
    return keys == [*want, ("key", "Enter")]


def _fidelity(kind: str) -> Any:
    """The kind's fidelity module (agents/<kind>/fidelity.py): what these checks expect of its client."""
    k = registry.kind_for(kind)
    mod = k.fidelity() if k is not None else None
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


# -- the checks ---------------------------------------------------------------------------------------


async def idle_delivery_with_receiver_evidence(name: str, rounds: int = 3) -> list[float]:
    """`rounds` deliveries to an idle client; returns the approval-to-confirmed latencies."""
    latency: list[float] = []
    for i in range(rounds):
        await idle(name)
        # `?` and `!` inside the line: a client reading a burst against its composer as last drawn
        # (Gemini) takes them as commands unless its first characters go alone (`tmux_lead`)
        payload = (f"[relay/1 from=operator:relay@t to=peer id=t-{name}-{i} hop=0 want=none] idle tmux {name} {i}: "
                   "are you there? !yes")
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


async def busy_claude_enter_queues_then_delivers() -> None:
    await idle("alpha")
    await _run(helpers.make_busy, "alpha", 6)
    payload = "[relay/1 from=operator:relay@t to=peer id=t-busy-claude hop=0 want=none] typed while claude is busy"
    d, io, target = await live_send("alpha", payload, timeout=40)
    assert d.state is DeliveryState.IN_TURN, d.summary()
    assert typed_once(io.keys, payload, target), "busy Claude: one Enter, never a second, never Tab"
    assert d.evidence[0].data["reading"]["kind"] == "busy", d.evidence[0].data["reading"]
    assert (d.extra.tmux or {})["kind_at_submit"] == "busy", d.extra.tmux
    assert (d.extra.tmux or {})["screen_after_enter"]["queued"], d.extra.tmux
    states = [e.state for e in d.evidence]
    assert DeliveryState.QUEUED in states, states  # the transcript's queue-operation enqueue came first
    where = d.evidence[-1].data["record"]["where"]
    assert where == "top-level user", where  # no tool call: it ran as the next turn
    await idle("alpha")


async def busy_codex_enter_steers_into_the_running_turn() -> None:
    await idle("beta")
    await _run(helpers.make_busy, "beta", 8)
    payload = "[relay/1 from=operator:relay@t to=peer id=t-busy-codex hop=0 want=none] typed while codex is busy"
    d, io, target = await live_send("beta", payload, timeout=30)
    assert d.state is DeliveryState.IN_TURN, d.summary()
    assert typed_once(io.keys, payload, target), "Codex steers on Enter: the Tab branch must not fire"
    assert (d.extra.tmux or {})["kind_at_submit"] == "busy", d.extra.tmux
    item = d.evidence[-1].data["item"]
    assert item["steered"], "the payload must land in the turn that was already running"
    await idle("beta")


async def busy_gemini_enter_queues_then_delivers() -> None:
    """Gemini CLI (GM §5): Enter while busy queues the line (`Queued (press ↑ to edit):`); its chat file
    records it, as an ordinary user record, only when the busy turn ends and it is sent."""
    await idle("gamma")
    await _run(helpers.make_busy, "gamma", 6)
    payload = "[relay/1 from=operator:relay@t to=peer id=t-busy-gemini hop=0 want=none] typed while gemini is busy?"
    try:
        d, io, target = await live_send("gamma", payload, timeout=40)
    finally:
        await idle("gamma")
        await _run(clear_composer, "gamma")  # a send left pending leaves its payload staged: not for the next check
    assert d.state is DeliveryState.IN_TURN, d.summary() + "\n" + "\n".join(e.detail for e in d.evidence)
    assert typed_once(io.keys, payload, target), "busy Gemini: the payload once, one Enter"
    assert d.evidence[0].data["reading"]["kind"] == "busy", d.evidence[0].data["reading"]
    assert (d.extra.tmux or {})["kind_at_submit"] == "busy", d.extra.tmux
    why = _fidelity(target.kind).tmux_unconfirmed(d.evidence[-1].data, payload)
    assert why is None, why
    await idle("gamma")


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
    before = await settled(name)
    try:
        d, io, _ = await live_send(name, f"[relay/1 t] must not be typed over a {how}")
        after = screen(name)
    finally:
        await _run(_undo, name, how)
    assert d.state is DeliveryState.REFUSED and d.stage == "preflight", d.summary()
    assert io.keys == [], "not one keystroke may reach the pane"
    assert after == before, "the screen changed"
    assert how in d.evidence[-1].data["reading"]["blockers"], d.evidence[-1].data["reading"]
    await idle(name)


async def _open_claude_dialog() -> None:
    await _run(_stub().tool_call, "alpha", "WebFetch", {"url": "http://127.0.0.1:9/relay-test", "prompt": "x"},
               then_text="fetch done", match="DIALOGTEST")
    await _run(helpers.submit, "alpha", "DIALOGTEST fetch something")
    await wait_screen("alpha", lambda rows: any("Do you want to" in ln for ln in rows), "a permission dialog")


async def _open_codex_dialog() -> None:
    """approval_policy is `never` in the lab: switch this thread to `Ask for approval` first."""
    p = helpers.pane("beta")

    async def until(text: str, t: float = 15) -> None:
        await wait_screen("beta", lambda rows: any(text in ln for ln in rows), repr(text), t)

    await _run(helpers.type_text, "beta", "/permissions")
    await until("/permissions  choose")
    await _run(helpers.press_enter, "beta")
    await until("Update Model Permissions")
    p.send_keys("1", enter=False, literal=True)
    await until("Permission selection requested")
    await idle("beta")
    await _run(_stub().tool_call, "beta", "exec_command",
               {"cmd": "true", "sandbox_permissions": "require_escalated", "justification": "relay test dialog",
                "yield_time_ms": 10000}, then_text="approval done", match="DIALOGTEST")
    await _run(helpers.submit, "beta", "DIALOGTEST run something")
    await until("Would you like to run the following command?", 20)


async def dialog_refusal_sends_zero_keys(name: str) -> None:
    await idle(name)
    # discovered before the dialog opens: it hides the Codex footer that ties the pane to the thread
    target = await discover(name)
    await (_open_claude_dialog if name == "alpha" else _open_codex_dialog)()
    before = await settled(name)
    try:
        d, io, _ = await live_send(name, "[relay/1 t] must not answer a dialog", target=target)
        after = screen(name)
    finally:
        # answer the dialog as an operator would, without Escape: Claude "3" (No), Codex "y" (runs `true`)
        helpers.pane(name).send_keys("3" if name == "alpha" else "y", enter=False, literal=True)
        asked = "Do you want to" if name == "alpha" else "Would you like to run the following command?"
        await wait_screen(name, lambda rows: not any(asked in ln for ln in rows), "the dialog answered")
        await _run(_stub().set_script, name, {"rules": []})
    assert d.state is DeliveryState.REFUSED and d.stage == "preflight", d.summary()
    assert io.keys == [], io.keys
    assert after == before, "the screen changed"
    assert "dialog" in d.evidence[-1].data["reading"]["blockers"], d.evidence[-1].data["reading"]
    await idle(name)


async def _idle_delivery(name: str) -> None:
    await idle_delivery_with_receiver_evidence(name)


CHECKS: dict[str, Any] = {
    **{f"idle_delivery_with_receiver_evidence[{n}]": (lambda n=n: _idle_delivery(n)) for n in NAMES},
    "busy_claude_enter_queues_then_delivers": busy_claude_enter_queues_then_delivers,
    "busy_codex_enter_steers_into_the_running_turn": busy_codex_enter_steers_into_the_running_turn,
    "busy_gemini_enter_queues_then_delivers": busy_gemini_enter_queues_then_delivers,
    **{f"refusal_sends_zero_keys[{how}-{n}]": (lambda n=n, how=how: refusal_sends_zero_keys(n, how))
       for how in REFUSALS for n in NAMES},
    **{f"dialog_refusal_sends_zero_keys[{n}]": (lambda n=n: dialog_refusal_sends_zero_keys(n)) for n in DIALOG_NAMES},
}
