"""Live: two Codex threads on ONE shared app-server daemon (issue 16 case 1).

The daemon holds every thread's lock and runs every thread's tools, so the kernel pid of a
`relay mcp` or `relay reply` process proves the daemon, not the thread (codex.md §0, §2.2).
Here, with the REAL Codex on conftest's shared 2+2 lab (its Codex threads codex:gamma and
codex:delta on one daemon; the test names keep the first labels, alpha for gamma and beta for
delta): delta answering gamma's request (through the relay MCP tool, or from its shell while
claiming gamma's CODEX_THREAD_ID) is never taken as gamma's answer; gamma answering its own is
linked, proven by gamma's own rollout; and relay_requests called by delta does not show gamma's
request.
"""

from __future__ import annotations

from functools import partial

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.core.delivery import DeliveryState
from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.script import Rule, Step
from relay_repl.system.polling import poll_until
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

GAMMA, DELTA = "codex:gamma", "codex:delta"


@pytest.fixture(scope="module")
def lab_size():
    return 2, 2


@pytest.fixture(scope="module")
def lab_home(lab_home_2x2):
    """conftest's shared 2+2 lab (a lab of its own cost about 20 s to start and take down)."""
    return lab_home_2x2


async def idle(*names: str) -> None:
    for name in names:
        await anyio.to_thread.run_sync(partial(helpers.wait_idle, name, timeout=60))


async def first_reply(d, timeout: float = 60):
    """The first answer that reached the delivery, however it was judged. The bound is the slowest
    path on a loaded 2-core machine: the first MCP tool call of a fresh thread starts its `relay mcp`
    server (a Python start-up) before the call can run; 30 s was seen to run out at load 8."""
    got = await poll_until(lambda: _first(d), timeout=timeout, interval=0.05)
    assert got is not None, f"no reply reached {d.relay_id} within {timeout:.0f} s: {d.summary()}"
    return got


async def _first(d):
    return d.replies[0] if d.replies else None


async def test_beta_answering_alphas_request_through_mcp_is_not_alphas_answer(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True]) as (s, gate, inbox):
        asked = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("gamma", Rule(match=asked, once=True, steps=[Step(text="gamma is thinking")]))
        await stub.tool_call("delta", "mcp__relay__relay_reply", {"relay_id": asked, "text": "delta says all pass"},
                             then_text="answered for gamma", match=asked)
        d = await s.send(GAMMA, "which tests fail?", want="reply", transport="codex-queue", timeout=30)
        assert d.relay_id == asked and d.outcome == "delivered", d.summary()
        nudge = await s.send(DELTA, f"note {asked}", transport="codex-queue", timeout=30)
        assert nudge.outcome == "delivered", nudge.summary()
        got = await first_reply(d)
        v = got.verdict
        assert v is not None and v.verdict == "mismatch" and v.session == DELTA, v
        assert v.detail.startswith("answered by codex:delta, asked codex:gamma"), v.detail
        assert "thread proven" in v.detail and "relay_reply call" in v.detail
        assert d.reply is None and await d.wait_reply(1) is None and d.state is DeliveryState.NO_REPLY
    await idle("gamma", "delta")


async def test_beta_claiming_alphas_thread_id_from_its_shell_is_not_alphas_answer(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True]) as (s, gate, inbox):
        gamma = await s.target(GAMMA)
        asked = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("gamma", Rule(match=asked, once=True, steps=[Step(text="gamma is thinking")]))
        cmd = f"CODEX_THREAD_ID={gamma.address} relay reply {asked} gamma here, all pass"
        await stub.tool_call("delta", "exec_command", {"cmd": cmd}, then_text="posed as gamma", match=asked)
        d = await s.send(GAMMA, "which tests fail?", want="reply", transport="codex-queue", timeout=30)
        nudge = await s.send(DELTA, f"note {asked}", transport="codex-queue", timeout=30)
        assert d.outcome == "delivered" and nudge.outcome == "delivered", (d.summary(), nudge.summary())
        got = await first_reply(d)
        v = got.verdict
        # the environment claims gamma; delta's own rollout holds the command: delta sent it
        assert v is not None and v.verdict == "mismatch" and v.session == DELTA, v
        assert "a claim, not proof" in v.detail and "thread proven" in v.detail
        assert d.reply is None
    await idle("gamma", "delta")


async def test_alpha_answering_its_own_request_through_mcp_is_linked(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True]) as (s, gate, inbox):
        asked = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("gamma", "mcp__relay__relay_reply", {"relay_id": asked, "text": "gamma: 2 fail"},
                             then_text="answered", match=asked)
        d = await s.send(GAMMA, "which tests fail?", want="reply", transport="codex-queue", timeout=30)
        got = await d.wait_reply(30)
        assert got is not None and got is d.reply and d.state is DeliveryState.REPLIED, d.summary()
        v = got.verdict
        assert v.verdict == "verified" and v.session == GAMMA and "thread proven" in v.detail, v
        delta = await s.target(DELTA)
        assert v.session_pid == delta.pid, "one daemon hosts both threads: its pid alone cannot tell them apart"
        assert got.body == "gamma: 2 fail"
    await idle("gamma")


async def test_relay_requests_from_beta_lists_only_betas_requests(lab):
    async with StubClient(lab.stub.control) as stub, live_session([True, True]) as (s, gate, inbox):
        for_alpha = s.ledger.peek_next_id(s.me.address)
        await stub.add_rule("gamma", Rule(match=for_alpha, once=True, steps=[Step(text="gamma is thinking")]))
        d = await s.send(GAMMA, "secret plan for gamma", want="reply", transport="codex-queue", timeout=30)
        assert d.outcome == "delivered", d.summary()
        for_beta = s.ledger.peek_next_id(s.me.address)
        await stub.tool_call("delta", "mcp__relay__relay_requests", {}, then_text="listed", match=for_beta)
        await stub.clear_requests("delta")
        e = await s.send(DELTA, "what were you asked?", want="reply", transport="codex-queue", timeout=30)
        assert e.relay_id == for_beta and e.outcome == "delivered", e.summary()
        listed = await s.turn_reply(e, timeout=30)
        assert listed is not None and listed.text == "listed"
        reqs = await stub.requests("delta", kind="main")
        outputs = [str(item) for r in reqs for item in r.body.get("input", [])
                   if isinstance(item, dict) and item.get("type") == "function_call_output"]
        assert outputs, reqs
        out = outputs[-1]
        assert for_beta in out and "codex:delta" in out, out
        assert for_alpha not in out and "secret plan for gamma" not in out, out
    await idle("gamma", "delta")
