"""Agents' requests to send, fast: an agent asks, the operator decides at the one gate, the answer
goes back to the asker (issue 31).

Real pieces: the operator's inbox socket, SO_PEERCRED, the /proc process tree, SQLite, and the
asking side's own code (`session.asking.ask`/`status`, what `relay_send` and `relay ask` run) in a
process of its own. Stand-ins: the targets are in-memory ones, and each "agent" is a small process
a test agent module recognises by pid (as tests/session/test_conversation.py does); the same
paths run against the real clients in tests/session/test_requests_live.py.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.agents.origin import OriginJudge
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import DiscoveryError, LoopHalt, PolicyRefusal, UsageError
from relay_repl.core.inbound import PeerIdentity
from relay_repl.core.request import ANSWER_TYPE, FRAME_TYPE
from relay_repl.core.target import Me
from relay_repl.session.core import asking
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.core.inbox import Inbox
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target
from tests.support.inbox_peer import PEER_LINE

pytestmark = pytest.mark.anyio

ASKER = textwrap.dedent("""
    import json, sys
    from relay_repl.session.core.asking import ask
    try:
        print(json.dumps(ask(sys.argv[1], sys.argv[2], sys.argv[3], who=(sys.argv[4], "the test's word"))))
    except Exception as exc:
        print(json.dumps({"refused": str(exc), "type": type(exc).__name__}))
""")
RAW = textwrap.dedent("""
    import json, socket, sys
    path, frame = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(frame.encode() + b"\\n")
    s.shutdown(socket.SHUT_WR)
    got = b""
    while chunk := s.recv(4096):
        got += chunk
    print(got.decode())
""")
REPLIER = PEER_LINE
# the stand-in agent runs its command only once told to: the test knows the agent's pid by then
AGENT = ("import subprocess, sys; sys.stdin.readline(); "
         "r = subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True); print(r.stdout, end='')")


class Agents:
    """An agent module for tests: each pid in `pids` is the session it maps to (fake:NAME)."""

    def __init__(self) -> None:
        self.pids: dict[int, str] = {}

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        spec = self.pids.get(pid)
        if spec is None:
            return None
        return PeerIdentity(kind="fake", spec=spec, pid=pid, claimable=frozenset({spec.partition(":")[2]}),
                            evidence="the test agent's process")

    def claimed_session(self, address: str) -> str | None:
        return f"fake:{address}" if any(s == f"fake:{address}" for s in self.pids.values()) else None


class Desk:
    def __init__(self, s: Session, inbox: Inbox, agents: Agents, mem: InMemoryTransport, gate: ScriptedGate,
                 lines: list[str]) -> None:
        self.s, self.inbox, self.agents, self.mem, self.gate, self.lines = s, inbox, agents, mem, gate, lines

    async def run_as(self, spec: str | None, *argv: str) -> str:
        """Run `argv` as a child of a process the test agent module knows as `spec` (None: a stranger)."""
        cmd = [sys.executable, "-c", AGENT, *argv] if spec else list(argv)
        proc = await anyio.open_process(cmd)
        if spec:
            self.agents.pids[proc.pid] = spec
            assert proc.stdin is not None
            await proc.stdin.send(b"go\n")
        assert proc.stdout is not None
        out = b""
        async for chunk in proc.stdout:
            out += chunk
        await proc.wait()
        return out.decode()

    async def ask(self, asker: str, to: str, body: str, want: str = "reply", *, claim: str | None = None) -> dict:
        """`asker` asks, through the asking side's own code, claiming to be `claim` (default: itself)."""
        out = await self.run_as(asker, sys.executable, "-c", ASKER, to, body, want, claim or asker)
        return json.loads(out.strip().splitlines()[-1])

    async def raw(self, spec: str | None, frame: dict) -> dict:
        out = await self.run_as(spec, sys.executable, "-c", RAW, str(self.inbox.path), json.dumps(frame))
        return json.loads(out.strip().splitlines()[-1])

    async def answer_as(self, spec: str, line: str) -> None:
        await self.run_as(spec, sys.executable, "-c", REPLIER, str(self.inbox.path), line)


