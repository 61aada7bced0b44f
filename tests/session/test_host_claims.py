"""A host's word is a claim (issue 38): the operator's relay believes a remote outcome only for a
plan it showed and the operator approved itself, for that target and those bytes.

Each reproduction of the issue against a lying `relay serve` reached through a stand-in ssh on
PATH (relay_repl/testing/hostile_host.py): on e6902ec every one of these printed the host's word
as relay's own ("delivered ... exit 0", "[verified on standin by relay serve pid 4242]") or ended
in a traceback.
"""

from __future__ import annotations

import anyio
import pytest

from relay_repl.core.errors import HostClaim, HostError
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.remote.remote import Hosts, send_remote, wait_reply_remote
from relay_repl.store.ledger import Ledger
from relay_repl.testing import HOST

pytestmark = pytest.mark.timeout(120)
SPEC = f"{HOST}/claude:alpha"


def run_send(answers: list[bool], *, want: str = "none", wait: float | None = None, body: str = "hi"):
    """send_remote (and, with `wait`, wait_reply_remote) as `relay send` does; (result, error, ledger events)."""
    gate = ScriptedGate(answers)
    out: dict = {}

    async def main() -> None:
        hosts = Hosts()
        ledger = Ledger.default()
        try:
            rd = await send_remote(hosts, SPEC, body, approve=gate, ledger=ledger, want=want, timeout=5,
                                   echo=lambda line: out.setdefault("said", []).append(line))
            out["rd"] = rd
            if wait is not None:
                out["answer"] = await wait_reply_remote(hosts, rd, wait, ledger=ledger)
        except HostError as exc:
            out["error"] = exc
        finally:
            out["events"] = ledger.events()
            ledger.close()
            await hosts.aclose()

    anyio.run(main)
    out["gate"] = gate
    return out


def claims(events) -> list:
    return [e for e in events if e.kind == "host-claim"]


def test_the_honest_host_delivers_only_the_approved_plan_and_the_approval_is_recorded_first(hostile):
    hostile("honest")
    got = run_send([True])
    d = got["rd"].delivery
    assert d.outcome == "delivered" and d.target == SPEC, d
    plan = got["gate"].shown[0]
    approval = [e for e in got["events"] if e.kind == "remote-approval"]
    assert len(approval) == 1 and approval[0].data["target"] == "claude:alpha"
    assert approval[0].data["payload"] == plan.payload and approval[0].data["relay_id"] == d.relay_id
    assert not claims(got["events"])
    # the operator's yes was written before the host was told it (its approve came after)
    requests = hostile.requests()
    assert [r["op"] for r in requests] == ["hello", "send", "approve"]
    assert requests[2]["args"]["digest"] == approval[0].data["digest"]


def test_no_terminal_and_a_host_that_never_asked_is_refused_exit_1(hostile):
    hostile("no-ask")
    res = hostile.relay("send", SPEC, "hi")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "delivered" not in res.stdout
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith(f"relay: host {HOST} reported a send (delivered (in_turn)") and \
        line.endswith(f"that the operator did not approve: not believed; check {HOST}"), res.stderr
    led = Ledger.default()
    try:
        assert [e.data["host"] for e in claims(led.events())] == [HOST]
    finally:
        led.close()


def test_a_delivery_after_the_operators_no_is_refused(hostile):
    hostile("ignore-no")
    got = run_send([False])
    assert isinstance(got["error"], HostClaim) and "rd" not in got
    assert "did not approve: not believed; check standin" in str(got["error"])
    assert len(claims(got["events"])) == 1
    assert not [e for e in got["events"] if e.kind == "remote-approval"]


@pytest.mark.parametrize("lie", ["other-target", "other-payload", "other-id", "backwards"])
def test_an_outcome_for_another_target_payload_id_or_going_backwards_is_refused(hostile, lie):
    hostile(lie)
    got = run_send([True])
    assert isinstance(got["error"], HostClaim), got.get("rd")
    msg = str(got["error"])
    assert msg.startswith(f"host {HOST} reported ") and msg.endswith(f"not believed; check {HOST}")
    assert {"other-target": "claude:gamma", "other-payload": "another plan", "other-id": "standin.4242-99",
            "backwards": "went backwards"}[lie] in msg
    assert len(claims(got["events"])) == 1


