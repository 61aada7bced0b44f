"""The facts about Claude Code that `relay fidelity` checks live (lab/fidelity runs the checks).

Their home is the kind's package: a fact about the client changes with the client, and the
lab iterates every kind's table rather than naming the kinds. Facts shared with another kind
carry the same text there, and are reported once for both.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.claude_code.lab import lab_facts
from relay_repl.agents.fidelity import (BUSY_WHILE_A_TURN_RUNS, LISTED, TMUX_DIALOG_REFUSAL, TMUX_IDLE_DELIVERY,
                                       TMUX_REFUSALS, Dialog, Expect, Marks, NativeLab, ScreenStage, TmuxLab,
                                       in_turn, main_texts, send_while_busy)
from relay_repl.agents.kind import FidelityFact
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target

_D, _N, _T = "discovery:", "native:", "tmux:"

FACTS: tuple[FidelityFact, ...] = (
    LISTED,
    BUSY_WHILE_A_TURN_RUNS,
    FidelityFact(fact="claude socket wire + transcript origin records (idle)",
                 paths="claude-code-socket, claude-code-message", checks=(_N + "claude_socket_to_an_idle_target",)),
    FidelityFact(fact="claude socket wire + origin records (busy, both paths)",
                 paths="claude-code-socket, claude-code-message",
                 checks=(_N + "claude_socket_transports_to_a_busy_target",)),
    FidelityFact(fact="claude message wrapper recorded", paths="claude-code-message",
                 checks=(_N + "message_plan_shows_the_wrapper_that_is_written_and_recorded",)),
    TMUX_IDLE_DELIVERY,
    FidelityFact(fact="busy submit: claude Enter queues for the tool boundary", paths="tmux",
                 checks=(_T + "busy_claude_enter_queues_then_delivers",)),
    TMUX_REFUSALS,
    TMUX_DIALOG_REFUSAL,
)

COMPOSER_END_KEY = "End"
"""The tmux key that moves the cursor to the end of Claude's composer (the lab clears a draft with it and C-u)."""


# built at import, so a fast test that imports this module fails on an envelope the builder refuses
BUSY_PAYLOAD = Envelope.make(sender="operator:relay@t", to="peer", id="t-busy-claude-1", body="typed while claude is busy").compose()


def tmux_unconfirmed(confirm: dict[str, Any], payload: str) -> str | None:
    """Why the tmux transport's confirm-stage data is not Claude's own evidence of `payload` typed
    by a human (its transcript record, origin human, holding the text), or None when it is."""
    record = confirm.get("record") or {}
    if (record.get("origin") or {}).get("kind") == "human" and payload in str(record.get("content", "")):
        return None
    return f"transcript record is not the typed line with a human origin: {record}"


LAB_COUNTS = {"discovery": 2, "native": 1, "tmux": 1, "screens": 1}
"""Claude sessions each check group's lab starts (two for discovery: a busy one beside an idle one)."""


def listed(t: Target, s: Any, version: str) -> None:
    """What discovery reports for idle lab session `s` (lab.state.LabSession) beyond pane, state and version."""
    assert (t.pid, t.address) == (s.pid, lab_facts(s).messaging_socket), t
    assert t.transports == ("claude-code-socket", "claude-code-message", "tmux"), t.transports
    # listed by Claude's own rule applied in-process (listing_rule.py), or, for a client version relay has
    # not verified (`relay fidelity` on a candidate), by `claude agents --json` itself
    assert t.identified_by.startswith((f"claude agents --json's rule over sessions/ (in-process) + sessions/{s.pid}.json "
                                       "(procStart ", f"claude agents --json + sessions/{s.pid}.json (procStart ")), t.identified_by


def busy_detail(t: Target) -> None:
    """While a turn runs, its registry record says busy (discovery reads the state from it)."""
    assert ClaudeDetail.of(t).status_raw == "busy", t.detail


def idle_detail(t: Target) -> None:
    """After a turn, the transcript discovery points at exists (the turn wrote it)."""
    assert ClaudeDetail.of(t).transcript_exists, t.detail


MARKS = Marks(
    fresh="fresh session, nothing typed yet", done="· done ",
    after_turn="idle after a finished turn (✻ … · done)", home_text="Press up to edit", home_shown_by_text=True,
    cursor_home="draft whose text resembles a placeholder, cursor moved home (cursor_x==2 but not empty)",
    slash="/add-dir", slash_menu="`/` typed: the command menu above the composer",
    shell="! for shell mode", shell_mode="`!` typed: bash mode (prompt `!`)",
    shortcuts="/ for commands", shortcuts_close="BSpace",
    # its effort hint (`◐ medium · /effort`) above the composer, drawn and removed on a timer of its own, and
    # the footer hint that alternates (`shift+tab to cycle` / `← for agents`) (adapters/claude-code.md)
    own_redraws=("/effort", "shift+tab to cycle"))
"""What Claude Code shows in the states the recorder stages in every client."""


