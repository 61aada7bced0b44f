"""Live: the issue's round trip typed into the REAL `relay --lab` REPL (ptpython, top-level await)."""

from __future__ import annotations

import os
import sys

import pytest

import relay_repl.lab.helpers as helpers
import relay_repl.lab.launcher as launcher
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live


def test_round_trips_in_the_repl_are_replied_and_verified(lab):
    screen = Screen([sys.executable, "-m", "relay_repl", "--lab"], dict(os.environ, TERM="xterm-256color"))
    try:
        screen.wait_for(lambda s: "claude:alpha" in s and "codex:beta" in s and ">>>" in s, timeout=90)
        screen.type_line("ok = await session.register_inbox()")
        screen.wait_for("Proceed? [y/N]", timeout=30)
        screen.keys("y", "Enter")
        screen.type_line('d = await session.send("claude:alpha", "hi", want="reply")')
        screen.wait_for(lambda s: s.count("Proceed? [y/N]") >= 2, timeout=60)
        screen.keys("y", "Enter")
        screen.type_line("r = await d.wait_reply(20)")
        screen.type_line('print("CLAUDE", d.state.value, r.verdict.verdict, r.verdict.session_pid)')
        text = screen.wait_for("CLAUDE ", timeout=60)
        alpha = launcher.status().session("alpha").pid
        assert f"CLAUDE replied verified {alpha}" in text, text
        screen.type_line('d2 = await session.send("codex:beta", "hi", want="reply")')
        screen.wait_for(lambda s: s.count("Proceed? [y/N]") >= 3, timeout=60)
        screen.keys("y", "Enter")
        screen.type_line("r2 = await d2.wait_reply(30)")
        screen.type_line('print("CODEX", d2.state.value, r2.verdict.verdict, r2.verdict.session)')
        text = screen.wait_for("CODEX ", timeout=90)
        assert "CODEX replied verified codex:beta" in text, text
    finally:
        screen.close()
    helpers.wait_idle("alpha", timeout=60)
    helpers.wait_idle("beta", timeout=60)