@asynccontextmanager
async def desk(relay_home: Any, answers: list[bool], names: tuple[str, ...] = ("alpha", "beta", "gamma")
               ) -> AsyncIterator[Desk]:
    led = Ledger(relay_home / "ledger.sqlite")
    mem = InMemoryTransport()
    gate = ScriptedGate(answers)
    lines: list[str] = []
    s = Session(ledger=led, approve=gate, me=Me(address="op"),
                providers=[StaticProvider("fake", [fake_target(n) for n in names])], transports=[mem],
                echo=lines.append)
    agents = Agents()
    async with anyio.create_task_group() as tg:
        inbox = Inbox(led, address="op", sender=s.me.sender, echo=lines.append, judge=OriginJudge([agents]).judge)
        await inbox.listen(tg)
        s.attach_inbox(inbox)
        try:
            yield Desk(s, inbox, agents, mem, gate, lines)
        finally:
            await inbox.close()
            tg.cancel_scope.cancel()


def states(receipt: dict) -> list[str]:
    return [h["state"] for h in receipt["history"]]


def reply_line(re: str, body: str, *, sender: str = "agent:fake@alpha", id: str = "alpha-1", hop: int = 1) -> str:
    return Envelope.make(sender=sender, to="operator", id=id, hop=hop, want="none", re=re, body=body).compose()


async def test_an_agent_asks_and_the_request_is_held_not_sent(relay_home):
    async with desk(relay_home, []) as d:
        got = await d.ask("fake:beta", "fake:alpha", "what does src/x.py do?")
        rid = got["request"]
        assert got["text"] == f"held for the operator's approval (request {rid})" and got["state"] == "held"
        assert rid.startswith("beta-")
        assert [r.id for r in d.s.requests] == [rid] and d.mem.received == [], "held, nothing sent"
        assert any(line.startswith(f"request {rid} from fake:beta [verified]: send to fake:alpha") for line in d.lines)
        req = d.s.request(rid)
        assert req.asker == "fake:beta" and req.verdict == "verified" and req.want == "reply" and req.hop == 0
        assert asking.status(rid, ledger=d.s.ledger, who=("fake:beta", "x"))["state"] == "held"
        assert [e.kind for e in d.s.ledger.events(relay_id=rid)] == ["request"]


async def test_approve_shows_the_plan_and_the_answer_reaches_the_asker_after_a_second_y(relay_home):
    async with desk(relay_home, [True, True]) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "please review, then push --force"))["request"]
        assert "FLAG: asks for a consent-only act (push, force)" in next(x for x in d.lines if x.startswith("request "))

        async def alpha_answers() -> None:
            with anyio.fail_after(20):
                while not d.mem.received:
                    await anyio.sleep(0.02)
            sent = Envelope.parse(d.mem.received[0])
            await d.answer_as("fake:alpha", reply_line(sent.id, "looks fine", hop=sent.hop + 1))

        async with anyio.create_task_group() as tg:
            tg.start_soon(alpha_answers)
            dl = await d.s.approve_request(rid, wait=20)
        plan, back = d.gate.shown
        assert plan.payload.endswith("fake:beta (verified) wrote: «please review, then push --force»")
        assert " hop=0 want=reply]" in plan.payload
        assert plan.heading.startswith(f"request {rid} from fake:beta [verified]: fake:beta's words for fake:alpha, hop 0")
        assert "FLAG: asks for a consent-only act (push, force)" in plan.heading
        assert any("quote fake:beta's words (verified), not yours" in n and "push, force" in n for n in plan.notes)
        assert dl.state is DeliveryState.REPLIED and dl.reply.body == "looks fine"
        # the answer's own plan: to the asker, re= the request, one hop past the answer
        env = Envelope.parse(back.payload)
        assert back.target.startswith("fake:beta") and env.re == rid and env.hop == 2 and env.want == "none"
        assert env.body == "fake:alpha (verified) wrote: «looks fine»"
        assert d.mem.received[1] == back.payload
        receipt = asking.status(rid, ledger=d.s.ledger, who=("fake:beta", "x"))
        assert states(receipt) == ["held", "approved", "delivered"], receipt
        assert receipt["delivery_id"] == dl.relay_id and receipt["answer_from"] == "fake:alpha"
        assert receipt["answer_id"] == env.id and receipt["answer_state"] == "in_turn"
        assert receipt["flags"] == ["push", "force"]
        with pytest.raises(LoopHalt, match="already taken"):
            await d.s.relay_answer(rid)


