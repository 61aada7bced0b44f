"""The facts about Claude Code that `relay fidelity` checks live (lab/fidelity runs the checks).

Their home is the kind's package: a fact about the client changes with the client, and the
lab iterates every kind's table rather than naming the kinds. Facts shared with another kind
carry the same text there, and are reported once for both.
"""

from __future__ import annotations

from typing import Any

from relay_repl.agents.claude_code.detail import ClaudeDetail
from relay_repl.agents.fidelity import Expect, Marks, ScreenStage
from relay_repl.agents.kind import FidelityFact
from relay_repl.core.target import Target

_D, _N, _T = "discovery:", "native:", "tmux:"

FACTS: tuple[FidelityFact, ...] = (
    FidelityFact(fact="registry fields, listing, panes (every kind)", paths="discovery",
                 checks=(_D + "every_kind_listed_idle_with_its_panes_and_transports",)),
    FidelityFact(fact="liveness: busy while a turn runs", paths="discovery, plans",
                 checks=(_D + "busy_while_a_slow_turn_runs",)),
    FidelityFact(fact="claude socket wire + transcript origin records (idle)",
                 paths="claude-code-socket, claude-code-message", checks=(_N + "claude_socket_to_an_idle_target",)),
    FidelityFact(fact="claude socket wire + origin records (busy, both paths)",
                 paths="claude-code-socket, claude-code-message",
                 checks=(_N + "claude_socket_transports_to_a_busy_target",)),
    FidelityFact(fact="claude message wrapper recorded", paths="claude-code-message",
                 checks=(_N + "message_plan_shows_the_wrapper_that_is_written_and_recorded",)),
    FidelityFact(fact="tmux idle delivery with receiver evidence", paths="tmux",
                 checks=(_T + "idle_delivery_with_receiver_evidence",)),
    FidelityFact(fact="busy submit: claude Enter queues for the tool boundary", paths="tmux",
                 checks=(_T + "busy_claude_enter_queues_then_delivers",)),
    FidelityFact(fact="preflight refusals send zero keys (draft, copy-mode, slash menu)", paths="tmux",
                 checks=(_T + "refusal_sends_zero_keys",)),
    FidelityFact(fact="preflight refusal on a dialog sends zero keys", paths="tmux",
                 checks=(_T + "dialog_refusal_sends_zero_keys",)),
)

COMPOSER_END_KEY = "End"
"""The tmux key that moves the cursor to the end of Claude's composer (the lab clears a draft with it and C-u)."""


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
    assert (t.pid, t.address) == (s.pid, s.messaging_socket), t
    assert t.transports == ("claude-code-socket", "claude-code-message", "tmux"), t.transports
    assert t.identified_by.startswith(f"claude agents --json + sessions/{s.pid}.json (procStart "), t.identified_by


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
    shortcuts="/ for commands", shortcuts_close="BSpace")
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
