"""The facts about Codex that `relay fidelity` checks live (lab/fidelity runs the checks).

Their home is the kind's package: a fact about the client changes with the client, and the
lab iterates every kind's table rather than naming the kinds. Facts shared with another kind
carry the same text there, and are reported once for both.
"""

from __future__ import annotations

import json
import os
from typing import Any

import relay_repl.agents.codex.lab as lab_home  # the lab's CODEX_HOME and what it reads there
from relay_repl.agents.codex.detail import CodexDetail
from relay_repl.agents.fidelity import (BUSY_WHILE_A_TURN_RUNS, LISTED, TMUX_DIALOG_REFUSAL, TMUX_IDLE_DELIVERY,
                                       TMUX_REFUSALS, Dialog, Expect, FidelityLab, Marks, NativeLab, ScreenStage,
                                       TmuxLab, in_turn, main_texts, send_while_busy)
from relay_repl.agents.kind import FidelityFact
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target

_D, _N, _T = "discovery:", "native:", "tmux:"

FACTS: tuple[FidelityFact, ...] = (
    LISTED,
    BUSY_WHILE_A_TURN_RUNS,
    FidelityFact(fact="codex rename seen (session index)", paths="discovery",
                 checks=(_D + "codex_rename_is_seen",)),
    FidelityFact(fact="codex daemon status (thread loaded, no TUI)", paths="discovery, codex-queue",
                 checks=(_D + "codex_thread_loaded_without_a_tui_is_live_with_no_pane",)),
    FidelityFact(fact="codex queue schema and read-back (idle)", paths="codex-queue",
                 checks=(_N + "codex_queue_to_an_idle_target",)),
    FidelityFact(fact="codex rollout queue turns (busy)", paths="codex-queue",
                 checks=(_N + "codex_queue_to_a_busy_target_waits_for_its_turn",)),
    TMUX_IDLE_DELIVERY,
    FidelityFact(fact="busy submit: codex Enter steers into the turn", paths="tmux",
                 checks=(_T + "busy_codex_enter_steers_into_the_running_turn",)),
    TMUX_REFUSALS,
    TMUX_DIALOG_REFUSAL,
)

COMPOSER_END_KEY = "C-e"
"""The tmux key that moves the cursor to the end of Codex's composer (the lab clears a draft with it and C-u)."""


# built at import, so a fast test that imports this module fails on an envelope the builder refuses
BUSY_PAYLOAD = Envelope.make(sender="operator:relay@t", to="peer", id="t-busy-codex-1", body="typed while codex is busy").compose()


def tmux_unconfirmed(confirm: dict[str, Any], payload: str) -> str | None:
    """Why the tmux transport's confirm-stage data is not Codex's own evidence of a typed line that
    started a turn of its own (the rollout item: a user turn trigger, not steered), or None when it is."""
    item = confirm.get("item") or {}
    if item.get("turn_trigger") == "user" and not item.get("steered"):
        return None
    return f"rollout item is not a user-triggered, unsteered turn: {item}"


LAB_COUNTS = {"discovery": 2, "native": 1, "tmux": 1, "screens": 1}
"""Codex sessions each check group's lab starts (two for discovery: one is renamed, one turned busy)."""


def listed(t: Target, s: Any, version: str) -> None:
    """What discovery reports for idle lab session `s` (lab.state.LabSession) beyond pane, state and version."""
    assert (t.address, t.pid) == (s.session_id, lab_home.lab_facts(s).daemon_pid), t
    assert t.transports == ("codex-queue", "tmux"), t.transports
    assert t.identified_by == (f"session_index.jsonl thread_name={s.name}; lock held by daemon pid {lab_home.lab_facts(s).daemon_pid}; "
                               f"status idle from daemon; pane {s.pane_id}: footer names thread '{s.name}'"), \
        t.identified_by


def busy_detail(t: Target) -> None:
    """While a turn runs, the daemon reports the thread active."""
    assert (CodexDetail.of(t).status_raw or {}).get("type") == "active", t.detail


def idle_detail(t: Target) -> None:
    return None


# -- its own discovery checks ---------------------------------------------------------------------------