def test_a_plan_for_another_target_is_declined_unseen(hostile):
    hostile("plan-other")
    got = run_send([True])
    assert got["gate"].shown == []  # never shown, so never approved
    assert any("a plan to 'claude:gamma', asked for claude:alpha" in s for s in got["said"])
    assert got["rd"].delivery.state.value == "withheld"
    assert [r["args"]["digest"] for r in hostile.requests() if r["op"] == "approve"] == [None]


def test_an_answer_from_another_session_is_a_mismatch_and_shown_as_the_hosts_word(hostile):
    hostile("reply-other")
    got = run_send([True], want="reply", wait=5)
    d, ans = got["rd"].delivery, got["answer"]
    assert d.reply is None and d.state.value != "replied"  # shown, never taken as the answer (as for a local send)
    (kept,) = d.replies
    for msg in (kept, ans.message):
        assert msg.verdict.verdict == "mismatch"
        assert "answered by claude:gamma, asked claude:alpha" in msg.verdict.detail
    assert ans.verified_by.startswith("mismatch: answered by claude:gamma, asked claude:alpha")
    assert "host standin says: verified by pid 5005" in ans.verified_by
    assert "relay serve pid" not in ans.verified_by


def test_a_verified_answer_is_shown_as_the_hosts_verdict(hostile):
    hostile("honest")
    got = run_send([True], want="reply", wait=5)
    ans = got["answer"]
    assert ans.verified_by == "host standin says: verified by pid 5005 (claude:alpha)"
    assert ans.message.verdict.shown == "host standin says: verified by pid 5005"


def test_an_answer_to_another_id_is_refused(hostile):
    hostile("reply-wrong-id")
    got = run_send([True], want="reply", wait=5)
    assert isinstance(got["error"], HostClaim) and "an answer to standin.4242-77" in str(got["error"])


@pytest.mark.parametrize("lie", ["oversize:hello", "oversize:send", "garbage:send", "wrong-shape:hello",
                                 "wrong-shape:send", "wrong-shape:targets"])
def test_a_bad_frame_is_one_line_naming_the_host(hostile, lie):
    hostile(lie, "no-ask")
    args = ["hosts", "check"] if lie.endswith("targets") else ["send", SPEC, "hi"]
    res = hostile.relay(*args)
    assert res.returncode == 1, (res.stdout, res.stderr)
    text = res.stdout + res.stderr
    assert "Traceback" not in text and "pydantic" not in text and "errors.pydantic.dev" not in text, text
    assert f"host {HOST}" in text and "check standin" in text, text
    assert len(res.stderr.strip().splitlines()) <= 1, res.stderr


def test_escapes_from_the_host_are_shown_inert_on_every_command(hostile):
    hostile("escapes")
    for args in (["hosts", "check"], ["hosts", "check", "--json"], ["targets"], ["send", SPEC, "hi"]):
        res = hostile.relay(*args)
        text = res.stdout + res.stderr
        assert "\x1b" not in text and "\u202e" not in text, (args, text)
    res = hostile.relay("hosts", "check")
    assert "\\x1b[2J" in res.stdout and res.returncode == 0, res.stdout


def test_the_debugger_does_not_believe_a_host_state_for_a_send_the_operator_declined(hostile):
    """`session.debugger(ID).resume()` asks the host what it holds for the id; a host saying an id
    the operator declined went out (approved, in_turn) is a claim, and nothing is re-sent."""
    from relay_repl.session.app import make_session

    hostile("honest")
    gate = ScriptedGate([False, True])

    async def main() -> None:
        s = make_session(fake=True, discover=False, approve=gate, echo=None)
        try:
            d = await s.send(SPEC, "hi")
            assert d.state.value == "withheld"
            with pytest.raises(HostClaim, match=r"a send \(in_turn\) for relay id .* not believed; check standin"):
                await s.debugger(d.relay_id).resume()
            assert len(gate.shown) == 1  # not asked again: nothing re-sent on the host's word
            assert claims(s.ledger.events())
        finally:
            await s.sender.remote.aclose()

    anyio.run(main)


def test_why_shows_the_approval_and_the_hosts_claim(hostile):
    hostile("other-target")
    got = run_send([True])
    rid = got["error"] and [e for e in got["events"] if e.kind == "remote-approval"][0].relay_id
    res = hostile.relay("why", rid)
    assert res.returncode == 0, res.stderr
    assert f"approved on {HOST}: claude:alpha via claude-code-socket" in res.stdout
    assert f"host {HOST} reported a send to claude:gamma (approved: claude:alpha) that the operator did not " \
           f"approve: not believed; check {HOST}" in res.stdout


