"""`relay serve --stdio`'s side of a host's agents' requests (issue 31 across hosts), as a real
subprocess: `requests` lists what its agents hold (for the operator's relay to take), and
`request_state` writes only a state and its steps into its copy, never who asked or what.
The old code answers both ops `unknown op`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from relay_repl.core.request import Request
from relay_repl.store.ledger import Ledger
from relay_repl.store.requests import RequestStore
from tests.session.test_serve import req


def serve(*lines: str) -> list[dict]:
    res = subprocess.run([sys.executable, "-m", "relay_repl", "--fake", "serve", "--stdio"], input="".join(lines),
                         capture_output=True, text=True, timeout=60, env=os.environ)
    assert res.returncode == 0, res.stderr
    return [json.loads(ln) for ln in res.stdout.splitlines()]


def test_requests_lists_the_held_ones_and_request_state_writes_only_the_state(relay_home):
    led = Ledger.default()
    RequestStore(led).add(Request.held(id="beta-1", asker="codex:beta", verdict="verified", evidence="pid 7",
                                       asker_pid=7, to="claude:alpha", body="hi", want="reply", hop=0, line="l"))
    led.close()
    update = {"state": "approved", "history": [{"state": "held", "at": 1.0}, {"state": "approved", "at": 2.0}],
              "delivery_id": "operator-1", "asker": "claude:gamma", "body": "rm -rf"}
    listed, told, again = serve(req(1, "requests"), req(2, "request_state", id="beta-1", update=update),
                                req(3, "requests"))
    assert listed["ok"] and [r["id"] for r in listed["result"]["held"]] == ["beta-1"], listed
    assert listed["result"]["halt"] is None
    assert told["ok"] and told["result"] == {"id": "beta-1", "state": "approved"}, told
    assert again["ok"] and again["result"]["held"] == []
    led = Ledger.default()
    try:
        kept = RequestStore(led).get("beta-1")
    finally:
        led.close()
    assert kept.state == "approved" and kept.delivery_id == "operator-1"
    assert (kept.asker, kept.body) == ("codex:beta", "hi")  # who asked and what: never the operator's to rewrite


def test_request_state_for_a_request_never_held_there_is_one_line(relay_home):
    (told,) = serve(req(1, "request_state", id="beta-9", update={"state": "approved"}))
    assert not told["ok"] and "no request 'beta-9'" in told["error"]


def test_a_serving_relay_never_expires_approves_or_denies_its_forwarded_requests(relay_home):
    """Its requests are decided by the operator's relay over the channel: states change only from there."""
    import pytest

    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session

    s = make_session(approve=lambda plan: False, echo=None, discover=False)
    s.asks.forwarding = True
    s.asks.store.add(Request.held(id="beta-1", asker="codex:beta", verdict="verified", evidence="pid 7",
                                  asker_pid=7, to="claude:alpha", body="hi", want="reply", hop=0, line="l",
                                  expiry=0.001, now=1.0))
    assert s.asks.sweep() == [] and s.asks.store.get("beta-1").state == "held"
    with pytest.raises(UsageError, match="the operator's relay over ssh"):
        s.deny_request("beta-1")
    s.asks.forwarding = False  # the same request on an operator's own relay: expired by its sweep
    assert [r.state for r in s.asks.sweep()] == ["expired"]


def test_a_decided_request_is_never_held_again_by_request_state(relay_home):
    """A state going backwards is refused here too (the operator's relay refuses it when a host lists
    it): `request_state` piped in by anyone once brought a denied request back to held, ready to approve."""
    led = Ledger.default()
    RequestStore(led).add(Request.held(id="beta-1", asker="codex:beta", verdict="verified", evidence="pid 7",
                                       asker_pid=7, to="claude:alpha", body="hi", want="reply", hop=0, line="l"))
    led.close()
    denied, back = serve(req(1, "request_state", id="beta-1", update={"state": "denied", "why": "no"}),
                         req(2, "request_state", id="beta-1", update={"state": "held", "expires": 9999999999}))
    assert denied["ok"] and denied["result"]["state"] == "denied", denied
    assert not back["ok"] and "never held again" in back["error"], back
    led = Ledger.default()
    try:
        assert RequestStore(led).get("beta-1").state == "denied"
    finally:
        led.close()


def test_relay_serve_refuses_to_run_inside_an_agent_session(monkeypatch):
    """Its ops list every held request and rewrite their states: an agent's shell (stdin a pipe, as
    over ssh) could pipe them in. Refused, judged by the process's ancestry like `relay approve`."""
    import io

    import pytest

    from relay_repl.agents.origin import OriginJudge
    from relay_repl.core.errors import PolicyRefusal
    from relay_repl.core.inbound import PeerIdentity
    from relay_repl.session.remote import serve as serve_mod

    class InsideBeta:
        def identify(self, pid):
            return PeerIdentity(kind="codex", spec="codex:beta", pid=pid, claimable=frozenset(),
                                evidence="a descendant of beta's process"), ()

    monkeypatch.setattr(OriginJudge, "default", classmethod(lambda cls: InsideBeta()))
    monkeypatch.setattr("relay_repl.session.core.outside.surely_outside_every_session", lambda *a, **k: False)  # the kinds' cheap rules cannot exclude: the judge decides
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    served: list[int] = []
    monkeypatch.setattr(serve_mod, "serve", lambda *a, **kw: served.append(1))
    with pytest.raises(PolicyRefusal, match="relay serve --stdio is the operator's act"):
        serve_mod.run_stdio(lambda **kw: pytest.fail("no session is made"))
    assert served == []
