"""The README tour typed as a newcomer would (issue 39), in a real terminal (tmux) on the demo target:
Tab on `session.`, on an inbox message and on a delivery offers relay's members first and none of
pydantic's deprecated ones; each one's repr reads well (a message's words visible); an own action
behind `session.confirm` / `session.gated` runs only after `y`; `exit()` leaves, saying what it removed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.support.tmuxdrive import Screen, python_env

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")

DEPRECATED = ("construct", "parse_obj", "schema_json", "update_forward_refs", "parse_raw", "from_orm", "dict()",
              "__fields__", "model_")


@pytest.fixture
def screen(relay_home):
    s = Screen([sys.executable, "-m", "relay_repl", "--fake"], python_env(RELAY_HOME=str(relay_home)), height=60)
    s.server.cmd("set-option", "-g", "remain-on-exit", "on")  # the screen stays readable after the REPL ends
    try:
        s.wait_for("<Session me=", timeout=30)
        yield s
    finally:
        s.close()


def ended(s: Screen, pid: int, timeout: float = 30) -> str:
    """Wait until the REPL's process has exited (gone, or a zombie tmux has not reaped yet: under load
    tmux 3.3 was seen to take longer than 30 s to mark such a pane dead) and return the screen."""
    from relay_repl.system.polling import poll_until_sync

    def gone() -> bool | None:
        try:
            state = open(f"/proc/{pid}/status").read().split("State:", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        return True if state in ("Z", "X") else None

    assert poll_until_sync(gone, timeout=timeout, interval=0.1), "the REPL did not end"
    return s.wait_for("relay: left the REPL", timeout=timeout)  # its last words, read by tmux after it ended


def pane_pid(s: Screen) -> int:
    return int(s.pane.cmd("display-message", "-p", "#{pane_pid}").stdout[0])


def last_line(text: str) -> str:
    """The last line of the session above ptpython's status bar."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip() and "[F4]" not in ln]
    return lines[-1] if lines else ""


def tab_menu(s: Screen, typed: str) -> list[str]:
    """Type `typed`, press Tab, and return the completion menu's words, in the order shown (column by column)."""
    before = s.text().count(">>> ")
    s.wait_for(lambda t: last_line(t) == ">>>", timeout=20)
    s.pane.send_keys(typed, enter=False, literal=True)
    s.wait_for(lambda t: f">>> {typed}" in [ln.rstrip() for ln in t.splitlines()], timeout=20)  # a menu may be below
    s.keys("Tab")
    text = s.wait_for(lambda t: len(_menu(t, typed)) > 5, timeout=20)
    words = _menu(text, typed)
    s.keys("C-c")  # leave the line unrun
    s.wait_for(lambda t: t.count(">>> ") > before, timeout=20)
    return words


def _menu(text: str, typed: str) -> list[str]:
    after = text.rsplit(f">>> {typed}", 1)[-1].splitlines()[1:]
    rows = [ln for ln in after if ln.startswith(" ") and "[F4]" not in ln and ln.strip()]
    table = [ln.split() for ln in rows]
    width = max((len(r) for r in table), default=0)
    return [r[i] for i in range(width) for r in table if i < len(r)]  # column-major, as the menu is read


def run_line(s: Screen, line: str, until: str, timeout: float = 20) -> str:
    """Type `line` at the prompt and return what follows it on the screen once `until` is there."""
    s.wait_for(lambda t: last_line(t) == ">>>", timeout=timeout)
    s.type_line(line)

    def after(t: str) -> str:
        return t.rsplit(f">>> {line}", 1)[-1] if f">>> {line}" in t else ""

    return after(s.wait_for(lambda t: until in after(t), timeout=timeout))


def answer(s: Screen, key: str) -> None:
    s.wait_for(lambda t: last_line(t).endswith("Proceed? [y/N] (type y then Enter)"), timeout=20)
    s.keys(key, "Enter")


def relays_first(words: list[str], mine: set[str]) -> None:
    shown = [w.rstrip("()") for w in words]
    assert not [w for w in words if w.startswith(DEPRECATED)], words
    first_dunder = next(i for i, w in enumerate(shown) if w.startswith("_"))
    assert mine <= set(shown[:first_dunder]), (mine - set(shown[:first_dunder]), words)


