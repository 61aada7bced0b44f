"""The lab decides a Codex session is ready by the product's own screen classifier (what the
tmux transport reads before it types), not by a heuristic of its own.

The lab's old heuristic (a `› ` row and no `esc to interrupt` = idle) called an approval
dialog, a selection view and a dead pane idle; the classifier does not, and so neither does
the lab now. Cases are the recorded golden captures of the pinned client."""

from __future__ import annotations

from pathlib import Path

import pytest

import relay_repl.agents.screens as screens
from relay_repl.lab.panes import screen_busy, screen_idle
from tests.agents.screens.test_classifiers import load

CAPTURES = Path(__file__).resolve().parents[1] / "agents" / "screens" / "captures"


def _reading(version: str, scenario: str):
    snap, _meta = load(CAPTURES / f"codex-{version}" / f"{scenario}.json")
    return screens.for_kind("codex").classify(snap)


@pytest.mark.parametrize("version", ["0.169.0", "0.171.0"])
@pytest.mark.parametrize("scenario", ["approval_dialog", "selection_view", "dead"])
def test_a_dialog_or_a_dead_pane_is_not_ready(version, scenario):
    reading = _reading(version, scenario)
    assert not screen_idle(reading) and not screen_busy(reading), reading.summary()


@pytest.mark.parametrize("version", ["0.169.0", "0.171.0"])
def test_a_fresh_session_is_ready_and_a_turn_is_busy(version):
    assert screen_idle(_reading(version, "fresh"))
    assert screen_busy(_reading(version, "busy")) and not screen_idle(_reading(version, "busy"))


def test_no_screen_is_never_ready():
    assert not screen_idle(None) and not screen_busy(None)
