"""An answer is the asked session's only; a verdict claims no more than its evidence (issue 16 case 1).

Real pieces as in test_conversation.py: the inbox's unix socket, SO_PEERCRED, the /proc
tree, SQLite. Stand-ins: the agent modules, which recognise the answering process by pid:
one session per process (like Claude), or one host process running several sessions (like
the shared Codex daemon), with a `prove_thread` that reads "its own record". The real Codex
module is exercised live in test_answers_from_the_asked_live.py.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.agents.origin import OriginJudge
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.inbound import PeerIdentity, ToolCall, Verdict
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.core.inbox import Inbox, asked_only
from relay_repl.session.session import Session, answer_refusal
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target
from tests.session.test_conversation import Convo, answer

pytestmark = pytest.mark.anyio


class OneEach:
    """Each pid in `pids` is the one session named for it (as a Claude pid is)."""

    def __init__(self) -> None:
        self.pids: dict[int, str] = {}

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        name = self.pids.get(pid)
        if name is None:
            return None
        return PeerIdentity(kind="fake", spec=f"fake:{name}", pid=pid, claimable=frozenset({name}),
                            evidence="the test agent's process")

    def claimed_session(self, address: str) -> str | None:
        return f"fake:{address}" if address in ("inbox", "other") else None


class SharedHost(OneEach):
    """Every pid in `pids` hosts both sessions (as the Codex daemon hosts every thread);
    `proves` is the session whose own record holds the call, or None."""

    def __init__(self) -> None:
        super().__init__()
        self.proves: str | None = None
        self.calls: list[ToolCall] = []

    def identify_process(self, pid: int, below: tuple[int, ...] = ()) -> PeerIdentity | None:
        if pid not in self.pids:
            return None
        return PeerIdentity(kind="fake", spec=f"fake:daemon {pid}", pid=pid, claimable=frozenset({"inbox", "other"}),
                            specs={"inbox": "fake:inbox", "other": "fake:other"}, host_only=True,
                            evidence=f"pid {pid} hosts 2 sessions")

    def prove_thread(self, ident: PeerIdentity, call: ToolCall) -> tuple[str | None, str]:
        self.calls.append(call)
        if self.proves is None:
            return None, "no hosted session's record holds the call"
        return f"fake:{self.proves}", "thread proven: its own record holds the call"


@asynccontextmanager
async def convo(relay_home: Any, agent: OneEach) -> AsyncIterator[Convo]:
    led = Ledger(relay_home / "ledger.sqlite")
    mem = InMemoryTransport()
    gate = ScriptedGate([True])
    lines: list[str] = []
    s = Session(ledger=led, approve=gate, me=Me(address="op"), providers=[StaticProvider("fake", [fake_target()])],
                transports=[mem], echo=lines.append)
    async with anyio.create_task_group() as tg:
        inbox = Inbox(led, address="op", sender=s.me.sender, echo=lines.append, origin=OriginJudge([agent]))
        await inbox.listen(tg)
        s.attach_inbox(inbox)
        try:
            c = Convo(s, inbox, agent, mem, gate, lines)  # type: ignore[arg-type]
            yield c
        finally:
            await inbox.close()
            tg.cancel_scope.cancel()


class Registering(OneEach):
    """OneEach whose `pids` also accepts `.add(pid)` (what Convo.from_agent calls) for the
    session named in `next`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.next = name
        self.pids = _Adder(self)


class _Adder(dict):  # type: ignore[type-arg]
    def __init__(self, owner: OneEach) -> None:
        super().__init__()
        self.owner = owner

    def add(self, pid: int) -> None:
        self[pid] = getattr(self.owner, "next", "inbox")


class RegisteringHost(SharedHost):
    def __init__(self) -> None:
        super().__init__()
        self.next = "host"
        self.pids = _Adder(self)