def screens(rec: ScreenStage, n: str) -> None:
    """The screen states only Claude Code is staged in (after the common ones), captured by `rec`."""
    K = "claude-code"
    rec.type(n, "SLOW8 recorder keeps claude busy")
    rec.enter(n)
    s = rec.wait(n, lambda s: rec.classify(K, s).kind == "busy", "spinner", 15)
    rec.record(K, n, "busy", "a turn running: spinner row, footer `esc to interrupt`", Expect("busy", "empty"), s)
    rec.type(n, "[relay/1 test] typed while busy")
    rec.wait(n, rec.has("typed while busy"), "staged")
    rec.settle(0.3)
    rec.record(K, n, "busy_staged", "text staged while busy (footer loses `esc to interrupt`)",
               Expect("busy", "draft", ["draft"], payload="[relay/1 test] typed while busy"))
    rec.enter(n)
    s = rec.wait(n, rec.has("Press up to edit queued messages"), "queued")
    rec.settle(0.3)
    rec.record(K, n, "busy_queued", "Enter while busy: `⎿  Queued`, dim placeholder in the composer",
               Expect("busy", "empty", hints=["queued"]))
    rec.wait(n, lambda s: not any("Queued ·" in ln for ln in s.lines), "queue drained", 30)
    rec.idle(n)
    rec.record(K, n, "after_queued_turn", "idle after the queued message ran as the next turn",
               Expect("idle", "empty", hints=["done-line"]))

    rec.stub_tool_call(n, "Bash", {"command": "sleep 5", "description": "recorder holds a tool"},
                       then_text="tool done", match="RECORDER-TOOL")
    rec.type(n, "RECORDER-TOOL run a slow tool")
    rec.enter(n)
    rec.wait(n, lambda s: rec.has("sleep 5")(s) and rec.classify(K, s).kind == "busy", "tool running")
    rec.settle(0.5)
    rec.record(K, n, "busy_tool", "a Bash tool running inside a turn", Expect("busy", "empty"))
    rec.wait(n, rec.has("tool done"), "tool turn done", 30)
    rec.idle(n)

    rec.stub_tool_call(n, "WebFetch", {"url": "http://127.0.0.1:9/relay-recorder", "prompt": "summarise"},
                       then_text="fetch done", match="RECORDER-DIALOG")
    rec.type(n, "RECORDER-DIALOG please fetch")
    rec.enter(n)
    rec.wait(n, rec.has("Do you want to"), "permission dialog")
    rec.settle(0.3)
    rec.record(K, n, "permission_dialog", "WebFetch (not allow-listed) asks permission; the composer is gone",
               Expect("unknown", "absent", ["dialog"]))
    rec.type(n, "3")  # "No, and tell Claude what to do differently"
    rec.wait(n, rec.has("Interrupted"), "dialog declined")
    rec.stub_reset(n)
    rec.idle(n)
    rec.record(K, n, "after_interrupt", "idle after a declined permission (`⎿  Interrupted`)",
               Expect("idle", "empty", hints=["interrupted"]))


# -- its own native transports (lab/fidelity/native.py runs these) -----------------------------------

NATIVE_NAME = "alpha"
"""Its session in the native checks' lab (the first kind: alpha)."""
NATIVE_SPEC = f"claude:{NATIVE_NAME}"


async def claude_socket_to_an_idle_target(lab: NativeLab) -> None:
    async with lab.stub() as stub, lab.session([True]) as (s, gate, _):
        d = await in_turn(s, NATIVE_SPEC, "socket to idle claude", "claude-code-socket", 30)
        seen = [e for e in d.evidence if e.stage == "transcript"]
        rec = next(e for e in seen if e.state is DeliveryState.IN_TURN).data["record"]
        assert rec["origin"]["verifiedPeerPid"] == os.getpid(), rec["origin"]
        # while busy Claude first records a queue-operation enqueue of exactly the payload: read as queued
        # (issue 38: the socket path said "no transcript record"), never past in_turn, never after it
        states = [e.state for e in seen]
        assert states in ([DeliveryState.IN_TURN], [DeliveryState.QUEUED, DeliveryState.IN_TURN]), states
        assert rec["origin"]["msg_id"] == d.extra.msg_id, rec["origin"]
        reqs = await stub.requests(NATIVE_NAME, kind="main", min_count=1, timeout=20)
        assert any(gate.shown[0].payload in t for t in main_texts(reqs)), "the model never read the payload"
    await lab.wait_idle(NATIVE_NAME)


async def claude_socket_transports_to_a_busy_target(lab: NativeLab, transport: str) -> None:
    async with lab.session([True, True]) as (s, gate, _):
        if transport == "claude-code-message":
            assert await s.register_inbox() is True
        await lab.make_busy(NATIVE_NAME, 6)
        await s.refresh()
        target = await s.target(NATIVE_SPEC)
        assert target.state == "busy", target.state
        d = await in_turn(s, NATIVE_SPEC, f"{transport} to busy claude", transport, 45)
        assert "busy" in " ".join(gate.shown[-1].notes), gate.shown[-1].notes
        seen = [e for e in d.evidence if e.stage == "transcript"]
        rec = next(e for e in seen if e.state is DeliveryState.IN_TURN).data["record"]
        assert rec["origin"]["verifiedPeerPid"] == os.getpid(), rec["origin"]
        # while busy Claude first records a queue-operation enqueue of exactly the payload: read as queued
        # (issue 38: the socket path said "no transcript record"), never past in_turn, never after it
        states = [e.state for e in seen]
        assert states in ([DeliveryState.IN_TURN], [DeliveryState.QUEUED, DeliveryState.IN_TURN]), states
    await lab.wait_idle(NATIVE_NAME)


