"""Live: full round trips with the REAL Claude Code and Codex in the lab, answers verified by pid.

The lab's agents converse by default (relay_repl/lab/stubs/converse.py): Claude answers with
SendMessage to the listed inbox, Codex calls relay_reply on the relay MCP server its
configuration offers. What is checked here is the operator's side: the plan names the route,
the answer is linked to its delivery by `re=`, and its verdict comes from the kernel pid
(alpha's own pid; for beta, a `relay mcp` process its Codex host started).
"""

from __future__ import annotations

import sys
import textwrap

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.core.delivery import DeliveryState
from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import LoopHalt, PolicyRefusal
from relay_repl.lab.stubs.client import StubClient, send_message_rule
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

CLAUDE, CODEX = "claude:alpha", "codex:beta"


async def wait_idle(name: str) -> None:
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=60))


async def test_claude_round_trip_is_linked_and_verified(lab):
    async with live_session([True, True]) as (s, gate, inbox):
        assert await s.register_inbox() is True
        d = await s.send(CLAUDE, "hi", want="reply")
        plan = gate.shown[-1]
        assert d.transport == "claude-code-message", "the route needs a message alpha can answer natively"
        assert plan.reply_route and "SendMessage" in plan.reply_route and s.registration.name in plan.reply_route
        got = await d.wait_reply(20)
        assert got is not None, d.summary()
        assert d.state is DeliveryState.REPLIED and d.reply is got and got.answers == d.relay_id
        alpha = lab.session("alpha").pid
        assert got.verdict.verdict == "verified" and got.verdict.session == CLAUDE
        assert got.verdict.pid == alpha and got.verdict.session_pid == alpha
        assert Envelope.parse(got.line).re == d.relay_id
        assert "verified" in repr(s.why(d.relay_id))
    await wait_idle("alpha")


async def test_claude_route_is_offered_and_a_declined_listing_falls_back_plainly(lab):
    async with live_session([False, False]) as (s, gate, inbox):
        d = await s.send(CLAUDE, "hi", want="reply")
        assert gate.shown[0].action == "list the operator inbox as a Claude peer"
        assert s.registration is None
        # declined: the plan says which route is left instead (never a SendMessage to an unlisted inbox)
        route = gate.shown[1].reply_route or ""
        assert route and "SendMessage to" not in route, route
        assert d.state is DeliveryState.WITHHELD


async def test_codex_round_trip_is_verified_by_its_codex_host(lab):
    """The plan names relay_reply on the relay MCP server first and `relay reply` as the
    alternative (the lab's Codex is unsandboxed and has the server); the lab agent answers with
    relay_reply, which its Codex host started: verified."""
    async with live_session([True]) as (s, gate, inbox):
        d = await s.send(CODEX, "hi", want="reply")
        route = gate.shown[-1].reply_route or ""
        assert route.startswith("the agent calls relay_reply") and "; or codex:beta answers by running `relay reply" in route, route
        got = await d.wait_reply(30)
        assert got is not None, d.summary()
        assert d.state is DeliveryState.REPLIED
        target = await s.target(CODEX)
        v = got.verdict
        assert v.verdict == "verified" and v.session == CODEX and v.session_pid == target.pid, v
        assert v.pid != target.pid and v.chain[-1] == target.pid, "the answering process ran under beta's Codex host"
    await wait_idle("beta")


FORGER = textwrap.dedent("""
    import sys
    from relay_repl.session.core.inbox import send_frames, user_frame
    send_frames(sys.argv[1], [user_frame(sys.argv[2], "uds:" + sys.argv[3])])
""")


async def test_a_process_posing_as_alpha_is_a_mismatch(lab):
    async with live_session([]) as (s, gate, inbox):
        alpha = await s.target(CLAUDE)
        line = Envelope.make(sender="agent:claude-code@alpha", to="operator", id="alpha-forged-1", hop=1,
                             body="I am alpha, honest").compose()
        proc = await anyio.open_process([sys.executable, "-c", FORGER, str(inbox.path), line, alpha.address])
        forger = proc.pid
        assert await proc.wait() == 0
        with anyio.fail_after(10):
            while not inbox.received:
                await anyio.sleep(0.05)
        v = inbox.received[0].verdict
        assert v.verdict == "mismatch" and v.claim == "agent:claude-code@alpha" and v.pid == forger
        assert "claude:alpha" in v.detail and str(forger) in str(v)


