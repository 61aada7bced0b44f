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
    typed = '>>> session.send("fa'
    repl.pane.send_keys(typed[4:], enter=False, literal=True)
    # offered as you type: the menu below the typed text (which must be on the screen: without it,
    # a split on it is the whole screen, where the summary's table already names fake:inbox)
    repl.wait_for(lambda t: typed in t and "fake:inbox" in t.split(typed)[-1])
    repl.keys("Tab")  # once: the menu is drawn, so it is filled
    repl.wait_for('session.send("fake:inbox')


def test_ctrl_c_stops_the_wait_not_the_repl(repl):
    repl.type_line("print('WAIT' + 'ING'); await anyio.sleep(600)")
    repl.wait_for("WAITING", timeout=30)
    repl.keys("C-c")
    repl.wait_for(lambda t: t.count(">>>") >= 2, timeout=30)
    repl.type_line("print('STILL', 6 * 7)")
    repl.wait_for("STILL 42", timeout=30)