async def daemon_call(lab: FidelityLab, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC call on the lab's Codex daemon control socket (staging only)."""
    from websockets.asyncio.client import unix_connect

    sock = os.path.realpath(lab_home.control_socket(lab.layout().root))
    async with unix_connect(sock, uri="ws://localhost/", max_size=None) as ws:
        await ws.send(json.dumps({"id": 1, "method": "initialize", "params": {
            "clientInfo": {"name": "relay-live-test", "title": "t", "version": "0"},
            "capabilities": {"experimentalApi": True}}}))
        while json.loads(await ws.recv()).get("id") != 1:
            pass
        await ws.send(json.dumps({"method": "initialized"}))
        await ws.send(json.dumps({"id": 2, "method": method, "params": params}))
        while True:
            msg = json.loads(await ws.recv())
            if msg.get("id") == 2:
                assert "error" not in msg, msg
                return msg["result"]


def codex_locks(lab: FidelityLab) -> set[str]:
    """The thread ids whose writer lock is held (the daemon holds one per loaded thread)."""
    return lab_home.locks(lab.layout().root)


async def with_pane(lab: FidelityLab, spec: str) -> Target | None:
    t = lab.one(await lab.discover(), spec)
    return t if t.pane else None


async def codex_rename_is_seen(lab: FidelityLab) -> None:
    name = lab.status().of_kind("codex")[-1].name
    tid = lab.status().session(name).session_id
    lab.rename(name, f"{name}-renamed")
    try:
        ts = await lab.discover()  # the first refresh after the rename already sees it
        t = lab.one(ts, f"codex:{name}-renamed")
        assert t.address == tid and t.identified_by.startswith(f"session_index.jsonl thread_name={name}-renamed"), t
        assert not [x for x in ts if x.spec == f"codex:{name}"]
        # The TUI's footer follows the rename, so its pane stays rostered.
        t = await lab.until(lambda: with_pane(lab, f"codex:{name}-renamed"))
        assert t.pane == lab.status().session(f"{name}-renamed").pane_id
    finally:
        lab.rename(f"{name}-renamed", name)


async def codex_thread_loaded_without_a_tui_is_live_with_no_pane(lab: FidelityLab) -> None:
    st = lab.status()
    first = st.of_kind("codex")[0]
    before = codex_locks(lab)
    cmd = lab.launch_command(first.name, first=False)  # attaches to the daemon, with the first session's stub
    lab.tmux("new-session", "-d", "-s", "detach", "-x", "160", "-y", "45", "-c", first.cwd, "--", *cmd)
    try:
        async def new_thread() -> str | None:
            fresh = codex_locks(lab) - before
            screen = lab.tmux("capture-pane", "-p", "-t", "=detach:").stdout
            return fresh.pop() if len(fresh) == 1 and "› " in screen else None

        tid = await lab.until(new_thread, timeout=60)
        await daemon_call(lab, "thread/name/set", {"threadId": tid, "name": "detached-one"})
        pane_id, _ = lab.pane_pid_of("detach")
        t = await lab.until(lambda: with_pane(lab, "codex:detached-one"))
        assert t.pane == pane_id, (t.pane, pane_id)

        lab.tmux("send-keys", "-t", "=detach:", "C-c")  # detach: the daemon keeps the thread loaded

        async def tui_gone() -> bool:
            return lab.tmux("display-message", "-p", "-t", "=detach:", "#{pane_dead}").stdout.strip() == "1"

        try:
            await lab.until(tui_gone, timeout=5)
        except AssertionError:  # a TUI still drawing its welcome takes the first C-c as a key; quit asks twice
            lab.tmux("send-keys", "-t", "=detach:", "C-c")
            await lab.until(tui_gone, timeout=20)
        t = lab.one(await lab.discover(), "codex:detached-one")
        assert t.live and t.state == "idle" and t.pane is None and "tmux" not in t.transports, t
        assert CodexDetail.of(t).holder_kind == "daemon" and t.pid == lab_home.lab_facts(first).daemon_pid, t.detail
    finally:
        lab.tmux("kill-session", "-t", "=detach")


DISCOVERY_CHECKS = {
    "codex_rename_is_seen": codex_rename_is_seen,
    "codex_thread_loaded_without_a_tui_is_live_with_no_pane": codex_thread_loaded_without_a_tui_is_live_with_no_pane,
}


# -- its screens ----------------------------------------------------------------------------------------

MARKS = Marks(
    fresh="fresh session (after the lab's /rename), nothing typed", done="Worked for",
    after_turn="idle after a finished turn (`Worked for`)", home_text="Ask Codex to do anything",
    home_shown_by_text=False, cursor_home="a draft that reads like the placeholder, cursor home",
    slash="/model", slash_menu="`/` typed: the command popup",
    shell="Shell mode", shell_mode="`!` typed: shell mode (prompt `!`)",
    shortcuts="Keyboard shortcuts", shortcuts_close="?")
"""What Codex shows in the states the recorder stages in every client."""


def screens(rec: ScreenStage, n: str) -> None:
    """The screen states only Codex is staged in (after the common ones), captured by `rec`."""
    K = "codex"
    rec.type(n, "SLOW12 recorder keeps codex busy")
    rec.enter(n)
    s = rec.wait(n, lambda s: rec.classify(K, s).kind == "busy", "Working", 15)
    rec.record(K, n, "busy", "a turn running: `• Working (… • esc to interrupt)`", Expect("busy", "empty"), s)
    staged = "[relay/1 test] staged while busy"
    rec.type(n, staged)
    rec.wait(n, rec.has("tab to queue message"), "staged")
    rec.settle(0.3)
    rec.record(K, n, "busy_staged", "text staged while busy: hint `tab to queue message`",
               Expect("busy", "draft", ["draft"], ["tab-to-queue"], payload=staged))
    rec.key(n, "Tab")
    rec.wait(n, rec.has("Queued follow-up inputs"), "tab queue")
    rec.settle(0.3)
    rec.record(K, n, "busy_tab_queued", "after Tab while busy: `• Queued follow-up inputs`",
               Expect("busy", "empty", hints=["queued"]))
    steer = "[relay/1 test] steered SLOW6"
    rec.type(n, steer)
    rec.wait(n, rec.has("steered SLOW6"), "staged steer")
    rec.enter(n)
    from relay_repl.agents.codex import screen

    rec.wait(n, lambda s: screen.submitted(s, s, steer).composer_emptied and any(
        ln.startswith("› [relay/1 test] steered") for ln in s.lines), "steer shown")
    rec.settle(0.3)
    rec.record(K, n, "busy_steered", "Enter while busy steers: `› <payload>` in history, composer empty, still Working",
               Expect("busy", "empty"))
    rec.wait(n, lambda s: rec.classify(K, s).kind == "idle" and not any(
        "Queued follow-up" in ln for ln in s.lines), "all turns done", 40)
    rec.idle(n)
    rec.record(K, n, "after_busy_turns", "idle after the steered turn and the queued follow-up ran",
               Expect("idle", "empty", hints=["done-line"]))

    rec.stub_tool_call(n, "exec_command", {"cmd": "sleep 5", "yield_time_ms": 20000},
                       then_text="tool done", match="RECORDER-TOOL")
    rec.type(n, "RECORDER-TOOL run a slow tool")
    rec.enter(n)
    rec.wait(n, lambda s: rec.has("background terminal running")(s) and rec.classify(K, s).kind == "busy",
             "tool running")
    rec.settle(0.3)
    rec.record(K, n, "busy_tool", "an exec_command running inside a turn (`· 1 background terminal running`)",
               Expect("busy", "empty"))
    during = "[relay/1 test] typed during a tool"
    rec.type(n, during)
    rec.wait(n, rec.has("typed during a tool"), "staged during tool")
    rec.enter(n)
    rec.wait(n, rec.has("Messages to be submitted after next tool call"), "pending steer")
    rec.settle(0.3)
    rec.record(K, n, "busy_tool_pending", "Enter while a tool runs: `• Messages to be submitted after next tool call`",
               Expect("busy", "empty", hints=["steer-pending"]))
    rec.wait(n, rec.has("tool done"), "tool turn done", 30)
    rec.idle(n)

    # an approval dialog needs an approval policy: switch this thread to "Ask for approval"
    rec.type(n, "/permissions")
    rec.wait(n, rec.has("/permissions  choose"), "popup")
    rec.enter(n)
    rec.wait(n, rec.has("Update Model Permissions"), "permissions view")
    rec.settle(0.3)
    rec.record(K, n, "selection_view", "/permissions selection view (`enter select · esc back`)",
               Expect("unknown", "absent", ["dialog"]))
    rec.type(n, "1")
    rec.wait(n, rec.has("Permission selection requested"), "permission set")
    rec.idle(n)
    rec.stub_tool_call(n, "exec_command", {"cmd": "true", "sandbox_permissions": "require_escalated",
                                           "justification": "the relay recorder wants an approval dialog",
                                           "yield_time_ms": 10000},
                       then_text="approval done", match="RECORDER-DIALOG")
    rec.type(n, "RECORDER-DIALOG please run")
    rec.enter(n)
    rec.wait(n, rec.has("Would you like to run the following command?"), "approval")
    rec.settle(0.3)
    rec.record(K, n, "approval_dialog", "exec_command with require_escalated under `Ask for approval`",
               Expect("unknown", "absent", ["dialog"]))
    rec.type(n, "y")
    rec.wait(n, rec.has("approval done"), "approved run")
    rec.idle(n)


# -- its own native transports (lab/fidelity/native.py runs these) -----------------------------------

NATIVE_NAME = "beta"
"""Its session in the native checks' lab (one session of each kind that has native transports: Claude alpha, then beta)."""
NATIVE_SPEC = f"codex:{NATIVE_NAME}"


async def codex_queue_to_an_idle_target(lab: NativeLab) -> None:
    async with lab.stub() as stub, lab.session([True]) as (s, gate, _):
        await stub.clear_requests(NATIVE_NAME)
        d = await in_turn(s, NATIVE_SPEC, "queue to idle codex", "codex-queue", 30)
        assert d.exit_code == 0, d.summary()
        enq = next(e for e in d.evidence if e.stage == "enqueue")
        assert enq.data["item_id"] == d.extra.item_id, (enq.data, d.extra)
        turn = next(e for e in d.evidence if e.stage == "turn")
        assert turn.data["turn_trigger"] == "queue" and turn.data["text"] == gate.shown[0].payload, turn.data
        reqs = await stub.requests(NATIVE_NAME, kind="main", min_count=1, timeout=20)
        assert any(gate.shown[0].payload in t for t in main_texts(reqs)), "the model never read the payload"
    await lab.wait_idle(NATIVE_NAME)


async def codex_queue_to_a_busy_target_waits_for_its_turn(lab: NativeLab) -> None:
    await lab.make_busy(NATIVE_NAME, 8)
    async with lab.session([True]) as (s, gate, _):
        await s.refresh()
        d = await in_turn(s, NATIVE_SPEC, "queue behind a busy turn", "codex-queue", 60)
        enq = next(e for e in d.evidence if e.stage == "enqueue")
        assert enq.data["row"] is not None, "a busy target must leave the row pending at first read"
        states = [e.state for e in d.evidence]
        assert states.index(DeliveryState.QUEUED) < states.index(DeliveryState.IN_TURN), states
    await lab.wait_idle(NATIVE_NAME)


NATIVE_CHECKS = {
    "codex_queue_to_an_idle_target": codex_queue_to_an_idle_target,
    "codex_queue_to_a_busy_target_waits_for_its_turn": codex_queue_to_a_busy_target_waits_for_its_turn,
}


# -- its own tmux checks (lab/fidelity/tmux.py runs these) ---------------------------------------------

TMUX_NAME = "beta"
"""Its session in the tmux checks' lab (one session of each kind, in kind order)."""


async def busy_codex_enter_steers_into_the_running_turn(lab: TmuxLab) -> None:
    payload = BUSY_PAYLOAD
    d = await send_while_busy(lab, TMUX_NAME, payload, hold=8, timeout=30,
                              why="Codex steers on Enter: the Tab branch must not fire")
    item = d.evidence[-1].data["item"]
    assert item["steered"], "the payload must land in the turn that was already running"
    await lab.idle(TMUX_NAME)


TMUX_CHECKS = {"busy_codex_enter_steers_into_the_running_turn": busy_codex_enter_steers_into_the_running_turn}


DIALOG = Dialog(asked="Would you like to run the following command?", answer="y")
"""Its approval dialog, answered "y" (runs `true`)."""


async def open_dialog(lab: TmuxLab, name: str) -> None:
    """approval_policy is `never` in the lab: switch this thread to `Ask for approval` first, then an
    escalated command the stub asks for opens the approval dialog."""

    async def until(text: str, t: float = 15) -> None:
        await lab.wait_screen(name, lambda rows: any(text in ln for ln in rows), repr(text), t)

    await lab.type_text(name, "/permissions")
    await until("/permissions  choose")
    await lab.press_enter(name)
    await until("Update Model Permissions")
    lab.keys(name, "1")
    await until("Permission selection requested")
    await lab.idle(name)
    await lab.stub_tool_call(name, "exec_command",
                             {"cmd": "true", "sandbox_permissions": "require_escalated",
                              "justification": "relay test dialog", "yield_time_ms": 10000},
                             then_text="approval done", match="DIALOGTEST")
    await lab.submit(name, "DIALOGTEST run something")
    await until(DIALOG.asked, 20)
