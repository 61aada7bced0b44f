"""Live: `relay run five-rounds` in a real terminal (tmux) against the lab's real Claude Code
and Codex, answered the way most operators answer, `y` then Enter at each prompt as it
appears. The Enter must not decline the next plan (it did when the gate took one key:
the run stopped at step 1 with "the operator answered No"); the run reaches round 5."""

from __future__ import annotations

import os
import re
import sys

import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.session.core.gate import PROMPT
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live


def test_five_rounds_answered_y_enter_at_each_prompt_reaches_round_5(lab):
    cmd = (f"{sys.executable} -m relay_repl.frontends.cli run five-rounds -p a=claude:alpha -p b=codex:beta; "
           "echo RC=$?; sleep 600")
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
    answered = 0
    try:
        while True:  # the inbox listing (a Claude target answers to it), then 2 asks in each of 5 rounds
            text = screen.wait_for(  # the end, or the prompt below the next plan
                lambda t, n=answered + 1: "RC=" in t or PROMPT in "".join(t.split("\nPlan: ")[n:n + 1]), timeout=180)
            if "RC=" in text:
                break
            assert answered < 11, f"more prompts than the listing and ten asks:\n{text}"
            screen.keys("y", "Enter")
            answered += 1
    finally:
        screen.close()
    assert "RC=0" in text, text
    assert answered == 11 and text.count("\napproved") == 11, text
    assert "answered No" not in text and "declined" not in text
    assert re.search(r"<Run run-[0-9a-f]{8} five-rounds: done, round 5/5", text), text
    assert "round 5/5, step 2: ask codex:beta" in text
    for name in ("alpha", "beta"):
        helpers.wait_idle(name, timeout=90)
