"""One send pipeline (issue 35): every way into a send builds one `SendRequest` and hands it to
`Sender.submit`; a run sees each request, each plan before the gate and each outcome through its
hooks (`on_request`, `on_plan`, `on_outcome`), the options arrive as one `SendOptions` on every path
(a host's target included), and the reply route is worked out once, for the id the message carries.

Spied through the hooks a run installs (session/core/hooks.py), not by replacing the pipeline."""

from __future__ import annotations

import anyio
import pytest

from relay_repl.agents.discovery import StaticProvider
from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Me
from relay_repl.session.core.gate import ScriptedGate
from relay_repl.session.core.hooks import RunHooks
from relay_repl.session.session import Session
from relay_repl.store.ledger import Ledger
from relay_repl.transports.fake import InMemoryTransport, fake_target
from tests.session.test_conversation import answer, convo
from tests.session.test_requests import desk, reply_line
from relay_repl.testing import HOST


class Spy(RunHooks):
    """Records what the pipeline tells a run, and changes nothing."""

    def __init__(self) -> None:
        self.requests: list = []
        self.plans: list = []
        self.outcomes: list = []

    def on_request(self, req):
        self.requests.append(req)

    def on_plan(self, req, plan):
        self.plans.append((req, plan))

    def on_outcome(self, req, delivery):
        self.outcomes.append((req, delivery))


class Elsewhere(InMemoryTransport):
    name = "elsewhere"  # not listed by the fake target: refuses at choice time, before any plan


def mk(tmp_path, answers):
    gate = ScriptedGate(answers)
    mem = InMemoryTransport()
    s = Session(ledger=Ledger(tmp_path / "l.sqlite"), approve=gate, me=Me(address="me"),
                providers=[StaticProvider("fake", [fake_target()])], transports=[Elsewhere(), mem])
    return s, mem, gate


@pytest.mark.anyio
async def test_send_a_handle_and_a_chain_are_each_one_request_with_their_options(tmp_path):
    s, mem, gate = mk(tmp_path, [True, True, True])
    spy = Spy()
    with s.running(spy):
        d1 = await s.send("fake:inbox", "plain", hop=1, heading="round 1", relay_id="me-7")
        d2 = await s.transports.memory.send("fake:inbox", "by handle", hop=2)
        d3 = await s.send("fake:inbox", "chained", transport=s.transports.elsewhere | s.transports.memory)
    assert [(r.origin, r.body) for r in spy.requests] == [("operator", "plain"), ("operator", "by handle"),
                                                          ("operator", "chained")]
    first = spy.requests[0].options
    assert (first.hop, first.heading, first.relay_id) == (1, "round 1", "me-7")
    assert getattr(spy.requests[1].options.transport, "name", None) == "memory" and spy.requests[1].options.hop == 2
    # one plan per plan shown (the chain's first member refused before any plan), each before its gate
    assert [p for _, p in spy.plans] == gate.shown and len(gate.shown) == 3
    assert [d for _, d in spy.outcomes] == [d1, d2, d3] and len(mem.received) == 3
    assert spy.plans[2][0].options.fallback.startswith("none (last of chain"), "the member's request, as planned"


@pytest.mark.anyio
async def test_reply_and_forward_are_requests_into_the_same_pipeline(relay_home):
    async with convo(relay_home, [True, True]) as c:
        await c.from_agent(answer(None, "pass it on", id="inbox-9", hop=1, want="reply"))
        await c.arrived(1)
        msg = c.s.inbox[0]
        spy = Spy()
        with c.s.running(spy):
            d1 = await c.s.reply(msg, "on it")
            d2 = await c.s.forward("fake:inbox", msg.line)
        reply, fwd = spy.requests
        assert reply.origin == "reply" and (reply.options.re, reply.options.hop, reply.options.to_role) == \
            ("inbox-9", 2, "agent")
        assert fwd.origin == "forward" and fwd.forwarded is not None and fwd.forwarded.id == "inbox-9"
        assert [d for _, d in spy.outcomes] == [d1, d2]
        sent = [Envelope.parse(x) for x in c.mem.received]
        assert (sent[0].re, sent[0].hop) == ("inbox-9", 2) and (sent[1].id, sent[1].hop) == ("inbox-9", 2)


@pytest.mark.anyio
async def test_the_reply_route_is_worked_out_once_for_the_id_the_message_carries(relay_home, monkeypatch):
    import relay_repl.agents as agents

    calls: list[str] = []
    real = agents.reply_route

    def counted(target, ctx):
        calls.append(ctx.relay_id)
        return real(target, ctx)

    monkeypatch.setattr(agents, "reply_route", counted)
    async with convo(relay_home, [True]) as c:
        d = await c.s.send("fake:inbox", "status?", want="reply")
        assert calls == [d.relay_id], "one route, asked for the message's own id"
        assert d.plan.reply_route and d.relay_id in d.plan.reply_route


@pytest.mark.anyio
async def test_an_agents_request_and_its_answer_are_requests_of_their_own_origin(relay_home):
    async with desk(relay_home, [True, True]) as d:
        rid = (await d.ask("fake:beta", "fake:alpha", "what does x do?"))["request"]

        async def alpha_answers() -> None:
            with anyio.fail_after(20):
                while not d.mem.received:
                    await anyio.sleep(0.02)
            sent = Envelope.parse(d.mem.received[0])
            await d.answer_as("fake:alpha", reply_line(sent.id, "it parses", hop=sent.hop + 1))

        spy = Spy()
        with d.s.running(spy):
            async with anyio.create_task_group() as tg:
                tg.start_soon(alpha_answers)
                await d.s.approve_request(rid, wait=20)
        assert [(r.origin, r.target) for r in spy.requests] == [("request", "fake:alpha"), ("answer", "fake:beta")]
        assert spy.requests[1].options.re == rid and len(spy.plans) == 2


def test_a_send_to_a_hosts_target_is_a_request_and_its_options_reach_the_host(hostile):  # noqa: F811
    from relay_repl.session.app import make_session

    hostile("honest")
    gate = ScriptedGate([True])
    spy = Spy()

    async def main() -> None:
        s = make_session(fake=True, discover=False, approve=gate, echo=None)
        try:
            with s.running(spy):
                d = await s.send(f"{HOST}/claude:alpha", "hi", hop=2, relay_id="op-remote-1")
            assert [(r.origin, r.target, r.options.hop) for r in spy.requests] == [
                ("operator", f"{HOST}/claude:alpha", 2)]
            assert [x for _, x in spy.outcomes] == [d] and spy.plans == [], "the host builds the plan"
            assert Envelope.parse(gate.shown[0].payload).hop == 2
        finally:
            await s.sender.remote.aclose()

    anyio.run(main)
