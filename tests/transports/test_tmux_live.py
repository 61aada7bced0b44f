"""The tmux transport: its state machine over replayed captures, then live against the lab.

Unit part (no lab): `relay_repl.testing.ReplayIO` (a `PaneIO` double) replays golden captures recorded from the real
clients, so the rules are checked key by key — what is refused with zero keys, when
Enter is withheld, when (and only when) Tab is earned.

Live part (`-m live`): one lab per module under its own RELAY_HOME (this module
changes a Codex thread's approval policy and SIGSTOPs clients, so it does not use
the shared lab). Every send goes through a recording `PaneIO`, so "zero keystrokes"
is asserted on the seam itself, and the screen is compared before and after.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from libtmux.test.retry import retry_until

from relay_repl.testing.labs import private_lab_home

import relay_repl.store.paths as paths
from relay_repl.core.delivery import Delivery, DeliveryState
from relay_repl.store.ledger import Ledger
from relay_repl.agents.screens.model import Snapshot
from relay_repl.core.target import Target
from relay_repl.transports.base import StageLog
from relay_repl.transports.tmux import PaneIO, PaneRef, TmuxTransport
from relay_repl.testing.panes import ReplayIO
from tests.support.approvals import approved_send  # noqa: F401
from relay_repl.lab.fidelity import tmux as checks
# the live helpers live beside the checks `relay fidelity` runs (package code): one copy
from relay_repl.lab.fidelity.tmux import (RecordingIO, _run, clear_composer, discover, idle, live_send,  # noqa: F401
                                          screen, settled, wait_screen)

pytestmark = pytest.mark.anyio
live = pytest.mark.live

CAPTURES = Path(__file__).parents[1] / "agents" / "screens" / "captures"


# -- seams ----------------------------------------------------------------------------------------

def golden(client: str, scenario: str) -> Snapshot:
    d = next(CAPTURES.glob(f"{client}-*"))
    meta = json.loads((d / f"{scenario}.json").read_text(encoding="utf-8"))
    plain = (d / f"{scenario}.txt").read_text(encoding="utf-8").split("\n")[:-1]
    esc = (d / f"{scenario}.e.txt").read_text(encoding="utf-8").split("\n")[:-1]
    keys = ("cursor_x", "cursor_y", "pane_in_mode", "pane_mode", "alternate_on", "pane_current_command",
            "pane_pid", "pane_dead", "pane_width", "pane_height")
    return Snapshot(lines=plain, esc_lines=esc, pane_id="%0", **{k: meta[k] for k in keys})


def replay_target(kind: str, snap: Snapshot, tmp_path: Path, name: str = "beta") -> Target:
    detail: dict[str, Any] = {"codex_home": str(tmp_path / "codex"), "thread_id": "0" * 36} if kind == "codex" else {}
    return Target(kind=kind, name=name if kind == "codex" else "alpha", address="x", pid=snap.pane_pid, live=True,
                  state="idle", pane="%0", transports=("tmux",), identified_by="replay", detail=detail)


def stage_log(tmp_path: Path, spec: str = "x") -> tuple[Delivery, StageLog]:
    d = Delivery(target=spec, transport="tmux")
    return d, StageLog(d, Ledger(tmp_path / "ledger.sqlite"))


def fast(io: PaneIO, **kw: Any) -> TmuxTransport:
    return TmuxTransport(io, **{"stage_timeout": 0.6, "poll": 0.02, "settle": 0.4, "tab_after": 0.1, **kw})


# -- the state machine over replayed captures (no lab) -----------------------------------------------

@pytest.mark.parametrize("client, scenario", [
    ("claude-code", "idle_draft_fresh"), ("claude-code", "slash_menu"), ("claude-code", "shell_mode"),
    ("claude-code", "permission_dialog"), ("claude-code", "copy_mode"), ("claude-code", "shortcuts_overlay"),
    ("claude-code", "dead"), ("claude-code", "idle_draft_cursor_home"),
    ("codex", "idle_draft_fresh"), ("codex", "slash_menu"), ("codex", "shell_mode"), ("codex", "approval_dialog"),
    ("codex", "selection_view"), ("codex", "copy_mode"), ("codex", "shortcuts_overlay"), ("codex", "dead"),
    ("codex", "idle_draft_cursor_home"),
])
async def test_replay_blocked_screens_are_refused_with_zero_keys(tmp_path, client, scenario):
    snap = golden(client, scenario)
    io = ReplayIO(snap, argv=["/x/codex"] if client == "codex" else ["claude"])
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target(client, snap, tmp_path), "[relay/1 t] hello", log)
    assert d.state is DeliveryState.REFUSED and d.stage == "preflight", d.reason
    assert io.keys == []
    assert d.evidence[-1].data["keys_sent"] == 0 and "reading" in d.evidence[-1].data


@pytest.mark.parametrize("payload", ["/exit", "!rm -rf x", "@file", "#note", "?help", "two\nlines", ""])
async def test_replay_untypable_payload_is_refused_before_any_io(tmp_path, payload):
    snap = golden("claude-code", "after_turn")
    io = ReplayIO(snap)
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("claude-code", snap, tmp_path), payload, log)
    assert d.state is DeliveryState.REFUSED and io.keys == []


async def test_replay_roster_mismatch_is_refused(tmp_path):
    snap = golden("claude-code", "after_turn")
    io = ReplayIO(snap)
    t = replay_target("claude-code", snap, tmp_path).model_copy(update={"pid": (snap.pane_pid or 0) + 1})
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, t, "[relay/1 t] hello", log)
    assert d.state is DeliveryState.REFUSED and "roster" in (d.reason or "") and io.keys == []


async def test_replay_codex_pane_not_tied_to_the_thread_is_refused(tmp_path):
    snap = golden("codex", "after_turn")
    io = ReplayIO(snap, argv=["/x/codex"])
    t = replay_target("codex", snap, tmp_path, name="someone-else").model_copy(update={"pid": 1})
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, t, "[relay/1 t] hello", log)
    assert d.state is DeliveryState.REFUSED and "cannot be tied" in (d.reason or "") and io.keys == []


async def test_replay_payload_never_visible_means_no_enter(tmp_path):
    snap = golden("claude-code", "after_turn")
    io = ReplayIO(snap)  # the screen never changes: a frozen client
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("claude-code", snap, tmp_path), "[relay/1 t] hello", log)
    assert d.state is DeliveryState.TYPED and d.stage == "stage"
    assert io.keys == [("literal", "[relay/1 t] hello")]
    assert "pending staged" in (d.reason or "") and d.evidence[-1].data["capture"]


async def test_replay_dialog_between_stage_and_submit_withholds_enter(tmp_path):
    """Visible and stable, then a permission dialog opens: Enter would answer it, so none is sent."""
    idle = golden("claude-code", "after_turn")
    staged = golden("claude-code", "busy_staged")
    dialog = golden("claude-code", "permission_dialog")
    payload = "[relay/1 test] typed while busy"

    class Flip(ReplayIO):
        polls = 0

        def snapshot(self, pane: PaneRef) -> Snapshot:
            if self.screen is staged:
                self.polls += 1
                if self.polls > 2:
                    return dialog
            return self.screen

    io = Flip(idle, on_literal=staged)
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("claude-code", idle, tmp_path), payload, log)
    assert d.state is DeliveryState.TYPED and d.stage == "submit", d.reason
    assert [k for k in io.keys if k[0] == "key"] == []


async def test_replay_claude_busy_gets_one_enter_and_nothing_else(tmp_path):
    busy, staged, queued = (golden("claude-code", s) for s in ("busy", "busy_staged", "busy_queued"))
    io = ReplayIO(busy, on_literal=staged, on_enter=queued)
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("claude-code", busy, tmp_path), "[relay/1 test] typed while busy", log)
    assert d.state is DeliveryState.SUBMITTED
    assert io.keys == [("literal", "[relay/1 test] typed while busy"), ("key", "Enter")]
    hint = d.extra.tmux["screen_after_enter"]
    assert hint["queued"] and hint["composer_emptied"]


async def test_replay_claude_enter_that_does_not_take_is_never_repeated(tmp_path):
    busy, staged = golden("claude-code", "busy"), golden("claude-code", "busy_staged")
    io = ReplayIO(busy, on_literal=staged)  # Enter changes nothing
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("claude-code", busy, tmp_path), "[relay/1 test] typed while busy", log)
    assert [k for k in io.keys if k[0] == "key"] == [("key", "Enter")]
    assert "not pressed again" in (d.reason or "")


async def test_replay_codex_tab_only_when_enter_left_it_beside_tab_to_queue(tmp_path):
    busy, staged, queued = (golden("codex", s) for s in ("busy", "busy_staged", "busy_tab_queued"))
    io = ReplayIO(busy, on_literal=staged, on_tab=queued, argv=["/x/codex"])  # Enter changes nothing
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("codex", busy, tmp_path), "[relay/1 test] staged while busy", log)
    assert io.keys == [("literal", "[relay/1 test] staged while busy"), ("key", "Enter"), ("key", "Tab")]
    why = [e for e in d.evidence if e.stage == "submit" and "Tab sent once" in e.detail]
    assert len(why) == 1 and "tab to queue message" in why[0].detail
    assert d.extra.tmux["screen_after_enter"]["queued"]


async def test_replay_codex_steer_sends_no_tab(tmp_path):
    busy, staged, steered = (golden("codex", s) for s in ("busy", "busy_staged", "busy_steered"))
    payload = "[relay/1 test] staged while busy"
    io = ReplayIO(busy, on_literal=staged, on_enter=steered, argv=["/x/codex"])
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("codex", busy, tmp_path), payload, log)
    assert io.keys == [("literal", payload), ("key", "Enter")]


def test_escape_can_never_leave():
    io = PaneIO({})
    for key in ("Escape", "Esc", "C-[", "C-c", "\x1b"):
        with pytest.raises(ValueError):
            io.send_key(PaneRef(socket_path="/nonexistent", pane_id="%0"), key)


# -- live: the lab ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tmux_lab_home(tmp_path_factory):
    with private_lab_home(tmp_path_factory, "tmuxlab") as home:
        yield home


@pytest.fixture(scope="module")
def tmux_lab_state(tmux_lab_home):
    import relay_repl.lab.launcher as launcher

    return launcher.up(claude=1, codex=1, progress=lambda m: None)


@pytest.fixture
def tlab(request, tmux_lab_home, tmux_lab_state, monkeypatch):
    """This module's lab, with the test's environment pointed at it (after conftest's relay_home)."""
    import relay_repl.lab.launcher as launcher

    request.getfixturevalue("relay_home")
    monkeypatch.setenv("RELAY_HOME", str(tmux_lab_home))
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HOME", str(launcher.layout().home))
    return tmux_lab_state


LATENCY: dict[str, list[float]] = {}


@live
@pytest.mark.parametrize("name", ["alpha", "beta"])
async def test_live_idle_delivery_with_receiver_evidence(tlab, name):
    LATENCY.setdefault(name, []).extend(await checks.idle_delivery_with_receiver_evidence(name))
    med = statistics.median(LATENCY[name])
    print(f"\n{name}: approval -> confirmed over tmux, median of {len(LATENCY[name])}: {med:.2f}s {LATENCY[name]}")


@live
@pytest.mark.parametrize("spec, name", [("claude:alpha", "alpha"), ("codex:beta", "beta")])
async def test_live_through_the_session_gate(tlab, spec, name):
    """The operator's path: plan, y/N gate, then the four stages; the plan says what counts as delivered."""
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate

    await idle(name)
    gate = ScriptedGate([True])
    lines: list[str] = []
    s = make_session(approve=gate, echo=lines.append)
    await s.refresh()
    d = await s.send(spec, f"through the gate to {name}", transport="tmux", timeout=30)
    assert d.state is DeliveryState.IN_TURN, d.summary() + "\n" + "\n".join(lines)
    plan = gate.shown[0]
    assert plan.transport == "tmux" and plan.payload.startswith("[relay/1 ") and "exactly this line" in plan.delivered_when
    assert [e.stage for e in d.evidence][:3] == ["preflight", "stage", "submit"]
    kinds = [e.kind for e in s.ledger.events(relay_id=d.relay_id)]
    assert kinds[:2] == ["plan", "answer"] and "stage:confirm" in kinds and kinds[-1] == "outcome"
    await idle(name)


@live
async def test_live_busy_claude_enter_queues_then_delivers(tlab):
    await checks.CHECKS["busy_claude_enter_queues_then_delivers"]()


@live
async def test_live_busy_claude_mid_tool_is_absorbed_at_the_tool_boundary(tlab):
    import relay_repl.lab.helpers as helpers
    from relay_repl.lab.stubs.client import SyncStubClient

    await idle("alpha")
    stub = SyncStubClient(tlab.stub.control)
    await _run(stub.tool_call, "alpha", "Bash", {"command": "sleep 6", "description": "hold a tool call"},
               then_text="tool done", match="TOOLHOLD")
    await _run(helpers.submit, "alpha", "TOOLHOLD run a slow tool")
    await wait_screen("alpha", lambda rows: any("sleep 6" in ln for ln in rows), "the Bash tool running")
    payload = "[relay/1 from=operator:relay@t to=peer id=t-tool hop=0 want=none] typed while a tool runs"
    d, io, _ = await live_send("alpha", payload, timeout=40)
    assert d.state is DeliveryState.IN_TURN, d.summary()
    assert io.keys == [("literal", payload), ("key", "Enter")]
    rec = d.evidence[-1].data["record"]
    assert rec["where"] == "attachment.queued_command" and rec["origin"]["kind"] == "human"
    await idle("alpha")


@live
async def test_live_busy_codex_enter_steers_into_the_running_turn(tlab):
    await checks.CHECKS["busy_codex_enter_steers_into_the_running_turn"]()


@live
async def test_live_busy_codex_mid_tool_waits_for_the_tool_then_joins_the_turn(tlab):
    import relay_repl.lab.helpers as helpers
    from relay_repl.lab.stubs.client import SyncStubClient

    await idle("beta")
    stub = SyncStubClient(tlab.stub.control)
    await _run(stub.tool_call, "beta", "exec_command", {"cmd": "sleep 5", "yield_time_ms": 20000},
               then_text="tool done", match="TOOLHOLD")
    await _run(helpers.submit, "beta", "TOOLHOLD run a slow tool")
    await wait_screen("beta", lambda rows: any("background terminal running" in ln for ln in rows), "the tool running")
    payload = "[relay/1 from=operator:relay@t to=peer id=t-codex-tool hop=0 want=none] typed while a codex tool runs"
    d, io, _ = await live_send("beta", payload, timeout=30)
    assert d.state is DeliveryState.IN_TURN, d.summary()
    assert io.keys == [("literal", payload), ("key", "Enter")]
    assert d.extra.tmux["screen_after_enter"]["queued"], "shown under `Messages to be submitted after next tool call`"
    assert d.evidence[-1].data["item"]["steered"]
    await idle("beta")


@live
@pytest.mark.parametrize("name", ["alpha", "beta"])
@pytest.mark.parametrize("how", checks.REFUSALS)
async def test_live_refusal_sends_zero_keys(tlab, name, how):
    await checks.refusal_sends_zero_keys(name, how)


@live
@pytest.mark.parametrize("name", ["alpha", "beta"])
async def test_live_dialog_refusal_sends_zero_keys(tlab, name):
    await checks.dialog_refusal_sends_zero_keys(name)


FREEZER = Path("/sys/fs/cgroup/freezer")


@contextlib.contextmanager
def frozen(pid: int, pane_pid: int | None) -> Iterator[str]:
    """Freeze `pid` so its screen stops changing; yields how.

    SIGSTOP alone does not hold a process that is the pane's own child: tmux sees it
    stop and sends SIGCONT at once (that is what happened to Claude, whose pid is the
    pane pid). A cgroup-v1 freezer stops it without job control; SIGSTOP is enough for
    the Codex TUI, a grandchild of tmux under the npm node wrapper.
    """
    if (FREEZER / "cgroup.procs").exists() and os.access(FREEZER, os.W_OK):
        back = FREEZER
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, ctrl, where = line.split(":", 2)
            if "freezer" in ctrl.split(","):
                back = FREEZER / where.lstrip("/")
        d = FREEZER / f"relay-tmux-test-{os.getpid()}-{pid}"
        d.mkdir()
        try:
            (d / "cgroup.procs").write_text(str(pid))
            (d / "freezer.state").write_text("FROZEN")
            retry_until(lambda: (d / "freezer.state").read_text().strip() == "FROZEN", 5, interval=0.02, raises=False)
            yield "cgroup freezer"
        finally:
            (d / "freezer.state").write_text("THAWED")
            (back / "cgroup.procs").write_text(str(pid))
            d.rmdir()
        return
    if pid == pane_pid:
        pytest.skip("no writable cgroup freezer, and tmux resumes a SIGSTOPped pane child at once")
    os.kill(pid, signal.SIGSTOP)
    try:
        yield "SIGSTOP"
    finally:
        os.kill(pid, signal.SIGCONT)


@live
@pytest.mark.parametrize("name", ["alpha", "beta"])
async def test_live_payload_never_visible_leaves_no_enter(tlab, name):
    """Freeze the client so its screen stops: the literal bytes wait in the pty, never drawn."""
    import relay_repl.lab.helpers as helpers
    import relay_repl.lab.launcher as launcher

    await idle(name)
    s = launcher.status().session(name)
    assert s.pid
    payload = f"[relay/1 t] frozen receiver {name}"
    target = await discover(name)
    with frozen(s.pid, s.pane_pid) as how:
        d, io, _ = await live_send(name, payload, stage_timeout=1.5, target=target)
        print(f"\n{name} frozen by {how}")
    assert d.state is DeliveryState.TYPED and d.stage == "stage", d.summary()
    assert io.keys == [("literal", payload)], "no Enter (nor any other key) after a stage that never showed"
    assert "pending staged" in (d.reason or "")
    assert d.evidence[-1].data["capture"]
    # the thawed client now draws the staged bytes; take them back out (C-u, never Escape)
    end = time.monotonic() + 10
    while payload not in "\n".join(helpers.pane(name).capture_pane()):
        assert time.monotonic() < end, "the thawed client never showed the staged bytes"
        await anyio.sleep(0.1)
    await _run(clear_composer, name)
    await idle(name)
    assert payload not in "\n".join(screen(name)[-6:])


async def test_replay_a_leading_hash_is_typed_to_codex_but_refused_to_claude(tmp_path):
    """The receiver's own UI-mode characters (its adapter's, asked through its agent kind) decide:
    `#` opens Claude's memory mode but is literal text in Codex (codex.md §4)."""
    snap = golden("claude-code", "after_turn")
    io = ReplayIO(snap)
    d, log = stage_log(tmp_path)
    await approved_send(fast(io), d, replay_target("claude-code", snap, tmp_path), "#note", log)
    assert d.state is DeliveryState.REFUSED and "opens a UI mode" in (d.reason or "") and io.keys == []
    snap = golden("codex", "fresh")
    io = ReplayIO(snap, argv=["/x/codex"])
    (tmp_path / "codex").mkdir()
    d, log = stage_log(tmp_path / "codex")
    await approved_send(fast(io), d, replay_target("codex", snap, tmp_path), "#note", log)
    assert "opens a UI mode" not in (d.reason or ""), d.reason
