"""The screen classifiers against golden captures recorded from the real clients.

Every `<scenario>.json` under tests/screens/captures/<client>-<version>/ names the
state the recorder staged (bench/record_screens.py) and the reading it must give.
A new client version that draws a state differently fails here, not in the field.
Garbage and half-screens must read as `unknown` (fail closed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import relay_repl.agents.screens as screens
from relay_repl.agents.claude_code import screen as claude_screen
from relay_repl.agents.codex import screen as codex_screen
from relay_repl.agents.versions import verified_versions
from relay_repl.agents.screens.model import Snapshot, parse_styles, wrapped_equals

CAPTURES = Path(__file__).parent / "captures"


def _cases() -> list[Path]:
    return sorted(CAPTURES.glob("*/*.json"))


def load(meta_path: Path) -> tuple[Snapshot, dict]:
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    plain = meta_path.with_suffix(".txt").read_text(encoding="utf-8").split("\n")[:-1]
    esc_file = meta_path.with_name(meta_path.stem + ".e.txt")
    esc = esc_file.read_text(encoding="utf-8").split("\n")[:-1] if esc_file.exists() else None
    fields = {k: meta[k] for k in ("cursor_x", "cursor_y", "pane_in_mode", "pane_mode", "alternate_on",
                                   "pane_current_command", "pane_pid", "pane_dead", "pane_width", "pane_height")}
    return Snapshot(lines=plain, esc_lines=esc, **fields), meta


def _classifier(kind: str):
    """The kind's classifier, as its registered agent kind gives it (gemini_cli keeps it in its package)."""
    from relay_repl.agents.registry import kind_for

    found = kind_for(kind)
    return found.screen.classifier() if found is not None else None


def _id(p: Path) -> str:
    return f"{p.parent.name}/{p.stem}"


def test_captures_exist_for_both_clients():
    dirs = {p.parent.name for p in _cases()}
    assert f"claude-code-{verified_versions()['claude-code']}" in dirs
    assert f"codex-{verified_versions()['codex']}" in dirs
    needed = {"fresh", "after_turn", "idle_draft_fresh", "busy", "busy_staged", "slash_menu", "shell_mode",
              "shortcuts_overlay", "copy_mode", "dead"}
    for d in dirs:
        have = {p.stem for p in (CAPTURES / d).glob("*.json")}
        assert needed <= have, f"{d} lacks {needed - have}"


@pytest.mark.parametrize("meta_path", _cases(), ids=_id)
def test_golden_capture(meta_path: Path):
    snap, meta = load(meta_path)
    assert len(snap.lines) == meta["pane_height"], "a capture row went missing"
    cls = _classifier(meta["client"])
    r = cls.classify(snap)
    exp = meta["expected"]
    why = "\n".join(r.reasons)
    assert r.kind == exp["kind"], why
    assert r.composer == exp["composer"], why
    assert sorted(r.blockers) == sorted(exp.get("blockers", [])), why
    assert set(exp.get("hints", [])) <= set(r.hints), why
    assert r.typable == (exp["composer"] == "empty" and not exp.get("blockers") and exp["kind"] != "unknown")
    if exp.get("payload"):
        assert cls.payload_visible(snap, exp["payload"])
        assert not cls.payload_visible(snap, exp["payload"] + "x")
        assert not cls.payload_visible(snap, exp["payload"][:-1])
        assert not cls.payload_visible(snap, exp["payload"].replace(" ", "  ", 1))
    if r.composer == "empty":
        assert not cls.payload_visible(snap, "Press up to edit queued messages")
        assert not cls.payload_visible(snap, "Ask Codex to do anything")


@pytest.mark.parametrize("meta_path", _cases(), ids=_id)
def test_without_escape_capture_placeholder_words_are_never_empty(meta_path: Path):
    """No -e rows: dimness is unknown, so only a known placeholder text may count as empty."""
    snap, meta = load(meta_path)
    r = _classifier(meta["client"]).classify(snap.model_copy(update={"esc_lines": None}))
    if meta["expected"]["composer"] == "draft":
        assert r.composer in ("draft", "unknown")
    if r.composer_text in ("Press up to edit queued messages", "Ask Codex to do anything"):
        assert r.composer == "unknown"
    assert not (r.typable and meta["expected"]["composer"] != "empty")


def _snap(lines: list[str], **kw) -> Snapshot:
    return Snapshot(lines=lines + [""] * max(0, 45 - len(lines)), esc_lines=None, pane_height=45, **kw)


@pytest.mark.parametrize("kind", ["claude-code", "codex"])
@pytest.mark.parametrize("lines", [
    [],
    ["garbage", "more garbage", "$ ls -l", "total 0"],
    ["❯ hello there", "● ack: hello there"],                       # history only, no composer
    ["─" * 40, "❯\u00a0", "no closing rule"],                         # Claude composer without its lower rule
    ["› Ask Codex to do anything"],                                  # Codex prompt without footer
    ["bash-5.2$ "],
], ids=["blank", "shell", "history-only", "half-claude", "half-codex", "bash"])
def test_unrecognised_screens_are_unknown(kind: str, lines: list[str]):
    r = screens.for_kind(kind).classify(_snap(lines, cursor_x=2, cursor_y=1))
    assert r.kind == "unknown"
    assert not r.typable
    assert r.reasons