def test_the_readme_tour_as_a_newcomer_types_it(screen, relay_home):
    s = screen
    # Tab on session.: relay's API first
    relays_first(tab_menu(s, "session."), {"send", "preview", "confirm", "gated", "inbox", "targets", "why"})

    # a send, answered by a peer running `relay reply` (as a Codex agent would)
    out = run_line(s, 'd = await session.send("fake:inbox", "please rerun the suite", want="reply")', "Proceed?")
    rid = re.search(r"relay id (\S+)\)", out).group(1)  # type: ignore[union-attr]
    answer(s, "y")
    s.wait_for("[confirm] in_turn")
    r = subprocess.run([sys.executable, "-m", "relay_repl", "reply", rid, "the suite passes: 412 tests"],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, RELAY_HOME=str(relay_home)))
    assert r.returncode == 0, r.stderr
    s.wait_for("inbox ←")

    # a message: who, verdict, what it answers, then its words
    s.type_line("m = session.inbox[-1]")
    shown = run_line(s, "m", "<InboxMessage #1")
    line = next(ln for ln in shown.splitlines() if ln.startswith("<InboxMessage #1"))
    assert re.search(rf'from operator:relay@\S+ \(claimed\) \[unknown process, pid \d+\] re {re.escape(rid)}: '
                     r'"the suite passes: 412 tests">$', line), line
    assert "the suite passes: 412 tests" in run_line(s, "print(m.text)", "412 tests")
    relays_first(tab_menu(s, "m."), {"text", "verdict", "answers", "sender", "body", "seq"})

    # a delivery: its outcome and target first
    shown = run_line(s, "d", "<Delivery ")
    assert "<Delivery delivered (in_turn) via memory to fake:inbox; id " + rid in shown
    relays_first(tab_menu(s, "d."), {"wait_reply", "state", "outcome", "summary", "reply", "replies", "plan"})

    # an own action behind the same gate: n runs nothing, y runs it
    s.type_line("ran = []")
    plan = run_line(s, 'await session.confirm("kill the stuck pane", target="fake:inbox (pane %9)", how="tmux kill-pane",'
                       ' payload="kill-pane -t %9", done_when="tmux no longer lists %9"); ran.append("confirmed")',
                    "Proceed?")
    assert "Plan: kill the stuck pane  (relay id action-" in plan and "3 payload     kill-pane -t %9" in plan
    assert "2 transport   your code: tmux kill-pane; fallback: none" in plan
    answer(s, "n")
    s.wait_for("relay: declined: kill the stuck pane was not done")
    assert "RAN []" in run_line(s, 'print("RAN", ran)', "RAN")
    s.type_line('kill = session.gated(lambda pane: ran.append(pane), "kill a pane", target="fake:inbox", '
                'how="tmux kill-pane", done_when="the pane is gone")')
    plan = run_line(s, 'await kill("%9")', "Proceed?")
    assert "3 payload     <lambda>('%9')" in plan
    answer(s, "y")
    assert "RAN ['%9']" in run_line(s, 'print("RAN", ran)', "RAN")

    # leaving: exit() ends the REPL and says what it removed (no ReplExit traceback)
    pid = pane_pid(s)
    s.type_line("exit()")
    text = ended(s, pid)
    assert "ReplExit" not in text and "Traceback" not in text
    assert re.search(r"relay: left the REPL; removed \S+/inbox/\d+\.sock", text), text[-800:]


@pytest.mark.parametrize("how", ["exit()", "quit()", "C-d"])
def test_exit_quit_and_ctrl_d_leave_cleanly(screen, how):
    s = screen
    s.wait_for(lambda t: last_line(t) == ">>>", timeout=20)
    pid = pane_pid(s)
    if how == "C-d":
        s.keys("C-d")  # ptpython asks first
        s.wait_for("exit?", timeout=20)
        s.keys("y")
    else:
        s.type_line(how)
    text = ended(s, pid)
    assert "Traceback" not in text and "ReplExit" not in text
    assert "relay: left the REPL; removed " in text