async def test_no_at_the_plan_denies_the_request_and_sends_nothing(relay_home):
    async with desk(relay_home, [False]) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "hi"))["request"]
        dl = await d.s.approve_request(rid)
        assert dl.state is DeliveryState.WITHHELD and d.mem.received == []
        receipt = asking.status(rid, ledger=d.s.ledger, who=("fake:beta", "x"))
        assert receipt["state"] == "denied" and receipt["why"] == "the operator answered No at the plan"
        with pytest.raises(UsageError, match="is denied"):
            await d.s.approve_request(rid)


async def test_a_denied_and_an_expired_request_reach_the_asker_as_such_and_nothing_is_sent(relay_home):
    async with desk(relay_home, [True, True]) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "one"))["request"]
        d.s.deny_request(rid, why="not during the release")
        receipt = asking.status(rid, ledger=d.s.ledger, who=("fake:beta", "x"))
        assert receipt["state"] == "denied" and receipt["why"] == "not during the release"
        d.s.request_expiry = 0.2
        rid2 = (await d.ask("fake:beta", "fake:alpha", "two"))["request"]
        await anyio.sleep(0.3)
        # the asker reads it expired even before the operator's relay has recorded it
        assert asking.status(rid2, ledger=d.s.ledger, who=("fake:beta", "x"))["state"] == "expired"
        assert list(d.s.requests) == []
        assert any(line.startswith(f"request {rid2} from fake:beta expired: not decided within 0 s") for line in d.lines)
        receipt = asking.status(rid2, ledger=d.s.ledger, who=("fake:beta", "x"))
        assert states(receipt) == ["held", "expired"] and "nothing was sent" in receipt["why"]
        for r in (rid, rid2):
            with pytest.raises(UsageError, match="only a held request"):
                await d.s.approve_request(r)
        assert d.mem.received == [] and d.gate.shown == []


async def test_a_y_given_after_the_request_was_decided_elsewhere_sends_nothing(relay_home):
    async with desk(relay_home, []) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "hi"))["request"]

        async def yes_but_denied_meanwhile(plan: Any) -> bool:
            d.s.deny_request(rid, why="decided in another shell")  # e.g. `relay deny` while the plan was up
            return True

        d.s.approve = yes_but_denied_meanwhile
        dl = await d.s.approve_request(rid)
        assert dl.state is DeliveryState.WITHHELD and d.mem.received == []
        assert d.s.request(rid).state == "denied"


async def test_a_caller_that_cannot_be_established_is_refused_and_nothing_is_held(relay_home):
    async with desk(relay_home, []) as d:
        # the asking side refuses before writing anything when it cannot tell who asks
        with pytest.raises(PolicyRefusal, match="not held: relay cannot establish which session is asking"):
            asking.ask("fake:alpha", "hi", who=(None, "pid 7 is no discovered session"))
        # a process no session started, writing the frame itself, is judged by its kernel pid
        line = Envelope.make(sender="agent:fake@beta", to="fake:alpha", id="beta-9", hop=0, want="reply",
                             body="hi").compose()
        got = await d.raw(None, {"type": FRAME_TYPE, "line": line})
        assert got["type"] == ANSWER_TYPE and got["state"] == "refused"
        assert got["why"].startswith("not held: relay cannot establish which session is asking (unknown process")
        # an agent claiming another session is refused too
        got = await d.ask("fake:gamma", "fake:alpha", "hi", claim="fake:beta")
        assert "not held" in got["refused"] and "mismatch" in got["refused"]
        assert d.s.asks.store.all() == [] and list(d.s.requests) == [] and d.mem.received == []
        assert len(d.s.ledger.events(kind="request-refused")) == 2


