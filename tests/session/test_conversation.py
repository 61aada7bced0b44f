"""Conversations, fast: answers linked by `re=`, origin verdicts from real peer pids, loop rules.

Real pieces: the inbox's unix socket, SO_PEERCRED, the /proc process tree, SQLite.
Stand-ins: the target is the in-memory one, and the "agent" is a small process
that a test agent module (`AgentStandIn`) recognises by pid, the way the Claude and
Codex modules recognise theirs (those are exercised live in
tests/session/test_conversation_live.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.agents.origin import OriginJudge
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import LoopHalt, PolicyRefusal, UsageError
from relay_repl.core.inbound import PeerIdentity
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.core.inbox import Inbox
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target
from tests.support.inbox_peer import PEER_LINE

pytestmark = pytest.mark.anyio

SENDER = PEER_LINE
# the stand-in agent runs the sender only once told to: the test knows the agent's pid by then
# (under load, the inbox could otherwise judge the sender before the pid was written down)
AGENT = "import subprocess, sys; sys.stdin.readline(); subprocess.run(sys.argv[1:], check=True)"


class AgentStandIn:
    """An agent module for tests: the processes in `pids` are the session fake:inbox."""

    def __init__(self) -> None:
        self.pids: set[int] = set()

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        if pid in self.pids:
            return PeerIdentity(kind="fake", spec="fake:inbox", pid=pid, claimable=frozenset({"inbox"}),
                                evidence="the test agent's process")
        return None

    def claimed_session(self, address: str) -> str | None:
        return "fake:inbox" if address == "inbox" else None


class Convo:
    def __init__(self, s: Session, inbox: Inbox, agent: AgentStandIn, mem: InMemoryTransport, gate: ScriptedGate,
                 lines: list[str]) -> None:
        self.s, self.inbox, self.agent, self.mem, self.gate, self.lines = s, inbox, agent, mem, gate, lines

    async def from_agent(self, line: str) -> int:
        """`line` sent by a process the agent ran (as `relay reply` is): returns the agent's pid."""
        proc = await anyio.open_process([sys.executable, "-c", AGENT, sys.executable, "-c", SENDER,
                                         str(self.inbox.path), line])
        self.agent.pids.add(proc.pid)
        assert proc.stdin is not None
        await proc.stdin.send(b"go\n")
        await proc.wait()
        return proc.pid

    async def from_stranger(self, line: str) -> None:
        proc = await anyio.open_process([sys.executable, "-c", SENDER, str(self.inbox.path), line])
        await proc.wait()

    async def arrived(self, n: int) -> None:
        with anyio.fail_after(10):
            while len(self.s.inbox) < n:
                await anyio.sleep(0.02)


@asynccontextmanager
async def convo(relay_home: Any, answers: list[bool]) -> AsyncIterator[Convo]:
    led = Ledger(relay_home / "ledger.sqlite")
    mem = InMemoryTransport()
    gate = ScriptedGate(answers)
    lines: list[str] = []
    s = Session(ledger=led, approve=gate, me=Me(address="op"), providers=[StaticProvider("fake", [fake_target()])],
                transports=[mem], echo=lines.append)
    agent = AgentStandIn()
    async with anyio.create_task_group() as tg:
        inbox = Inbox(led, address="op", sender=s.me.sender, echo=lines.append, judge=OriginJudge([agent]).judge)
        await inbox.listen(tg)
        s.attach_inbox(inbox)
        try:
            yield Convo(s, inbox, agent, mem, gate, lines)
        finally:
            await inbox.close()
            tg.cancel_scope.cancel()


def answer(re: str | None, body: str = "done", *, id: str = "inbox-1", hop: int = 1, sender: str = "agent:fake@inbox",
           want: str = "none") -> str:
    return Envelope.make(sender=sender, to="operator", id=id, hop=hop, want=want, re=re, body=body).compose()


