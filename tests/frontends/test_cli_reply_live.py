"""Live: `relay send ... --want reply --wait N` from a shell: the answer printed and exit 0, or exit 3."""

from __future__ import annotations

import os
import shlex
import sys

import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.stubs.client import SyncStubClient
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live

RELAY = [sys.executable, "-m", "relay_repl"]


def run(args: list[str], answers: int, timeout: float = 90) -> tuple[int, str]:
    """Run `relay ARGS` in a terminal, answer y at each of `answers` prompts; (exit code, screen)."""
    cmd = f"{shlex.join(RELAY + args)} 2>&1; echo RC=$?; sleep 600"
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
    try:
        for n in range(1, answers + 1):
            screen.wait_for(lambda t, n=n: t.count("Proceed? [y/N]") >= n, timeout=60)
            screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=timeout)
        return int(text.split("RC=")[-1].split()[0]), text
    finally:
        screen.close()


def test_codex_reply_is_printed_and_exit_0(lab):
    rc, text = run(["send", "codex:beta", "hi", "--want", "reply", "--wait", "30"], answers=1)
    assert rc == 0, text
    assert "reply via" in text and "relay reply" in text
    assert "delivered (replied) via codex-queue to codex:beta" in text
    assert 'reply to ' in text and "[verified, pid " in text and "codex:beta]" in text
    helpers.wait_idle("beta", timeout=60)


def test_claude_reply_lists_the_inbox_for_the_wait_and_exit_0(lab):
    rc, text = run(["send", "claude:alpha", "hi", "--want", "reply", "--wait", "30"], answers=2)
    assert rc == 0, text
    assert "list the operator inbox as a Claude peer" in text and "SendMessage" in text
    alpha = helpers.launcher.status().session("alpha").pid
    assert f"[verified, pid {alpha}, claude:alpha]" in text
    helpers.wait_idle("alpha", timeout=60)


def test_a_target_that_never_answers_exits_3_and_says_so(lab):
    SyncStubClient(lab.stub.control).add_rule(
        "beta", {"match": "never answer", "once": True, "steps": [{"text": "not answering"}]})
    rc, text = run(["send", "codex:beta", "never answer this", "--want", "reply", "--wait", "4"], answers=1)
    assert rc == 3, text
    assert "delivered (no_reply)" in text
    assert "no reply from codex:beta" in text and "within 4s" in text and "the answer is what is missing" in text
    helpers.wait_idle("beta", timeout=60)


def test_wait_without_want_is_a_usage_error(lab):
    rc, text = run(["send", "codex:beta", "hi", "--wait", "5"], answers=0)
    assert rc == 2 and "--wait waits for an answer: add --want reply" in text, text