async def test_only_the_asker_reads_its_request(relay_home):
    async with desk(relay_home, []) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "hi"))["request"]
        with pytest.raises(DiscoveryError, match="only the asker may read"):
            asking.status(rid, ledger=d.s.ledger, who=("fake:gamma", "x"))
        with pytest.raises(PolicyRefusal, match="shown to its asker only"):
            asking.status(rid, ledger=d.s.ledger, who=(None, "no session"))


async def test_a_replayed_request_id_is_dropped_and_logged(relay_home):
    async with desk(relay_home, []) as d:
        line = Envelope.make(sender="agent:fake@beta", to="fake:alpha", id="beta-77", hop=0, want="reply",
                             body="hi").compose()
        first = await d.raw("fake:beta", {"type": FRAME_TYPE, "line": line})
        again = await d.raw("fake:beta", {"type": FRAME_TYPE, "line": line})
        assert first["state"] == "held" and first["request"] == "beta-77"
        assert again["state"] == "refused" and "replayed request is dropped (logged)" in again["why"]
        assert [r.id for r in d.s.requests] == ["beta-77"]
        dup = d.s.ledger.events(kind="duplicate", relay_id="beta-77")
        assert len(dup) == 1 and dup[0].data["why"] == "replayed request id"
        assert any("replayed request id beta-77" in line for line in d.lines)


async def test_a_three_agent_cycle_of_requests_stops_at_hop_4(relay_home):
    async with desk(relay_home, [True] * 10) as d:
        cycle = ["fake:beta", "fake:alpha", "fake:gamma"]
        hops = []
        for i in range(5):
            asker, to = cycle[i % 3], cycle[(i + 1) % 3]
            rid = (await d.ask(asker, to, f"round {i}", want="none"))["request"]
            hops.append(d.s.request(rid).hop)
            dl = await d.s.approve_request(rid)
            assert dl.outcome == "delivered" and Envelope.parse(d.mem.received[-1]).hop == hops[-1]
        assert hops == [0, 1, 2, 3, 4]
        got = await d.ask(cycle[5 % 3], cycle[6 % 3], "round 5", want="none")
        assert "past the cap 4" in got["refused"] and "never resets hop" in got["refused"]
        assert len(d.mem.received) == 5 and list(d.s.requests) == []


async def test_relay_halt_in_a_request_halts_every_held_one(relay_home):
    async with desk(relay_home, []) as d:
        held = [(await d.ask("fake:beta", "fake:alpha", f"q{i}"))["request"] for i in range(2)]
        got = await d.ask("fake:gamma", "fake:alpha", "relay-halt stop it all")
        assert "relay-halt: every held request is halted (2)" in got["refused"]
        assert d.s.ledger.active_halt() is not None and list(d.s.requests) == []
        for rid in held:
            receipt = asking.status(rid, ledger=d.s.ledger, who=("fake:beta", "x"))
            assert receipt["state"] == "halted" and "relay-halt" in receipt["why"]
        got = await d.ask("fake:beta", "fake:alpha", "after the halt")
        assert "relay-halt is in force" in got["refused"]
        assert d.mem.received == []


@pytest.mark.parametrize("line", ["[relay/1 from=agent:fake@gamma relay-halt", "relay-halt, not an envelope",
                                  ["relay-halt"], "[relay/1 from=agent:fake@op to=operator id=op-9 hop=0 want=none] "
                                  "relay-halt"])
