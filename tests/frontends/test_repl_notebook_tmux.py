"""From exploring to a notebook, typed in a real terminal: the `relay --fake` REPL, two sends,
a wait for an answer, a loop over the targets and an input that fails; `session.save_notebook`
writes the inputs that ran without error as cells, and the saved notebook's `--dry-run` shows
the same plans (relay ids aside)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.gate_keys import answer_yes


def payloads(text: str) -> list[str]:
    """Each plan's payload with its relay id and sender address blanked."""
    found = re.findall(r"3 payload +(\[relay/1 [^\n]*)", text)
    return [re.sub(r"(from|id)=\S+", r"\1=*", p).rstrip() for p in found]


def test_save_notebook_from_a_repl_session_replays_the_same_plans(repl, tmp_path, relay_home):
    repl.type_line('d1 = await session.send("fake:inbox", "first of two")')
    answer_yes(repl, 1)
    repl.type_line('d2 = await session.send("fake:inbox", "second of two", want="ack")')
    answer_yes(repl, 2)
    repl.type_line("await d2.wait_reply(1)")
    repl.type_line("1 / 0")
    repl.wait_for("ZeroDivisionError")
    repl.type_line('for t in session.targets: print("TARGET", t.spec)')
    repl.wait_for("TARGET fake:inbox")
    repl.type_line(f'session.save_notebook("{tmp_path / "explored.py"}")')
    repl.wait_for("wrote ")
    typed = repl.text()
    saved = (tmp_path / "explored.py").read_text()
    assert "1 / 0" not in saved and saved.count("# %% input") == 4, saved
    assert 'session.send("fake:inbox", "second of two", want="ack")' in saved and "for t in session.targets" in saved
    (report,) = (tmp_path / "explored.relay").glob("*/report.md")
    assert "## cell 2 \"input 1\": done" in report.read_text()
    r = subprocess.run([sys.executable, "-m", "relay_repl.frontends.cli", "--fake", "notebook", "run",
                        str(tmp_path / "explored.py"), "--dry-run"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert payloads(r.stdout) == payloads(typed) and len(payloads(typed)) == 2, (payloads(r.stdout), payloads(typed))
    assert "TARGET fake:inbox" in r.stdout
