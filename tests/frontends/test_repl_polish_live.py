"""Live: the REPL on the lab, through a real terminal — what an operator types and sees.

`isinstance(session, Session)` right after start-up; Tab after `session.send("cl`
completes to `claude:alpha`; a chain `codex_queue | tmux` to a Codex target with no
rostered pane (but a queue) delivers through the queue; `session.why(d)` prints a table.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live


def test_repl_polish_on_the_lab(lab):
    screen = Screen([sys.executable, "-m", "relay_repl", "--lab"], dict(os.environ, TERM="xterm-256color"))
    try:
        screen.wait_for(">>>", timeout=90)
        screen.type_line("from relay_repl.session.session import Session; print('ISA', isinstance(session, Session))")
        screen.wait_for("ISA True", timeout=60)
        screen.wait_for(lambda s: "claude:alpha" in s and "codex:beta" in s, timeout=90)

        screen.pane.send_keys('session.send("cl', enter=False, literal=True)
        screen.wait_for(lambda t: "claude:alpha" in t.split('>>> session.send("cl')[-1], timeout=30)
        for _ in range(3):
            screen.keys("Tab")
            try:
                screen.wait_for('>>> session.send("claude:alpha', timeout=5)
                break
            except AssertionError:
                continue
        screen.wait_for('>>> session.send("claude:alpha', timeout=1)
        screen.keys("C-c")  # drop the half-typed line

        screen.type_line('t = (await session.target("codex:beta")).model_copy(update={"pane": None, '
                         '"transports": ("codex-queue",)}); print("PANE", t.pane)')
        screen.wait_for("PANE None", timeout=60)
        screen.type_line("d = await session.send(t, 'chain to a paneless target', "
                         "transport=session.transports.codex_queue | session.transports.tmux)")
        text = screen.wait_for("Proceed? [y/N]", timeout=60)
        plan = text.split("chain to a paneless target")[0].split("Plan:")[-1]
        assert "codex-queue" in plan and "chain codex-queue | tmux" in text
        screen.keys("y", "Enter")
        screen.wait_for("[turn] in_turn", timeout=120)
        screen.type_line("print('VIA', d.transport, d.outcome)")
        screen.wait_for("VIA codex-queue delivered", timeout=30)

        screen.type_line("session.why(d)")
        text = screen.wait_for(lambda s: "outcome" in s.split("session.why(d)")[-1], timeout=30)
        tail = text.split("session.why(d)")[-1]
        assert "SEQ" in tail and "EVENT" in tail and "plan shown: codex-queue" in tail and "stage:turn" in tail
    finally:
        screen.close()
