"""Live: a halt wins over an open prompt (issue 38). `relay send codex:beta ...` in a real
terminal (tmux) shows its plan and waits; a message carrying `relay-halt` reaches the operator's
inbox (this very command's, a real unix socket, written as any local process would); the operator
then answers `y`. Nothing is delivered: the answer is `withheld: relay-halt from P arrived while
the plan was shown`, exit 1, no rollout of beta holds the payload, and the ledger holds the halt
before the answer. On e6902ec the payload was delivered (found in beta's rollout), exit 0."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
import uuid
from pathlib import Path

import pytest

from relay_repl.session.core.gate import PROMPT
from tests.support.tmuxdrive import Screen

pytestmark = pytest.mark.live


def rollouts_hold(text: str) -> bool:
    home = Path(os.environ["CODEX_HOME"])
    return any(text in p.read_text(errors="replace") for p in home.rglob("*.jsonl"))


def halt_into_inbox(pid: int, hid: str) -> None:
    """One Claude-wire `user` frame carrying relay-halt, written to the inbox of relay pid `pid`."""
    from relay_repl.session.core.inbox import read_records

    rec = next(r for r in read_records() if r.pid == pid)
    line = f"[relay/1 from=agent:claude-code@alpha to=operator id={hid} hop=1 want=none] relay-halt: stop now"
    frame = {"type": "user", "message": {"role": "user", "content": line}, "msg_id": str(uuid.uuid4()),
             "from": "uds:/nowhere"}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(rec.socket)
        s.sendall(json.dumps(frame).encode() + b"\n")


@pytest.mark.parametrize("repeated", [False, True], ids=["new-id", "repeated-id"])
def test_a_halt_that_arrives_while_the_plan_is_shown_wins_over_y(lab, repeated):
    """`repeated`: the halt comes under an id this ledger has seen before (a peer repeating its
    relay-halt): on e6902ec it was dropped as a duplicate, unrecorded, and the payload delivered."""
    from relay_repl.store.ledger import Ledger

    hid = f"alpha.halt{uuid.uuid4().hex[:6]}-1"
    if repeated:
        led = Ledger.default()
        led.mark_seen(hid, 1, "agent:claude-code@alpha")
        led.close()

    body = f"halt-race {uuid.uuid4().hex[:8]}"
    cmd = (f"{sys.executable} -m relay_repl.frontends.cli send codex:beta '{body}'; echo RC=$?; sleep 600")
    screen = Screen(["sh", "-c", cmd], dict(os.environ, TERM="xterm-256color"))
    try:
        text = screen.wait_for(PROMPT, timeout=120)
        rid = re.search(r"relay id (\S+)\)", text).group(1)
        pid = int(rid.rsplit("-", 1)[0].rsplit(".", 1)[1])
        halt_into_inbox(pid, hid)
        time.sleep(1.0)  # the operator reads the plan a little longer; the inbox is served meanwhile
        screen.keys("y", "Enter")
        text = screen.wait_for("RC=", timeout=60)
    finally:
        screen.close()
    led = Ledger.default()
    try:
        events = led.events()
        cleared = led.clear_halts(by="test")  # leave the shared lab unhalted for the next test
    finally:
        led.close()
    assert "RC=1" in text, text
    assert re.search(r"withheld: relay-halt from \S+ arrived while the plan was shown", text), text
    assert "delivered" not in text.split(PROMPT, 1)[1], text
    halts = [e for e in events if e.kind == "halt"]
    answer = next(e for e in events if e.kind == "answer" and e.relay_id == rid)
    assert halts and halts[0].seq < answer.seq, "the halt is recorded at once, before the answer"
    assert cleared >= 1
    time.sleep(3)  # a delivery would have reached beta's rollout by now
    assert not rollouts_hold(body), "no turn of beta may carry the payload"
