"""The REPL as an operator meets it, through a real terminal (tmux) on the demo target:
`isinstance(session, Session)` right after start-up, tables for why/transports, Tab
completion of targets, a transport chain, Ctrl-C stopping a wait but not the REPL."""

from __future__ import annotations

import shutil

import pytest


pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")


def test_isinstance_right_after_start_up(repl):
    repl.type_line("from relay_repl.session.session import Session; print('ISA', isinstance(session, Session))")
    repl.wait_for("ISA True")


def test_why_and_transports_are_tables_and_a_chain_sends(repl):
    repl.type_line("session.transports")
    text = repl.wait_for("compose: session.transports.codex_queue")
    assert "TRANSPORT" in text and "CAPABILITIES" in text and "needs-pane" in text

    repl.type_line('d = await session.send("fake:inbox", "via a chain", transport=session.transports.tmux | session.transports.memory)')
    text = repl.wait_for("Proceed? [y/N]")
    assert "chain tmux | memory" in text or "passed over: tmux" in text
    repl.keys("y", "Enter")
    repl.wait_for("[confirm] in_turn")
    repl.type_line("session.why(d)")
    text = repl.wait_for(lambda t: "SEQ" in t and "outcome" in t.split("session.why(d)")[-1])
    tail = text.split("session.why(d)")[-1]
    assert "EVENT" in tail and "RELAY ID" in tail and "plan shown: memory" in tail and "approved" in tail
    assert "Event(" not in tail


def test_tab_completes_a_target_inside_send(repl):
    repl.wait_for("<Session me=")  # discovery has run: its summary is printed
    repl.type_line("session")
    # the prompt is drawn again below the background print before we type into it
    repl.wait_for(lambda t: t.count("<Session me=") >= 2 and ">>>" in t.split("<Session me=")[-1])
    repl.pane.send_keys('session.send("fa', enter=False, literal=True)
    repl.wait_for(lambda t: "fake:inbox" in t.split('>>> session.send("fa')[-1])  # offered as you type
    for _ in range(3):  # a Tab that lands while the menu is still being filled does nothing: press again
        repl.keys("Tab")
        try:
            repl.wait_for('session.send("fake:inbox', timeout=5)
            break
        except AssertionError:
            continue
    repl.wait_for('session.send("fake:inbox', timeout=1)


def test_ctrl_c_stops_the_wait_not_the_repl(repl):
    repl.type_line("print('WAIT' + 'ING'); await anyio.sleep(600)")
    repl.wait_for("WAITING", timeout=30)
    repl.keys("C-c")
    repl.wait_for(lambda t: t.count(">>>") >= 2, timeout=30)
    repl.type_line("print('STILL', 6 * 7)")
    repl.wait_for("STILL 42", timeout=30)
