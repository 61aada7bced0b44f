"""An agent's request made on another host (issue 31 across hosts) against a lying `relay serve`
(relay_repl/testing/hostile_host.py, through a stand-in ssh on PATH): the request is taken up the
channel and held HERE as `standin/beta-1`, the asker shown as the host's word, decided at this
gate, and every word of the host about it checked (core/host_requests.py, core/host_claims.py).

On the old code (before this branch) `session.host_requests` does not exist and the serve wire has
no `requests` op: every test here fails.
"""

from __future__ import annotations

import anyio
import pytest

from relay_repl.core.errors import HostClaim
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.store.ledger import Ledger
from relay_repl.testing import HOST

pytestmark = pytest.mark.timeout(120)
KEY = f"{HOST}/beta-1"


def run(answers: list[bool], script):
    """A session (its hosts from hosts.toml: the stand-in), `script(s, out)` run in it; out has said, events."""
    from relay_repl.session.app import make_session

    gate = ScriptedGate(answers)
    out: dict = {"said": [], "gate": gate}

    async def main() -> None:
        s = make_session(approve=gate, echo=out["said"].append, discover=False)
        try:
            await script(s, out)
        finally:
            await s.sender.remote.aclose()
            led = Ledger.default()
            out["events"] = led.events()
            led.close()

    anyio.run(main)
    return out


def claims(out) -> list:
    return [e for e in out["events"] if e.kind == "host-claim"]


def told(hostile) -> list[dict]:  # noqa: F811
    """What the operator's relay wrote into the host's copy of a request (request_state calls)."""
    return [r["args"] for r in hostile.requests() if r["op"] == "request_state"]


def test_a_hosts_request_is_held_here_approved_sent_there_and_the_answer_goes_back_with_re(hostile):  # noqa: F811
    hostile("honest")

    async def script(s, out):
        (req,) = await s.host_requests(HOST)
        out["req"] = req
        out["listed"] = list(s.requests)
        out["d"] = await s.approve_request(KEY, wait=5, timeout=5)
        out["after"] = s.request(KEY)
        out["again"] = list(await s.host_requests(HOST))
        out["hop"] = s.ledger.last_hop_to(f"{HOST}/codex:beta")

    out = run([True, True], script)
    req = out["req"]
    assert (req.id, req.asker, req.to) == (KEY, f"{HOST}/codex:beta", f"{HOST}/claude:alpha")
    assert req.verdict == f"host {HOST} says: verified"  # the host's word, never relay's own verdict
    assert "\x1b" not in req.evidence and "\x1b" not in req.line_for_operator()
    assert [r.id for r in out["listed"]] == [KEY]
    said = "\n".join(out["said"])
    assert f"request {KEY} from {HOST}/codex:beta [host {HOST} says: verified]" in said and "\x1b" not in said
    send, back = out["gate"].shown
    assert send.target.startswith(f"{HOST}/claude:alpha") and "route: via ssh" in send.render()
    assert f"{HOST}/codex:beta (host {HOST} says: verified) wrote: «hello from beta»" in send.payload
    assert back.target.startswith(f"{HOST}/codex:beta") and "re=beta-1" in back.payload
    assert f"{HOST}/claude:alpha (host {HOST} says: verified) wrote: «reply to" in back.payload
    after = out["after"]
    assert [h.state for h in after.history] == ["held", "approved", "delivered"] and after.answer_id, after
    assert not claims(out) and out["again"] == []
    assert out["hop"] == 2  # the answer went back at hop 2, kept here: the asker's next request carries hop 3
    states = [t["update"]["state"] for t in told(hostile)]
    assert states[:2] == ["approved", "delivered"] and all(t["id"] == "beta-1" for t in told(hostile))
    assert "asker" not in told(hostile)[0]["update"] and "body" not in told(hostile)[0]["update"]


@pytest.mark.parametrize("lie, said", [
    ("req-never-made", "a request beta-1 whose envelope says otherwise"),
    ("req-decided", "a request beta-1 approved that the operator never saw"),
])
def test_a_request_never_made_is_not_held(hostile, lie, said):  # noqa: F811
    hostile(lie)

    async def script(s, out):
        out["new"] = list(await s.host_requests(HOST))
        out["held"] = list(s.requests)

    out = run([True], script)
    assert out["new"] == [] and out["held"] == []
    (claim,) = claims(out)
    assert said in claim.data["line"] and claim.data["line"].startswith(f"host {HOST} reported ")
    (line,) = [x for x in out["said"] if "reported" in x]
    assert line.startswith(f"relay: host {HOST} reported {said}") and "\n" not in line


