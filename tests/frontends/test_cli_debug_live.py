"""Live: `relay debug ID` from a fresh process, against the real Claude Code in the lab.

A `relay send --transport tmux` is approved while the receiver is frozen, so the payload
is typed but never shown in full and the send exits 3 (pending at stage `stage`). The
client is thawed (it now draws the staged bytes), and a NEW process, `relay debug ID`,
looks at the pane (verdict and reasons), steps (asks y/N before any key; No leaves the
pane byte-for-byte unchanged), then steps with yes and confirms from the transcript.
Last, a pending delivery whose receiver is killed is reported as "receiver gone", exit 1.

Its own lab (it freezes and kills the Claude session), one Claude session only.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import anyio
import pytest

from relay_repl.agents.claude_code import fidelity as claude_fidelity

from relay_repl.store.ledger import Ledger
from relay_repl.testing.labs import private_lab_home
from tests.support.tmuxdrive import Screen
from tests.transports.test_tmux_live import frozen, idle

pytestmark = [pytest.mark.live, pytest.mark.anyio]


@pytest.fixture(scope="module")
def dbg_lab_home(tmp_path_factory):
    with private_lab_home(tmp_path_factory, "debuglab") as home:
        yield home


@pytest.fixture(scope="module")
def dbg_lab_state(dbg_lab_home):
    import relay_repl.lab.launcher as launcher

    return launcher.up(claude=1, codex=0, progress=lambda m: None)


@pytest.fixture
def dlab(request, dbg_lab_home, dbg_lab_state, monkeypatch):
    import relay_repl.lab.launcher as launcher

    request.getfixturevalue("relay_home")
    monkeypatch.setenv("RELAY_HOME", str(dbg_lab_home))
    for k, v in launcher.env().items():
        monkeypatch.setenv(k, v)
    return dbg_lab_state


def pane_bytes(name: str) -> tuple[list[str], str]:
    """The pane's exact screen (with attributes) and cursor, for a byte-for-byte comparison."""
    import relay_repl.lab.helpers as helpers

    p = helpers.pane(name)
    return p.cmd("capture-pane", "-p", "-e").stdout, p.cmd("display-message", "-p", "#{cursor_x},#{cursor_y}").stdout[0]


# Claude Code draws and removes its effort hint (`◐ medium · /effort`) above the composer on a timer
# of its own, with no key from anyone: that row (its fidelity facts' `MARKS.own_redraws`) is left out of the
# comparison. Every other byte of the screen, the composer and the cursor must stay the same.
# The hint takes the place of a blank row, so rows with no visible character are left out too: a
# key we sent would show as visible text (in the composer, or as a new turn), never as a blank row.
_SGR = re.compile(r"\x1b\[[0-9;:]*m")


def pane_unchanged_by_us(name: str) -> tuple[list[str], str]:
    """`pane_bytes` (attributes included) less the effort-hint row and the blank rows; cursor kept."""
    rows, cursor = pane_bytes(name)
    own = claude_fidelity.MARKS.own_redraws
    return [r.rstrip() for r in rows if (t := _SGR.sub("", r)).strip() and not any(m in t for m in own)], cursor


def relay_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "relay_repl", *args]


def term_env() -> dict[str, str]:
    return dict(os.environ, TERM="xterm-256color")