async def test_a_verified_answer_is_linked_by_its_re_header(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "please summarize", want="reply")
        assert d.state is DeliveryState.IN_TURN
        pid = await c.from_agent(answer(d.relay_id, "summary: all good"))
        got = await d.wait_reply(10)
        assert got is d.reply and got.body == "summary: all good"
        assert d.state is DeliveryState.REPLIED and d.outcome == "delivered" and d.exit_code == 0
        v = got.verdict
        assert v.verdict == "verified" and v.session == "fake:inbox" and v.session_pid == pid
        assert v.pid != pid and v.chain[-1] == pid, "the connecting process was the agent's child: walked up to it"
        why = c.s.why(d.relay_id)
        assert [m.seq for m in why.answers] == [got.seq]
        assert "summary: all good" in repr(why) and "verified" in repr(why)
        assert "re " + d.relay_id in repr(got)


async def test_an_ack_sets_acknowledged_and_expect_takes_a_relay_id(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "ping", want="ack")

        async def later() -> None:
            await anyio.sleep(0.3)
            await c.from_agent(answer(d.relay_id, "ack"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(later)
            got = await c.s.expect(d.relay_id, 10)
        assert got is not None and d.state is DeliveryState.ACKNOWLEDGED


async def test_a_body_quoting_our_id_is_never_linked(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "question", want="reply")
        await c.from_agent(answer("someone-else-7", f"about {d.relay_id}: re={d.relay_id}", id="inbox-2"))
        await c.from_agent(answer(None, f"[relay/1 re={d.relay_id}] {d.relay_id}", id="inbox-3"))
        await c.arrived(2)
        assert all(m.answers is None and not m.linked for m in c.s.inbox)
        assert "unlinked" in repr(c.s.inbox[0]) and "unlinked" in repr(c.s.inbox[1])
        assert d.reply is None and d.replies == []
        assert await d.wait_reply(0.3) is None


async def test_a_process_posing_as_the_agent_is_a_mismatch_and_not_the_answer(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "question", want="reply")
        await c.from_stranger(answer(d.relay_id, "forged answer"))
        await c.arrived(1)
        msg = c.s.inbox[0]
        v = msg.verdict
        assert v.verdict == "mismatch" and v.claim == "agent:fake@inbox" and v.session is None
        assert v.pid not in c.agent.pids and "fake:inbox" in v.detail
        assert msg.answers == d.relay_id, "it names our id, and is kept beside the send"
        assert d.reply is None and d.replies == [msg] and d.state is DeliveryState.IN_TURN
        assert any("NOT accepted as the answer" in line for line in c.lines)
        assert await d.wait_reply(0.2) is None and d.state is DeliveryState.NO_REPLY


async def test_an_unknown_process_claiming_nobody_we_know(relay_home):
    async with convo(relay_home, []) as c:
        await c.from_stranger(answer(None, "hello", sender="agent:x@nowhere", id="nowhere-1"))
        await c.arrived(1)
        v = c.s.inbox[0].verdict
        assert v.verdict == "unknown process" and v.claim == "agent:x@nowhere" and v.pid is not None


async def test_the_agent_claiming_another_session_is_a_mismatch(relay_home):
    async with convo(relay_home, []) as c:
        pid = await c.from_agent(answer(None, "hi", sender="agent:fake@someone-else", id="else-1"))
        await c.arrived(1)
        v = c.s.inbox[0].verdict
        assert v.verdict == "mismatch" and v.session == "fake:inbox" and v.session_pid == pid


async def test_no_reply_within_the_wait_keeps_the_delivery_delivered(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "anyone?", want="reply")
        assert await d.wait_reply(0.5) is None
        assert d.state is DeliveryState.NO_REPLY and d.outcome == "delivered" and d.exit_code == 0
        assert d.reason == "no reply within 0.5 s"
        assert [e.kind for e in c.s.ledger.events(relay_id=d.relay_id)][-1] == "no-reply"
        # a late answer still links
        await c.from_agent(answer(d.relay_id, "sorry, late"))
        assert (await d.wait_reply(10)).body == "sorry, late" and d.state is DeliveryState.REPLIED


async def test_waiting_for_an_answer_not_asked_for_or_never_sent_is_refused(relay_home):
    async with convo(relay_home, [True, False]) as c:
        d = await c.s.send("fake:inbox", "fyi")
        with pytest.raises(UsageError, match="want=none"):
            await d.wait_reply(1)
        d2 = await c.s.send("fake:inbox", "withheld", want="reply")
        with pytest.raises(UsageError, match="not delivered"):
            await d2.wait_reply(1)


async def test_a_relay_halt_in_a_reply_stops_every_wait(relay_home):
    async with convo(relay_home, [True, True]) as c:
        d1 = await c.s.send("fake:inbox", "one", want="reply")
        d2 = await c.s.send("fake:inbox", "two", want="reply")
        stopped: list[str] = []

        async def wait(d: Any) -> None:
            with pytest.raises(LoopHalt, match="relay-halt"):
                await d.wait_reply(30)
            stopped.append(d.relay_id)

        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, d1)
            tg.start_soon(wait, d2)
            await anyio.sleep(0.2)
            await c.from_agent(answer(d1.relay_id, "relay-halt: stop everything"))
        assert sorted(stopped) == sorted([d1.relay_id, d2.relay_id])
        assert anyio.current_time() - start < 10
        assert d1.reply is not None, "the halting reply is still recorded as the answer"
        with pytest.raises(LoopHalt):
            await c.s.send("fake:inbox", "after the halt")


async def test_a_halting_answer_already_in_still_stops_the_wait(relay_home):
    """The halt arrived (in the answer itself) before anyone waited: the wait is stopped all
    the same, and the halting answer stays recorded as the answer."""
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "one", want="reply")
        await c.from_agent(answer(d.relay_id, "relay-halt: stop everything"))
        await c.arrived(1)
        assert d.reply is not None and c.s.ledger.active_halt() is not None
        with pytest.raises(LoopHalt, match="relay-halt"):
            await d.wait_reply(5)
        c.s.unhalt()
        assert (await d.wait_reply(5)) is d.reply, "with the halt cleared the answer is returned at once"