def test_claude_prompt_alone_is_not_idle():
    """A composer with no spinner, no finished-turn row and no banner: unknown, not idle."""
    rule = "─" * 60
    lines = ["some output of a slash command", "", rule + " alpha ─", "❯\u00a0", rule, "  ⏵⏵ accept edits on"]
    r = claude_screen.classify(_snap(lines, cursor_x=2, cursor_y=3))
    assert r.composer == "empty" and r.kind == "unknown" and not r.typable


def test_codex_prompt_alone_is_not_idle():
    lines = ["some text", "", "› ", "", "  fake-model default · /tmp/w · beta", "  ? for shortcuts"]
    r = codex_screen.classify(_snap(lines, cursor_x=2, cursor_y=2))
    assert r.composer == "empty" and r.kind == "unknown" and not r.typable


def test_dead_and_copy_mode_flags_win_over_the_screen():
    meta = next(p for p in _cases() if p.parent.name.startswith("claude") and p.stem == "after_turn")
    snap, _ = load(meta)
    assert claude_screen.classify(snap).typable
    assert "copy-mode" in claude_screen.classify(snap.model_copy(update={"pane_in_mode": True})).blockers
    assert claude_screen.classify(snap.model_copy(update={"pane_dead": True})).blockers == ["dead"]


def test_cursor_elsewhere_is_not_an_empty_composer():
    meta = next(p for p in _cases() if p.parent.name.startswith("codex") and p.stem == "after_turn")
    snap, _ = load(meta)
    r = codex_screen.classify(snap.model_copy(update={"cursor_x": 9}))
    assert r.composer != "empty" and not r.typable


def test_submitted_hints_claude_queue():
    d = next(p.parent for p in _cases() if p.parent.name.startswith("claude"))
    before, _ = load(d / "busy_staged.json")
    after, _ = load(d / "busy_queued.json")
    h = claude_screen.submitted(before, after, "[relay/1 test] typed while busy")
    assert h.composer_emptied and h.payload_in_history and h.queued and h.turn_running
    assert not h.payload_in_composer


def test_submitted_hints_codex_steer_and_tab():
    d = next(p.parent for p in _cases() if p.parent.name.startswith("codex"))
    staged, _ = load(d / "busy_staged.json")
    h = codex_screen.submitted(staged, staged, "[relay/1 test] staged while busy")
    assert h.tab_to_queue and h.payload_in_composer and not h.composer_emptied
    queued, _ = load(d / "busy_tab_queued.json")
    h = codex_screen.submitted(staged, queued, "[relay/1 test] staged while busy")
    assert h.queued and h.composer_emptied
    tool, _ = load(d / "busy_tool.json")
    pending, _ = load(d / "busy_tool_pending.json")
    h = codex_screen.submitted(tool, pending, "[relay/1 test] typed during a tool")
    assert h.queued and h.composer_emptied and h.turn_running and not h.payload_in_history
    assert "steer-pending" in codex_screen.classify(pending).hints
    steered, _ = load(d / "busy_steered.json")
    h = codex_screen.submitted(queued, steered, "[relay/1 test] steered SLOW6")
    assert h.payload_in_history and h.composer_emptied and h.turn_running


def test_sgr_state_carries_across_rows():
    cells = parse_styles(["\x1b[2mdim start", "still dim\x1b[0m plain"])
    assert all(c.dim for c in cells[1][:9])
    assert not any(c.dim for c in cells[1][9:])


def test_wrapped_equals():
    assert wrapped_equals(["[relay/1 x] one two", "  three"], "[relay/1 x] one two three")
    assert wrapped_equals(["abcdef", "  ghi"], "abcdefghi")          # a word broken at the edge
    assert not wrapped_equals(["one two", "  three"], "one two three four")
    assert not wrapped_equals(["one  two"], "one two")


@pytest.mark.parametrize("client", ["claude-code", "codex"])
def test_tall_pane_with_a_big_gap_above_the_composer_still_reads_idle(client):
    """Fullscreen pins the composer to the bottom: a tall pane leaves many blank rows after history."""
    d = next(p.parent for p in _cases() if p.parent.name.startswith(client))
    snap, meta = load(d / "after_turn.json")
    first, _ = screens.for_kind(client).classify(snap).composer_rows
    gap = 120
    lines = snap.lines[:first - 3] + [""] * gap + snap.lines[first - 3:]
    esc = snap.esc_lines[:first - 3] + [""] * gap + snap.esc_lines[first - 3:]
    tall = snap.model_copy(update={"lines": lines, "esc_lines": esc, "cursor_y": snap.cursor_y + gap,
                                   "pane_height": len(lines)})
    r = screens.for_kind(client).classify(tall)
    assert r.kind == "idle" and r.typable, r.reasons
