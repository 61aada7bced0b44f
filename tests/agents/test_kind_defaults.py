"""The evidence-file lookup and the roster rule Codex and Gemini CLI share through
`EvidenceBase` and `ScreenBase` (issue 19, D8; agents/capabilities.py): the file discovery named wins while it exists, else the
kind's own search; a pane with no pid, no client under it, or the target's client under it."""

from __future__ import annotations

from types import SimpleNamespace

from relay_repl.agents.codex.kind import CodexKind
from relay_repl.agents.gemini_cli.kind import GeminiCliKind
from relay_repl.agents.screens.model import Snapshot
from relay_repl.core.target import Target

THREAD = "019a0000-0000-7000-8000-00000000beef"
TUI = ["node", "/usr/lib/node_modules/@openai/codex/bin/codex.js"]
DAEMON = ["codex", "app-server"]
GEMINI = ["node", "/usr/lib/node_modules/@google/gemini-cli/bundle/gemini.js"]


def codex_target(tmp_path, evidence_file=None, pid=41):
    return Target(kind="codex", prefix="codex", name="beta", address=THREAD, pid=pid, identified_by="test",
                  evidence_file=evidence_file, detail={"codex_home": str(tmp_path / "codex"), "thread_id": THREAD})


def test_the_recorded_file_wins_while_it_exists_else_the_kinds_search(tmp_path):
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "01"
    day.mkdir(parents=True)
    found = day / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
    found.write_text("")
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text("")
    agent = CodexKind().evidence
    assert agent.evidence_file(codex_target(tmp_path, str(recorded))) == recorded
    assert agent.evidence_file(codex_target(tmp_path, str(tmp_path / "rotated.jsonl"))) == found
    assert agent.evidence_file(codex_target(tmp_path)) == found
    found.unlink()
    assert agent.evidence_file(codex_target(tmp_path)) is None


def test_the_roster_rule_looks_for_the_kinds_client_under_the_pane(tmp_path):
    codex, gemini = CodexKind().screen, GeminiCliKind().screen
    footer = SimpleNamespace(footer_name=lambda snap: None, footer_session=lambda snap: None)
    t = codex_target(tmp_path)
    no_pid = Snapshot(lines=[], pane_id="%1")
    assert codex.roster_mismatch(t, no_pid, lambda pid: [], footer) == "pane has no pid"
    assert gemini.roster_mismatch(t, no_pid, lambda pid: [], footer) == "pane has no pid"
    snap = Snapshot(lines=[], pane_id="%1", pane_pid=40)
    only_daemon = lambda pid: [(40, ["bash"]), (41, DAEMON)]  # noqa: E731
    assert "no Codex TUI runs under pane %1" in (codex.roster_mismatch(t, snap, only_daemon, footer) or "")
    with_tui = lambda pid: [(40, ["bash"]), (41, TUI)]  # noqa: E731
    assert codex.roster_mismatch(t, snap, with_tui, footer) is None
    assert "gemini.js process 41 no longer runs" in (gemini.roster_mismatch(t, snap, with_tui, footer) or "")
    assert gemini.roster_mismatch(t, snap, lambda pid: [(40, ["bash"]), (41, GEMINI)], footer) is None


def test_a_busy_note_is_the_kinds_own_words_for_a_busy_target_only():
    """`ScreenBase.tmux_busy_note` gives the kind's `busy_note` for a busy target (issue 35: Claude's and
    Gemini's were the same method with their own words), and nothing while idle or for a kind with none."""
    from relay_repl.agents.claude_code.kind import ClaudeCodeKind

    def target(kind: str, state: str) -> Target:
        return Target(kind=kind, prefix=kind, name="a", address="a", pid=1, identified_by="test", state=state)

    claude, gemini = ClaudeCodeKind().screen, GeminiCliKind().screen
    assert claude.tmux_busy_note(target("claude-code", "busy")) == (
        "target is busy: Enter queues the line for its next tool boundary (one Enter, no Tab)")
    assert gemini.tmux_busy_note(target("gemini-cli", "busy")) == (
        "target is busy: Enter queues the line; it starts the next turn when this one ends (Gemini CLI 0.61.0)")
    assert claude.tmux_busy_note(target("claude-code", "idle")) is None
    assert gemini.tmux_busy_note(target("gemini-cli", "unknown")) is None