async def test_pending_tmux_delivery_is_debugged_from_a_fresh_process(dlab, dbg_lab_home):
    import relay_repl.lab.launcher as launcher

    await idle("alpha")
    s = launcher.status().session("alpha")
    body = f"debug me later {os.getpid()}"
    cmd = " ".join(relay_cmd("send", "claude:alpha", f"'{body}'", "--transport", "tmux"))
    sender = Screen(["sh", "-c", f"{cmd}; echo RELAY_EXIT=$?; sleep 600"], term_env())
    try:
        text = sender.wait_for("Proceed? [y/N]", timeout=90)
        relay_id = re.search(r"relay id (\S+)\)", text).group(1)
        with frozen(s.pid, s.pane_pid):
            sender.keys("y", "Enter")
            text = sender.wait_for("RELAY_EXIT=", timeout=60)
        assert "RELAY_EXIT=3" in text and "pending at stage stage" in text, text
    finally:
        sender.close()

    # thawed: the client draws the bytes it was sent while frozen
    end = time.monotonic() + 15
    while body not in "\n".join(pane_bytes("alpha")[0]):
        assert time.monotonic() < end, "the thawed client never drew the staged bytes"
        await anyio.sleep(0.2)
    await anyio.sleep(1.0)

    dbg = Screen(relay_cmd("debug", relay_id), term_env())
    try:
        text = dbg.wait_for("debug>", timeout=60)
        assert "next: submit" in text and "pending staged" in text, text
        dbg.type_line("look")
        text = dbg.wait_for("pane now:", timeout=60)
        assert "staged, not submitted" in text and "classifier: idle/draft" in text, text
        assert body in text.split("pane now:")[-1]

        before = pane_unchanged_by_us("alpha")
        dbg.type_line("step")
        text = dbg.wait_for("Proceed? [y/N]", timeout=60)
        assert "<Enter> (one key; nothing is typed)" in text and body in text
        assert pane_unchanged_by_us("alpha") == before, "a key left before the answer"
        dbg.keys("n", "Enter")
        dbg.wait_for("declined: no key was sent", timeout=30)
        await anyio.sleep(1.5)  # a key that did leave would show by now; absence has no event to wait for
        assert pane_unchanged_by_us("alpha") == before, "answering No changed the pane"
        led = Ledger(dbg_lab_home / "ledger.sqlite")
        key = led.events(relay_id=relay_id, kind="plan")[0].delivery
        kinds = [e.kind for e in led.events(delivery=key)]
        assert "stage:submit" not in kinds and kinds.count("answer") == 2

        dbg.type_line("step")
        dbg.wait_for(lambda t: t.count("Proceed? [y/N]") >= 2, timeout=60)
        dbg.keys("y", "Enter")
        dbg.wait_for("Enter pressed once", timeout=60)
        dbg.type_line("step")
        text = dbg.wait_for("now: delivered", timeout=60)
        assert "[confirm] in_turn" in text
        dbg.type_line("quit")
    finally:
        dbg.close()
    await idle("alpha")


async def test_receiver_killed_is_reported_gone_exit_1(dlab):
    import relay_repl.lab.launcher as launcher
    import relay_repl.lab.procs as procs
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate

    await idle("alpha")
    s = launcher.status().session("alpha")
    session = make_session(approve=ScriptedGate([True]), echo=lambda line: None)
    await session.refresh()
    with frozen(s.pid, s.pane_pid):
        d = await session.send("claude:alpha", "to a receiver about to be killed", transport="tmux")
    assert d.exit_code == 3, d.summary()
    os.kill(s.pid, signal.SIGKILL)
    assert not await anyio.to_thread.run_sync(procs.wait_gone, [s.pid], 10.0), "alpha survived SIGKILL"

    res = subprocess.run(relay_cmd("debug", d.relay_id, "--look", "--json"), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 1, res
    assert "Traceback" not in res.stderr + res.stdout
    out = json.loads(res.stdout)
    assert out["look"]["receiver"] == "gone" and out["look"]["verdict"].startswith("receiver gone")
    assert out["relay_id"] == d.relay_id and out["outcome"] == "pending"

    res = subprocess.run(relay_cmd("debug", d.relay_id, "--look"), capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and "receiver gone" in res.stdout and "Traceback" not in res.stderr
    # step in the loop reports it too, and touches nothing
    res = subprocess.run(relay_cmd("debug", d.relay_id), input="step\nquit\n", capture_output=True, text=True,
                         timeout=120)
    assert "not stepping: receiver gone" in res.stdout and "Traceback" not in res.stderr, res
