"""Live: `relay --lab notebook run recipes/triage.py` typed in a real terminal against the
REAL Claude Code and Codex in the lab, every prompt answered by hand (y, then Enter if the
gate still waits for it); the run exits 0 and its report holds both agents' verified replies,
each relay id sent once."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.store.ledger import Ledger
from tests.support.gate_keys import answer_yes
from tests.support.tmuxdrive import Screen

pytestmark = [pytest.mark.live, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
CLAUDE, CODEX = "claude:alpha", "codex:beta"


async def test_triage_notebook_typed_in_a_terminal_exits_0_with_verified_replies(lab, tmp_path):
    (tmp_path / "recipes").mkdir()
    shutil.copy(ROOT / "recipes" / "triage.py", tmp_path / "recipes" / "triage.py")
    cmd = (f"cd {tmp_path} && {sys.executable} -m relay_repl.frontends.cli --lab notebook run recipes/triage.py; "
           "echo RC=$?; sleep 600")
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"), height=60)
    try:
        n = 0
        while n < 8 and await anyio.to_thread.run_sync(lambda: answer_yes(screen, n + 1, done="RC=")):
            n += 1
        text = await anyio.to_thread.run_sync(lambda: screen.wait_for("RC=", timeout=60))
    finally:
        screen.close()
    assert "RC=0" in text, text
    heads = re.findall(r'^notebook triage, run (\S+), cell (\d+) "([^"]+)"', text, re.M)
    assert {h[2] for h in heads} >= {"ask everyone", "follow up"}, text
    (run_dir,) = (tmp_path / "recipes" / "triage.relay").iterdir()
    report = (run_dir / "report.md").read_text()
    for spec in (CLAUDE, CODEX):
        row = re.search(rf"^\| (\S+) \| {re.escape(spec)} \| replied \| (verified|receiver's own record) \| (.+) \|$",
                        report, re.M)
        assert row, (spec, report)
        assert Ledger.default().sightings(row.group(1), "sent") == 1  # each relay id sent once
    assert '## cell 7 "table": done' in report and "TARGET" in report.split('"table"')[1]
    assert "- state: done" in report
    for name in ("alpha", "beta"):
        await anyio.to_thread.run_sync(lambda n=name: helpers.wait_idle(n, timeout=90))
