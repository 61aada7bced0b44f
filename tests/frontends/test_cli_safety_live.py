"""Live: `relay send` from a shell against the lab, attacked the way issue 11 did.

- A line carrying relay-halt reaches the process's own inbox while `Proceed? [y/N]` is
  open; the operator then answers y: nothing is delivered and the exit is non-zero
  (before the fix: delivered, exit 0).
"""

from __future__ import annotations

import os
import shlex
import sys
import time
import uuid
from pathlib import Path

import pytest

from relay_repl.session.core.inbox import read_records, send_frames, user_frame
from relay_repl.store.ledger import Ledger
from relay_repl.system.polling import poll_until_sync
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live

RELAY = [sys.executable, "-m", "relay_repl"]


def in_terminal(args: list[str]) -> Screen:
    cmd = f"{shlex.join(RELAY + args)}; echo RC=$?; sleep 600"
    return Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))


def rc_of(text: str) -> int:
    return int(text.split("RC=")[-1].split()[0])


def rollouts_hold(text: str) -> bool:
    home = Path(os.environ["CODEX_HOME"])
    return any(text in p.read_text(errors="replace") for p in home.rglob("*.jsonl"))


def the_inbox_of_the_send(started: float):
    """The inbox record the `relay send` process wrote (the only live one started since `started`)."""
    def one():  # noqa: ANN202 - an inbox record or None
        recs = [r for r in read_records() if r.live and r.started >= started]
        return recs[0] if len(recs) == 1 else None

    rec = poll_until_sync(one, timeout=10, interval=0.1)  # the record itself is the event
    if rec is not None:
        return rec
    raise AssertionError(f"no single inbox record of the relay send process: {read_records()}")


def test_halt_into_the_inbox_while_the_prompt_is_open_then_yes_delivers_nothing(lab):
    body = f"halt race {uuid.uuid4().hex[:8]}"
    started = time.time()
    screen = in_terminal(["send", "codex:beta", body, "--transport", "codex-queue", "--timeout", "5"])
    try:
        screen.wait_for("Proceed? [y/N]", timeout=60)
        rec = the_inbox_of_the_send(started)
        halt_line = (f"[relay/1 from=agent:codex@beta to=operator id=beta-{uuid.uuid4().hex[:8]}-1 hop=1 want=none] "
                     "relay-halt: stop every relay now")
        send_frames(rec.socket, [user_frame(halt_line, "test-peer")])
        screen.wait_for("relay-halt received", timeout=10)
        screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=60)
        assert rc_of(text) != 0, text
        # issue 38: the halt that arrived while the plan was shown wins over the yes: withheld, nothing sent
        assert "withheld: relay-halt from agent:codex@beta arrived while the plan was shown" in text, text
        led = Ledger.default()
        sends = [e for e in led.events(kind="plan") if body in str(e.data.get("payload"))]
        assert len(sends) == 1
        rid = sends[0].relay_id
        assert [e.kind for e in led.events(relay_id=rid)] == ["plan", "answer", "outcome"]
        assert led.events(relay_id=rid)[-1].data["state"] == "withheld"
        assert not led.was_sent(rid)
        # absence has no event to wait for: 3 s is 6x codex-queue's measured enqueue-to-rollout time
        time.sleep(3)
        assert not rollouts_hold(body), "the halted message reached Codex"
    finally:
        screen.close()
        Ledger.default().clear_halts(by="test")


def test_a_send_killed_with_sigkill_is_interrupted_and_named_in_the_next_plan(lab):
    """kill -9 of `relay send` after Codex's queue took the item (the receiver busy, so no
    outcome yet): the next `relay send` of the same body records it as interrupted and its
    plan names the earlier relay id and its last stage (issue 11 item 6)."""
    import signal
    import subprocess

    import relay_repl.lab.helpers as helpers

    body = f"killed mid-send {uuid.uuid4().hex[:8]}"
    helpers.make_busy("beta", 15)
    started = time.time()
    screen = in_terminal(["send", "codex:beta", body, "--transport", "codex-queue", "--timeout", "60"])
    try:
        screen.wait_for("Proceed? [y/N]", timeout=60)
        rec = the_inbox_of_the_send(started)
        screen.keys("y", "Enter")
        screen.wait_for("[enqueue] queued", timeout=30)
        os.kill(rec.pid, signal.SIGKILL)
        text = screen.wait_for("RC=", timeout=10)
        assert rc_of(text) != 0
    finally:
        screen.close()
    led = Ledger.default()
    rid = next(e.relay_id for e in led.events(kind="plan") if body in str(e.data.get("payload")))
    assert [e for e in led.events(relay_id=rid) if e.kind == "outcome"] == []  # what kill -9 leaves

    res = subprocess.run(RELAY + ["send", "codex:beta", body], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=90)
    out = " ".join(res.stdout.split())
    assert res.returncode == 1 and "No terminal to ask on" in res.stdout, res.stdout + res.stderr
    assert f"an earlier send of this same body to codex:beta is interrupted: relay id {rid}, last stage enqueue " \
           "(queued: queued as item" in out, res.stdout
    outcome = [e for e in led.events(relay_id=rid) if e.kind == "outcome"]
    assert len(outcome) == 1 and outcome[0].data["state"] == "interrupted" and outcome[0].data["stage"] == "enqueue"
    helpers.end_busy("beta", timeout=90)  # the held turn has served: end it now; the queued item is taken after it
