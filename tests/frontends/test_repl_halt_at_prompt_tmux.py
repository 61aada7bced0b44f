"""The real `relay --fake` REPL in tmux (issue 38): while a send's plan waits for y/N, a relay-halt
reaches the REPL's own inbox (a real unix socket) and is recorded at once; the `y` that follows
sends nothing: `withheld: relay-halt from P arrived while the plan was shown`."""

from __future__ import annotations

import json
import shutil
import socket
import uuid

import pytest

from relay_repl.store.ledger import Ledger

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")


def test_a_halt_in_the_repls_inbox_while_the_prompt_waits_wins_over_y(repl, relay_home):
    from relay_repl.session.core.inbox import read_records

    repl.wait_for("<Session me=operator:relay@")
    repl.type_line('d = await session.send("fake:inbox", "halt me")')
    repl.wait_for("Proceed? [y/N]")
    (rec,) = [r for r in read_records() if r.live]
    line = "[relay/1 from=agent:codex@beta to=operator id=beta.h-1 hop=1 want=none] relay-halt: stop"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(rec.socket)
        s.sendall(json.dumps({"type": "user", "message": {"content": line}, "msg_id": str(uuid.uuid4())}).encode()
                  + b"\n")
    repl.wait_for("relay-halt received")  # the inbox was served while the prompt waited
    led = Ledger(relay_home / "ledger.sqlite")
    assert led.active_halt() is not None and not led.events(kind="answer")  # recorded before any answer
    repl.keys("y", "Enter")
    repl.wait_for("withheld: relay-halt from agent:codex@beta arrived while the plan was shown")
    repl.type_line('print("HELD", len(session._transports["memory"].received), d.state.value)')
    repl.wait_for("HELD 0 withheld")
    assert [a.data["approved"] for a in led.events(kind="answer")] == [False]
