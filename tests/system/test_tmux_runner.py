"""The one tmux runner, against a real private tmux server."""

from __future__ import annotations

import os
import uuid

import pytest

from relay_repl.core.errors import TmuxError
from relay_repl.system import tmux


@pytest.fixture
def server():
    name = f"relay-runner-{uuid.uuid4().hex[:8]}"
    sock = ("-L", name)
    yield sock
    try:
        tmux.run(sock, "kill-server")
    except TmuxError:
        pass


def test_run_lines_locale_and_exit_codes(server):
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE")}
    env["TMUX"] = "/nonexistent,1,0"  # ignored: the server is always named
    res = tmux.run(server, "new-session", "-d", "-s", "t", "-x", "80", "-y", "10", "--",
                   "sh", "-c", "printf '› ünïcode\\n'; sleep 30", env=env, config="/dev/null")
    assert res.ok and res.stdout == [] and res.stderr == []
    for _ in range(50):
        shot = tmux.run(server, "capture-pane", "-p", "-t", "t", env=env)
        if shot.stdout:
            break
    assert shot.stdout == ["› ünïcode"]  # UTF-8 kept although env has no locale; trailing blank rows dropped
    bad = tmux.run(server, "kill-pane", "-t", "%999")
    assert not bad.ok and "can't find" in bad.error


@pytest.mark.anyio
async def test_arun_matches_run(server):
    tmux.run(server, "new-session", "-d", "-s", "a", "--", "sleep", "30", config="/dev/null")
    res = await tmux.arun(server, "list-sessions", "-F", "#{session_name}")
    assert res.ok and res.stdout == ["a"]


def test_no_tmux_on_path_is_one_clear_error():
    with pytest.raises(TmuxError, match="tmux is not installed"):
        tmux.run(("-L", "x"), "list-sessions", env={"PATH": "/nonexistent"})


def test_argv_is_pure():
    assert tmux.argv(("-S", "/s"), ["list-panes"], tmux="/usr/bin/tmux", config="/dev/null", prefix=["nsenter"]) == [
        "nsenter", "/usr/bin/tmux", "-S", "/s", "-f", "/dev/null", "list-panes"]
