"""Registering the operator inbox as a Claude peer: the plan names every file it creates
or replaces, and a name already taken in the socket directory is never replaced."""

from __future__ import annotations

import json
import os
import subprocess

from relay_repl.agents.claude_code.peer import ClaudePeerRegistration
from relay_repl.system.proc import proc_start


def test_plan_names_every_file_and_a_taken_socket_name_is_not_reused(tmp_path):
    cfg, socks = tmp_path / "claude", tmp_path / "cc-socks"
    (cfg / "sessions").mkdir(parents=True)
    socks.mkdir()
    peer = subprocess.Popen(["sleep", "60"])
    try:
        (cfg / "sessions" / f"{peer.pid}.json").write_text(json.dumps({
            "pid": peer.pid, "procStart": proc_start(peer.pid), "name": "alpha",
            "messagingSocketPath": str(socks / f"{peer.pid}.sock"), "startedAt": 1}))
        stale = cfg / "sessions" / f"{os.getpid()}.json"
        stale.write_text("{}")  # a dead process's leftover under our (reused) pid
        squatter = socks / f"{os.getpid()}.sock"
        squatter.write_text("someone else's")
        reg = ClaudePeerRegistration(name="relay-operator", claude_version="2.1.328", cfg=cfg)
        assert reg.socket_path != squatter and reg.socket_path.parent == socks
        assert reg.socket_path.name.startswith(f"{os.getpid()}-") and reg.socket_path.suffix == ".sock"
        assert reg.record["messagingSocketPath"] == str(reg.socket_path)
        plan = reg.plan()
        assert [f.split()[:2] for f in plan.files] == [
            ["replaces", str(stale)], ["creates", f"{reg.key_path}:"], ["creates", f"{reg.socket_path}:"]]
        assert "  files" in plan.render() and str(reg.socket_path) in plan.render()
        assert squatter.read_text() == "someone else's"
    finally:
        peer.kill()
        peer.wait()