@pytest.mark.parametrize("lie", ["garbage:halt", "oversize:halt", "honest"])
def test_a_halt_reaches_the_host_and_a_bad_answer_to_it_is_one_line(hostile, lie):
    from relay_repl.session.app import make_session

    hostile(lie)
    said: list[str] = []

    async def main() -> list[str]:
        s = make_session(fake=True, discover=False, approve=ScriptedGate([False]), echo=said.append)
        try:
            await s.send(SPEC, "hi")  # declined: the channel is open, the host in use
            s.halt("stop everything")
            return s.sender.remote.halt("again", by="test")
        finally:
            s.unhalt()
            await s.sender.remote.aclose()

    problems = anyio.run(main)
    if lie == "honest":
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(f"host {HOST}: halt not delivered: ")
        assert "\x1b" not in problems[0]
    assert sum(1 for r in hostile.requests() if r["op"] == "halt") == 2


def test_a_step_before_the_send_is_shown_as_the_hosts_and_its_yes_approves_no_send(hostile):
    """A host lists the operator's inbox as a Claude peer before a want=reply send (a plan that is not
    a send): shown (`on host H: ...`) and asked; a yes to it is not a yes to any send."""
    hostile("side-step", "ignore-no")
    got = run_send([True, False])
    assert got["gate"].shown[0].action == f"on host {HOST}: list the operator inbox as a Claude peer"
    assert got["gate"].shown[1].relay_id is not None
    assert isinstance(got["error"], HostClaim)  # the send was declined; its "delivered" is not believed
    step = [e for e in hostile.entries() if e["what"] == "side-step-answer"][0]["data"]
    assert step["args"]["digest"] is not None
    hostile("side-step")
    got = run_send([True, True])
    assert got["rd"].delivery.outcome == "delivered"


def test_a_plan_whose_payload_spans_lines_keeps_its_digest_and_other_strings_lose_their_line_feeds():
    """A Claude peer-message payload is a wrapper over several lines: its plan must reach the operator
    with the very digest the host computed (it did not: every line feed became `\\x0a`)."""
    from relay_repl.core.approval import plan_digest
    from relay_repl.core.host_claims import neutral
    from relay_repl.core.plan import Plan

    plan = Plan(action="send to claude:alpha", target="claude:alpha", identified_by="x", transport="claude-code-message",
                payload="<cross-session-message from=\"uds:/s\">\n[relay/1 from=a:b@c to=peer id=c-1 hop=0 want=reply] hi\n"
                        "</cross-session-message>", delivered_when="x", relay_id="c-1")
    frame = neutral({"ask": {"plan": plan.model_dump(mode="json")}, "result": {"name": "alpha\ndelivered (in_turn)"}})
    assert plan_digest(Plan.model_validate(frame["ask"]["plan"])) == plan_digest(plan)
    assert frame["result"]["name"] == "alpha\\x0adelivered (in_turn)"



def test_a_plan_whose_payload_holds_a_bidi_mark_or_a_line_separator_keeps_its_digest():
    """An honest host's plan for a body with U+200F (Hebrew, Arabic text) or U+2028 was declined as
    "does not match its own digest": the neutraliser rewrote the payload before the digest check."""
    from relay_repl.core.approval import plan_digest
    from relay_repl.core.host_claims import neutral
    from relay_repl.core.plan import Plan

    body = "[relay/1 from=a:b@c to=peer id=c-1 hop=0 want=none] \u05e9\u05dc\u05d5\u05dd\u200f ok\u2028next"
    plan = Plan(action="send to claude:alpha", target="claude:alpha", identified_by="x", transport="claude-code-socket",
                payload=body, delivered_when="x", relay_id="c-1")
    frame = neutral({"ask": {"plan": plan.model_dump(mode="json")}, "result": {"name": "a\u200fb\x1b[2J"}})
    assert plan_digest(Plan.model_validate(frame["ask"]["plan"])) == plan_digest(plan)
    assert "\u200f" not in frame["result"]["name"] and "\x1b" not in frame["result"]["name"]
    assert "\u200f" not in Plan.model_validate(frame["ask"]["plan"]).render()  # shown inert all the same