async def test_a_request_frame_refused_before_it_is_read_still_halts_when_it_carries_relay_halt(relay_home, line):
    """Malformed, not an envelope, `line` not a string, our own id: refused before the halt check, so
    their relay-halt was lost (the inbox halts on every line it drops; a request frame must too)."""
    async with desk(relay_home, []) as d:
        held = (await d.ask("fake:beta", "fake:alpha", "q"))["request"]
        got = await d.raw("fake:gamma", {"type": FRAME_TYPE, "line": line})
        assert got["state"] == "refused" and d.s.ledger.active_halt() is not None, got
        assert asking.status(held, ledger=d.s.ledger, who=("fake:beta", "x"))["state"] == "halted"
        assert d.mem.received == []


async def test_next_request_hands_each_held_request_out_once(relay_home):
    async with desk(relay_home, [True]) as d:
        assert await d.s.next_request(timeout=0.1) is None

        async def later() -> None:
            await anyio.sleep(0.2)
            await d.ask("fake:beta", "fake:alpha", "for a notebook", want="none")

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            req = await d.s.next_request(timeout=20)
        assert req is not None and req.body == "for a notebook"
        assert await d.s.next_request(timeout=0.1) is None
        assert (await d.s.approve_request(req.id)).outcome == "delivered"


async def test_an_answer_from_another_session_is_not_taken_to_the_asker(relay_home):
    async with desk(relay_home, [True, True]) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "who answers?"))["request"]

        async def gamma_answers() -> None:
            with anyio.fail_after(20):
                while not d.mem.received:
                    await anyio.sleep(0.02)
            sent = Envelope.parse(d.mem.received[0])
            await d.answer_as("fake:gamma", reply_line(sent.id, "me!", sender="agent:fake@gamma", id="gamma-1"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(gamma_answers)
            dl = await d.s.approve_request(rid, wait=1.5)
        assert dl.reply is None and len(d.gate.shown) == 1 and len(d.mem.received) == 1
        with pytest.raises(UsageError, match="no verified answer"):
            await d.s.relay_answer(rid)


async def test_an_agent_may_not_list_approve_or_deny(monkeypatch, relay_home):
    agents = Agents()
    import os

    agents.pids[os.getpid()] = "fake:beta"
    monkeypatch.setattr(OriginJudge, "default", classmethod(lambda cls, env=None: cls([agents])))
    monkeypatch.setattr("relay_repl.session.core.outside.surely_outside_every_session", lambda *a, **k: False)  # the kinds' cheap rules cannot exclude: the judge decides
    with pytest.raises(PolicyRefusal, match="runs inside fake:beta"):
        asking.refuse_inside_agent("approving a request")
    from relay_repl.frontends.cli import main

    for argv in (["requests"], ["approve", "beta-1"], ["deny", "beta-1"]):
        assert main(argv) == 1


async def test_nobody_burns_another_agents_request_ids(relay_home):
    async with desk(relay_home, []) as d:
        line = Envelope.make(sender="agent:fake@beta", to="fake:alpha", id="beta-50", hop=0, want="reply",
                             body="hi").compose()
        first = await d.raw(None, {"type": FRAME_TYPE, "line": line})  # a stranger sends beta's next id first
        assert first["state"] == "refused" and "cannot establish" in first["why"]
        own = await d.raw("fake:beta", {"type": FRAME_TYPE, "line": line})
        assert own["state"] == "held", "the stranger's copy did not use up beta's id"
        theirs = Envelope.make(sender="agent:fake@beta", to="fake:alpha", id="alpha-3", hop=0, want="reply",
                               body="hi").compose()
        got = await d.raw("fake:beta", {"type": FRAME_TYPE, "line": theirs})
        assert got["state"] == "refused" and "is not beta-<n>" in got["why"]
        assert [r.id for r in d.s.requests] == ["beta-50"]
        assert d.s.ledger.sightings("alpha-3") == 0


@pytest.mark.timeout(120)
async def test_a_request_to_a_host_spec_is_planned_there_and_gated_here(h2, relay_home, tmp_path):
    """`to` = HOST/kind:name: the approved request goes the ordinary HOST/ way (planned by that host's
    relay over a real OpenSSH channel, gated by this session's approver, carried out there)."""
    from relay_repl.session.remote.remote import Hosts

    async with desk(relay_home, [True]) as d:
        d.s.sender.remote.hosts = Hosts(remote_command=("relay", "--fake", "serve", "--stdio"))
        try:
            rid = (await d.ask("fake:beta", "h2/fake:inbox", "across hosts", want="none"))["request"]
            assert d.s.request(rid).to == "h2/fake:inbox"
            dl = await d.s.approve_request(rid)
        finally:
            await d.s.sender.remote.aclose()
        (plan,) = d.gate.shown
        assert plan.target.startswith("h2/fake:inbox") and "route: via ssh h2" in plan.render()
        assert plan.payload.endswith("fake:beta (verified) wrote: «across hosts»"), plan.payload
        assert dl.target == "h2/fake:inbox" and dl.outcome == "delivered", dl.summary()
        assert [h.state for h in d.s.request(rid).history] == ["held", "approved", "delivered"]
        host = Ledger(tmp_path / "h2home" / "ledger.sqlite")
        assert any(e.kind == "plan" for e in host.events(relay_id=dl.relay_id))  # planned there


def test_the_held_requests_print_as_a_table_one_neutralised_row_each():
    from relay_repl.core.request import Request
    from relay_repl.session.core.requests import RequestTable

    r = Request.held(id="beta-1", asker="codex:beta", verdict="verified", evidence="", asker_pid=1, to="claude:alpha",
                     body="push --force \x1b[31m\u202e" + "x" * 80, want="reply", hop=1, line="l")
    lines = repr(RequestTable([r, r])).splitlines()
    assert len(lines) == 3 and lines[0].startswith("REQUEST")
    assert lines[1].startswith("beta-1           codex:beta       claude:alpha     reply  1 ")
    assert "\x1b" not in lines[1] and "\\x1b[31m⟨U+202E⟩" in lines[1] and lines[1].endswith("… FLAG: push, force")
    assert repr(RequestTable([])).startswith("no held requests")


async def test_request_expiry_takes_seconds_only(relay_home):
    async with desk(relay_home, []) as d:
        for bad in (0, -1, True, "10"):
            with pytest.raises(UsageError, match="request_expiry"):
                d.s.request_expiry = bad
        d.s.request_expiry = 30
        assert d.s.request_expiry == 30.0


async def test_a_body_too_long_to_pass_on_quoted_is_refused_at_once(relay_home):
    from relay_repl.core.envelope import MAX_BODY

    async with desk(relay_home, []) as d:
        got = await d.ask("fake:beta", "fake:alpha", "x" * (MAX_BODY - 5))
        assert "not held: the body, quoted as fake:beta's words" in got["refused"] and "shorten it" in got["refused"]
        assert list(d.s.requests) == []


async def test_a_halt_while_the_plan_is_shown_wins_and_the_request_reads_halted(relay_home):
    async with desk(relay_home, []) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "hi"))["request"]

        async def yes_but_a_halt_arrives(plan: Any) -> bool:
            d.s.ledger.halt("relay-halt from an agent", by="agent:fake@gamma")  # while the plan is on screen
            return True

        d.s.approve = yes_but_a_halt_arrives
        dl = await d.s.approve_request(rid)
        assert dl.state is DeliveryState.WITHHELD and d.mem.received == []
        receipt = asking.status(rid, ledger=d.s.ledger, who=("fake:beta", "x"))
        assert states(receipt) == ["held", "approved", "halted"] and "relay-halt" in receipt["why"], receipt
