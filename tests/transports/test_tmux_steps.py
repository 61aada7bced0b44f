"""The tmux stage/submit rules (`transports/tmux_steps.decide`) on golden screen captures.

Each test feeds recorded screens of the real clients to the pure decision function and
checks the one action seam §6 allows: no Enter before two stable polls, no Enter over a
dialog or a changed composer, at most one Tab and only for Codex busy.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

import relay_repl.agents.screens as screens
from relay_repl.agents.claude_code import screen as claude_screen
from relay_repl.agents.codex import screen as codex_screen
from relay_repl.transports.tmux_steps import Action, Phase, StepContext, decide
from tests.agents.screens.test_classifiers import CAPTURES, load

CLAUDE = next(p for p in CAPTURES.iterdir() if p.name.startswith("claude"))
CODEX = next(p for p in CAPTURES.iterdir() if p.name.startswith("codex"))
C_BUSY = "[relay/1 test] typed while busy"
X_BUSY = "[relay/1 test] staged while busy"
WRAPPED = load(CLAUDE / "idle_draft_wrapped.json")[1]["expected"]["payload"]


def snap(d: Path, name: str):
    return load(d / f"{name}.json")[0]


def ctx(d: Path, payload: str, **kw) -> StepContext:
    screen = claude_screen if d is CLAUDE else codex_screen
    return StepContext(payload=payload, screen=screen, tab_queues_when_busy=d is CODEX,
                       busy_submit="busy rule", **kw)


@pytest.mark.parametrize("d,payload", [(CLAUDE, C_BUSY), (CODEX, X_BUSY), (CLAUDE, WRAPPED), (CODEX, WRAPPED)])
def test_stage_needs_two_visible_polls(d, payload):
    name = "idle_draft_wrapped" if payload == WRAPPED else "busy_staged"
    s = snap(d, name)
    c = ctx(d, payload)
    first = decide(Phase.STAGE, s, None, 0.1, c)
    assert first.action is Action.WAIT and first.visible
    second = decide(Phase.STAGE, s, None, 0.2, replace(c, visible_before=first.visible))
    assert second.action is Action.STAGED


@pytest.mark.parametrize("d", [CLAUDE, CODEX])
def test_stage_times_out_without_enter_and_pane_gone(d):
    c = ctx(d, "[relay/1 test] never typed", stage_timeout=5.0)
    s = snap(d, "fresh")
    assert decide(Phase.STAGE, s, None, 4.9, c).action is Action.WAIT
    held = decide(Phase.STAGE, s, None, 5.0, replace(c, visible_before=True))
    assert held.action is Action.HOLD and "Enter NOT pressed" in held.reason and held.reading is not None
    assert decide(Phase.STAGE, None, None, 0.1, c).action is Action.GONE


@pytest.mark.parametrize("d,payload", [(CLAUDE, C_BUSY), (CODEX, X_BUSY)])
def test_submit_enters_on_the_staged_busy_screen_after_the_gap(d, payload):
    s = snap(d, "busy_staged")
    out = decide(Phase.SUBMIT, s, None, 0.01, ctx(d, payload, submit_gap=0.05))
    assert out.action is Action.ENTER and out.reading.kind == "busy" and "busy rule" in out.reason
    assert out.delay == pytest.approx(0.04)
    assert decide(Phase.SUBMIT, s, None, math.inf, ctx(d, payload)).delay == 0


@pytest.mark.parametrize("d", [CLAUDE, CODEX])
@pytest.mark.parametrize("name,why", [("copy_mode", ""), ("slash_menu", ""), ("dead", ""),
                                      ("fresh", "no longer shows exactly the payload")])
def test_submit_holds_when_the_screen_changed(d, name, why):
    out = decide(Phase.SUBMIT, snap(d, name), None, 1.0, ctx(d, C_BUSY))
    assert out.action is Action.HOLD and "Enter NOT pressed" in out.reason and why in out.reason
    assert decide(Phase.SUBMIT, None, None, 1.0, ctx(d, C_BUSY)).action is Action.HOLD


@pytest.mark.parametrize("d,payload", [(CLAUDE, C_BUSY), (CODEX, X_BUSY)])
def test_submit_holds_when_copy_mode_opened_over_the_staged_payload(d, payload):
    s = snap(d, "busy_staged").model_copy(update={"pane_in_mode": True, "pane_mode": "copy-mode"})
    out = decide(Phase.SUBMIT, s, None, 1.0, ctx(d, payload))
    assert out.action is Action.HOLD and "screen now shows" in out.reason, out.reason


def test_submit_holds_over_a_dialog_even_with_the_payload_typed():
    for d, name in ((CLAUDE, "permission_dialog"), (CODEX, "approval_dialog")):
        out = decide(Phase.SUBMIT, snap(d, name), None, 1.0, ctx(d, C_BUSY))
        assert out.action is Action.HOLD


def test_after_enter_claude_queued_is_done_and_never_tabs():
    c = replace(ctx(CLAUDE, C_BUSY), before=snap(CLAUDE, "busy_staged"))
    out = decide(Phase.AFTER_ENTER, snap(CLAUDE, "busy_queued"), None, 0.3, c)
    assert out.action is Action.DONE and out.hint.queued
    # Claude's staged screen unchanged long after Enter: watch, never Tab
    same = decide(Phase.AFTER_ENTER, snap(CLAUDE, "busy_staged"), None, 1.5, c)
    assert same.action is Action.WAIT


def test_after_enter_codex_tabs_once_only_after_tab_after():
    staged = snap(CODEX, "busy_staged")
    c = replace(ctx(CODEX, X_BUSY, tab_after=1.0, settle=2.0), before=staged)
    assert decide(Phase.AFTER_ENTER, staged, None, 0.5, c).action is Action.WAIT
    tab = decide(Phase.AFTER_ENTER, staged, None, 1.0, c)
    assert tab.action is Action.TAB and tab.hint.tab_to_queue
    again = decide(Phase.AFTER_ENTER, staged, None, 1.5, replace(c, tabbed=True, before=staged))
    assert again.action is Action.WAIT
    assert decide(Phase.AFTER_ENTER, staged, None, 2.0, replace(c, tabbed=True)).action is Action.DONE
    queued = decide(Phase.AFTER_ENTER, snap(CODEX, "busy_tab_queued"), None, 1.2, replace(c, tabbed=True))
    assert queued.action is Action.DONE and queued.hint.queued
    assert decide(Phase.AFTER_ENTER, None, None, 1.2, c).action is Action.GONE


def test_progress_round_trips_through_the_delivery_extra_as_json():
    """The debugger's fresh process reads the sender's progress back from the ledger's JSON."""
    import json

    from relay_repl.core.delivery import Delivery
    from relay_repl.transports.tmux import Baseline, PaneRef, TmuxProgress

    d = Delivery(target="x", transport="tmux")
    assert TmuxProgress.of(d).submitted is False and TmuxProgress.of(d).pane_ref is None
    pg = TmuxProgress(started=1.0, pane_ref=PaneRef(socket_path="/s", pane_id="%1"),
                      baseline=Baseline(path="/t.jsonl", offset=7))
    pg.keys.append("literal")
    pg.screen_after_enter = codex_screen.submitted(snap(CODEX, "busy_staged"), snap(CODEX, "busy_tab_queued"), X_BUSY)
    pg.save(d)
    raw = json.loads(json.dumps(d.extra.tmux))
    assert raw["keys"] == ["literal"] and raw["screen_after_enter"]["queued"] and "latency" not in raw
    back = TmuxProgress.model_validate(raw)
    assert back.pane_ref == PaneRef(socket_path="/s", pane_id="%1") and back.baseline.offset == 7
    assert TmuxProgress().keys is not TmuxProgress().keys  # no shared default list


def test_the_delivery_extra_is_typed():
    """A misspelt extra fails where it is written; an older ledger's unknown keys are dropped on read."""
    import pytest
    from pydantic import ValidationError

    from relay_repl.core.delivery import Delivery, DeliveryExtra

    d = Delivery(target="x", transport="tmux")
    with pytest.raises(ValueError):
        d.extra.msgid = "m-1"  # type: ignore[attr-defined]
    with pytest.raises(ValidationError):
        d.extra.sender_pid = "not a pid"  # type: ignore[assignment]
    assert DeliveryExtra.model_validate({"msg_id": "m", "gone_key": 1}).msg_id == "m"
    assert "dict" not in str(Delivery.model_fields["extra"].annotation)
