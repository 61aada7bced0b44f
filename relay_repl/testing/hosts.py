"""The ssh channel double: a host named `standin` reached through a stand-in `ssh` on PATH
(hostile_host.py), so the real `SshChannel` and every remote path run unchanged with no second
machine; honest by default, lying as the test says. The pytest plugin's `hostile` fixture:

    def test_x(hostile):
        hostile("ignore-no")            # the lies (relay_repl/testing/hostile_host.py names them)
        ... relay send standin/claude:alpha hi ...
        hostile.requests()              # what the host was sent, in order
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relay_repl.testing.hostile_host import standin_ssh

if TYPE_CHECKING:
    import pytest

HOST = "standin"


class HostileHost:
    """A host in hosts.toml (`HOST`) whose ssh is the stand-in; `hostile(*lies)` sets its lies."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = standin_ssh(root / "bin")
        self.log = root / "host.log"
        self.monkeypatch = monkeypatch
        monkeypatch.setenv("PATH", f"{self.bin}:{os.environ['PATH']}")
        monkeypatch.setenv("RELAY_HOSTILE_LOG", str(self.log))
        monkeypatch.delenv("RELAY_LAB_DIR", raising=False)
        from relay_repl.store.hosts import add_host

        add_host(HOST, f"nobody@{HOST}")

    def __call__(self, *lies: str) -> HostileHost:
        self.monkeypatch.setenv("RELAY_HOSTILE", ",".join(lies) or "honest")
        return self

    def entries(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def requests(self) -> list[dict[str, Any]]:
        return [e["data"] for e in self.entries() if e["what"] == "request"]

    def relay(self, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """`relay ARGS` as the operator runs it, no terminal (so every plan is answered No)."""
        script = Path(sys.executable).parent / "relay"
        argv = [str(script)] if script.exists() else [sys.executable, "-m", "relay_repl"]
        return subprocess.run([*argv, *args], input=stdin or "", capture_output=True, text=True, timeout=timeout,
                              env=dict(os.environ))
