"""`whoami.own_sender` (what `relay reply` asks, without the agents package) says what
`whoami.own_address` says (every kind asked through the registry), for every kind's environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from relay_repl.session.core import whoami
from relay_repl.system.proc import proc_start

THREAD = "019a1b2c-3d4e-7f00-8a9b-0c1d2e3f4a5b"


def _same(env: dict[str, str]) -> tuple[str, str | None]:
    light, full = whoami.own_sender(env), whoami.own_address(env)
    assert (light.role, light.agent, light.address, light.inbox) == (full.role, full.agent, full.address, full.inbox)
    assert light.sender == full.sender
    return light.sender, light.inbox


def test_outside_any_session_it_is_the_operator(tmp_path):
    sender, inbox = _same({"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert sender == f"operator:relay@{whoami.default_address()}" and inbox is None


def test_a_codex_tool_command_is_its_thread(tmp_path):
    sender, _ = _same({"HOME": str(tmp_path), "CODEX_THREAD_ID": THREAD, "CLAUDE_CONFIG_DIR": str(tmp_path / "c")})
    assert sender == f"agent:codex@{THREAD}"


@pytest.mark.parametrize("live", [True, False])
def test_inside_a_claude_session_the_kind_decides_from_its_record(tmp_path, live):
    sessions = tmp_path / "c" / "sessions"
    sessions.mkdir(parents=True)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        pid = sleeper.pid
        (sessions / f"{pid}.json").write_text(json.dumps({
            "pid": pid, "procStart": proc_start(pid) if live else "1", "sessionId": "s-1", "cwd": "/w", "startedAt": 1,
            "version": "2.1.332", "kind": "interactive", "name": "alpha", "status": "idle"}))
        env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "c"), "CLAUDE_PID": str(pid),
               "CLAUDE_CODE_MESSAGING_SOCKET": str(tmp_path / "alpha.sock"), "CODEX_THREAD_ID": THREAD}
        sender, inbox = _same(env)
    finally:
        sleeper.kill()
        sleeper.wait()
    # a live record names the Claude session (first in name order); a dead one leaves Codex's thread
    assert (sender, inbox) == (("agent:claude-code@alpha", str(tmp_path / "alpha.sock")) if live
                               else (f"agent:codex@{THREAD}", None))


def test_a_kind_without_a_rule_is_asked_through_the_package(monkeypatch):
    asked: list[object] = []
    monkeypatch.setattr(whoami, "OWN_GROUP", "relay_repl.no-such-group")
    monkeypatch.setattr(whoami, "own_address", lambda environ=None: asked.append(environ) or "through the package")
    assert whoami.own_sender({"CODEX_THREAD_ID": THREAD}) == "through the package" and asked


def test_the_rules_load_without_the_agents_package():
    probe = ("import sys; from relay_repl.session.core.whoami import own_sender; "
             f"me = own_sender({{'CODEX_THREAD_ID': '{THREAD}'}}); "
             "print(me.sender, 'pydantic' in sys.modules, 'relay_repl.agents' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ)).stdout.split()
    assert out == [f"agent:codex@{THREAD}", "False", "False"], out