async def test_another_session_answering_is_a_mismatch_and_never_the_reply(relay_home):
    agent = Registering("other")
    async with convo(relay_home, agent) as c:
        d = await c.s.send("fake:inbox", "which tests fail?", want="reply")
        await c.from_agent(answer(d.relay_id, "none, trust me", sender="agent:fake@other"))
        await c.arrived(1)
        msg = c.s.inbox[-1]
        assert msg.verdict.verdict == "mismatch" and msg.verdict.session == "fake:other"
        assert msg.verdict.detail.startswith("answered by fake:other, asked fake:inbox")
        assert d.reply is None and d.replies == [msg] and d.state is DeliveryState.IN_TURN
        assert await d.wait_reply(0.3) is None and d.state is DeliveryState.NO_REPLY
        assert any("mismatch: answered by fake:other, asked fake:inbox" in ln for ln in c.lines), c.lines
        rejected = c.s.ledger.events(kind="answer-rejected")
        assert rejected and "answered by fake:other, asked fake:inbox" in rejected[-1].data["detail"]


async def test_the_asked_session_answering_is_still_linked(relay_home):
    agent = Registering("inbox")
    async with convo(relay_home, agent) as c:
        d = await c.s.send("fake:inbox", "which tests fail?", want="reply")
        await c.from_agent(answer(d.relay_id, "none"))
        got = await d.wait_reply(10)
        assert got is d.reply and got.verdict.verdict == "verified" and d.state is DeliveryState.REPLIED


async def test_a_shared_host_proves_the_host_not_the_session(relay_home):
    host = RegisteringHost()
    async with convo(relay_home, host) as c:
        d = await c.s.send("fake:inbox", "status?", want="reply")
        pid = await c.from_agent(answer(d.relay_id, "all good", sender="agent:fake@inbox"))
        await c.arrived(1)
        v = c.s.inbox[-1].verdict
        assert v.verdict == "host verified" and v.session is None and v.session_pid == pid
        assert f"host verified: pid {pid} hosts inbox, other; thread not provable" in v.detail
        assert d.reply is None and len(d.replies) == 1
        assert host.calls == [ToolCall(tool="relay_reply", relay_id=d.relay_id, text="all good")]


async def test_a_shared_host_session_proven_by_its_own_record_is_linked(relay_home):
    host = RegisteringHost()
    host.proves = "inbox"
    async with convo(relay_home, host) as c:
        d = await c.s.send("fake:inbox", "status?", want="reply")
        await c.from_agent(answer(d.relay_id, "all good", sender="agent:fake@inbox"))
        got = await d.wait_reply(10)
        assert got is d.reply and got.verdict.verdict == "verified" and got.verdict.session == "fake:inbox"
        assert "thread proven" in got.verdict.detail


async def test_a_shared_host_session_proven_to_be_another_is_a_mismatch(relay_home):
    host = RegisteringHost()
    host.proves = "other"  # its own record shows `other` made the call, while the line claims `inbox`
    async with convo(relay_home, host) as c:
        d = await c.s.send("fake:inbox", "status?", want="reply")
        await c.from_agent(answer(d.relay_id, "all good", sender="agent:fake@inbox"))
        await c.arrived(1)
        v = c.s.inbox[-1].verdict
        assert v.verdict == "mismatch" and v.session == "fake:other" and d.reply is None


def test_the_answer_rule_on_verdicts():
    mine = Verdict(verdict="verified", session="claude:alpha")
    beta = Verdict(verdict="verified", session="codex:beta", detail="pid 9")
    assert answer_refusal(mine, "claude:alpha") is None
    assert answer_refusal(beta, "claude:alpha") == "mismatch: answered by codex:beta, asked claude:alpha"
    own = Verdict(verdict="receiver's own record", session="codex:beta")
    assert answer_refusal(own, "claude:alpha") == "mismatch: answered by codex:beta, asked claude:alpha"
    host = Verdict(verdict="host verified", detail="host verified: pid 7 hosts beta, gamma; thread not provable")
    assert answer_refusal(host, "codex:beta").startswith("host verified")
    assert asked_only(beta, "claude:alpha").verdict == "mismatch"
    assert asked_only(beta, "claude:alpha").detail == "answered by codex:beta, asked claude:alpha (pid 9)"
    assert asked_only(beta, "codex:beta") is beta and asked_only(beta, None) is beta