async def test_our_own_id_coming_back_is_a_duplicate(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "mine", want="reply")
        echoed = c.mem.received[0]  # our very envelope, bounced back
        await c.from_agent(echoed)
        await c.from_agent(answer(d.relay_id, "real answer"))
        assert (await d.wait_reply(10)).body == "real answer"
        assert [m.relay_id for m in c.s.inbox] == ["inbox-1"]
        dup = c.s.ledger.events(kind="duplicate")
        assert dup and dup[0].relay_id == d.relay_id and dup[0].data["why"] == "our own id came back"


async def test_a_duplicate_is_neither_acted_on_nor_answered(relay_home):
    async with convo(relay_home, [True, True]) as c:
        d = await c.s.send("fake:inbox", "q", want="reply")
        line = answer(d.relay_id, "first")
        await c.from_agent(line)
        await c.from_agent(line)
        await c.arrived(1)
        await anyio.sleep(0.3)
        assert len(c.s.inbox) == 1 and len(d.replies) == 1
        assert c.s.ledger.events(kind="duplicate")[0].relay_id == "inbox-1"
        with pytest.raises(LoopHalt, match="more than once"):
            await c.s.reply(c.s.inbox[0], "answering a duplicate")
        assert len(c.gate.shown) == 1


async def test_reply_answers_at_hop_plus_one_with_re_and_never_twice(relay_home):
    async with convo(relay_home, [True, True]) as c:
        await c.from_agent(answer(None, "can you check?", id="inbox-5", hop=2, want="reply"))
        await c.arrived(1)
        msg = c.s.inbox[0]
        assert msg.verdict.ok
        d = await c.s.reply(msg, "checked", want="none")
        sent = Envelope.parse(c.mem.received[-1])
        assert (sent.hop, sent.re, sent.body, sent.id) == (3, "inbox-5", "checked", d.relay_id)
        assert sent.to == "agent"
        with pytest.raises(LoopHalt, match="already answered"):
            await c.s.reply(msg, "again")
        assert len(c.mem.received) == 1