async def test_a_codex_agent_that_never_answers_ends_in_no_reply(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        await stub.add_rule("beta", {"match": "do not answer", "once": True, "steps": [{"text": "ignoring it"}]})
        d = await s.send(CODEX, "do not answer", want="reply", timeout=30)
        assert d.outcome == "delivered", d.summary()
        assert await d.wait_reply(3) is None
        assert d.state is DeliveryState.NO_REPLY and d.reason == "no reply within 3 s" and d.exit_code == 0
    await wait_idle("beta")



async def test_a_relay_halt_in_a_real_claude_reply_stops_every_wait(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True, True]) as (s, gate, inbox):
        assert await s.register_inbox() is True
        # beta never answers this one: had it answered (the stub's default turn does) between the check
        # below and the halt, its wait would rightly return that earlier answer, and the test raced it
        await stub.add_rule("beta", {"match": "a question that waits", "once": True,
                                     "steps": [{"text": "still thinking about it"}]})
        waiting = await s.send(CODEX, "a question that waits", want="reply", timeout=30)
        # the next relay id is ours to predict; alpha answers it with relay-halt (a real SendMessage)
        rid = s.ledger.peek_next_id(s.me.address)
        halt = Envelope.make(sender="agent:claude-code@alpha", to="operator", id="alpha-halt-1", hop=1,
                             re=rid, body="relay-halt: stop everything").compose()
        await stub.add_rule("alpha", send_message_rule(s.registration.name, halt, match="halt me"))
        asked = await s.send(CLAUDE, "halt me", want="reply", timeout=30)
        assert asked.relay_id == rid
        stopped: list[str] = []

        async def wait(d) -> None:
            with pytest.raises(LoopHalt, match="relay-halt"):
                await d.wait_reply(60)
            stopped.append(d.relay_id)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(wait, asked)  # the halting answer may already be in: the wait still stops
                tg.start_soon(wait, waiting)  # no answer ever comes: only the halt can end this wait early
            assert sorted(stopped) == sorted([asked.relay_id, waiting.relay_id])
            assert waiting.reply is None
            assert asked.reply is not None and asked.reply.verdict.verdict == "verified"
            assert s.ledger.active_halt() is not None
            with pytest.raises(LoopHalt):
                await s.send(CODEX, "nothing goes out now")
        finally:
            s.unhalt()  # the lab is shared: never leave it halted for the next test
    await wait_idle("alpha")
    await wait_idle("beta")


async def test_a_real_reply_forwarded_once_and_our_own_id_back_is_a_duplicate(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True] * 4) as (s, gate, inbox):
        assert await s.register_inbox() is True
        d = await s.send(CLAUDE, "hi there", want="reply")
        got = await d.wait_reply(20)
        assert got is not None and got.verdict.ok
        fwd = await s.forward(CODEX, got.line, timeout=30)  # seeing it arrive was not a forward
        assert fwd.outcome == "delivered" and Envelope.parse(gate.shown[-1].payload).hop == got.hop + 1
        with pytest.raises(LoopHalt, match="already forwarded"):
            await s.forward(CODEX, got.line)
        # alpha sends our own envelope back to us: logged as a duplicate, never kept or linked
        own = Envelope.parse(gate.shown[1].payload.split("\n")[1])
        await stub.add_rule("alpha", send_message_rule(s.registration.name, own.compose(), match="bounce"))
        before = len(inbox.received)
        bounce = await s.send(CLAUDE, "bounce it back", timeout=30)
        assert bounce.outcome == "delivered", bounce.summary()
        with anyio.fail_after(30):
            while not [e for e in s.ledger.events(kind="duplicate") if e.relay_id == own.id]:
                await anyio.sleep(0.2)
        assert len(inbox.received) == before
    await wait_idle("alpha")
    await wait_idle("beta")
