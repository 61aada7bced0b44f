"""kill -9 during a send (issue 11 item 6), with a real SIGKILLed process.

A `relay` process sends through the in-memory transport (the write stage done, the wait
for receiver evidence hanging) and is killed with SIGKILL. The next start records that
send as `interrupted` with its last stage, and a new send of the same body to the same
target says so in its plan, with the earlier relay id. Before the fix: no outcome was ever
recorded and the second plan said nothing (checked on main).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from relay_repl.session.core.unfinished import earlier_unfinished, sweep_interrupted
from relay_repl.store.ledger import Ledger

SENDER = textwrap.dedent(
    """
    import sys
    import anyio
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate
    from relay_repl.transports.fake import InMemoryTransport

    async def stuck(self, d, target, payload, log, timeout):
        print("WRITTEN", d.relay_id, flush=True)
        await anyio.sleep(3600)  # the wait for receiver evidence never ends: killed here

    InMemoryTransport.confirm = stuck

    async def main():
        s = make_session(fake=True, discover=False, approve=ScriptedGate([True]), echo=None)
        await s.send("fake:inbox", sys.argv[1])

    anyio.run(main)
    """
)


def start_and_kill(tmp_path, body: str) -> str:
    script = tmp_path / "sender.py"
    script.write_text(SENDER)
    proc = subprocess.Popen([sys.executable, str(script), body], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("WRITTEN "), line
        rid = line.split()[1]
        # while it runs, a sweep from another process must leave it alone
        led = Ledger(os.environ["RELAY_HOME"] + "/ledger.sqlite")
        assert sweep_interrupted(led) == []
        assert "still in flight in pid" in " ".join(earlier_unfinished(led, "fake:inbox", body))
        led.close()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    return rid


def relay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", "--fake", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def test_a_killed_send_is_interrupted_on_the_next_start_and_named_in_the_next_plan(tmp_path, relay_home):
    body = "rebuild the index please"
    rid = start_and_kill(tmp_path, body)
    led = Ledger(relay_home / "ledger.sqlite")
    assert [e for e in led.events(relay_id=rid) if e.kind == "outcome"] == []  # what kill -9 leaves

    res = relay("send", "fake:inbox", body)  # the next start; no terminal, so the answer is No
    assert res.returncode == 1, res.stderr
    out = " ".join(res.stdout.split())  # the plan wraps its notes
    assert f"an earlier send of this same body to fake:inbox is interrupted: relay id {rid}" in out, res.stdout
    assert "last stage write (queued" in out and f"relay why {rid}" in out

    outcome = [e for e in led.events(relay_id=rid) if e.kind == "outcome"]
    assert len(outcome) == 1 and outcome[0].data["state"] == "interrupted"
    assert outcome[0].data["stage"] == "write" and "SIGKILL" not in outcome[0].data["reason"]
    assert "ended before an outcome was recorded" in outcome[0].data["reason"]

    # another start records it once, not twice; a different body is not warned about
    res = relay("send", "fake:inbox", "something else entirely")
    assert "an earlier send" not in res.stdout
    assert len([e for e in led.events(relay_id=rid) if e.kind == "outcome"]) == 1


def test_finished_and_declined_sends_raise_no_note(tmp_path, relay_home):
    res = relay("send", "fake:inbox", "declined body")  # No: nothing was sent
    assert res.returncode == 1
    res = relay("send", "fake:inbox", "declined body")
    assert "an earlier send" not in res.stdout
    led = Ledger(relay_home / "ledger.sqlite")
    assert sweep_interrupted(led) == [] and earlier_unfinished(led, "fake:inbox", "declined body") == []


@pytest.mark.anyio
async def test_a_delivered_send_raises_no_note(relay_home):
    from relay_repl.session.app import make_session
    from relay_repl.session.core.gate import ScriptedGate

    gate = ScriptedGate([True, False])
    s = make_session(fake=True, discover=False, approve=gate, echo=None)
    assert (await s.send("fake:inbox", "once")).outcome == "delivered"
    await s.send("fake:inbox", "once")
    assert not any("earlier send" in n for n in gate.shown[1].notes)


class CountingLedger(Ledger):
    """The real ledger, counting the per-send event reads the sweep makes."""

    reads: list[str]

    def events(self, **kw):
        if kw.get("delivery"):
            self.reads.append(kw["delivery"])
        return super().events(**kw)


def test_the_sweep_reads_no_event_of_a_send_this_process_started(tmp_path):
    """relay's own CPU per target (issue 33): before each plan the sweep read the events of every
    open send, so an ask-all over N targets read its own N-1 siblings' events N times. A send whose
    `delivery` event names this process is alive while it asks: skipped unread. A dead process's
    send is still read and swept (old code reads both)."""
    from relay_repl.session.core.unfinished import owner

    led = CountingLedger(tmp_path / "l.sqlite")
    led.reads = []
    for key, who in (("d-mine", owner()), ("d-dead", {"pid": 2**22 + 7, "proc_start": 1})):
        led.event("delivery", delivery=key, relay_id=f"r-{key}", data={"relay_id": f"r-{key}", **who})
        led.event("answer", delivery=key, relay_id=f"r-{key}", data={"approved": True})
    assert led.started_here == {"d-mine"}
    assert sweep_interrupted(led) == ["r-d-dead"]
    assert led.reads == ["d-dead"]
    other = Ledger(tmp_path / "l.sqlite")  # another process's view: it did not start d-mine
    assert other.started_here == frozenset()
    other.close()
    led.close()