@pytest.mark.parametrize("lie, said", [
    ("req-asker", "request beta-1 from claude:alpha, whose envelope is from agent:claude@alpha (an asker swapped)"),
    ("req-body", "request beta-1 with another body than the one held here (a body changed)"),
])
def test_the_host_cannot_change_who_asked_or_what_after_it_is_held(hostile, lie, said):  # noqa: F811
    hostile(lie)

    async def script(s, out):
        out["first"] = list(await s.host_requests(HOST))
        out["second"] = list(await s.host_requests(HOST))
        out["kept"] = s.request(KEY)

    out = run([], script)
    assert [r.id for r in out["first"]] == [KEY] and out["second"] == []
    kept = out["kept"]
    assert kept.asker == f"{HOST}/codex:beta" and kept.body == "hello from beta" and kept.state == "held"
    (claim,) = claims(out)
    assert said in claim.data["line"], claim.data["line"]


def test_a_plan_with_another_body_than_the_one_approved_is_declined_unseen(hostile):  # noqa: F811
    hostile("plan-body")

    async def script(s, out):
        await s.host_requests(HOST)
        out["d"] = await s.approve_request(KEY, wait=5, timeout=5)
        out["after"] = s.request(KEY)

    out = run([True, True], script)
    assert out["gate"].shown == []  # no yes could be given to it
    assert out["d"].state.value == "withheld" and out["after"].state == "held"
    (claim,) = claims(out)
    assert "another body than the one asked" in claim.data["line"]
    assert told(hostile) == []  # the asker's copy still reads held: nothing was decided


def test_a_plan_for_another_target_is_declined_and_an_outcome_with_other_bytes_fails_the_request(hostile):  # noqa: F811
    hostile("plan-other")

    async def script(s, out):
        await s.host_requests(HOST)
        out["d"] = await s.approve_request(KEY, wait=5, timeout=5)

    out = run([True], script)
    assert out["gate"].shown == [] and out["d"].state.value == "withheld"
    assert "a plan to 'claude:gamma', asked for claude:alpha" in claims(out)[0].data["line"]

    hostile("other-payload")

    async def again(s, out):
        await s.host_requests(HOST)
        try:
            await s.approve_request(KEY, wait=5, timeout=5)
        except HostClaim as exc:
            out["claim"] = exc
        out["after"] = s.request(KEY)

    out = run([True], again)
    assert "a send of another plan" in str(out["claim"])
    after = out["after"]
    assert after.state == "failed" and str(out["claim"]) in after.why
    assert [t["update"]["state"] for t in told(hostile)][-1] == "failed"


def test_a_request_listed_as_held_after_the_operator_decided_it_is_a_state_going_backwards(hostile):  # noqa: F811
    hostile("req-backwards")

    async def script(s, out):
        await s.host_requests(HOST)
        s.deny_request(KEY, why="not now")
        out["again"] = list(await s.host_requests(HOST))
        out["after"] = s.request(KEY)

    out = run([], script)
    assert out["again"] == [] and out["after"].state == "denied" and out["after"].why == "not now"
    (claim,) = claims(out)
    assert "request beta-1 held again (it is denied here: a state going backwards)" in claim.data["line"]
    (update,) = told(hostile)
    assert update["update"]["state"] == "denied" and update["update"]["why"] == "not now"


def test_a_halt_on_the_host_halts_here_and_nothing_is_held(hostile):  # noqa: F811
    hostile("req-halt")

    async def script(s, out):
        out["new"] = list(await s.host_requests(HOST))
        led = s.shared.ledger
        out["halt"] = led.active_halt()

    out = run([], script)
    assert out["new"] == [] and out["halt"] is not None and out["halt"].reason.startswith(f"host {HOST} says:")


def test_the_hop_cap_holds_across_hosts(hostile):  # noqa: F811
    """The operator's own record of its last message to the asker sets the hop, whatever the host says."""
    hostile("honest")

    async def script(s, out):
        led = s.shared.ledger
        led.record_sent("operator-1", 4, f"{HOST}/codex:beta")
        out["new"] = list(await s.host_requests(HOST))

    out = run([], script)
    assert out["new"] == []
    refused = [e for e in out["events"] if e.kind == "request-refused"]
    assert refused and "past the cap" in refused[0].data["why"]


def test_the_answer_back_must_answer_the_request_asked_re(hostile):  # noqa: F811
    """The plan that takes the answer back is checked as any HOST/ send, its `re=` too: a host's plan
    answering another request is declined unseen, and the request says the answer was not taken."""
    hostile("plan-re")

    async def script(s, out):
        await s.host_requests(HOST)
        out["d"] = await s.approve_request(KEY, wait=5, timeout=5)
        out["after"] = s.request(KEY)

    out = run([True, True], script)
    (send,) = out["gate"].shown  # the send to claude:alpha; the answer's plan never reached the gate
    assert send.target.startswith(f"{HOST}/claude:alpha")
    (claim,) = claims(out)
    assert "a plan answering beta-9 (re=), asked beta-1" in claim.data["line"]
    after = out["after"]
    assert after.state == "delivered" and after.answer_state == "withheld", after