async def test_the_hop_cap_holds_across_replies_and_forwards(relay_home):
    async with convo(relay_home, [True, True, True]) as c:
        await c.from_agent(answer(None, "hop three", id="inbox-3", hop=3))
        await c.from_agent(answer(None, "hop four", id="inbox-4", hop=4))
        await c.arrived(2)
        at3, at4 = c.s.inbox
        d = await c.s.reply(at3, "the last hop")
        assert Envelope.parse(c.mem.received[-1]).hop == 4 and d.outcome == "delivered"
        with pytest.raises(LoopHalt, match="cap is 4"):
            await c.s.reply(at4, "one too many")
        with pytest.raises(LoopHalt, match="cap is 4"):
            await c.s.forward("fake:inbox", at4.line)
        # and an answer to our hop-4 reply would itself be over the cap
        over = Envelope.parse(c.mem.received[-1])
        with pytest.raises(LoopHalt, match="cap is 4"):
            over.next_hop()
        assert len(c.gate.shown) == 1


async def test_a_message_that_reached_the_inbox_can_be_forwarded_once(relay_home):
    async with convo(relay_home, [True, True]) as c:
        await c.from_agent(answer(None, "pass it on", id="inbox-9", hop=1))
        await c.arrived(1)
        msg = c.s.inbox[0]
        d = await c.s.forward("fake:inbox", msg.line)  # arriving was not a forward
        fwd = Envelope.parse(c.mem.received[-1])
        assert d.outcome == "delivered" and (fwd.id, fwd.hop) == ("inbox-9", 2)
        with pytest.raises(LoopHalt, match="already forwarded"):
            await c.s.forward("fake:inbox", msg.line)
        assert len(c.mem.received) == 1 and len(c.gate.shown) == 1


async def test_forwarding_our_own_id_is_refused(relay_home):
    async with convo(relay_home, [True]) as c:
        await c.s.send("fake:inbox", "mine")
        with pytest.raises(LoopHalt, match="our own"):
            await c.s.forward("fake:inbox", c.mem.received[0])


async def test_answering_an_unverified_message_needs_an_explicit_target(relay_home):
    async with convo(relay_home, [True]) as c:
        await c.from_stranger(answer(None, "trust me", id="inbox-8"))
        await c.arrived(1)
        with pytest.raises(PolicyRefusal, match="will not answer a claim"):
            await c.s.reply(c.s.inbox[0], "no")
        d = await c.s.reply(c.s.inbox[0], "yes, explicitly", target="fake:inbox")
        assert d.outcome == "delivered"


async def test_the_ledger_keeps_the_link_and_verdict(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "q", want="reply")
        await c.from_agent(answer(d.relay_id, "a"))
        await d.wait_reply(10)
    again = Ledger(relay_home / "ledger.sqlite").inbox(answers=d.relay_id)
    assert len(again) == 1 and again[0].verdict.verdict == "verified" and again[0].hop == 1
    assert json.loads(again[0].verdict.model_dump_json())["session"] == "fake:inbox"


async def test_relay_why_prints_the_answer_beside_the_send(relay_home, capsys):
    from relay_repl.frontends.cli import main

    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "q", want="reply")
        await c.from_agent(answer(d.relay_id, "the answer"))
        await d.wait_reply(10)
    capsys.readouterr()
    assert main(["why", d.relay_id]) == 0
    out = capsys.readouterr().out
    assert "answer: inbox #1 inbox-1 from agent:fake@inbox: the answer" in out
    assert "verdict verified: claimed agent:fake@inbox; connected as fake:inbox" in out


async def test_the_inbox_table_shows_verdict_session_pid_and_link(relay_home):
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "q", want="reply")
        pid = await c.from_agent(answer(d.relay_id, "a"))
        await c.from_stranger(answer(None, "b", id="inbox-7"))
        await c.arrived(2)
        table = repr(c.s.inbox)
        first, second = table.splitlines()[1:3]
        assert "verified fake:inbox" in first and d.relay_id in first
        assert f" {c.s.inbox[0].verdict.pid} " in first, "the PID column is the kernel's connecting pid"
        assert c.s.inbox[0].verdict.session_pid == pid
        assert "mismatch" in second and "unlinked" in second
