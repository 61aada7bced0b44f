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
        while n < 8 and await anyio.to_thread.run_sync(lambda n=n: answer_yes(screen, n + 1, done="RC=")):
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
    assert '## cell 6 "table": done' in report and "TARGET" in report.split('"table"')[1]
    assert "- state: done" in report
    for name in ("alpha", "beta"):
        await anyio.to_thread.run_sync(lambda n=name: helpers.wait_idle(n, timeout=90))


RESUME_NB = '''# %% ask both
asked = [await session.send(t, "resume check", want="reply") for t in ("codex:beta", "claude:alpha")]
print("SENT", *[d.relay_id for d in asked])

# %% wait
import os
for d in asked:
    await d.wait_reply(120)
print("WAITING")
if not os.path.exists("go"):
    await anyio.sleep(300)

# %% after
print("AFTER", *[d.reply.body for d in asked])
'''


def receivers_hold(lab, relay_id: str) -> dict[str, int]:
    """How many times `relay_id` reached each lab agent, by its own record: origin records in
    alpha's transcript whose envelope carries the id, and user-message turns in beta's rollout
    carrying it (the records `relay verify` reads)."""
    from relay_repl.agents.claude_code.transcript import find_relay_id
    from relay_repl.agents.codex.rollout import turns_carrying

    where = {s.name: s.transcript for s in lab.sessions}
    assert where["alpha"] and where["beta"], where
    return {"claude transcript": len(find_relay_id(where["alpha"], relay_id).hits),
            "codex rollout": len(turns_carrying(where["beta"], relay_id)[0])}


async def test_ctrl_c_then_resume_sends_no_relay_id_twice(lab, tmp_path):
    from relay_repl.lab.stubs.client import StubClient
    from tests.session.test_recipes_live import answered_ids

    (tmp_path / "nb.py").write_text(RESUME_NB)
    relay = f"{sys.executable} -m relay_repl.frontends.cli --lab notebook run nb.py"
    async with StubClient(lab.stub.control) as stub:
        for name in ("alpha", "beta"):
            await stub.clear_requests(name)
        screen = Screen(["sh", "-c", f"trap : INT; cd {tmp_path} && {relay}; echo RC=$?; sleep 600"],
                        dict(os.environ, TERM="xterm-256color"), height=60)
        try:
            n = 0
            while n < 4 and await anyio.to_thread.run_sync(lambda n=n: answer_yes(screen, n + 1, done="WAITING")):
                n += 1
            await anyio.to_thread.run_sync(lambda: screen.wait_for("WAITING", timeout=240))
            screen.keys("C-c")
            text = await anyio.to_thread.run_sync(lambda: screen.wait_for("RC=", timeout=60))
        finally:
            screen.close()
        assert "RC=130" in text and "AFTER" not in text, text
        sent = re.search(r"^SENT (\S+) (\S+)$", text, re.M).groups()
        (run_dir,) = (tmp_path / "nb.relay").iterdir()
        (tmp_path / "go").touch()
        screen = Screen(["sh", "-c", f"cd {tmp_path} && {relay} --resume {run_dir.name}; echo RC=$?; sleep 600"],
                        dict(os.environ, TERM="xterm-256color"), height=60)
        try:
            n = 0  # a resumed run may ask only to list the inbox again (a new process); never to send
            while n < 2 and await anyio.to_thread.run_sync(lambda n=n: answer_yes(screen, n + 1, done="RC=")):
                n += 1
            text = await anyio.to_thread.run_sync(lambda: screen.wait_for("RC=", timeout=120))
        finally:
            screen.close()
        assert "RC=0" in text and "AFTER reply to" in text, text
        assert "Plan: send to" not in text, text
        for rid in sent:
            assert Ledger.default().sightings(rid, "sent") == 1, rid
        answered, dupes = await answered_ids(stub)
        assert sorted(answered) == sorted(sent) and not dupes, (answered, dupes)
        # and by the receivers' own records: each id once, in its receiver only (beta was asked first)
        assert receivers_hold(lab, sent[0]) == {"claude transcript": 0, "codex rollout": 1}, sent[0]
        assert receivers_hold(lab, sent[1]) == {"claude transcript": 1, "codex rollout": 0}, sent[1]
    for name in ("alpha", "beta"):
        await anyio.to_thread.run_sync(lambda n=name: helpers.wait_idle(n, timeout=90))


async def test_handoff_notebook_by_name_verifies_both_answers(lab, tmp_path):
    (tmp_path / "recipes").mkdir()
    shutil.copy(ROOT / "recipes" / "handoff.py", tmp_path / "recipes" / "handoff.py")
    cmd = f"cd {tmp_path} && {sys.executable} -m relay_repl.frontends.cli --lab run handoff; echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"), height=60)
    try:
        n = 0
        while n < 6 and await anyio.to_thread.run_sync(lambda n=n: answer_yes(screen, n + 1, done="RC=")):
            n += 1
        text = await anyio.to_thread.run_sync(lambda: screen.wait_for("RC=", timeout=60))
    finally:
        screen.close()
    assert "RC=0" in text, text
    (run_dir,) = (tmp_path / "recipes" / "handoff.relay").iterdir()
    report = (run_dir / "report.md").read_text()
    verify = report.split('"verify both": done', 1)[1]
    lines = re.findall(r"^(\S+) in (\S+): (.+); answer (\S+) (\S+)$", verify, re.M)
    assert [(t, a) for _, t, _, _, a in lines] == [(CODEX, "verified"), (CLAUDE, "verified")], verify
    # who sent each id, per the receiver's own records: Claude's origin names our pid; Codex keeps
    # no provenance, so the best it can say is that the turn carrying our id exists
    assert [v for _, _, v, _, _ in lines] == ["no provenance", "verified"], verify
    for name in ("alpha", "beta"):
        await anyio.to_thread.run_sync(lambda n=name: helpers.wait_idle(n, timeout=90))
