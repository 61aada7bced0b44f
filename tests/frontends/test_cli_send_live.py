"""Live: `relay send` from a shell, answered at its y/N prompt, with its exit codes."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

import relay_repl.lab.helpers as helpers
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live

RELAY = [sys.executable, "-m", "relay_repl"]


def run_in_terminal(args: list[str], answer: str | None, timeout: float = 90) -> tuple[int, str]:
    cmd = f"{shlex.join(RELAY + args)}; echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
    try:
        if answer is not None:
            screen.wait_for("Proceed? [y/N]", timeout=60)
            screen.keys(answer, "Enter")  # an answer is a line: y then Enter
        text = screen.wait_for("RC=", timeout=timeout)
        rc = int(text.split("RC=")[-1].split()[0])
        return rc, text
    finally:
        screen.close()


def test_delivered_is_exit_0(lab):
    rc, text = run_in_terminal(["send", "codex:beta", "hello from the cli", "--transport", "codex-queue"], "y")
    assert rc == 0, text
    assert "3 payload" in text and "delivered (in_turn) via codex-queue to codex:beta" in text
    helpers.wait_idle("beta", timeout=60)


def test_pending_is_exit_3_and_names_the_stage(lab):
    helpers.make_busy("beta", 12)
    try:
        rc, text = run_in_terminal(["send", "codex:beta", "behind a busy turn", "--timeout", "2"], "y")
        assert rc == 3, text
        assert "pending at stage readback (queued)" in text
    finally:
        helpers.end_busy("beta")  # the held turn has served: end it rather than sit out its 12 s


def test_a_bare_send_shows_its_plan_early_once_and_delivers_on_y(lab):
    """issue 40: `relay send claude:alpha MESSAGE` (no option) prints its plan before the models load
    (frontends/send_plain.py); the models' plan is the same, so it is not printed again, the y approves
    it and the message is delivered under the id shown."""
    from relay_repl.store.ledger import Ledger
    from relay_repl.store.paths import ledger_path

    Ledger(ledger_path())  # the plain pre-plan plans only against a ledger that exists
    helpers.wait_idle("alpha", timeout=60)
    from tests.frontends.send_plain_helpers import plain_plan

    assert plain_plan("claude:alpha", "early plan, then y")[0].digest is not None  # the plain path plans this send
    rc, text = run_in_terminal(["send", "claude:alpha", "early plan, then y"], "y")
    assert rc == 0, text
    assert text.count("Plan: send to claude:alpha") == 1 and "the plan changed" not in text, text
    rid = text.split("(relay id ")[1].split(")")[0]
    assert f"id={rid} " in text  # the payload carries the id the plan's first line shows
    assert "delivered (in_turn) via claude-code-socket to claude:alpha" in text, text
    helpers.wait_idle("alpha", timeout=60)


def test_no_terminal_is_no_and_exit_1(lab):
    res = subprocess.run(RELAY + ["send", "claude:alpha", "never sent"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 1
    assert "No terminal to ask on" in res.stdout and "refused (withheld)" in res.stdout


def test_usage_errors_are_exit_2(lab):
    res = subprocess.run(RELAY + ["send", "claude:alpha", "x", "--transport", "carrier-pigeon"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "unknown transport" in res.stderr
    res = subprocess.run(RELAY + ["send", "alpha", "x"], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert res.returncode == 2 and "needs a kind" in res.stderr
