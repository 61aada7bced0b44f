"""Reading an exchange from the ledger: a send made on a host (`relay hosts`) as this ledger records
it (the plan and the answer under the relay id, the outcome with the host, and the answer judged
there as `remote-reply`), in the shapes session/remote/remote.py and session/remote/remote_send.py write."""

from __future__ import annotations

from relay_repl.core.exchange import OPERATOR
from relay_repl.session.core.dead import dead_letters
from relay_repl.session.core.watch import WatchModel
from relay_repl.store.exchange import read_exchange
from relay_repl.store.ledger import Ledger


def remote_send(led: Ledger, rid: str, state: str = "in_turn", answer: bool = True) -> None:
    led.event("plan", relay_id=rid, data={"action": "send to codex:beta", "target": "h2/codex:beta (pid 9)",
                                          "transport": "codex-queue", "relay_id": rid, "host": "h2",
                                          "payload": f"[relay/1 from=operator:relay@x to=peer id={rid} hop=0 want=reply] hi"})
    led.event("answer", relay_id=rid, data={"approved": True, "host": "h2"})
    led.event("outcome", delivery="k-" + rid, relay_id=rid,
              data={"state": state, "reason": None if state == "in_turn" else "the queue refused it", "stage": "turn",
                    "host": "h2", "route": "ssh h2", "target": "h2/codex:beta", "want": "reply", "body": "hi",
                    "hop": 0, "timeout": 30, "reply_via": None})
    if answer:
        led.event("remote-reply", delivery="k-" + rid, relay_id=rid, data={
            "host": "h2", "verified_by": "relay serve pid 5",
            "message": {"seq": 3, "at": 1.0, "relay_id": "beta-1", "peer": "agent:codex@beta", "answers": rid,
                        "line": f"[relay/1 from=agent:codex@beta to=operator id=beta-1 hop=1 want=none re={rid}] ok",
                        "origin": {}, "verdict": {"verdict": "verified", "session": "codex:beta"}}})


def test_a_send_made_on_a_host_is_drawn_to_its_host_lifeline_with_its_answer(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    remote_send(led, "x-1")
    ex = read_exchange(led, "x-1")
    assert ex.lifelines == [OPERATOR, "h2/codex:beta"]
    send, reply = ex.messages
    assert (send.kind, send.receiver, send.state, send.hop, send.text) == ("send", "h2/codex:beta", "in_turn", 0, "hi")
    assert (reply.sender, reply.verdict, reply.answers, reply.hop) == ("h2/codex:beta", "verified", "x-1", None)


def test_the_watch_and_the_shelf_read_a_host_send(tmp_path):
    led = Ledger(tmp_path / "l.sqlite")
    remote_send(led, "x-1")
    remote_send(led, "x-2", state="failed", answer=False)
    model = WatchModel()
    model.apply(led.events())
    one, two = model.rows["x-1"], model.rows["x-2"]
    assert (one.target, one.host, one.transport, one.state) == ("h2/codex:beta", "h2", "ssh h2", "replied")
    assert "judged on h2" in (one.answer or "")
    assert (two.state, two.finished, two.evidence) == ("failed", True, "the queue refused it")
    (dead,) = dead_letters(led)
    assert (dead.relay_id, dead.target, dead.body, dead.want, dead.why) == (
        "x-2", "h2/codex:beta", "hi", "reply", "the queue refused it")
