"""Live: `relay --lab` opens the REPL on the lab; its inbox is listed, and nothing of it
remains after the REPL exits or is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from libtmux.test.retry import retry_until

from relay_repl.session.core.inbox import read_records
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live


def listed() -> dict[str, int]:
    out = subprocess.run(["claude", "agents", "--json"], capture_output=True, text=True, timeout=30, check=True)
    return {a["name"]: a["pid"] for a in json.loads(out.stdout)}


def start_repl() -> Screen:
    screen = Screen([sys.executable, "-m", "relay_repl", "--lab"], dict(os.environ, TERM="xterm-256color"))
    screen.wait_for(lambda s: "claude:alpha" in s and "codex:beta" in s and ">>>" in s, timeout=90)
    return screen


def register(screen: Screen) -> tuple[int, list[str]]:
    screen.type_line("ok = await session.register_inbox()")
    screen.wait_for("Proceed? [y/N]", timeout=30)
    screen.keys("y", "Enter")
    screen.type_line('print("REGISTERED", ok, session.registration.name)')
    text = screen.wait_for("REGISTERED True", timeout=30)
    name = text.split("REGISTERED True ")[-1].split()[0]
    (rec,) = [r for r in read_records() if r.live]
    return rec.pid, [rec.socket, *rec.extra_sockets, *rec.owned_files], name


def test_repl_on_the_lab_and_its_inbox_lifecycle(lab):
    # 1. the README's main command: the REPL opens on the lab with both kinds discovered
    screen = start_repl()
    try:
        pid, files, name = register(screen)
        assert listed().get(name) == pid
        assert all(os.path.exists(f) for f in files)
        # 2. a clean exit removes the socket, the registry record and the key
        screen.keys("C-d")
        screen.wait_for("exit", timeout=10)
        screen.keys("y")
        retry_until(lambda: not any(os.path.exists(f) for f in files), 45, interval=0.2, raises=False)
        assert not any(os.path.exists(f) for f in files)
        assert name not in listed()
    finally:
        screen.close()

    # 3. killed: the listing drops it at once (dead pid); `relay clean` removes the files (a read-only command never does)
    screen = start_repl()
    try:
        pid, files, name = register(screen)
        os.kill(pid, signal.SIGKILL)
        # Claude's liveness rule (kill(pid, 0) + procStart) still lists a zombie; the
        # killed REPL is one until init reaps it (about a second, measured)
        retry_until(lambda: name not in listed(), 15, interval=0.3, raises=False)
        assert name not in listed()
        assert any(os.path.exists(f) for f in files), "a SIGKILLed REPL cannot clean up by itself"
        for args in (["targets", "--json"], ["whoami"]):  # read-only: they change nothing
            res = subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True, timeout=60)
            assert res.returncode == 0 and "crashed relay" not in res.stderr
        assert any(os.path.exists(f) for f in files)
        # the files in Claude's registry are another program's directory: with no terminal to ask on,
        # `relay clean` shows the plan, answers No and removes none of them
        res = subprocess.run([sys.executable, "-m", "relay_repl", "clean"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL)
        assert res.returncode == 0 and "Plan: remove what crashed relay processes left" in res.stderr, res.stderr
        assert all(os.path.exists(f) for f in files if "/inbox/" not in f), res.stderr
    finally:
        screen.close()
    # in a real terminal, answered y then Enter, it removes them all
    screen = Screen([sys.executable, "-m", "relay_repl", "clean"], dict(os.environ, TERM="xterm-256color"))
    try:
        screen.wait_for("Proceed? [y/N]", timeout=60)
        screen.keys("y", "Enter")
        screen.wait_for(f"crashed relay pid {pid}", timeout=30)
        retry_until(lambda: not any(os.path.exists(f) for f in files), 20, interval=0.2, raises=False)
        assert not any(os.path.exists(f) for f in files), screen.text()
        assert read_records() == []
    finally:
        screen.close()
