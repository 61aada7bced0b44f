"""Ctrl-C in a real terminal while a notebook cell waits: the cell stops, what it printed is
kept, later cells are not run, exit 130, and the run is left resumable; `--resume` runs the
rest without sending again what the stopped run sent."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from tests.support.gate_keys import answer_yes
from tests.support.tmuxdrive import Screen, python_env

NB = '''# %% send
d = await session.send("fake:inbox", "only once")
print("SENT", d.relay_id)

# %% wait
import os
print("WAITING")
if not os.path.exists("go"):
    await anyio.sleep(120)

# %% after
print("AFTER", d.relay_id, len(session._transports["memory"].received))
'''


def test_ctrl_c_keeps_the_output_and_resume_does_not_send_again(tmp_path, relay_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    (tmp_path / "nb.py").write_text(NB)
    cmd = (f"trap : INT; cd {tmp_path} && {sys.executable} -m relay_repl.frontends.cli --fake notebook run nb.py; "
           "echo RC=$?; sleep 60")  # the shell survives the Ctrl-C meant for relay
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        answer_yes(screen, 1)
        screen.wait_for("WAITING")
        screen.keys("C-c")
        text = screen.wait_for("RC=", timeout=20)
    finally:
        screen.close()
    assert "RC=130" in text and "--resume " in text and "AFTER" not in text, text
    (run_dir,) = (tmp_path / "nb.relay").iterdir()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["state"] == "interrupted" and [c["state"] for c in run["cells"]] == ["done", "interrupted", "not run"]
    assert run["cells"][1]["stdout"] == "WAITING\n"
    sent = run["cells"][0]["deliveries"][0]["relay_id"]
    (tmp_path / "go").touch()
    cmd = (f"cd {tmp_path} && {sys.executable} -m relay_repl.frontends.cli --fake notebook run nb.py "
           f"--resume {run_dir.name}; echo RC=$?; sleep 60")
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        text = screen.wait_for("RC=", timeout=30)
    finally:
        screen.close()
    assert "RC=0" in text and "Proceed?" not in text, text
    assert f"{sent} to fake:inbox was sent in run {run_dir.name}" in text and f"AFTER {sent} 0" in text
