"""The dead-letter shelf (`relay dead`): a send SIGKILLed mid-send is listed, with why; a retry
shows the debugger's evidence first, refuses when the receiver holds the payload or cannot
tell, plans a new send (new relay id, y/N) otherwise, and is made at most once; drop records."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.errors import UsageError
from relay_repl.core.target import Me
from relay_repl.session.core.dead import dead_letters, drop, retry
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.session import Session
from relay_repl.session.core.unfinished import sweep_interrupted
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target
from tests.session.test_interrupted import start_and_kill
from tests.support.tmuxdrive import Screen, python_env


def relay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", "--fake", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


class Holding(InMemoryTransport):
    """A receiver whose evidence shows the payload there (landed), unreadable (None), or typed in
    its composer and not submitted (staged)."""

    def __init__(self, landed, staged=None, waiting=None):
        super().__init__()
        self.landed, self.staged, self.waiting = landed, staged, waiting

    async def look(self, d, target, payload):
        look = await super().look(d, target, payload)
        return look.model_copy(update={"landed": self.landed, "staged": self.staged, "waiting": self.waiting,
                                       "verdict": f"landed={self.landed}"})


def session(path, transport, answers=()):
    return Session(ledger=Ledger(path), approve=ScriptedGate(answers), me=Me(address="me"),
                   providers=[StaticProvider("fake", [fake_target()])], transports=[transport], echo=None)


def test_a_send_killed_mid_send_is_on_the_shelf_before_and_after_a_start_records_it(tmp_path, relay_home):
    rid = start_and_kill(tmp_path, "reindex please")
    res = relay("dead", "--json")  # read-only: lists it from the dead pid, records nothing
    assert res.returncode == 0, res.stderr
    (row,) = [json.loads(x) for x in res.stdout.splitlines()]
    assert (row["relay_id"], row["state"], row["target"], row["swept"]) == (rid, "interrupted", "fake:inbox", False)
    assert "ended before an outcome was recorded" in row["why"] and row["body"] == "reindex please"
    led = Ledger(relay_home / "ledger.sqlite")
    assert [e for e in led.events(relay_id=rid) if e.kind == "outcome"] == []  # `relay dead` wrote nothing
    assert sweep_interrupted(led) == [rid]
    (letter,) = dead_letters(led)
    assert letter.relay_id == rid and letter.swept and "last stage was write (queued" in letter.why
    text = relay("dead").stdout
    assert rid in text and "interrupted" in text and "relay dead retry ID" in text


@pytest.mark.anyio
async def test_retry_shows_the_evidence_then_sends_at_most_once(tmp_path, relay_home):
    rid = start_and_kill(tmp_path, "reindex please")
    lines: list[str] = []
    tr = InMemoryTransport()  # this process's receiver does not hold it: the evidence says so
    s = session(relay_home / "ledger.sqlite", tr, [True, True])
    out = await retry(s, rid, say=lines.append)
    assert out.refused is None and out.delivery is not None and out.delivery.outcome == "delivered"
    shown = "\n".join(lines)
    assert f"relay id {rid}" in shown and "evidence now:" in shown and "not in the in-memory inbox" in shown
    new = out.delivery.relay_id
    assert new != rid and len(tr.received) == 1 and "reindex please" in tr.received[0]
    assert s.approve.shown[0].heading.startswith(f"retry of dead letter {rid}")
    assert dead_letters(s.ledger) == []
    with pytest.raises(UsageError, match=f"already retried as {new}"):
        await retry(s, rid)
    assert len(tr.received) == 1  # at most once


@pytest.mark.anyio
async def test_a_retry_declined_at_the_gate_leaves_it_on_the_shelf(tmp_path, relay_home):
    rid = start_and_kill(tmp_path, "reindex please")
    tr = InMemoryTransport()
    s = session(relay_home / "ledger.sqlite", tr, [False])
    out = await retry(s, rid)
    assert out.delivery.outcome == "refused" and tr.received == []
    assert [d.relay_id for d in dead_letters(s.ledger)] == [rid]


@pytest.mark.anyio
@pytest.mark.parametrize("landed, staged, waiting, says", [(True, None, None, "holds the payload already"),
                                                           (None, None, None, "cannot be read"),
                                                           (False, True, None, "typed but not submitted"),
                                                           (False, None, True, "queue still holds it")])
async def test_retry_refuses_when_the_receiver_holds_it_or_cannot_tell(tmp_path, relay_home, landed, staged, waiting,
                                                                       says):
    rid = start_and_kill(tmp_path, "reindex please")
    tr = Holding(landed, staged, waiting)
    s = session(relay_home / "ledger.sqlite", tr, [True])
    out = await retry(s, rid)
    assert out.delivery is None and says in out.refused and tr.received == [] and out.exit_code == 1
    assert s.approve.shown == []  # no plan was even asked
    assert [d.relay_id for d in dead_letters(s.ledger)] == [rid]


@pytest.mark.anyio
async def test_a_failed_send_and_an_unanswered_one_are_listed_and_drop_takes_them_off(tmp_path):
    class Failing(InMemoryTransport):
        async def send(self, d, target, payload, log, *, approval=None):
            from relay_repl.core.delivery import DeliveryState

            log("write", DeliveryState.FAILED, "the receiver refused the write")

    s = session(tmp_path / "l.sqlite", Failing(), [True])
    d = await s.send("fake:inbox", "will fail")
    assert d.state.value == "failed"
    s.ledger.event("no-reply", delivery="k2", relay_id="me-77", data={"timeout": 5, "state": "no_reply"})
    s.ledger.event("delivery", delivery="k2", data={"relay_id": "me-77", "spec": "fake:inbox", "body": "hi"})
    shelf = dead_letters(s.ledger)
    assert [(x.relay_id, x.state) for x in shelf] == [(d.relay_id, "failed"), ("me-77", "no_reply")]
    assert shelf[0].why == "write failed: the receiver refused the write" and "no answer within 5 s" in shelf[1].why
    s.ledger.add_inbox("late", origin={}, relay_id="x-1", peer="p", answers="me-77")  # unverified: still dead
    assert len(dead_letters(s.ledger)) == 2
    drop(s.ledger, d.relay_id)
    assert [x.relay_id for x in dead_letters(s.ledger)] == ["me-77"]
    with pytest.raises(UsageError, match="was dropped"):
        drop(s.ledger, d.relay_id)
    with pytest.raises(UsageError, match="not a dead letter"):
        ok = await session(tmp_path / "l.sqlite", InMemoryTransport(), [True]).send("fake:inbox", "fine")
        drop(s.ledger, ok.relay_id)


def test_retry_from_a_terminal_shows_evidence_asks_and_is_refused_the_second_time(tmp_path, relay_home):
    if shutil.which("tmux") is None:
        pytest.skip("tmux not installed")
    rid = start_and_kill(tmp_path, "reindex please")
    cmd = f"{sys.executable} -m relay_repl --fake dead retry {rid}; echo EXIT=$?; sleep 60"
    screen = Screen(["sh", "-c", cmd], python_env(RELAY_HOME=str(relay_home)))
    try:
        text = screen.wait_for("Proceed?", timeout=30)
        assert "evidence now:" in text and "not in the in-memory inbox" in text
        assert text.index("evidence now:") < text.index("Proceed?")
        screen.type_line("y")
        text = screen.wait_for("EXIT=", timeout=30)
        assert "EXIT=0" in text and "delivered" in text, text
    finally:
        screen.close()
    again = relay("dead", "retry", rid)
    assert again.returncode == 2 and "already retried as" in again.stderr
    led = Ledger(relay_home / "ledger.sqlite")
    sends = [e for e in led.events(kind="delivery") if e.data.get("body") == "reindex please"]
    assert len(sends) == 2  # the killed one and exactly one retry


@pytest.mark.anyio
async def test_a_recipe_step_that_waited_out_its_timeout_is_unanswered(tmp_path):
    from tests.session.test_runner import TWO, mk, write

    s, rep, gate, led, lines = mk(tmp_path, [True] * 2, answer=lambda env, t: None if t.name == "b" else "fine")
    run = await s.run(write(tmp_path, TWO.format(rounds=1).replace("timeout = 5", "timeout = 0.3")))
    assert run.state == "timed-out"
    (letter,) = dead_letters(led)
    assert (letter.relay_id, letter.state, letter.target) == (run.steps[1].relay_id, "no_reply", "fake:b")
    assert "no reply within 0.3 s" in letter.why and run.id in letter.why
    led.add_inbox(f"[relay/1 from=peer:fake@b to=operator id=b-late hop=3 want=none re={letter.relay_id}] late",
                  origin={"verifiedPeerPid": 1}, relay_id="b-late", peer="peer:fake@b", answers=letter.relay_id)
    assert len(dead_letters(led)) == 1  # an unverified answer does not take it off
    rep.inbox.accept(f"[relay/1 from=peer:fake@b to=operator id=b-9 hop=3 want=none re={letter.relay_id}] later",
                     {"verifiedPeerPid": 1, "kind": "peer"})  # verified (the fake judge): answered after all
    assert dead_letters(led) == []


def test_on_a_fresh_machine_dead_makes_no_file(tmp_path, relay_home):
    assert relay("dead").returncode == 0 and "no dead letters" in relay("dead").stdout
    for sub in ("retry", "drop"):
        res = relay("dead", sub, "me-1")
        assert res.returncode == 2 and "there is no ledger" in res.stderr, res.stderr
    assert not relay_home.exists()