async def message_plan_shows_the_wrapper_that_is_written_and_recorded(lab: NativeLab) -> None:
    async with lab.session([True, True]) as (s, gate, _inbox):
        assert await s.register_inbox() is True
        reg = s.registration
        # registering planned every file it then created
        assert [f.split()[:2] for f in gate.shown[0].files] == [
            ["creates", f"{reg.record_path}:"], ["creates", f"{reg.key_path}:"], ["creates", f"{reg.socket_path}:"]], \
            gate.shown[0].files
        assert all(Path(f).exists() for f in (reg.record_path, reg.key_path, reg.socket_path))
        d = await in_turn(s, NATIVE_SPEC, "what you approve is what arrives", "claude-code-message", 30)
        plan = gate.shown[-1]
        # 3 payload: the exact frame content, wrapper included
        assert plan.payload.startswith(f'<cross-session-message from="uds:{reg.socket_path}" from-name="{reg.name}" '
                                       'from-mode="prompting">\n[relay/1 '), plan.payload
        assert plan.payload.endswith("] what you approve is what arrives\n</cross-session-message>"), plan.payload
        assert "3 payload" in plan.render() and plan.payload in plan.render()
        write = next(e for e in d.evidence if e.stage == "write")
        assert write.data["content"] == plan.payload, "the bytes written are not the bytes approved"
        assert write.data["reply_to"] == str(reg.socket_path), write.data
        # the receiver parsed that very wrapper, and its model read that very payload (the record that
        # made it in_turn: a receiver still busy records a queue-operation enqueue first, read as queued)
        rec = next(e for e in d.evidence if e.stage == "transcript" and e.state is DeliveryState.IN_TURN).data["record"]
        assert plan.payload in rec["content"], rec
        assert rec["origin"]["fromMode"] == "prompting" and rec["origin"]["name"] == reg.name, rec["origin"]
        assert rec["origin"]["from"] == f"uds:{reg.socket_path}", rec["origin"]
        # no file is created by this send (the listed inbox socket was planned at registration)
        assert plan.files == (), plan.files
        assert any('"content":<payload 3>' in n and f'"from":"uds:{reg.socket_path}"' in n for n in plan.notes), \
            plan.notes
    await lab.wait_idle(NATIVE_NAME)


def _to_busy(transport: str) -> Callable[[NativeLab], Awaitable[None]]:
    return lambda lab: claude_socket_transports_to_a_busy_target(lab, transport)


NATIVE_CHECKS: dict[str, Callable[[NativeLab], Awaitable[None]]] = {
    "claude_socket_to_an_idle_target": claude_socket_to_an_idle_target,
    **{f"claude_socket_transports_to_a_busy_target[{t}]": _to_busy(t) for t in ("claude-code-socket", "claude-code-message")},
    "message_plan_shows_the_wrapper_that_is_written_and_recorded":
        message_plan_shows_the_wrapper_that_is_written_and_recorded,
}


# -- its own tmux checks (lab/fidelity/tmux.py runs these) ---------------------------------------------

TMUX_NAME = "alpha"
"""Its session in the tmux checks' lab (one session of each kind, in kind order)."""


async def busy_claude_enter_queues_then_delivers(lab: TmuxLab) -> None:
    payload = BUSY_PAYLOAD
    d = await send_while_busy(lab, TMUX_NAME, payload, hold=6, timeout=40,
                              why="busy Claude: one Enter, never a second, never Tab")
    assert d.evidence[0].data["reading"]["kind"] == "busy", d.evidence[0].data["reading"]
    assert (d.extra.tmux or {})["screen_after_enter"]["queued"], d.extra.tmux
    states = [e.state for e in d.evidence]
    assert DeliveryState.QUEUED in states, states  # the transcript's queue-operation enqueue came first
    where = d.evidence[-1].data["record"]["where"]
    assert where == "top-level user", where  # no tool call: it ran as the next turn
    await lab.idle(TMUX_NAME)


TMUX_CHECKS = {"busy_claude_enter_queues_then_delivers": busy_claude_enter_queues_then_delivers}


DIALOG = Dialog(asked="Do you want to", answer="3")
"""Its permission dialog, answered "3" (No)."""


async def open_dialog(lab: TmuxLab, name: str) -> None:
    """A WebFetch the stub asks for opens Claude's permission dialog (the lab's default mode asks)."""
    await lab.stub_tool_call(name, "WebFetch", {"url": "http://127.0.0.1:9/relay-test", "prompt": "x"},
                             then_text="fetch done", match="DIALOGTEST")
    await lab.submit(name, "DIALOGTEST fetch something")
    await lab.wait_screen(name, lambda rows: any(DIALOG.asked in ln for ln in rows), "a permission dialog")
