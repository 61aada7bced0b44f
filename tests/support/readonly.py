"""Running the real `relay` read-only commands as an operator would, and what they touched.

Shared by the fast test (a fresh, empty RELAY_HOME) and the live one (the lab): each
command runs as `.venv/bin/relay` in a process group of its own from an empty working
directory; after it exits, the test waits until every process of that group is gone (a
helper a command started and left behind, such as a prefetched `claude agents --json`,
writes after the command itself has exited), then snapshots the trees again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from relay_repl.system.polling import poll_until_sync
from tests.support.trees import Tree, differences, nothing_allowed, snapshot

RELAY = str(Path(sys.executable).with_name("relay"))


def read_only_commands(relay_id: str, transcript: str, target: str | None) -> list[list[str]]:
    """Every read-only command and its --json form, plain and as `relay --lab <cmd>`."""
    plain: list[list[str]] = [
        ["verify", relay_id], ["verify", relay_id, "--json"],
        ["verify", relay_id, "--transcript", transcript], ["verify", relay_id, "--transcript", transcript, "--json"],
        *([["verify", relay_id, "--in", target], ["verify", relay_id, "--in", target, "--json"]] if target else []),
        ["why", relay_id], ["why", relay_id, "--json"],
        ["log"], ["log", "--json"],
        ["whoami"], ["whoami", "--json"],
        ["targets"], ["targets", "--json"],
        ["doctor"], ["doctor", "--json"],
        ["recipes"], ["recipes", "--json"], ["recipes", "schema"],
        ["lab", "status"], ["lab", "status", "--json"],
        ["debug", relay_id, "--look"], ["debug", relay_id, "--look", "--json"],
    ]
    return plain + [["--lab", *c] for c in plain]


@dataclass
class Ran:
    args: list[str]
    code: int
    stdout: str
    stderr: str

    def json_ok(self) -> bool:
        """With --json, stdout is JSON and nothing else (one document, or one per line for log/why)."""
        if "--json" not in self.args or not self.stdout.strip():
            return True
        try:
            json.loads(self.stdout)
            return True
        except ValueError:
            pass
        try:
            for line in self.stdout.splitlines():
                json.loads(line)
            return True
        except ValueError:
            return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120.0) -> Ran:
    proc = subprocess.Popen([RELAY, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        # what it left running, finishing its writes: wait (bounded) for the group to be gone
        poll_until_sync(lambda: None if _group_alive(proc.pid) else True, timeout=30, interval=0.05)
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError(f"relay {' '.join(args)} left processes running 30 s after it exited")
    return Ran(args, proc.returncode, out, err)


def touched(args: list[str], cwd: Path, env: dict[str, str], roots: list[Path], before: Tree,
            allowed: Callable[[str], Collection[str]] = nothing_allowed) -> tuple[Ran, list[str], Tree]:
    """Run one command; what it changed under `roots` since `before`, and the new snapshot."""
    ran = run(args, cwd, env)
    after = snapshot(roots)
    return ran, differences(before, after, allowed), after
