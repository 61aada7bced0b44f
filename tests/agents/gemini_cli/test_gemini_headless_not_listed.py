"""Only an interactive Gemini CLI process is a session: without a terminal on its stdin the client
is headless (`gemini --version`, `gemini -p ...`, GM §1) and is not a target.

Found in the suite: a `gemini --version` run by a doctor test on one xdist worker showed up in
the targets of a relay on the test sshd host running on the other. Real node processes, real /proc."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

from relay_repl.agents.gemini_cli.provider import _sessions
from relay_repl.system.proc import process_table

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node on PATH")


def _fake_bundle(tmp_path: Path) -> Path:
    js = tmp_path / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    js.parent.mkdir(parents=True)
    js.write_text("setTimeout(() => {}, 60000);\n")
    return js


def test_a_gemini_process_without_a_terminal_is_not_a_session_one_on_a_terminal_is(tmp_path):
    js = _fake_bundle(tmp_path)
    env = {**os.environ, "GEMINI_CLI_HOME": str(tmp_path / "home")}
    headless = subprocess.Popen(["node", str(js)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env,
                                cwd=tmp_path)
    leader, follower = pty.openpty()
    interactive = subprocess.Popen(["node", str(js)], stdin=follower, stdout=follower, stderr=follower, env=env,
                                   cwd=tmp_path)
    os.close(follower)
    try:
        from relay_repl.system.polling import poll_until_sync

        def listed() -> set[int] | None:
            pids = {s.pid for s in _sessions(process_table(), env)}
            return pids if interactive.pid in pids else None

        pids = poll_until_sync(listed, timeout=20, interval=0.1)
        assert pids is not None, "the node process on a terminal was never listed"
        assert headless.pid not in pids
    finally:
        for p in (headless, interactive):
            p.kill()
            p.wait()
        os.close(leader)


def test_a_gemini_session_under_another_gemini_home_is_not_listed(tmp_path):
    """Two labs on one machine: each relay lists the Gemini sessions of its own home only (a
    session's chat files are under its own `.gemini`; another home's could not confirm anything)."""
    js = _fake_bundle(tmp_path)
    ours = {**os.environ, "GEMINI_CLI_HOME": str(tmp_path / "ours")}
    theirs = {**os.environ, "GEMINI_CLI_HOME": str(tmp_path / "theirs")}
    procs, leaders = [], []
    for env in (ours, theirs):
        leader, follower = pty.openpty()
        procs.append(subprocess.Popen(["node", str(js)], stdin=follower, stdout=follower, stderr=follower, env=env,
                                      cwd=tmp_path))
        os.close(follower)
        leaders.append(leader)
    try:
        from relay_repl.system.polling import poll_until_sync

        def both_seen() -> bool:
            return all(p.pid in {s.pid for s in _sessions(process_table(), env)}
                       for p, env in zip(procs, (ours, theirs), strict=True))

        assert poll_until_sync(both_seen, timeout=20, interval=0.1), "each session is listed under its own home"
        assert procs[1].pid not in {s.pid for s in _sessions(process_table(), ours)}
        assert procs[0].pid not in {s.pid for s in _sessions(process_table(), theirs)}
    finally:
        for p in procs:
            p.kill()
            p.wait()
        for fd in leaders:
            os.close(fd)
