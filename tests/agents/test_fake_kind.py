"""A fourth agent kind, installed beside relay_repl through the `relay_repl.agents` entry point
(tests/agents/fake_kind: a dist-info with entry_points.txt and its module, on PYTHONPATH), shows
up in `relay targets`, `relay doctor` and a send's plan without any edit to relay_repl."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FAKE = Path(__file__).parent / "fake_kind"


def relay(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(FAKE), env.get("PYTHONPATH")) if p)
    env["RELAY_HOME"] = str(tmp_path / "relay-home")
    env["HOME"] = str(tmp_path)  # no Claude or Codex state: only the fake kind has targets
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_PID", "CODEX_THREAD_ID"):
        env.pop(k, None)
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)


def test_a_fourth_kind_shows_up_in_targets_doctor_and_plans(tmp_path):
    listed = relay(tmp_path, "targets", "--json")
    assert listed.returncode == 0, listed.stderr
    fake = [t for t in json.loads(listed.stdout) if t["kind"] == "fake-agent"]
    assert [(t["spec"], t["transports"]) for t in fake] == [("fakey:one", ["tmux"])], listed.stdout

    doctor = relay(tmp_path, "doctor")
    assert "fake-agent client: looked on PATH: `fake-agent` not found" in doctor.stdout, doctor.stdout
    assert "npm i -g relay-fake-agent@0.0.1" in doctor.stdout  # the install hint is the kind's own pin
    assert "✔ fake agent registry: the replay double answers" in doctor.stdout

    send = relay(tmp_path, "send", "fakey:one", "hello")  # no terminal: the plan is shown, then No
    assert "Plan: send to fakey:one" in send.stdout + send.stderr, send.stdout + send.stderr
    assert "transport   tmux" in send.stdout + send.stderr
    assert "nothing was done" in send.stdout + send.stderr


def test_without_the_entry_point_the_fourth_kind_is_unknown(tmp_path):
    listed = relay(tmp_path, "targets", "--json")
    assert listed.returncode == 0
    env_less = subprocess.run([sys.executable, "-m", "relay_repl", "targets", "--json"], capture_output=True, text=True,
                              env={**os.environ, "HOME": str(tmp_path), "RELAY_HOME": str(tmp_path / "h")},
                              stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert env_less.returncode == 0 and "fake-agent" not in env_less.stdout


def test_the_lab_starts_a_fourth_kind_through_its_own_lab_pieces(tmp_path):
    """`relay lab up --fakey 1`: the flag, the stub session, the config file, the pane's command and
    its readiness all come from the fake kind's package; the lab names no kind to do it."""
    import shutil
    import tempfile

    if not shutil.which("tmux"):
        import pytest

        pytest.skip("needs tmux")
    home = Path(tempfile.mkdtemp(prefix="rk-", dir="/tmp"))  # short: the lab's unix socket paths
    clients = tmp_path / "clients" / "node_modules" / ".bin"
    clients.mkdir(parents=True)
    (clients / "fake-agent").write_text("#!/bin/sh\necho 0.0.1\n")
    (clients / "fake-agent").chmod(0o755)
    env = dict(os.environ)
    env.update(PYTHONPATH=os.pathsep.join(p for p in (str(FAKE), env.get("PYTHONPATH")) if p), RELAY_HOME=str(home),
               RELAY_LAB_CLIENTS=str(tmp_path / "clients"), RELAY_LAB_ANY_CLIENTS="1")

    def lab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "relay_repl", "lab", *args], env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=180, check=False)

    try:
        up = lab("up", "--claude", "0", "--codex", "0", "--fakey", "1")
        assert up.returncode == 0, up.stderr[-2000:]
        assert "alpha: fake agent pid" in up.stderr and "ready" in up.stderr
        st = json.loads(lab("status", "--json").stdout)
        (s,) = st["sessions"]
        assert (s["kind"], s["name"], s["alive"], s["session_id"]) == ("fake-agent", "alpha", True, "fake-alpha")
        assert st["stub"]["sessions"]["alpha"]["api"] == "openai"
        base_url = st["stub"]["sessions"]["alpha"]["base_url"]
        assert (home / "lab" / "home" / ".fake-agent" / "sessions.txt").read_text() == f"alpha {base_url}\n"
    finally:
        down = lab("down")
        shutil.rmtree(home, ignore_errors=True)
    assert down.returncode == 0, down.stderr
