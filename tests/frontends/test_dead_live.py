"""Live (issue 34): `relay dead` lists a real `relay send` to the lab's Codex that was SIGKILLed
mid-send (its item queued behind a busy turn, the wait for the turn cut), and `relay dead retry`
shows the debugger's evidence (the queue row, or the turn that took it) and refuses: the
receiver's queue holds the payload, so a new send would deliver it twice. The payload reaches
the real Codex exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.stubs.client import StubClient
from relay_repl.store.ledger import Ledger
from tests.support.sessions import live_session
from tests.support.tmuxdrive import Screen

pytestmark = [pytest.mark.live, pytest.mark.anyio]

BODY = "the second message, sent while beta is busy"


def relay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)


async def test_a_send_killed_mid_send_is_a_dead_letter_and_retry_will_not_send_it_twice(lab):
    env = dict(os.environ, TERM="xterm-256color")
    async with StubClient(lab.stub.control) as stub:
        await stub.clear_requests("beta")
        try:
            await _killed_then_refused(lab, stub, env)
        finally:
            await stub.release("beta")  # whatever happened, beta's held turn ends: the shared lab's next test finds it idle


async def _killed_then_refused(lab, stub: StubClient, env: dict[str, str]) -> None:
    async with live_session([True]) as (s, gate, inbox):  # beta busy until released: a queued item waits
        busy = await s.send("codex:beta", "SLOW240 think about it until released", transport="codex-queue")
        assert busy.outcome == "delivered", busy.summary()
    cmd = f"exec {sys.executable} -m relay_repl send codex:beta '{BODY}' --transport codex-queue --timeout 90"
    sender = Screen(["sh", "-c", cmd], env)
    try:
        sender.wait_for("Proceed? [y/N]", timeout=60)
        sender.keys("y", "Enter")
        sender.wait_for("[enqueue] queued", timeout=30)
        pid = int(sender.pane.pane_pid)  # `exec`: the pane's process is relay itself
        os.kill(pid, signal.SIGKILL)
    finally:
        sender.close()
    led = Ledger.read_only_default()
    (start,) = [e for e in led.events(kind="delivery") if e.data.get("body") == BODY]
    rid = start.data["relay_id"]
    assert not [e for e in led.events(relay_id=rid) if e.kind == "outcome"]  # what SIGKILL left

    listed = relay("dead", "--json")
    assert listed.returncode == 0, listed.stderr
    row = next(json.loads(x) for x in listed.stdout.splitlines() if json.loads(x)["relay_id"] == rid)
    assert (row["state"], row["target"], row["swept"]) == ("interrupted", "codex:beta", False)
    assert f"pid {pid} ended before an outcome was recorded" in row["why"]

    retry = Screen(["sh", "-c", f"{sys.executable} -m relay_repl dead retry {rid}; echo RC=$?; sleep 600"], env)
    try:
        text = retry.wait_for("RC=", timeout=90)
    finally:
        retry.close()
    print(text.strip()[-2500:])
    assert "RC=1" in text, text
    assert f"relay id {rid}" in text and "enqueue" in text and "evidence now:" in text, text
    assert "still in the queue" in text or "landed: codex" in text, text  # the item's row, or its turn
    assert "not retrying" in text and "Proceed?" not in text, text
    led = Ledger.read_only_default()
    assert [e.data["body"] for e in led.events(kind="delivery")].count(BODY) == 1
    (outcome,) = [e for e in led.events(relay_id=rid) if e.kind == "outcome"]  # the retry's start swept it
    assert outcome.data["state"] == "interrupted" and outcome.data["stage"] == "enqueue"
    await stub.release("beta")  # the busy turn ends now (it was held past every step above): the item's turn follows

    async def reached() -> list:
        return [r for r in await stub.requests("beta", kind="main") if BODY in r.last_text and not r.tool_result]

    # The queue drains one item per idle transition: beta can read idle for a moment between the busy
    # turn's end and the turn our item starts (fresh run f3 looked in that moment and saw none). So
    # wait for the item's turn to reach the model, then for idle, then count.
    with anyio.move_on_after(120):
        while not await reached():
            await anyio.sleep(0.5)
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle("beta", timeout=120))
    got = await reached()
    assert len(got) == 1, [r.last_text[:80] for r in got]  # the queued item reached Codex once
    listed = relay("dead", "--json")
    assert rid in listed.stdout  # still on the shelf until dropped: the retry sent nothing
    dropped = relay("dead", "drop", rid)
    assert dropped.returncode == 0 and rid not in relay("dead", "--json").stdout