def test_once_taken_a_host_is_pulled_by_the_sweeper_and_each_claim_said_once(hostile, monkeypatch):  # noqa: F811
    """After `host_requests(HOST)` the REPL's sweeper takes the host's requests every few seconds (so
    each shows as it arrives); a host repeating a lie is said and recorded once, not every round."""
    import relay_repl.session.core.requests as requests

    hostile("req-asker")
    monkeypatch.setattr(requests, "SWEEP_EVERY", 0.5)  # its rounds 4x as often: the same rounds in a quarter of the wait

    async def script(s, out):
        await s.host_requests(HOST)
        assert HOST in s.asks.pulls
        await s.asks.sweeper(timeout=2.5)  # two rounds at least, each listing beta-1 under another asker

    out = run([], script)
    assert len([x for x in out["said"] if "an asker swapped" in x]) == 1, out["said"]
    assert len(claims(out)) == 1
    assert len([r for r in hostile.requests() if r["op"] == "requests"]) >= 3


def test_an_answer_that_came_late_is_taken_back_later_with_relay_answer(hostile):  # noqa: F811
    """approve_request(wait=0) returns after the send; `relay_answer` later asks the host for the answer
    (judged there) and takes it back to the asker, its own plan, re= the asker's id."""
    hostile("honest")

    async def script(s, out):
        await s.host_requests(HOST)
        await s.approve_request(KEY, wait=0, timeout=5)
        out["back"] = await s.relay_answer(KEY, timeout=5)
        out["after"] = s.request(KEY)

    out = run([True, True], script)
    send, back = out["gate"].shown
    assert back.target.startswith(f"{HOST}/codex:beta") and "re=beta-1" in back.payload
    assert out["after"].answer_id == out["back"].relay_id and out["back"].outcome == "delivered"


def test_an_answer_the_host_says_came_from_another_session_is_not_taken_back(hostile):  # noqa: F811
    hostile("reply-other")

    async def script(s, out):
        await s.host_requests(HOST)
        out["d"] = await s.approve_request(KEY, wait=5, timeout=5)
        out["after"] = s.request(KEY)

    out = run([True, True], script)
    assert len(out["gate"].shown) == 1  # the send only: no plan to take the answer back
    line = next(x for x in out["said"] if "not taken to" in x)
    assert f"is not {HOST}/claude:alpha's own as host {HOST} judged it (mismatch: answered by claude:gamma" in line
    assert out["after"].answer_id is None and out["after"].answer_state.startswith("not relayed: mismatch")


def test_a_host_not_yet_told_of_a_decision_lists_it_held_without_a_claim(hostile, monkeypatch):  # noqa: F811
    """The host lists a request held while the operator's decision is still on its way to it (queued,
    being told, or not told at all): that is the host's honest word, not a state going backwards. Once
    the host has taken the change, a listing it begins after that saying held is a claim again. (Old
    code: a claim at the second listing, the race the live hosts test met.)"""
    import threading

    from relay_repl.session.remote.request_mirror import MirroredStore

    hostile("req-backwards")
    real_call = MirroredStore._call
    release = threading.Event()

    def held_back(self, host, rid, req, ch=None):
        assert release.wait(30), "the test releases the tell"
        return real_call(self, host, rid, req, ch)

    monkeypatch.setattr(MirroredStore, "_call", held_back)

    async def script(s, out):
        await s.host_requests(HOST)
        async with anyio.create_task_group() as tg:
            s.asks.store.tell_from(tg)  # as a serving session does: the change is told off the loop
            s.deny_request(KEY, why="not now")
            out["pending"] = list(await s.host_requests(HOST))  # the host has not been told yet
            out["claims_pending"] = [e for e in s.shared.ledger.events() if e.kind == "host-claim"]
            release.set()
        out["told"] = list(await s.host_requests(HOST))  # told before this listing began: held is a claim

    out = run([], script)
    assert out["pending"] == [] and out["claims_pending"] == []
    (claim,) = claims(out)
    assert "request beta-1 held again (it is denied here: a state going backwards)" in claim.data["line"]



def test_a_host_that_could_not_be_told_lists_it_held_without_a_claim(hostile, monkeypatch):  # noqa: F811
    """A decision the host could not be told (the operator read so): its copy still says held, honestly."""
    from relay_repl.core.errors import RelayError
    from relay_repl.session.remote.request_mirror import MirroredStore

    hostile("req-backwards")

    def unreachable(self, host, rid, req, ch=None):
        return RelayError("ssh: connect to host standin: Connection refused")

    monkeypatch.setattr(MirroredStore, "_call", unreachable)

    async def not_told(s, out):
        await s.host_requests(HOST)
        s.deny_request(KEY, why="not now")
        out["again"] = list(await s.host_requests(HOST))

    out = run([], not_told)
    assert out["again"] == [] and claims(out) == []
    assert any("was not told" in line for line in out["said"]), out["said"]
