"""SIGKILL while a notebook send's y/N prompt is open, then `--resume`, in a real terminal (issue 38).

`relay --fake notebook run nb.py` shows the plan of its send to fake:inbox and waits; the relay
process is killed with SIGKILL there. On e6902ec the resume said `... was sent in run R (unknown):
not sent again` and the send never happened. Now it says `not sent: never answered in run R`,
plans it again and asks; `y` sends it, once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys

import pytest

from tests.support.gate_keys import PROMPT, answer_yes
from tests.support.tmuxdrive import Screen, python_env

NB = '''# %% send
d = await session.send("fake:inbox", "only once")
print("SENT", d.relay_id, d.state.value, len(session._transports["memory"].received))
'''


def test_sigkill_at_the_prompt_then_resume_asks_again(tmp_path, relay_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    (tmp_path / "nb.py").write_text(NB)
    cmd = f"cd {tmp_path} && {sys.executable} -m relay_repl.frontends.cli --fake notebook run nb.py; echo RC=$?; sleep 60"
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        text = screen.wait_for(PROMPT, timeout=60)
        rid = re.search(r"relay id (\S+)\)", text).group(1)
        pid = int(rid.rsplit("-", 1)[0].rsplit(".", 1)[1])
        os.kill(pid, signal.SIGKILL)
        screen.wait_for("RC=137", timeout=20)
    finally:
        screen.close()
    (run_dir,) = (tmp_path / "nb.relay").iterdir()
    run = run_dir.name
    cmd = (f"cd {tmp_path} && {sys.executable} -m relay_repl.frontends.cli --fake notebook run nb.py --resume {run}; "
           "echo RC=$?; sleep 60")
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        assert answer_yes(screen, 1, timeout=60)
        text = screen.wait_for("RC=", timeout=30)
    finally:
        screen.close()
    assert "RC=0" in text, text
    assert f"{rid} to fake:inbox not sent: never answered in run {run} (it stopped at the y/N prompt); planned and " \
           "asked again" in text, text
    assert "was sent in run" not in text
    assert f"SENT {rid} in_turn 1" in text, text  # sent now, once, under the id the stopped run took
    newest = max((p for p in (tmp_path / "nb.relay").iterdir() if p.name != run), key=lambda p: p.name)
    cells = json.loads((newest / "run.json").read_text())["cells"]
    assert cells[0]["plans"][0]["answer"] == "approved"
