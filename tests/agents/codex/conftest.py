"""One real CODEX_HOME holding every case a Codex send's plan distinguishes, for the plan tests here:
real flocks held by real processes, real SQLite files (state, goals), rollouts, a real tmux server
whose panes draw a Codex footer naming their thread, and a WebSocket-over-Unix-socket daemon
answering like Codex's (tests/agents/test_codex_registry.py's fixtures, which the Codex discovery
tests use too)."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from relay_repl.system.prefetch import load_by_file
from tests.agents.test_codex_registry import (T1, T2, T3, T4, daemon, fake_codex_bin, goals_db, home,  # noqa: F401
                                              index, lock, mark_daemon, rollout, state_db)

T5 = "01a22c47-bbbb-7921-9dbe-4cd6565cd35e"  # held by a TUI run with --no-daemon
T6 = "01a22c47-cccc-7921-9dbe-4cd6565cd35e"  # in Plan mode
T7 = "01a22c47-dddd-7921-9dbe-4cd6565cd35e"  # no rollout yet (in a pane its footer names)
T8 = "01a22c47-eeee-7921-9dbe-4cd6565cd35e"  # waiting on an approval
NAMES = {T1: "idle-one", T2: "busy-one", T3: "goal-one", T4: "free-one", T5: "tui-one", T6: "plans", T7: "fresh",
         T8: "asks"}
CLI_VERSION = "0.171.0"
"""What state_5.sqlite records each thread with: the --no-daemon holder's version (its binary names none)."""

HOLD_AS_SLEEP = """
import fcntl, os, sys
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
os.set_inheritable(f.fileno(), True)
print("locked", flush=True)
os.execv(sys.argv[2], ["sleep", "600"])  # the same pid holds the lock; its binary names no x.y.z version
"""


def plain_module(name: str) -> Any:
    """A Codex module as the plain path loads it: by file, without the agents package."""
    mod = load_by_file(f"codex-{name}", f"relay_repl.agents.codex.{name}", "relay_repl.plain_listing")
    assert mod is not None
    return mod


def plan_mode_rollout(path: Path) -> None:
    with open(path, "a") as f:
        f.write(json.dumps({"type": "event_msg", "payload": {"type": "thread_settings_applied", "thread_settings": {
            "collaboration_mode": {"mode": "plan"}}}}) + "\n")


def tui_holder(lock_file: Path, tmp_path: Path) -> subprocess.Popen[bytes]:
    """A process holding `lock_file` as a `--no-daemon` TUI holds its thread's lock: not the daemon, and
    its binary (`sleep`) answers `--version` with no x.y.z, so the row takes the recorded cli_version."""
    script = tmp_path / "hold_as_sleep.py"
    script.write_text(HOLD_AS_SLEEP)
    sleep = os.path.realpath("/bin/sleep")
    p = subprocess.Popen([sys.executable, str(script), str(lock_file), sleep], stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline().strip() == b"locked"
    return p


def footer_pane(sock: str, codex: Path, name: str) -> None:
    """A pane (session `name`) of tmux server `sock` running a Codex footer that names thread `name`."""
    subprocess.run(["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", name, f"{codex} {name}"],
                   check=True)


class World(dict[str, str]):
    """The environment of the world (a dict, as the listings take it), and its fake daemon (`daemon`), whose
    `statuses` a test may change between two reads."""

    def __init__(self, env: dict[str, str], fake: Any) -> None:
        super().__init__(env)
        self.daemon = fake


@pytest.fixture
async def codex_world(home, daemon, tmp_path, monkeypatch):  # noqa: F811
    """The environment of a CODEX_HOME holding every case above (idle, busy, waiting and goal-active threads
    the daemon holds, Plan mode, no rollout yet, a --no-daemon holder, a free lock), panes whose footers name
    `idle-one` and `fresh`, and RELAY_HOME with a ledger."""
    from relay_repl.store.ledger import Ledger

    sock = f"relay-cxplan-{uuid.uuid4().hex[:8]}"
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "CODEX_HOME": str(home), "RELAY_TMUX_SOCKET": sock,
           "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR", "/tmp"), "RELAY_HOME": str(tmp_path / "relay"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "GEMINI_CLI_HOME": str(tmp_path / "gemini")}
    for k in ("TMUX", "RELAY_ADAPTERS_DIR", "RELAY_LAB_DIR", "RELAY_FIDELITY_CANDIDATE", "CODEX_THREAD_ID",
              "CLAUDE_CODE_MESSAGING_SOCKET"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    Ledger.default().close()  # `relay send`'s plain path plans only over an existing ledger
    ids = (T1, T2, T3, T4, T5, T6, T7, T8)
    for t in ids:
        lock(home, t)
    rollouts = {t: rollout(home, t) for t in ids if t != T7}
    plan_mode_rollout(rollouts[T6])
    state_db(home, [{"id": t, "rollout_path": str(rollouts.get(t, home / "sessions" / f"gone-{t}.jsonl")),
                     "updated_at": 1, "source": "cli", "cwd": "/work", "title": f"title {t[:4]}", "archived": 0,
                     "thread_source": "user", "name": None, "cli_version": CLI_VERSION} for t in ids],
             columns=("id", "rollout_path", "updated_at", "source", "cwd", "title", "archived", "thread_source", "name",
                      "cli_version"))
    index(home, *NAMES.items())
    goals_db(home, [(T3, "active", "keep going"), (T1, "complete", "done")])
    # this process is the daemon: it holds their locks and serves the socket, so the daemon that answers
    # is the holder and its `initialize` answer gives their version (0.169.0), as Codex's daemon does
    held = [open(home / "thread-writer-locks" / f"{t}.lock", "a") for t in (T1, T2, T3, T6, T7, T8)]
    for f in held:
        fcntl.flock(f, fcntl.LOCK_EX)
    mark_daemon(home, os.getpid())
    tui = tui_holder(home / "thread-writer-locks" / f"{T5}.lock", tmp_path)
    fake = await daemon({T1: {"type": "idle"}, T2: {"type": "active", "activeFlags": []}, T3: {"type": "idle"},
                  T6: {"type": "idle"}, T7: {"type": "idle"}, T8: {"type": "active", "activeFlags": ["waitingOnApproval"]}})
    codex = fake_codex_bin(tmp_path)
    try:
        for name in ("idle-one", "fresh"):
            footer_pane(sock, codex, name)
        for name in ("idle-one", "fresh"):
            for _ in range(100):
                shot = subprocess.run(["tmux", "-L", sock, "capture-pane", "-p", "-t", name], capture_output=True,
                                      text=True).stdout
                if f"/work · {name}" in shot:
                    break
                await anyio.sleep(0.05)
        yield World(env, fake)
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        tui.kill()
        tui.wait()
        for f in held:
            f.close()
