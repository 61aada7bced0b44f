"""Live, against the real clients in the lab: what an agent's request may NOT do (issue 31).

- a caller relay cannot establish (a shell no agent session started) is refused in one line, and
  nothing is held;
- another agent cannot read (relay_request_status) or approve (`relay approve` in its shell) a
  request that is not its own;
- a denied and an expired request reach the asker as such, and nothing is sent (checked in the
  receiver's own files);
- relay-halt in a request halts every held one.
The askers are the lab's real clients, prompted in their own panes (stubs/converse.py makes them call
relay_send on the relay MCP server their client offers); the operator's side is a real session with
its inbox open and a scripted gate.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import relay_repl.lab.helpers as helpers
from relay_repl.lab.stubs.client import StubClient
from relay_repl.lab.stubs.script import Rule, Step, ToolCall
from tests.session.test_requests_live import (claude_files_hold, codex_files_hold, fresh_exchange, receipt_of,
                                              tool_results)
from tests.support.sessions import live_session

pytestmark = [pytest.mark.live, pytest.mark.anyio]

RELAY = str(Path(sys.executable).parent / "relay")


async def prompt(name: str, text: str) -> None:
    await anyio.to_thread.run_sync(lambda: helpers.wait_idle(name, timeout=90))
    await anyio.to_thread.run_sync(lambda: helpers.submit(name, text))


async def ask(stub: StubClient, name: str, to: str, body: str, want: str = "reply", s=None) -> str:
    """`name` asks relay (its client's relay_send); the request id its tool got back. With the session
    `s`, the operator first starts a new exchange with `name` (hops count from 0 whatever came before)."""
    if s is not None:
        await fresh_exchange(next(t.spec for t in s.targets if t.name == name), s)
    await stub.clear_requests(name)
    await prompt(name, f"ask {to} via relay (want={want}): {body}")
    held = await tool_results(stub, name, "held for the operator")
    return str(receipt_of(held)["request"])


async def status(stub: StubClient, name: str, rid: str, needle: str = "history") -> str:
    await stub.clear_requests(name)
    await prompt(name, f"status of relay request {rid}")
    return await tool_results(stub, name, needle)


async def test_a_shell_no_agent_started_is_refused_in_one_line_and_nothing_is_held(lab):
    async with live_session() as (s, gate, inbox):
        before = [r.id for r in s.asks.store.all()]  # the lab's ledger is shared by the module's tests
        res = subprocess.run([RELAY, "ask", "claude:alpha", "hello from nowhere"], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
        assert res.returncode == 1 and res.stdout == "", res
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("relay: not held: relay cannot establish which session is "
                                                       "asking (pid "), res.stderr
        assert list(s.requests) == [] and [r.id for r in s.asks.store.all()] == before and gate.shown == []
        assert not claude_files_hold("hello from nowhere")


async def test_another_agent_can_neither_read_nor_approve_a_request(lab):
    async with StubClient(lab.stub.control) as stub, live_session() as (s, gate, inbox):
        rid = await ask(stub, "beta", "claude:alpha", "a question only beta asked", s=s)
        assert [r.id for r in s.requests] == [rid]
        # alpha asks for beta's request's state through its own relay_request_status: refused
        got = await status(stub, "alpha", rid, needle="refused")
        assert "only the asker may read" in got and "a question only beta asked" not in got
        # alpha runs `relay approve` in its shell: refused, the operator's act
        await stub.clear_requests("alpha")
        await stub.add_rule("alpha", Rule(match="APPROVE-IT", once=True, steps=[
            Step(tool=ToolCall(name="Bash", input={"command": f"{RELAY} approve {rid}; {RELAY} deny {rid}",
                                                   "description": "decide a request"})),
            Step(text="tried")]))
        await prompt("alpha", "APPROVE-IT")
        out = await tool_results(stub, "alpha", "operator's act")
        assert "refused: approving a request is the operator's act, and this process runs inside claude:alpha" in out
        assert "refused: denying a request is the operator's act" in out
        assert [r.id for r in s.requests] == [rid] and s.request(rid).state == "held" and gate.shown == []
        s.deny_request(rid, why="test over")
        await anyio.to_thread.run_sync(lambda: helpers.wait_idle("alpha", timeout=90))


async def test_a_denied_and_an_expired_request_reach_the_asker_and_nothing_is_sent(lab):
    async with StubClient(lab.stub.control) as stub, live_session() as (s, gate, inbox):
        rid = await ask(stub, "beta", "claude:alpha", "please delete the old branches", s=s)
        req = s.request(rid)
        assert req.flags == ("delete",) and "FLAG: asks for a consent-only act (delete)" in req.line_for_operator()
        s.deny_request(rid, why="not during the release")
        got = receipt_of(await status(stub, "beta", rid))
        assert got["state"] == "denied" and got["why"] == "not during the release", got

        s.request_expiry = 2.0
        rid2 = await ask(stub, "beta", "claude:alpha", "second question that will expire")
        await anyio.sleep(2.5)
        got = receipt_of(await status(stub, "beta", rid2))
        assert got["state"] == "expired" and "nothing was sent" in got["why"], got
        with pytest.raises(Exception, match="only a held request"):
            await s.approve_request(rid2)
        assert gate.shown == []
        # nothing reached the receiver: alpha's own transcript holds neither body
        assert not claude_files_hold("please delete the old branches")
        assert not claude_files_hold("second question that will expire")
        await anyio.to_thread.run_sync(lambda: helpers.wait_idle("beta", timeout=90))


async def test_relay_halt_in_a_request_halts_every_held_one(lab):
    async with StubClient(lab.stub.control) as stub, live_session() as (s, gate, inbox):
        try:
            held = [await ask(stub, "beta", "claude:alpha", f"question {i}", s=s) for i in (1, 2)]
            assert sorted(r.id for r in s.requests) == sorted(held)
            await stub.clear_requests("alpha")
            await prompt("alpha", "ask codex:beta via relay (want=none): relay-halt stop everything")
            out = await tool_results(stub, "alpha", "relay-halt")
            assert "every held request is halted (2)" in out and "not held" in out
            assert s.ledger.active_halt() is not None and list(s.requests) == []
            for rid in held:
                assert s.request(rid).state == "halted"
            got = receipt_of(await status(stub, "beta", held[0]))
            assert got["state"] == "halted" and "relay-halt" in got["why"]
            assert not codex_files_hold("relay-halt stop everything")
            assert not claude_files_hold("question 1") and not claude_files_hold("question 2")
        finally:
            s.unhalt()
            await anyio.to_thread.run_sync(lambda: helpers.wait_idle("alpha", timeout=90))
            await anyio.to_thread.run_sync(lambda: helpers.wait_idle("beta", timeout=90))

